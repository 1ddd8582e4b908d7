import DuetProtocol

/// The core's side of the durable store: what it writes (`persist`) and what it does with what the store says
/// (`learned`) — at start, and in a cluster when another node wrote something.
extension SignalingCore {
    /// After every change of a room's membership: the room as it is now (the first time, a claim), or gone.
    mutating func persistRoom(_ rid: String, into out: inout [Output]) {
        if let room = rooms[rid] {
            let seats = room.participants.count
            if room.claimed {
                out.append(.persist(.roomLive(rid: rid, hostCid: room.hostCid, epoch: room.epoch, occupancy: seats)))
            } else {
                rooms[rid]!.claimed = true
                out.append(.persist(.roomClaimed(rid: rid, hostCid: room.hostCid, epoch: room.epoch, occupancy: seats)))
            }
        } else {
            out.append(.persist(.roomGone(rid: rid)))
        }
    }

    mutating func learned(_ fact: DurableFact, nowMs: Int64, into out: inout [Output]) {
        // A room ended is ended: a record of it held somewhere (claimed by a node that had not heard yet, or loaded
        // beside the end) neither moves nor counts.
        if tombstones[fact.rid] != nil, !fact.isEnd { return }
        switch fact {
        case .roomEnded:
            applyRoomEnded(fact, learned: true, nowMs: nowMs, into: &out)
        case .seatRevoked(let rid, let cid, let until):
            revokedSeats.insert("\(cid)|\(rid)", until: until, nowMs: nowMs)
            // Left on another node while a stale copy of the seat is still here: it is over here too.
            if rooms[rid]?.participant(cid) != nil {
                removeParticipant(cid, from: rid, reason: "left_elsewhere", nowMs: nowMs, into: &out)
            }
        case .roomClaimed(let rid, let hostCid, let epoch, let seats):
            // Another node began to hold the room (nginx routes its id there now): a copy here would split the
            // call, so its clients are sent there.
            release(rid, nowMs: nowMs, into: &out)
            remember(rid, KnownRoom(hostCid: hostCid, epoch: epoch, occupancy: seats), nowMs: nowMs, into: &out)
        case .roomLive(let rid, let hostCid, let epoch, let seats):
            // An update is never a reason to give a room up: it may come from a node that lost the room and has
            // not heard of it yet (only a claim moves a room). A remembered room (no seat: this node's own record
            // from before a restart) changes nothing for a room held here either.
            guard rooms[rid] == nil else { return }
            remember(rid, KnownRoom(hostCid: hostCid, epoch: epoch, occupancy: seats), nowMs: nowMs, into: &out)
        case .roomGone(let rid):
            // Emptied elsewhere; a room held here is this node's to keep.
            guard rooms[rid] == nil, knownRooms.removeValue(forKey: rid) != nil else { return }
            notifyWatchers(rid, nowMs: nowMs, into: &out)
        }
    }

    /// A room held elsewhere (or remembered): its occupancy is what watchers here see.
    private mutating func remember(_ rid: String, _ room: KnownRoom, nowMs: Int64, into out: inout [Output]) {
        let before = occupancy(of: rid)
        if knownRooms[rid] != nil || knownRooms.count < settings.maxKnownRooms { knownRooms[rid] = room }
        if occupancy(of: rid) != before { notifyWatchers(rid, nowMs: nowMs, into: &out) }
    }

    /// Gives a room up to the node that claimed it: every connected seat is told to reconnect (`draining`) and
    /// closed; no seat is revoked. `roomGone` is written: it removes only this node's own record, so it never touches
    /// the claimant's — but it replaces a claim of ours still queued, which would otherwise take the record back after
    /// the other node's claim and make it give the room up too.
    private mutating func release(_ rid: String, nowMs: Int64, into out: inout [Output]) {
        guard let room = rooms.removeValue(forKey: rid) else { return }
        // The room goes to another node, and its ring with it: the caller rings again there after its recovered join.
        // Nothing is said here: an end sent from this node would close the notification of that new ring.
        rings[rid] = nil
        // Not 0: the clients take it exactly (no backoff under it since issue 53), and should two nodes keep claiming
        // a room, the clients must not bounce between them as fast as the network allows (before, the backoff's
        // ~500 ms floor paced it).
        let payload = DrainingPayload(reconnectAfterMs: Self.releaseReconnectAfterMs)
        for participant in room.participants {
            seatCounts.removed(participant)
            if let connection = participant.connection {
                connections[connection]?.seat = nil
                out.append(.send(connection, Self.envelope(.draining, rid: rid, cid: participant.cid, ts: nowMs, payload)))
                out.append(.close(connection, .moved))
            }
            for (sid, seatedCid) in sseSeats where seatedCid == participant.cid { sseSeats[sid] = nil }
        }
        out.append(.event(.released(rid: rid)))
        out.append(.persist(.roomGone(rid: rid)))
    }
}

extension DurableFact {
    var isEnd: Bool { if case .roomEnded = self { true } else { false } }
}
