import DuetProtocol

extension SignalingCore {
    mutating func join(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        let (rid, request) = try joinable(envelope)
        connections[connection]?.joinDevice = request.deviceId.flatMap { RingLimits.isValidId($0, minimum: 16) ? $0 : nil }
        // A re-sent join (join recovery) on a connection that already holds the seat is answered
        // again, never given a second seat.
        if let seat = connections[connection]?.seat, seat.rid == rid,
            request.reconnectCid == nil || request.reconnectToken == nil || request.reconnectCid == seat.cid
        {
            sendJoined(cid: seat.cid, rid: rid, kind: .reattached, to: connection, nowMs: nowMs, into: &out)
            if let room = rooms[rid] {
                out.append(.send(connection, Self.envelope(.roomState, rid: rid, cid: seat.cid, ts: nowMs, epoch: room.epoch, room.state)))
            }
            return
        }
        if let seat = connections[connection]?.seat {
            // Joining another room from the same connection leaves the first one.
            removeParticipant(seat.cid, from: seat.rid, reason: "switched_room", nowMs: nowMs, into: &out)
        }
        // A reconnectCid without a token proves nothing: it is answered as a fresh join (a new seat), as the seed
        // system's clients expect, instead of an error that leaves the socket without a seat.
        if let reconnectCid = request.reconnectCid, let token = request.reconnectToken {
            try rejoin(cid: reconnectCid, token: token, rid: rid, connection: connection, nowMs: nowMs, into: &out)
        } else {
            try joinFresh(rid: rid, connection: connection, nowMs: nowMs, into: &out)
        }
        guard let cid = connections[connection]?.seat?.cid, let index = rooms[rid]?.index(of: cid) else { return }
        if let endpoint = request.pushEndpoint, !endpoint.isEmpty, endpoint.utf8.count <= PushAlert.maxEndpointBytes {
            rooms[rid]!.participants[index].pushEndpoint = endpoint
        }
        if let device = connections[connection]?.joinDevice { rooms[rid]!.participants[index].deviceId = device }
        // Ringing: the other person arriving answers a ring; the caller coming back learns where its ring is.
        seatTaken(rid: rid, cid: cid, nowMs: nowMs, into: &out)
        resumeRing(rid: rid, cid: cid, connection: connection, nowMs: nowMs, into: &out)
        // The seed's join alert: someone arrived; the room's devices that are not in it hear of it by push. Only a
        // new seat: a reconnect is the same person coming back, not news.
        if request.reconnectToken == nil || request.reconnectCid == nil, request.alert != false, takeJoinAlert(rid, nowMs: nowMs) {
            let snapshotId = request.snapshotId.flatMap { PushAlert.isValidSnapshotId($0) ? $0 : nil }
            // Devices in the room now are not told what they can see: by the endpoint they said, or by their id.
            out.append(
                .push(
                    PushAlert(
                        rid: rid, cid: cid, kind: .joined(snapshotId: snapshotId),
                        excludedEndpoints: rooms[rid]!.participants.compactMap(\.pushEndpoint),
                        excludedDevices: rooms[rid]!.participants.compactMap(\.deviceId))))
        }
    }

    /// What a join must be before anything changes: a room id issued here, a well-formed payload, a room not ended.
    /// The hub's shards ask the room's shard this before they move a connection to it (`handOver`).
    func joinable(_ envelope: Envelope) throws(ProtocolError) -> (rid: String, request: JoinPayload) {
        guard let rid = envelope.rid else { throw ProtocolError(.badRequest, "join needs rid in the envelope") }
        guard authorities.roomIds.isAuthentic(rid) else {
            throw ProtocolError(.invalidRoomId, "\(rid.prefix(64)) is not a room id issued by this server")
        }
        let request = try envelope.payload.decode(JoinPayload.self)
        if let tombstone = tombstones[rid] {
            throw ProtocolError(.roomEnded, "this room was ended (\(tombstone.reason))")
        }
        return (rid, request)
    }

    /// A join alert from the room's budget (`RingLimits.joinAlertBurst`, refilled one per interval).
    private mutating func takeJoinAlert(_ rid: String, nowMs: Int64) -> Bool {
        var budget = joinAlertBudget[rid] ?? (RingLimits.joinAlertBurst, nowMs)
        budget.tokens = min(RingLimits.joinAlertBurst, budget.tokens + Double(nowMs - budget.atMs) / Double(RingLimits.joinAlertIntervalMs))
        budget.atMs = nowMs
        guard budget.tokens >= 1 else {
            joinAlertBudget[rid] = budget
            return false
        }
        budget.tokens -= 1
        joinAlertBudget[rid] = budget
        return true
    }

    private mutating func joinFresh(rid: String, connection: ConnectionID, nowMs: Int64, into out: inout [Output]) throws(ProtocolError) {
        if rooms[rid]?.isFull == true {
            throw ProtocolError(.roomFull, "this room already has \(ProtocolLimits.maxParticipants) participants")
        }
        let cid = makeCid(in: rid)
        seat(cid: cid, rid: rid, connection: connection, nowMs: nowMs)
        announceJoin(cid: cid, rid: rid, kind: .fresh, connection: connection, nowMs: nowMs, into: &out)
    }

