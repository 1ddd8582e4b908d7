import DuetProtocol

// The engine's inputs and outputs as plain JSON, in the shape the browser engine (`js/engine/call-engine.js`)
// takes and gives: `{type, ...named fields}` named after the Swift cases. The simulator writes every input and
// the outputs it produced in this form, and the differential replay (`scripts/differential.sh`) feeds the same
// inputs to the browser engine and requires the same outputs. So this form is the contract between the two
// engines: a field renamed here without the JS engine following is a divergence, found on the first step.

extension CallEngine.Options {
    /// The constructor options of `new CallEngine(...)` in JS. The jitter seed travels as a decimal string
    /// (a UInt64 does not fit a JSON number); null turns jitter off in both engines.
    public var traceForm: JSONValue {
        var fields: [String: JSONValue] = [
            "join": ["prepareSnapshot": .bool(join.prepareSnapshot), "pushSupported": .bool(join.pushSupported)],
            "sseOnly": .bool(sseOnly),
            "jitterSeed": jitterSeed.map { .string(String($0)) } ?? .null,
            "device": .string(device),
            "restartsOnlyAsHost": .bool(restartsOnlyAsHost),
            "localMedia": localMedia.traceForm,
            "keyedLink": .bool(keyedLink),
        ]
        if let resume { fields["resume"] = resume.traceForm }
        return .object(fields)
    }
}

extension Seat {
    var traceForm: JSONValue {
        ["roomId": .string(roomId), "cid": .string(cid), "reconnectToken": .string(reconnectToken)]
    }
}

extension CallEngine.Input {
    public var traceForm: JSONValue {
        switch self {
        case .startNewCall: return ["type": "startNewCall"]
        case .joinRoom(let id): return ["type": "joinRoom", "roomId": .string(id)]
        case .leave: return ["type": "leave"]
        case .end: return ["type": "end"]
        case .dismissError: return ["type": "dismissError"]
        case .localMediaChanged(let state): return ["type": "localMediaChanged", "media": state.traceForm]
        case .replaced: return ["type": "replaced"]
        case .roomIdCreated(let id): return ["type": "roomIdCreated", "roomId": .string(id)]
        case .roomIdFailed(let reason): return ["type": "roomIdFailed", "reason": .string(reason)]
        case .turnCredentialsFetched(let ttl): return ["type": "turnCredentialsFetched", "ttlSeconds": .int(ttl)]
        case .turnCredentialsFailed: return ["type": "turnCredentialsFailed"]
        case .snapshotReady(let id): return ["type": "snapshotReady", "snapshotId": id.map { .string($0) } ?? .null]
        case .pushEndpointReady(let endpoint): return ["type": "pushEndpointReady", "endpoint": endpoint.map { .string($0) } ?? .null]
        case .transportOpened(let transport): return ["type": "transportOpened", "transport": .string(transport.rawValue)]
        case .transportOpenFailed(let transport, let failure):
            return ["type": "transportOpenFailed", "transport": .string(transport.rawValue), "failure": .string("\(failure)")]
        case .transportClosed(let reason): return ["type": "transportClosed", "reason": .string("\(reason)")]
        case .message(let envelope): return ["type": "message", "envelope": envelope.traceForm]
        case .descriptionRejected(let envelope): return ["type": "descriptionRejected", "envelope": envelope.traceForm]
        case .certificateMismatch: return ["type": "certificateMismatch"]
        case .localDescriptionReady(let kind, let sdp):
            return ["type": "localDescriptionReady", "kind": .string("\(kind)"), "sdp": .string(sdp)]
        case .localDescriptionFailed: return ["type": "localDescriptionFailed"]
        case .remoteDescriptionApplied(let kind): return ["type": "remoteDescriptionApplied", "kind": .string("\(kind)")]
        case .remoteDescriptionFailed(let kind): return ["type": "remoteDescriptionFailed", "kind": .string("\(kind)")]
        case .rollbackFailed: return ["type": "rollbackFailed"]
        case .localCandidate(let candidate): return ["type": "localCandidate", "candidate": candidate.traceForm]
        case .gatheringComplete: return ["type": "gatheringComplete"]
        case .iceStateChanged(let state): return ["type": "iceStateChanged", "state": .string("\(state)")]
        case .connectionStateChanged(let state): return ["type": "connectionStateChanged", "state": .string("\(state)")]
        case .signalingStateChanged(let state): return ["type": "signalingStateChanged", "state": .string("\(state)")]
        case .mediaSampled(let packets): return ["type": "mediaSampled", "packets": packets.map { .int($0) } ?? .null]
        case .networkOnline: return ["type": "networkOnline"]
        case .networkPathChanged: return ["type": "networkPathChanged"]
        case .networkOffline: return ["type": "networkOffline"]
        case .timerFired(let timer): return ["type": "timerFired", "timer": .string("\(timer)")]
        case .teardownFinished: return ["type": "teardownFinished"]
        }
    }
}

