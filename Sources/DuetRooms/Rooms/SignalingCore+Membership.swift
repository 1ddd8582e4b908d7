import DuetProtocol

extension SignalingCore {
    /// Signaling dropped: the seat is kept and the peer is told; media between peers is untouched.
    mutating func suspend(_ cid: String, in rid: String, nowMs: Int64, into out: inout [Output]) {
        guard let index = rooms[rid]?.index(of: cid), rooms[rid]!.participants[index].connection != nil else { return }
        rooms[rid]!.participants[index].connection = nil
        rooms[rid]!.participants[index].suspendedAt = nowMs
        seatCounts.suspended()
        rooms[rid]!.epoch += 1
        out.append(.event(.suspended(rid: rid, cid: cid)))
        broadcastRoomState(rid, nowMs: nowMs, into: &out)
        persistRoom(rid, into: &out)
    }

    mutating func removeParticipant(_ cid: String, from rid: String, reason: String, nowMs: Int64, into out: inout [Output]) {
        guard var room = rooms[rid], let index = room.index(of: cid) else { return }
        if let connection = room.participants[index].connection { connections[connection]?.seat = nil }
        for (sid, seatedCid) in sseSeats where seatedCid == cid { sseSeats[sid] = nil }
        seatCounts.removed(room.participants[index])
        room.participants.remove(at: index)
        out.append(.event(.left(rid: rid, cid: cid, reason: reason)))
        callerGone(rid: rid, cid: cid, nowMs: nowMs, into: &out)
        if room.participants.isEmpty {
            rooms[rid] = nil
        } else {
            if room.hostCid == cid { room.hostCid = room.participants[0].cid }
            room.epoch += 1
            rooms[rid] = room
            broadcastRoomState(rid, nowMs: nowMs, into: &out)
        }
        persistRoom(rid, into: &out)
        notifyWatchers(rid, nowMs: nowMs, into: &out)
    }

    mutating func endRoom(from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        let seat = try requireSeat(connection)
        guard let room = rooms[seat.rid], room.hostCid == seat.cid else {
            throw ProtocolError(.notHost, "only the host can end the room")
        }
        end(room.rid, seats: room.participants.map(\.cid), by: seat.cid, nowMs: nowMs, into: &out)
    }

