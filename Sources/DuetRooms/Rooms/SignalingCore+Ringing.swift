import Crypto
import DuetProtocol

/// Ringing (issue 31): a seated participant rings the room; every device of the other person that listens (a Duet
/// page open, `watch_rooms` with its member token) gets `incoming_call`, the others a push. The caller follows its
/// ring in `ring_state` (ringing on N devices → accepted, declined, no answer, cancelled or unreachable); the first
/// answer ends it everywhere (`ring_ended`: answered elsewhere), as does a cancel, the caller leaving, the timeout,
/// or the other person simply taking their seat.
extension SignalingCore {
    // MARK: Listening

    /// `watch_rooms {rids, listen:{deviceId, members}}`: the rooms whose member token is valid for the device ring
    /// this connection. Called by `watchRooms` after the watch set is replaced, and for a visitor (`listenAsVisitor`).
    /// Only rooms of this core's `shard`: the core of each other room registers it there.
    mutating func listen(_ request: ListenPayload?, rids: Set<String>, connection: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        stopListening(connection)
        guard let request, RingLimits.isValidId(request.deviceId, minimum: 16) else { return }
        var proven: Set<String> = []
        for (rid, token) in request.members where rids.contains(rid) && shard.holds(rid) {
            if authorities.memberTokens.isValid(token, rid: rid, deviceId: request.deviceId, nowMs: nowMs) { proven.insert(rid) }
        }
        guard !proven.isEmpty else { return }
        listening[connection] = Listening(device: request.deviceId, rooms: proven)
        for rid in proven.sorted() {
            listeners[rid, default: [:]][connection] = request.deviceId
            // A page that comes (back) while its room rings: it rings too, and hears how the ring ends.
            guard var ring = rings[rid], ring.live[connection] == nil, request.deviceId != ring.callerDevice,
                connections[connection]?.seat?.rid != rid
            else { continue }
            ring.live[connection] = request.deviceId
            rings[rid] = ring
            out.append(
                .send(
                    connection,
                    Self.envelope(
                        .incomingCall, rid: rid, ts: nowMs,
                        IncomingCallPayload(
                            rid: rid, callId: ring.callId, from: ring.callerCid, caller: ring.caller, expiresAt: ring.expiresAtMs,
                            snapshotId: ring.snapshotId))))
        }
        // Rings another node holds ring here too.
        for rid in proven.sorted() where rings[rid] == nil {
            guard var remote = remoteRings[rid], remote.live[connection] == nil, request.deviceId != remote.callerDevice,
                connections[connection]?.seat?.rid != rid
            else { continue }
            remote.live[connection] = request.deviceId
            remoteRings[rid] = remote
            out.append(.send(connection, Self.envelope(.incomingCall, rid: rid, ts: nowMs, remote.incoming)))
            out.append(.broadcast(.rang(rid: rid, callId: remote.incoming.callId, device: request.deviceId)))
        }
    }

    mutating func unlisten(_ rid: String, _ connection: ConnectionID) {
        listeners[rid]?[connection] = nil
        if listeners[rid]?.isEmpty == true { listeners[rid] = nil }
    }

    mutating func stopListening(_ connection: ConnectionID) {
        for rid in listening.removeValue(forKey: connection)?.rooms ?? [] { unlisten(rid, connection) }
    }

    /// A `watch_rooms` of a connection another core holds, for the listening it asks of this core's rooms (what it
    /// watches is its own core's business). Checked as its own core checks it: a request that core refuses changes
    /// nothing here either.
    public mutating func listenAsVisitor(_ connection: ConnectionID, _ envelope: Envelope, nowMs: Int64) -> [Output] {
        guard connections[connection] == nil else { return [] }
        visitors.insert(connection)
        guard let request = try? validatedWatch(envelope) else { return [] }
        var out: [Output] = []
        listen(request.listen, rids: Set(request.rids), connection: connection, nowMs: nowMs, into: &out)
        return out
    }

    /// The visitor's connection is gone: it listens here no more.
    public mutating func visitorLeft(_ connection: ConnectionID) {
        guard connections[connection] == nil else { return }
        visitors.remove(connection)
        stopListening(connection)
    }