extension CallEngine.Output {
    public var traceForm: JSONValue {
        switch self {
        case .openTransport(let transport, let via):
            var form: [String: JSONValue] = ["type": "openTransport", "transport": .string(transport.rawValue)]
            if let via { form["via"] = .string(via) }
            return .object(form)
        case .closeTransport: return ["type": "closeTransport"]
        case .send(let envelope): return ["type": "send", "envelope": envelope.traceForm]
        case .createRoomId: return ["type": "createRoomId"]
        case .fetchTurnCredentials(let token): return ["type": "fetchTurnCredentials", "token": .string(token)]
        case .prepareSnapshot: return ["type": "prepareSnapshot"]
        case .requestPushEndpoint: return ["type": "requestPushEndpoint"]
        case .httpLeave(let request):
            var form: JSONValue = [
                "rid": .string(request.rid), "cid": .string(request.cid), "reconnectToken": .string(request.reconnectToken),
            ]
            if request.end == true { form["end"] = .bool(true) }
            return ["type": "httpLeave", "request": form]
        case .engine(let command): return ["type": "engine", "command": command.traceForm]
        case .sampleMedia: return ["type": "sampleMedia"]
        case .timer(let command): return ["type": "timer", "command": command.traceForm]
        case .emit(let event): return ["type": "emit", "event": event.traceForm]
        case .teardown: return ["type": "teardown"]
        }
    }
}

extension EngineCommand {
    var traceForm: JSONValue {
        switch self {
        case .ensurePeerConnection: return ["type": "ensurePeerConnection"]
        case .renewPeerConnection: return ["type": "renewPeerConnection"]
        case .createOffer(let restart): return ["type": "createOffer", "iceRestart": .bool(restart)]
        case .createAnswer: return ["type": "createAnswer"]
        case .setRemoteDescription(let kind, let sdp):
            return ["type": "setRemoteDescription", "kind": .string("\(kind)"), "sdp": .string(sdp)]
        case .rollback: return ["type": "rollback"]
        case .addRemoteCandidates(let list):
            return ["type": "addRemoteCandidates", "candidates": .array(list.map { $0?.traceForm ?? .null })]
        case .applyFetchedIceServers: return ["type": "applyFetchedIceServers"]
        case .applyFallbackIceServers: return ["type": "applyFallbackIceServers"]
        case .close: return ["type": "close"]
        }
    }
}

extension TimerCommand {
    var traceForm: JSONValue {
        switch self {
        case .schedule(let timer, let afterMs): return ["type": "schedule", "timer": .string("\(timer)"), "afterMs": .int(afterMs)]
        case .cancel(let timer): return ["type": "cancel", "timer": .string("\(timer)")]
        }
    }
}

extension CallEvent {
    var traceForm: JSONValue {
        switch self {
        case .phase(let phase): return ["type": "phase", "phase": .string(phase.rawValue)]
        case .connectionStatus(let status): return ["type": "connectionStatus", "status": .string(status.rawValue)]
        case .room(let id): return ["type": "room", "roomId": .string(id)]
        case .participants(let list, let hostCid, let myCid):
            return [
                "type": "participants", "participants": .array(list.map(\.traceForm)), "hostCid": .string(hostCid), "myCid": .string(myCid),
            ]
        case .transport(let transport): return ["type": "transport", "transport": transport.map { .string($0.rawValue) } ?? .null]
        case .failure(let failure): return ["type": "failure", "failure": failure.traceForm]
        case .iceRestart(let reason): return ["type": "iceRestart", "reason": .string(reason.rawValue)]
        case .stats: return ["type": "stats"]  // the runtime's, never the engine's
        case .quality: return ["type": "quality"]  // the runtime's, never the engine's
        case .qualityUnknown: return ["type": "qualityUnknown"]  // the runtime's too
        case .escalation(let step): return ["type": "escalation", "step": .string(step.rawValue)]
        case .session(let seat): return ["type": "session", "seat": seat?.traceForm ?? .null]
        case .replaced(let seat): return ["type": "replaced", "seat": seat?.traceForm ?? .null]
        case .remoteMedia(let state): return ["type": "remoteMedia", "media": state?.traceForm ?? .null]
        case .verification(let value): return ["type": "verification", "value": .string(value.rawValue)]
        case .safetyCode: return ["type": "safetyCode"]  // the runtime's, never the engine's
        }
    }
}

extension CallFailure {
    var traceForm: JSONValue {
        switch self {
        case .roomCreationFailed(let reason): return ["kind": "roomCreationFailed", "message": .string(reason)]
        case .joinTimedOut: return ["kind": "joinTimedOut", "message": "join timed out"]
        case .joinRefused(let code, let message):
            return ["kind": "joinRefused", "code": .string(code.rawValue), "message": .string(message)]
        }
    }
}

extension ParticipantInfo {
    var traceForm: JSONValue {
        var fields: [String: JSONValue] = ["cid": .string(cid), "joinedAt": .int(joinedAt)]
        if let connectionStatus { fields["connectionStatus"] = .string(connectionStatus.rawValue) }
        if let media { fields["media"] = media.traceForm }
        return .object(fields)
    }
}

extension MediaState {
    var traceForm: JSONValue { ["audio": .bool(audio), "video": .bool(video), "screen": .bool(screen)] }
}

extension IceCandidate {
    /// Both optional fields always present (null when absent), as the browser engine decodes them.
    var traceForm: JSONValue {
        [
            "candidate": .string(candidate), "sdpMid": sdpMid.map { .string($0) } ?? .null,
            "sdpMLineIndex": sdpMLineIndex.map { .int(Int64($0)) } ?? .null,
        ]
    }
}

extension Envelope {
    /// The wire form, exactly what `encodedBytes()` writes.
    var traceForm: JSONValue { (try? JSONText.parse(encodedBytes())) ?? .null }
}