    /// The host `cid` ends room `rid`, whose `seats` it knows of (`end_room`, or `POST /api/leave` with `end`).
    mutating func end(_ rid: String, seats: [String], by cid: String, nowMs: Int64, into out: inout [Output]) {
        // Their tokens outlive the tombstone: a seat of an ended room must never come back (as a ghost room
        // recreated by recovery), however long its owner was away.
        let ended = DurableFact.roomEnded(
            rid: rid, endedBy: cid, reason: "host_ended", tombstoneUntilMs: nowMs + settings.tombstoneMs,
            seats: seats.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } },
            seatsUntilMs: nowMs + max(settings.endedSeatMemoryMs, authorities.reconnectTokens.ttlMs + 1_000))
        applyRoomEnded(ended, learned: false, nowMs: nowMs, into: &out)
        out.append(.persist(ended))
    }

    /// Ends a room here and remembers it ended: the host's `end_room`, or the store saying another node's host
    /// ended it (or that it was ended before this node restarted).
    mutating func applyRoomEnded(_ fact: DurableFact, learned: Bool, nowMs: Int64, into out: inout [Output]) {
        guard case .roomEnded(let rid, let endedBy, let reason, let tombstoneUntil, let seats, let seatsUntil) = fact else { return }
        // A ring in an ended room is over: cancelled, while the caller can still be told.
        roomGoneWhileRinging(rid, nowMs: nowMs, into: &out)
        for cid in seats { endedSeats.insert("\(cid)|\(rid)", until: seatsUntil, nowMs: nowMs) }
        if tombstoneUntil > nowMs {
            tombstones[rid] = Tombstone(endedBy: endedBy, reason: reason, expiresAt: tombstoneUntil)
        }
        knownRooms[rid] = nil
        if let room = rooms[rid] {
            let payload = RoomEndedPayload(by: endedBy, reason: reason)
            for participant in room.participants {
                seatCounts.removed(participant)
                // A seat that joined here after the host ended it elsewhere is over all the same.
                endedSeats.insert("\(participant.cid)|\(rid)", until: seatsUntil, nowMs: nowMs)
                if let target = participant.connection {
                    connections[target]?.seat = nil
                    out.append(.send(target, Self.envelope(.roomEnded, rid: rid, cid: participant.cid, ts: nowMs, payload)))
                }
                for (sid, seatedCid) in sseSeats where seatedCid == participant.cid { sseSeats[sid] = nil }
            }
            rooms[rid] = nil
            // A suspended peer learns of the end when it reconnects: its join meets the tombstone.
            out.append(.event(.roomEnded(rid: rid)))
            // A copy here that was claimed after the host's node ended the room (a client that reached this node
            // before the news did) leaves no record behind.
            if learned { out.append(.persist(.roomGone(rid: rid))) }
        }
        notifyWatchers(rid, nowMs: nowMs, into: &out)
    }

    mutating func tick(nowMs: Int64, into out: inout [Output]) {
        if settings.closesSilentSSEStreams { closeSilentSSEStreams(nowMs: nowMs, into: &out) }
        for rid in rooms.keys.sorted() {
            let expired =
                rooms[rid]?.participants.filter { participant in
                    participant.suspendedAt.map { $0 + settings.evictionTimeoutMs <= nowMs } ?? false
                } ?? []
            for participant in expired {
                removeParticipant(participant.cid, from: rid, reason: "evicted", nowMs: nowMs, into: &out)
                // The seat was given up: a token issued for it must not bring it back (the owner joins anew).
                revoke(cid: participant.cid, rid: rid, nowMs: nowMs, into: &out)
            }
        }
        expireRings(nowMs: nowMs, into: &out)
        tombstones = tombstones.filter { $0.value.expiresAt > nowMs }
        revokedSeats.prune(nowMs: nowMs)
        endedSeats.prune(nowMs: nowMs)
    }

    /// `SSELiveness`: the seat is suspended now (the peer is told at once); the transport's own `closed`
    /// that follows the close finds nothing left to do.
    private mutating func closeSilentSSEStreams(nowMs: Int64, into out: inout [Output]) {
        let silent = connections.filter { $0.value.kind == .sse && SSELiveness.isSilent(lastHeardMs: $0.value.lastHeardMs, nowMs: nowMs) }
        for connection in silent.keys.sorted() {
            out.append(.close(connection, .silent))
            closed(connection, nowMs: nowMs, into: &out)
        }
    }

    mutating func revoke(cid: String, rid: String, nowMs: Int64, into out: inout [Output]) {
        let until = nowMs + authorities.reconnectTokens.ttlMs + 1_000
        revokedSeats.insert("\(cid)|\(rid)", until: until, nowMs: nowMs)
        out.append(.persist(.seatRevoked(rid: rid, cid: cid, untilMs: until)))
    }

    func seatsRoomEnded(cid: String, rid: String, nowMs: Int64) -> Bool {
        endedSeats.contains("\(cid)|\(rid)", nowMs: nowMs)
    }

    func isRevoked(cid: String, rid: String, nowMs: Int64) -> Bool {
        revokedSeats.contains("\(cid)|\(rid)", nowMs: nowMs)
    }

    func broadcastRoomState(_ rid: String, nowMs: Int64, into out: inout [Output]) {
        guard let room = rooms[rid] else { return }
        for participant in room.participants {
            guard let connection = participant.connection else { continue }
            out.append(
                .send(connection, Self.envelope(.roomState, rid: rid, cid: participant.cid, ts: nowMs, epoch: room.epoch, room.state)))
        }
    }

    // MARK: - watch_rooms

    mutating func watchRooms(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output])
        throws(ProtocolError)
    {
        let request = try validatedWatch(envelope)
        for rid in connections[connection]?.watchedRooms ?? [] { unwatch(rid, connection) }
        let rids = Set(request.rids)
        connections[connection]?.watchedRooms = rids
        var counts: [String: JSONValue] = [:]
        for rid in rids {
            watchers[rid, default: []].insert(connection)
            counts[rid] = .int(Int64(occupancy(of: rid)))
        }
        listen(request.listen, rids: rids, connection: connection, nowMs: nowMs, into: &out)
        out.append(.send(connection, Self.envelope(.roomStatuses, ts: nowMs, payload: .object(counts))))
    }

    /// A `watch_rooms` request, or why it is refused (nothing changes then).
    func validatedWatch(_ envelope: Envelope) throws(ProtocolError) -> WatchRoomsPayload {
        let request = try envelope.payload.decode(WatchRoomsPayload.self)
        guard request.rids.count <= ProtocolLimits.maxWatchedRooms else {
            throw ProtocolError(.badRequest, "watch at most \(ProtocolLimits.maxWatchedRooms) rooms")
        }
        if let bad = request.rids.first(where: { !authorities.roomIds.isAuthentic($0) }) {
            throw ProtocolError(.invalidRoomId, "\(bad.prefix(64)) is not a room id issued by this server")
        }
        return request
    }

    mutating func unwatch(_ rid: String, _ connection: ConnectionID) {
        watchers[rid]?.remove(connection)
        if watchers[rid]?.isEmpty == true { watchers[rid] = nil }
    }

    func notifyWatchers(_ rid: String, nowMs: Int64, into out: inout [Output]) {
        guard let targets = watchers[rid], !targets.isEmpty else { return }
        let update = RoomStatusUpdatePayload(rid: rid, count: occupancy(of: rid))
        for connection in targets.sorted() {
            out.append(.send(connection, Self.envelope(.roomStatusUpdate, rid: rid, ts: nowMs, update)))
        }
    }
}
