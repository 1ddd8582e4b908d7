import DuetProtocol

/// A connection handed from one core to another: the server's hub runs one core per shard of its rooms, and a
/// connection lives in the core of the room it joined (`SessionHub`). What moves is what the connection is, not what
/// it holds: its SSE sid and the rooms it watches. Its seat stays behind, given up as when a connection switches
/// rooms, because a seat belongs to its room's core; so does its listening, which is kept in the core of each room it
/// listens for wherever the connection is (`listenAsVisitor`).
public struct MovingConnection: Sendable {
    var state: ConnectionState
}

extension SignalingCore {
    /// Why `envelope` (a join) would be refused by this core — the room's — before anything changes, as the error to
    /// send; nil when it would be taken. Asked before a connection is moved here for it, so that a refused join leaves
    /// the connection, and its seat elsewhere, as they were (as one core does).
    public func joinRefusal(_ envelope: Envelope, nowMs: Int64) -> Envelope? {
        do throws(ProtocolError) {
            _ = try joinable(envelope)
            return nil
        } catch {
            return Self.errorEnvelope(error, rid: envelope.rid, nowMs: nowMs)
        }
    }

    /// The connection leaves this core for another, to join a room there with `join`. First what one core would do
    /// before that join: an SSE stream that must prove its seat does so (else `.unauthorized` and it stays here, nil),
    /// and a seat held here is given up (`switched_room`: its partner is told).
    /// `refusal`: what the room's core said of the join (`joinRefusal`); it is sent, and nothing moves.
    public mutating func handOver(
        _ connection: ConnectionID, for join: Envelope, refusal: Envelope?, nowMs: Int64
    ) -> (MovingConnection?, [Output]) {
        guard connections[connection] != nil else { return (nil, []) }
        guard provesWhatItMust(join, from: connection, nowMs: nowMs) else { return (nil, [.unauthorized(connection)]) }
        connections[connection]?.lastHeardMs = nowMs
        if let refusal { return (nil, [.send(connection, refusal)]) }
        var out: [Output] = []
        if let seat = connections[connection]?.seat {
            removeParticipant(seat.cid, from: seat.rid, reason: "switched_room", nowMs: nowMs, into: &out)
        }
        guard var state = connections.removeValue(forKey: connection) else { return (nil, out) }
        if let sid = state.sid, sseStreams[sid] == connection { sseStreams[sid] = nil }
        for rid in state.watchedRooms { unwatch(rid, connection) }
        state.seat = nil
        // What it listens for and was rung for here still reaches it, until it closes.
        visitors.insert(connection)
        return (MovingConnection(state: state), out)
    }

    /// A connection another core handed over (`handOver`): it watches here what it watched there. What it listens for
    /// in this core's rooms it listened for already, as a visitor.
    public mutating func takeOver(_ connection: ConnectionID, _ moving: MovingConnection) {
        let state = moving.state
        if let sid = state.sid { sseStreams[sid] = connection }
        for rid in state.watchedRooms { watchers[rid, default: []].insert(connection) }
        visitors.remove(connection)
        connections[connection] = state
    }
}

extension SignalingCore {
    /// A message of `connection` that another core serves (an answer to that core's ring): it was heard from now.
    public mutating func heard(from connection: ConnectionID, nowMs: Int64) { connections[connection]?.lastHeardMs = nowMs }

    /// Whether `connection` is an SSE stream that reused a seated sid and has not proven the seat yet: nothing it sends
    /// but that proof is served.
    public func mustProve(_ connection: ConnectionID) -> Bool { connections[connection]?.mustProveCid != nil }

    /// Whether this core has a stream of `sid` open, or a seat it holds (what a new stream of it is checked against).
    public func knows(sid: String) -> Bool { sseStreams[sid] != nil || sseSeats[sid] != nil }

    /// A drain's delay for each seated connection: room `i` of `n` (in id order) reconnects after
    /// `drainReconnectAfterMs + i · drainSpreadMs / n`, both of its clients alike. Unseated connections (a page watching
    /// rooms) get no entry: they reconnect after `drainReconnectAfterMs`.
    func drainDelays() -> [ConnectionID: Int64] {
        var byRoom: [String: [ConnectionID]] = [:]
        for (connection, state) in connections {
            if let rid = state.seat?.rid { byRoom[rid, default: []].append(connection) }
        }
        let rids = byRoom.keys.sorted()
        var delays: [ConnectionID: Int64] = [:]
        for (index, rid) in rids.enumerated() {
            let after = settings.drainReconnectAfterMs + Int64(index) * settings.drainSpreadMs / Int64(rids.count)
            for connection in byRoom[rid]! { delays[connection] = after }
        }
        return delays
    }

    /// What a released room's clients are told to wait before they reconnect to the node that claimed it.
    public static let releaseReconnectAfterMs: Int64 = 500

    /// What `drain` tells `connection` when it arrives from a core that had not drained yet.
    public func drainingNotice(for connection: ConnectionID, nowMs: Int64) -> Envelope {
        Self.envelope(
            .draining, ts: nowMs,
            DrainingPayload(reconnectAfterMs: settings.drainReconnectAfterMs, via: drainVia(for: connection)))
    }

    /// The node a seated connection's room moves to in a drain; nil for a connection in no room (it goes by the
    /// proxy's choice) or when there is no other node.
    func drainVia(for connection: ConnectionID) -> String? {
        guard let rid = connections[connection]?.seat?.rid else { return nil }
        return DrainRoute.successor(of: rid, among: drainSuccessors)
    }
}

extension MovingConnection {
    public var sid: String? { state.sid }
}