    /// A `ring_answer` of a connection another core holds, for a ring of this core's room: answered as from a
    /// connection of this core (it listens here, or proves its device), its error sent back to it.
    public mutating func answerAsVisitor(_ connection: ConnectionID, _ envelope: Envelope, nowMs: Int64) -> [Output] {
        guard connections[connection] == nil, envelope.messageType == .ringAnswer else { return [] }
        var out: [Output] = []
        do throws(ProtocolError) {
            try ringAnswer(envelope, from: connection, nowMs: nowMs, into: &out)
        } catch {
            out.append(.send(connection, Self.errorEnvelope(error, rid: envelope.rid, nowMs: nowMs)))
        }
        return out
    }

    /// Whether a ringing device can still be told its ring ended: its connection is open (held here, or a visitor).
    func reachable(_ listener: ConnectionID) -> Bool { connections[listener] != nil || visitors.contains(listener) }

    // MARK: Caller

    mutating func ring(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        let seat = try requireSeat(connection)
        let request = try envelope.payload.decode(RingPayload.self)
        guard RingLimits.isValidId(request.callId) else { throw ProtocolError(.badRequest, "callId must be 1–64 base64url characters") }
        if let caller = request.caller, JSONText.write(caller).count > RingLimits.maxCallerBytes {
            throw ProtocolError(.badRequest, "caller must be at most \(RingLimits.maxCallerBytes) bytes")
        }
        guard let room = rooms[seat.rid] else { throw ProtocolError(.notInRoom, "this connection has not joined a room") }
        if let current = rings[seat.rid] {
            // The same ring asked again (a resend after a reconnect): say where it is.
            guard current.callId == request.callId, current.callerCid == seat.cid else {
                throw ProtocolError(.badRequest, "a ring is already in progress in this room")
            }
            sendRingState(seat.rid, to: connection, nowMs: nowMs, into: &out)
            return
        }
        // The other person is here already: nothing to ring.
        if room.participants.contains(where: { $0.cid != seat.cid && $0.connection != nil }) {
            out.append(
                .send(
                    connection,
                    Self.envelope(
                        .ringState, rid: seat.rid, cid: seat.cid, ts: nowMs,
                        RingStatePayload(callId: request.callId, state: "accepted", devices: 0))))
            return
        }
        try admitRing(rid: seat.rid, caller: seat.cid, nowMs: nowMs)
        let callerDevice = room.participant(seat.cid)?.deviceId
        let snapshotId = request.snapshotId.flatMap { PushAlert.isValidSnapshotId($0) ? $0 : nil }
        if let answers = request.answers, !answers.isWellFormed {
            throw ProtocolError(.badRequest, "answers must be {accept, decline}, each the base64url SHA-256 of a secret (43 characters)")
        }
        var ring = Ring(
            callId: request.callId, callerCid: seat.cid, callerDevice: callerDevice, caller: request.caller, snapshotId: snapshotId,
            answers: request.answers, startedAtMs: nowMs, expiresAtMs: nowMs + settings.ringTimeoutMs)
        let incoming = IncomingCallPayload(
            rid: seat.rid, callId: request.callId, from: seat.cid, caller: request.caller, expiresAt: ring.expiresAtMs,
            snapshotId: snapshotId)
        for (listener, device) in (listeners[seat.rid] ?? [:]).sorted(by: { $0.key < $1.key }) {
            // Never the caller's own device, and never a device that is in this call.
            guard device != callerDevice, listener != connection, connections[listener]?.seat?.rid != seat.rid else { continue }
            ring.live[listener] = device
            out.append(.send(listener, Self.envelope(.incomingCall, rid: seat.rid, ts: nowMs, incoming)))
        }
        rings[seat.rid] = ring
        ringOutcomes[seat.rid] = nil
        remoteRings[seat.rid] = nil  // held here now
        out.append(.event(.ringing(rid: seat.rid, callId: request.callId)))
        out.append(.broadcast(.started(incoming, callerDevice: callerDevice)))
        out.append(
            .push(
                PushAlert(
                    rid: seat.rid, cid: seat.cid,
                    kind: .ring(callId: request.callId, caller: request.caller, expiresAtMs: ring.expiresAtMs, snapshotId: snapshotId),
                    // Devices that rang live are pushed to as well: a page in a hidden tab (or one the browser froze) rings
                    // nobody, and its service worker shows the notification only when no Duet page is in view.
                    excludedEndpoints: room.participants.compactMap(\.pushEndpoint),
                    excludedDevices: callerDevice.map { [$0] } ?? [])))
        sendRingState(seat.rid, to: connection, nowMs: nowMs, into: &out)
    }

