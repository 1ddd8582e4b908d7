import DuetProtocol

extension SignalingCore {
    /// offer / answer / ice / verify_failed / restart_request reach the other participant verbatim, plus `payload.from`.
    mutating func relay(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        let seat = try requireSeat(connection)
        guard let room = rooms[seat.rid] else { throw ProtocolError(.notInRoom, "the room no longer exists") }
        let kind = envelope.type
        // Validate the shape only; what is relayed is the original payload, unknown fields included. The usual
        // shapes pass a structural check; anything else goes through Codable, whose error names the field.
        if !Self.isPlainRelayPayload(envelope) {
            if envelope.messageType == .verifyFailed {
                _ = try envelope.payload.decode(VerifyFailedPayload.self)
            } else if envelope.messageType == .restartRequest {
                _ = try envelope.payload.decode(RestartRequestPayload.self)
            } else if envelope.messageType == .ice {
                guard envelope.payload["candidate"] != nil else {
                    throw ProtocolError(.badRequest, "payload.candidate: missing (use null for end-of-candidates)")
                }
                _ = try envelope.payload.decode(IcePayload.self)
            } else {
                _ = try envelope.payload.decode(SessionDescriptionPayload.self)
            }
        }
        let others = room.participants.filter { $0.cid != seat.cid }
        let targets: [Participant]
        if let to = envelope.to {
            guard let target = others.first(where: { $0.cid == to }) else {
                throw ProtocolError(.notInRoom, "\(to.prefix(64)) is not another participant of this room")
            }
            targets = [target]
        } else {
            targets = others
        }
        guard !targets.isEmpty else {
            let failed = RelayFailedPayload(reason: .noPeer, targets: nil, of: kind)
            out.append(.send(connection, Self.envelope(.relayFailed, rid: seat.rid, cid: seat.cid, ts: nowMs, epoch: room.epoch, failed)))
            return
        }
        var payload = envelope.payload
        payload["from"] = .string(seat.cid)
        var suspended: [String] = []
        for target in targets {
            guard let targetConnection = target.connection else {
                suspended.append(target.cid)
                continue
            }
            var relayed = Envelope(type: kind, rid: seat.rid, cid: target.cid, ts: nowMs, epoch: room.epoch, payload: payload)
            relayed.to = envelope.to
            out.append(.send(targetConnection, relayed))
        }
        if !suspended.isEmpty {
            let failed = RelayFailedPayload(reason: .targetSuspended, targets: suspended, of: kind)
            out.append(.send(connection, Self.envelope(.relayFailed, rid: seat.rid, cid: seat.cid, ts: nowMs, epoch: room.epoch, failed)))
        }
    }

    /// `{sdp: String}` for offer/answer; `{auth: String}` for verify_failed; `{reason: String}` for restart_request; `{candidate: null}` or `{candidate: {candidate: String, sdpMid: String?,
    /// sdpMLineIndex: Int?}}` for ice — exactly what `SessionDescriptionPayload` / `VerifyFailedPayload` / `IcePayload` accept in those shapes.
    static func isPlainRelayPayload(_ envelope: Envelope) -> Bool {
        guard case .object(let payload) = envelope.payload else { return false }
        guard envelope.messageType == .ice else {
            let field =
                switch envelope.messageType {
                case .verifyFailed?: "auth"
                case .restartRequest?: "reason"
                default: "sdp"
                }
            if case .string? = payload[field] { return true }
            return false
        }
        switch payload["candidate"] {
        case .null?: return true
        case .object(let candidate)?:
            guard case .string? = candidate["candidate"] else { return false }
            switch candidate["sdpMid"] {
            case nil, .null?, .string?: break
            default: return false
            }
            switch candidate["sdpMLineIndex"] {
            case nil, .null?: return true
            case .int(let index)?: return Int(exactly: index) != nil
            default: return false
            }
        default: return false
        }
    }

    /// The transport could not take `envelope` for `target` (its client stopped reading): the connection is gone (its
    /// seat is suspended, as for any lost transport) and, if it was a relayed message, its sender hears
    /// `relay_failed target_suspended` — exactly what it would hear had the target been suspended a moment earlier.
    mutating func undeliverable(_ envelope: Envelope, to target: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        let targetSeat = connections[target]?.seat
        closed(target, nowMs: nowMs, into: &out)
        guard envelope.messageType?.isRelayed == true, let targetSeat, let from = envelope.payload["from"]?.stringValue,
            let room = rooms[targetSeat.rid], let sender = room.participant(from), let senderConnection = sender.connection
        else { return }
        let failed = RelayFailedPayload(reason: .targetSuspended, targets: [targetSeat.cid], of: envelope.type)
        out.append(
            .send(senderConnection, Self.envelope(.relayFailed, rid: targetSeat.rid, cid: from, ts: nowMs, epoch: room.epoch, failed)))
    }
}
