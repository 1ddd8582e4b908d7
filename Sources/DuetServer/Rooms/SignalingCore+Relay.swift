import DuetProtocol

extension SignalingCore {
    /// offer / answer / ice reach the other participant verbatim, plus `payload.from`.
    mutating func relay(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        let seat = try requireSeat(connection)
        guard let room = rooms[seat.rid] else { throw ProtocolError(.notInRoom, "the room no longer exists") }
        let kind = envelope.type
        // Validate the shape only; what is relayed is the original payload, unknown fields included.
        if envelope.messageType == .ice {
            guard envelope.payload["candidate"] != nil else {
                throw ProtocolError(.badRequest, "payload.candidate: missing (use null for end-of-candidates)")
            }
            _ = try envelope.payload.decode(IcePayload.self)
        } else {
            _ = try envelope.payload.decode(SessionDescriptionPayload.self)
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
}