    /// At most `RingLimits.perRoomInWindow` rings per room and `perCallerInWindow` per calling seat in the window.
    private mutating func admitRing(rid: String, caller: String, nowMs: Int64) throws(ProtocolError) {
        let roomKey = "room|" + rid
        let callerKey = "seat|" + rid + "|" + caller
        let since = nowMs - RingLimits.windowMs
        let roomStarts = (ringStarts[roomKey] ?? []).filter { $0 > since }
        let callerStarts = (ringStarts[callerKey] ?? []).filter { $0 > since }
        guard roomStarts.count < RingLimits.perRoomInWindow, callerStarts.count < RingLimits.perCallerInWindow else {
            throw ProtocolError(.rateLimited, "too many rings in this call lately; try again in a few minutes")
        }
        ringStarts[roomKey] = roomStarts + [nowMs]
        ringStarts[callerKey] = callerStarts + [nowMs]
    }

    mutating func ringCancel(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output])
        throws(ProtocolError)
    {
        let seat = try requireSeat(connection)
        let request = try envelope.payload.decode(RingCancelPayload.self)
        guard let ring = rings[seat.rid], ring.callId == request.callId, ring.callerCid == seat.cid else { return }  // over already
        endRing(seat.rid, .cancelled, nowMs: nowMs, into: &out)
    }

    /// The caller's connection came back (reattach or recovery): it learns where its ring is.
    mutating func resumeRing(rid: String, cid: String, connection: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        if rings[rid]?.callerCid == cid {
            sendRingState(rid, to: connection, nowMs: nowMs, into: &out)
        } else if let ended = ringOutcomes[rid], ended.callerCid == cid, ended.untilMs > nowMs {
            // It ended while the caller was away: say how, once.
            ringOutcomes[rid] = nil
            out.append(
                .send(
                    connection,
                    Self.envelope(
                        .ringState, rid: rid, cid: cid, ts: nowMs,
                        RingStatePayload(callId: ended.callId, state: ended.state, devices: ended.devices))))
        }
    }

    /// The room ended (its host, or the store said so): its ring is cancelled.
    mutating func roomGoneWhileRinging(_ rid: String, nowMs: Int64, into out: inout [Output]) {
        guard rings[rid] != nil else { return }
        endRing(rid, .cancelled, nowMs: nowMs, into: &out)
        ringOutcomes[rid] = nil  // nobody comes back to an ended room
    }

    /// Someone took a seat in a ringing room: if it is the other person, the ring is answered (however they came:
    /// the sheet, the notification, the link itself).
    mutating func seatTaken(rid: String, cid: String, nowMs: Int64, into out: inout [Output]) {
        guard let ring = rings[rid], ring.callerCid != cid else { return }
        endRing(rid, .accepted(by: nil), nowMs: nowMs, into: &out)
    }

    /// The caller's seat is gone (left, evicted, room ended): its ring is cancelled.
    mutating func callerGone(rid: String, cid: String, nowMs: Int64, into out: inout [Output]) {
        guard rings[rid]?.callerCid == cid else { return }
        endRing(rid, .cancelled, nowMs: nowMs, into: &out)
    }

    // MARK: Devices

    mutating func ringAnswer(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output])
        throws(ProtocolError)
    {
        var request = try envelope.payload.decode(RingAnswerPayload.self)
        if request.rid == nil { request.rid = envelope.rid }
        guard let rid = request.rid else { throw ProtocolError(.badRequest, "ring_answer needs rid") }
        let listening = self.listening[connection]?.rooms.contains(rid) == true
        guard listening || proves(request, nowMs: nowMs) else {
            throw ProtocolError(.notInRoom, "only a device that has been in this call may answer its rings")
        }
        // A ring another node holds: the answer goes there, from the device this connection listens as.
        if rings[rid] == nil, let remote = remoteRings[rid], remote.incoming.callId == request.callId,
            let device = listening ? self.listening[connection]?.device : request.deviceId
        {
            out.append(
                .broadcast(.answered(rid: rid, callId: request.callId, device: device, answer: request.answer, secret: request.secret)))
            return
        }
        answer(request, rid: rid, from: listening ? connection : nil, nowMs: nowMs, into: &out)
    }

    mutating func httpRingAnswer(_ request: RingAnswerPayload, nowMs: Int64, into out: inout [Output]) {
        guard let rid = request.rid, proves(request, nowMs: nowMs) else { return }
        answer(request, rid: rid, from: nil, nowMs: nowMs, into: &out)
    }

    /// Whether `token` is the member token of `deviceId` in `rid`: the device has been in this call.
    public func provesMember(rid: String, deviceId: String, token: String, nowMs: Int64) -> Bool {
        authorities.memberTokens.isValid(token, rid: rid, deviceId: deviceId, nowMs: nowMs)
    }

    /// Whether an answer without a listening connection proves its device's membership (`POST /api/ring/answer`).
    public func proves(_ request: RingAnswerPayload, nowMs: Int64) -> Bool {
        guard let rid = request.rid, let device = request.deviceId, let token = request.memberToken else { return false }
        return authorities.memberTokens.isValid(token, rid: rid, deviceId: device, nowMs: nowMs)
    }

    private mutating func answer(
        _ request: RingAnswerPayload, rid: String, from connection: ConnectionID?, nowMs: Int64, into out: inout [Output]
    ) {
        // A late answer (the ring ended, or another device answered first) changes nothing.
        guard let ring = rings[rid], ring.callId == request.callId else { return }
        if let device = request.deviceId ?? connection.flatMap({ listening[$0]?.device }), device == ring.callerDevice { return }
        // A ring with commitments counts only an answer that shows its secret (a member token alone is not the key).
        if let answers = ring.answers, !Self.reveals(request.secret, answers.commitment(for: request.answer)) { return }
        // An answer over HTTP from a device that also rang live counts as that page's: it hears `accepted`, not
        // "answered elsewhere" (a client answers both ways, and either may arrive first).
        let by = connection ?? ring.live.filter { $0.value == request.deviceId }.keys.min()
        switch request.answer {
        case .accept: endRing(rid, .accepted(by: by), nowMs: nowMs, into: &out)
        case .decline: endRing(rid, .declined, nowMs: nowMs, into: &out)
        }
    }

    // MARK: Pushes and time

    mutating func ringPushed(_ report: RingPushReport, nowMs: Int64, into out: inout [Output]) {
        guard var ring = rings[report.rid], ring.callId == report.callId else { return }
        ring.pushed.formUnion(report.reached)
        ring.pushesFinished = ring.pushesFinished || report.finished
        rings[report.rid] = ring
        if endIfUnreachable(report.rid, nowMs: nowMs, into: &out) { return }
        if let connection = callerConnection(report.rid) { sendRingState(report.rid, to: connection, nowMs: nowMs, into: &out) }
    }

    /// No device was reached live or by push, and (in a cluster) no other node said it rang one within the grace.
    private mutating func endIfUnreachable(_ rid: String, nowMs: Int64, into out: inout [Output]) -> Bool {
        guard let ring = rings[rid], ring.pushesFinished, ring.devices == 0, nowMs - ring.startedAtMs >= settings.remoteListenerGraceMs
        else {
            return false
        }
        endRing(rid, .unreachable, nowMs: nowMs, into: &out)
        return true
    }

    // MARK: Other nodes

    mutating func heard(_ message: RingBroadcast, nowMs: Int64, into out: inout [Output]) {
        switch message {
        case .started(let incoming, let callerDevice):
            let rid = incoming.rid
            // A room held here rings from here; a ring of a room held elsewhere rings this node's listeners.
            guard rooms[rid] == nil else { return }
            var remote = RemoteRing(incoming: incoming, callerDevice: callerDevice)
            for (listener, device) in (listeners[rid] ?? [:]).sorted(by: { $0.key < $1.key }) where device != callerDevice {
                remote.live[listener] = device
                out.append(.send(listener, Self.envelope(.incomingCall, rid: rid, ts: nowMs, incoming)))
            }
            remoteRings[rid] = remote
            for device in Set(remote.live.values).sorted() {
                out.append(.broadcast(.rang(rid: rid, callId: incoming.callId, device: device)))
            }
        case .ended(let rid, let callId, let reason):
            guard let remote = remoteRings[rid], remote.incoming.callId == callId else { return }
            remoteRings[rid] = nil
            for listener in remote.live.keys.sorted() where reachable(listener) {
                out.append(
                    .send(
                        listener, Self.envelope(.ringEnded, rid: rid, ts: nowMs, RingEndedPayload(rid: rid, callId: callId, reason: reason))
                    ))
            }
        case .rang(let rid, let callId, let device):
            guard var ring = rings[rid], ring.callId == callId, device != ring.callerDevice else { return }
            ring.remoteLive.insert(device)
            rings[rid] = ring
            if let connection = callerConnection(rid) { sendRingState(rid, to: connection, nowMs: nowMs, into: &out) }
        case .answered(let rid, let callId, let device, let answer, let secret):
            self.answer(
                RingAnswerPayload(rid: rid, callId: callId, answer: answer, deviceId: device, secret: secret), rid: rid, from: nil,
                nowMs: nowMs,
                into: &out)
        }
    }

    /// Whether `secret` (base64url) is the preimage of `commitment` (base64url SHA-256).
    static func reveals(_ secret: String?, _ commitment: String) -> Bool {
        guard let secret, secret.utf8.count <= 128, let bytes = Base64URL.decode(secret), bytes.count >= 16 else { return false }
        return Base64URL.encode(SHA256.hash(data: bytes)) == commitment
    }

    /// Once a second: rings past their time end as no answer; old ring starts are forgotten.
    mutating func expireRings(nowMs: Int64, into out: inout [Output]) {
        for rid in rings.keys.sorted() where rings[rid]!.expiresAtMs <= nowMs {
            endRing(rid, .noAnswer, nowMs: nowMs, into: &out)
        }
        for rid in rings.keys.sorted() { _ = endIfUnreachable(rid, nowMs: nowMs, into: &out) }
        // A remote ring whose end never arrived (a lost notification): its pages ended it themselves by now.
        remoteRings = remoteRings.filter { $0.value.incoming.expiresAt + RingLimits.remoteRingGraceMs > nowMs }
        ringOutcomes = ringOutcomes.filter { $0.value.untilMs > nowMs }
        // A budget refilled to the full burst is the same as none.
        joinAlertBudget = joinAlertBudget.filter {
            $0.value.tokens + Double(nowMs - $0.value.atMs) / Double(RingLimits.joinAlertIntervalMs) < RingLimits.joinAlertBurst
        }
        let since = nowMs - RingLimits.windowMs
        ringStarts = ringStarts.compactMapValues { starts in
            let kept = starts.filter { $0 > since }
            return kept.isEmpty ? nil : kept
        }
    }

    // MARK: Ending

    private mutating func endRing(_ rid: String, _ outcome: RingOutcome, nowMs: Int64, into out: inout [Output]) {
        guard let ring = rings.removeValue(forKey: rid) else { return }
        if let connection = callerConnection(rid, cid: ring.callerCid) {
            out.append(
                .send(
                    connection,
                    Self.envelope(
                        .ringState, rid: rid, cid: ring.callerCid, ts: nowMs,
                        RingStatePayload(callId: ring.callId, state: outcome.callerState, devices: ring.devices))))
        } else if outcome != .cancelled {
            // The caller's link is down: it hears how its ring ended when it reattaches.
            ringOutcomes[rid] = RingOutcomeMemory(
                callerCid: ring.callerCid, callId: ring.callId, state: outcome.callerState, devices: ring.devices,
                untilMs: nowMs + RingLimits.outcomeMemoryMs)
        }
        for listener in ring.live.keys.sorted() where reachable(listener) {
            let reason = outcome.deviceReason(for: listener)
            out.append(
                .send(
                    listener,
                    Self.envelope(.ringEnded, rid: rid, ts: nowMs, RingEndedPayload(rid: rid, callId: ring.callId, reason: reason))))
        }
        out.append(.event(.ringEnded(rid: rid, callId: ring.callId, outcome: outcome.callerState)))
        out.append(.broadcast(.ended(rid: rid, callId: ring.callId, reason: outcome.deviceReason(for: nil))))
        // The pushed devices: the same Topic replaces a ring not yet delivered, and the service worker closes the
        // notification whose tag is the call.
        out.append(
            .push(
                PushAlert(
                    rid: rid, cid: ring.callerCid, kind: .ringEnded(callId: ring.callId, reason: outcome.deviceReason(for: nil)),
                    excludedEndpoints: [], excludedDevices: ring.callerDevice.map { [$0] } ?? [])))
    }

    private func callerConnection(_ rid: String, cid: String? = nil) -> ConnectionID? {
        guard let cid = cid ?? rings[rid]?.callerCid else { return nil }
        return rooms[rid]?.participant(cid)?.connection
    }

    private func sendRingState(_ rid: String, to connection: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        guard let ring = rings[rid] else { return }
        out.append(
            .send(
                connection,
                Self.envelope(
                    .ringState, rid: rid, cid: ring.callerCid, ts: nowMs,
                    RingStatePayload(callId: ring.callId, state: "ringing", devices: ring.devices, expiresAt: ring.expiresAtMs))))
    }
}