    private mutating func rejoin(cid: String, token: String, rid: String, connection: ConnectionID, nowMs: Int64, into out: inout [Output])
        throws(ProtocolError)
    {
        switch authorities.reconnectTokens.verify(token, cid: cid, rid: rid, nowMs: nowMs) {
        case .valid:
            if seatsRoomEnded(cid: cid, rid: rid, nowMs: nowMs) {
                throw ProtocolError(.roomEnded, "this room was ended by its host")
            }
            if isRevoked(cid: cid, rid: rid, nowMs: nowMs) {
                throw ProtocolError(
                    .invalidReconnectToken, "this seat was left or given up after its owner was away too long; join without reconnectCid")
            }
        case .expired:
            // Authentic but old: its owner was away a long time. If the room was ended meanwhile, say so.
            if seatsRoomEnded(cid: cid, rid: rid, nowMs: nowMs) {
                throw ProtocolError(.roomEnded, "this room was ended by its host")
            }
            throw ProtocolError(.invalidReconnectToken, "the reconnect token has expired; join without reconnectCid")
        case .forged, .malformed:
            throw ProtocolError(.invalidReconnectToken, "the reconnect token is not valid for this participant and room")
        }
        if let index = rooms[rid]?.index(of: cid) {
            // Reattach: the newest proven transport wins; the old one is closed, the seat kept.
            if let old = rooms[rid]!.participants[index].connection, old != connection {
                connections[old]?.seat = nil
                out.append(.close(old, .replaced))
            }
            if rooms[rid]!.participants[index].connection == nil { seatCounts.resumed() }
            rooms[rid]!.participants[index].connection = connection
            rooms[rid]!.participants[index].suspendedAt = nil
            rooms[rid]!.epoch += 1
            bindSeat(cid: cid, rid: rid, connection: connection)
            announceJoin(cid: cid, rid: rid, kind: .reattached, connection: connection, nowMs: nowMs, into: &out)
            return
        }
        // The server no longer has this seat (it restarted; an evicted seat was revoked above): recreate it, same cid.
        if rooms[rid]?.isFull == true {
            throw ProtocolError(.roomFull, "this room already has \(ProtocolLimits.maxParticipants) participants")
        }
        seat(cid: cid, rid: rid, connection: connection, nowMs: nowMs)
        announceJoin(cid: cid, rid: rid, kind: .recovered, connection: connection, nowMs: nowMs, into: &out)
    }

    private mutating func seat(cid: String, rid: String, connection: ConnectionID, nowMs: Int64) {
        let participant = Participant(cid: cid, joinedAt: nowMs, connection: connection, suspendedAt: nil)
        seatCounts.connected += 1
        if rooms[rid] == nil {
            // A room the store knows (held here before a restart, or by a node that is gone) continues: its epoch
            // goes on from the last one written, and its host gets the room back when it returns.
            let known = knownRooms.removeValue(forKey: rid)
            var room = Room(rid: rid, hostCid: cid, participants: [participant], epoch: (known?.epoch ?? 0) + 1)
            // Held here now: a ring another node held for it is over for this node's listeners (answers would go nowhere).
            remoteRings[rid] = nil
            if let host = known?.hostCid, host != cid { room.returningHost = host }
            rooms[rid] = room
        } else {
            rooms[rid]!.participants.append(participant)
            rooms[rid]!.epoch += 1
            if rooms[rid]!.returningHost == cid {
                rooms[rid]!.hostCid = cid
                rooms[rid]!.returningHost = nil
            }
        }
        bindSeat(cid: cid, rid: rid, connection: connection)
    }

    private mutating func bindSeat(cid: String, rid: String, connection: ConnectionID) {
        connections[connection]?.seat = (rid, cid)
        if let sid = connections[connection]?.sid { sseSeats[sid] = cid }
    }

    private mutating func announceJoin(
        cid: String, rid: String, kind: ReconnectKind, connection: ConnectionID, nowMs: Int64, into out: inout [Output]
    ) {
        out.append(.event(.joined(rid: rid, cid: cid, kind: kind)))
        sendJoined(cid: cid, rid: rid, kind: kind, to: connection, nowMs: nowMs, into: &out)
        broadcastRoomState(rid, nowMs: nowMs, into: &out)
        persistRoom(rid, into: &out)
        notifyWatchers(rid, nowMs: nowMs, into: &out)
    }

    private func sendJoined(
        cid: String, rid: String, kind: ReconnectKind, to connection: ConnectionID, nowMs: Int64, into out: inout [Output]
    ) {
        guard let room = rooms[rid] else { return }
        let turn = authorities.turnTokens.issue(rid: rid, cid: cid, nowMs: nowMs)
        let payload = JoinedPayload(
            hostCid: room.hostCid, participants: room.participants.map(\.info),
            maxParticipants: ProtocolLimits.maxParticipants, reconnect: kind, epoch: room.epoch,
            reconnectToken: authorities.reconnectTokens.issue(cid: cid, rid: rid, nowMs: nowMs),
            reconnectTokenTTLMs: authorities.reconnectTokens.ttlMs, turnToken: turn.token,
            turnTokenExpiresAt: turn.expiresAt, turnTokenTTLMs: authorities.turnTokens.ttlMs,
            memberToken: connections[connection]?.joinDevice.map { authorities.memberTokens.issue(rid: rid, deviceId: $0, nowMs: nowMs) },
            memberTokenTTLMs: connections[connection]?.joinDevice.map { _ in authorities.memberTokens.ttlMs })
        var joined = Self.envelope(.joined, rid: rid, cid: cid, ts: nowMs, epoch: room.epoch, payload)
        joined.sid = connections[connection]?.sid
        out.append(.send(connection, joined))
    }
}
