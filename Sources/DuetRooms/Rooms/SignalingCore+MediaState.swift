import DuetProtocol

extension SignalingCore {
    /// `media_state`: kept as the sender's last state (for `room_state`) and relayed to the other participant with
    /// `from`. Unlike offer/answer/ice it is state, not a message in a conversation: a peer that is absent or
    /// suspended learns it from the next `room_state`, so nothing is refused and no `relay_failed` is sent. It
    /// changes no membership, so the epoch stays and no `room_state` goes out for it.
    mutating func mediaState(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output])
        throws(ProtocolError)
    {
        let seat = try requireSeat(connection)
        guard var room = rooms[seat.rid], let index = room.index(of: seat.cid) else {
            throw ProtocolError(.notInRoom, "the room no longer exists")
        }
        // Decoded, not passed through: what is kept and repeated is exactly the three booleans, never a client's
        // extra fields, so a room's memory stays a few bytes per participant whatever a client sends.
        let state = try envelope.payload.decode(MediaState.self)
        room.participants[index].media = state
        rooms[seat.rid] = room
        guard var payload = try? JSONValue(encoding: state) else { return }
        payload["from"] = .string(seat.cid)
        for target in room.participants where target.cid != seat.cid {
            guard let targetConnection = target.connection else { continue }
            out.append(
                .send(
                    targetConnection, Envelope(.mediaState, rid: seat.rid, cid: target.cid, ts: nowMs, epoch: room.epoch, payload: payload))
            )
        }
    }
}
