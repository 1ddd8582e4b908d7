import Crypto
import DuetProtocol

/// All room and session logic of the server as a pure value: every input returns the outputs to
/// perform (messages to send, connections to close). No I/O, no clock (time comes in `nowMs`), no
/// tasks — so the same logic runs in the real server and, deterministically, in the simulator.
public struct SignalingCore: Sendable {
    public struct Settings: Sendable {
        public var evictionTimeoutMs: Int64 = 10 * 60_000
        public var tombstoneMs: Int64 = 5 * 60_000
        /// How long a seat of an ended room keeps answering `ROOM_ENDED`, even to an expired token: its owner
        /// may come back long after the tombstone (5 min) and its token (20 min) ran out, and must be told the
        /// call is over rather than be seated in a new, empty room under the old link.
        public var endedSeatMemoryMs: Int64 = 60 * 60_000
        /// The first room's delay in a drain (issue 53: 0 — the client's delay was 1 to 2 s of a drain's 2.4 s, measured
        /// by `rolling.py`; the spread alone keeps the rooms from arriving at once).
        public var drainReconnectAfterMs: Int64 = 0
        /// A drain spreads its rooms' reconnects over this much after `drainReconnectAfterMs` (issue 34: the clients of a
        /// stopping node must not all reach the next one in the same instant). Both clients of a room get the same delay,
        /// so that they arrive together and the room is whole on its new node.
        public var drainSpreadMs: Int64 = 1_000
        /// `SSELiveness`: silent SSE streams are closed and their seats suspended. Off only in the simulator's
        /// `sseLivenessRemoved` mutation, which proves the rule is needed.
        public var closesSilentSSEStreams = true
        /// Revoked seats and seats of ended rooms remembered at most (each); the oldest are forgotten first.
        public var maxRememberedSeats = 200_000
        /// Rooms known from the store and not held here (their host, epoch and occupancy) at most.
        public var maxKnownRooms = 200_000
        /// How long a ring rings before it is "no answer" (issue 31; tests make it short).
        public var ringTimeoutMs: Int64 = RingLimits.ringTimeoutMs
        /// In a cluster, how long a ring whose pushes reached nobody still waits for another node to say it rang a page
        /// live (`RingBroadcast.rang`) before it is `unreachable`. 0 on a single node: nobody else can.
        public var remoteListenerGraceMs: Int64 = 0
        public init() {}
    }

    public struct Authorities: Sendable {
        public var roomIds: RoomIdAuthority
        public var reconnectTokens: ReconnectTokenAuthority
        public var turnTokens: TurnTokenAuthority
        public var memberTokens: MemberTokenAuthority
        /// `memberTokens` nil: a key of its own for this process (tests and the simulator, where nothing outlives it).
        public init(
            roomIds: RoomIdAuthority, reconnectTokens: ReconnectTokenAuthority, turnTokens: TurnTokenAuthority,
            memberTokens: MemberTokenAuthority? = nil
        ) {
            self.roomIds = roomIds
            self.reconnectTokens = reconnectTokens
            self.turnTokens = turnTokens
            self.memberTokens = memberTokens ?? MemberTokenAuthority(key: SymmetricKey(size: .bits256))
        }
    }

    public enum Input: Sendable {
        case opened(ConnectionID, TransportKind, sid: String?)
        case message(ConnectionID, Envelope)
        case closed(ConnectionID)
        /// The transport refused `Envelope` for this connection (its client stopped reading) and is being cut off.
        case undeliverable(ConnectionID, Envelope)
        /// Periodic: evictions and expiries.
        case tick
        /// Graceful shutdown: every connection is told `draining`; each room's with the node of `successors` it moves
        /// to (`DrainRoute`; the cluster's other live nodes, empty on a node alone).
        case drain(successors: [String])
        /// What the store knows: at start (everything in force), then, in a cluster, whatever another node wrote.
        case learned(DurableFact)
        /// How a ring's pushes went (from the push dispatcher).
        case ringPushed(RingPushReport)
        /// `POST /api/ring/answer`: a device without a signaling connection (a notification's button) answers.
        case httpRingAnswer(RingAnswerPayload)
        /// What another node of the cluster said of a ring (`RingBroadcast`).
        case heard(RingBroadcast)
    }

    public enum CloseReason: String, Sendable {
        /// The client stopped reading: its queue reached the bound (`undeliverable`).
        case notReading = "not_reading"
        /// A newer, proven transport took over this participant.
        case replaced
        /// A newer stream of the same SSE session took over while this one held no seat. Not `replaced`: no seat was
        /// taken, and the stream ended may be the one its page still wants (two of a page's attempts meeting the
        /// server in the other order), so its client reconnects rather than ending the call as for another tab.
        case superseded
        /// An SSE stream whose sid sent nothing for `SSELiveness.silenceLimitMs`: its client is gone.
        case silent
        case rateLimited = "rate_limited"
        case shutdown
        /// Another node took this connection's room over (nginx now routes it there): reconnect, and arrive there.
        case moved
    }

    public enum Output: Sendable, Equatable {
        case send(ConnectionID, Envelope)
        case close(ConnectionID, CloseReason)
        /// Refuse the POST that carried the message (SSE sid takeover without proof): HTTP 401.
        case unauthorized(ConnectionID)
        case event(Event)
        /// To be written to the store, off the relay path (`DurableFact`).
        case persist(DurableFact)
        /// To be sent by Web Push to the room's subscribed devices, off the relay path (`PushAlert`).
        case push(PushAlert)
        /// To be told to the other nodes of a cluster (nowhere on a single node).
        case broadcast(RingBroadcast)
    }

    /// What the push dispatcher reports of a ring's pushes (`Input.ringPushed`).
    public struct RingPushReport: Sendable, Equatable {
        public var rid: String
        public var callId: String
        /// Devices (ids, or endpoints for subscriptions without one) whose push service accepted the ring.
        public var reached: [String]
        /// Every push of this ring has ended (delivered or not).
        public var finished: Bool
        public init(rid: String, callId: String, reached: [String], finished: Bool) {
            self.rid = rid
            self.callId = callId
            self.reached = reached
            self.finished = finished
        }
    }

    /// Facts for logs and metrics.
    public enum Event: Sendable, Equatable {
        case joined(rid: String, cid: String, kind: ReconnectKind)
        case suspended(rid: String, cid: String)
        case left(rid: String, cid: String, reason: String)
        case roomEnded(rid: String)
        /// Another node claimed the room: its clients here were told to reconnect (and arrive there).
        case released(rid: String)
        /// Issue 31: a ring started, and how it ended (`accepted`, `declined`, `no_answer`, `cancelled`, `unreachable`).
        case ringing(rid: String, callId: String)
        case ringEnded(rid: String, callId: String, outcome: String)
    }

    public var settings: Settings
    let authorities: Authorities
    var rooms: [String: Room] = [:]
    var tombstones: [String: Tombstone] = [:]
    var connections: [ConnectionID: ConnectionState] = [:]
    /// sid → the newest SSE stream using it; POSTs are delivered there.
    var sseStreams: [String: ConnectionID] = [:]
    /// sid → the seat it last held, so that reusing a sid cannot take the seat over.
    var sseSeats: [String: String] = [:]
    /// "cid|rid" until the revocation no longer matters (the token expired anyway).
    var revokedSeats: ExpiringKeys
    /// "cid|rid" of seats whose room was ended by its host, until their tokens have surely expired.
    var endedSeats: ExpiringKeys
    var watchers: [String: Set<ConnectionID>] = [:]
    /// rid → the connections that listen for its rings (`watch_rooms` with a valid member token), with their device.
    var listeners: [String: [ConnectionID: String]] = [:]
    /// Connection → the device it listens as and the rooms of this core it listens for: the same as `listeners`, by
    /// connection. Not part of `connections`: with several cores (`shard`), a connection listens in the core of each
    /// room it listens for, wherever the connection itself is held (a visitor of this core: `listenAsVisitor`).
    var listening: [ConnectionID: Listening] = [:]
    /// Connections another core holds that listen here or were held here once (`listenAsVisitor`, `handOver`), until
    /// they close: a ring of this core's rooms that rang one tells it how the ring ends, as it tells a connection of its
    /// own, even if it stopped listening meanwhile.
    var visitors: Set<ConnectionID> = []
    /// The rooms this core may hold listeners for: every room, unless the server runs a core per shard of its rooms.
    public var shard: RoomShard = .whole
    /// rid → the ring in progress there (one at a time).
    var rings: [String: Ring] = [:]
    /// rid → a ring another node holds, for this node's listeners of the room (`RingBroadcast`).
    var remoteRings: [String: RemoteRing] = [:]
    /// When rings were started, per room and per calling seat, within `RingLimits.windowMs` (pruned on tick).
    var ringStarts: [String: [Int64]] = [:]
    /// rid → how the room's last ring ended, for its caller, until `RingLimits.outcomeMemoryMs` (pruned on tick): a
    /// caller whose link was down when it ended learns it when it comes back.
    var ringOutcomes: [String: RingOutcomeMemory] = [:]
    /// rid → its join alerts' budget (pruned on tick once full again): `RingLimits.joinAlertBurst` at once, then one
    /// per `RingLimits.joinAlertIntervalMs`.
    var joinAlertBudget: [String: (tokens: Double, atMs: Int64)] = [:]
    var seatCounts = SeatCounts()
    /// Rooms the store told of that are not held here: live on another node (their occupancy is what watchers
    /// here see), or held here before a restart (their host and epoch continue when the room is recovered).
    var knownRooms: [String: KnownRoom] = [:]
    var ids: IdRandomness
    public private(set) var isDraining = false
    /// The nodes a drain sends rooms to (`drain(successors:)`), for connections that arrive after it.
    var drainSuccessors: [String] = []

    /// Where participant ids come from. A cid is public (peers see it) but must not predict the next one, so the
    /// server draws them from the system's CSPRNG; the simulator seeds a small PRNG to replay a run exactly.
    public enum IdRandomness: Sendable {
        case system
        case seeded(UInt64)
    }

    public init(settings: Settings, authorities: Authorities, ids: IdRandomness) {
        self.settings = settings
        self.authorities = authorities
        self.ids = ids
        self.revokedSeats = ExpiringKeys(capacity: settings.maxRememberedSeats)
        self.endedSeats = ExpiringKeys(capacity: settings.maxRememberedSeats)
    }

    /// Deterministic ids (simulator, tests).
    public init(settings: Settings, authorities: Authorities, seed: UInt64) {
        self.init(settings: settings, authorities: authorities, ids: .seeded(seed))
    }

    public mutating func handle(_ input: Input, nowMs: Int64) -> [Output] {
        var out: [Output] = []
        switch input {
        case .opened(let connection, let kind, let sid):
            opened(connection, kind: kind, sid: sid, nowMs: nowMs, into: &out)
        case .message(let connection, let envelope):
            guard connections[connection] != nil else { return [] }
            message(envelope, from: connection, nowMs: nowMs, into: &out)
        case .closed(let connection):
            closed(connection, nowMs: nowMs, into: &out)
        case .undeliverable(let connection, let envelope):
            undeliverable(envelope, to: connection, nowMs: nowMs, into: &out)
        case .tick:
            tick(nowMs: nowMs, into: &out)
        case .learned(let fact):
            learned(fact, nowMs: nowMs, into: &out)
        case .ringPushed(let report):
            ringPushed(report, nowMs: nowMs, into: &out)
        case .httpRingAnswer(let answer):
            httpRingAnswer(answer, nowMs: nowMs, into: &out)
        case .heard(let message):
            heard(message, nowMs: nowMs, into: &out)
        case .drain(let successors):
            isDraining = true
            drainSuccessors = successors
            let delays = drainDelays()
            for connection in connections.keys.sorted() {
                let after = delays[connection] ?? settings.drainReconnectAfterMs
                let payload = DrainingPayload(reconnectAfterMs: after, via: drainVia(for: connection))
                out.append(.send(connection, Self.envelope(.draining, ts: nowMs, payload)))
            }
        }
        return out
    }

    /// `POST /api/leave`: leave on behalf of a participant that has no transport.
    public enum HTTPLeaveResult: Sendable, Equatable { case left, invalidToken }
    public mutating func httpLeave(_ request: LeaveRequest, nowMs: Int64) -> (HTTPLeaveResult, [Output]) {
        guard case .valid = authorities.reconnectTokens.verify(request.reconnectToken, cid: request.cid, rid: request.rid, nowMs: nowMs)
        else {
            return (.invalidToken, [])
        }
        var out: [Output] = []
        // The host's end_room, said over HTTP: also by a host whose seat the room keeps for its return (after a restart
        // the guest may be back first), and for a room this node knows only from the store (held before a restart, or
        // by a node that is gone): the fact ends it wherever it is held.
        if request.end == true, !isRevoked(cid: request.cid, rid: request.rid, nowMs: nowMs),
            !seatsRoomEnded(cid: request.cid, rid: request.rid, nowMs: nowMs)
        {
            if let room = rooms[request.rid],
                (room.hostCid == request.cid && room.participant(request.cid) != nil) || room.returningHost == request.cid
            {
                end(request.rid, seats: room.participants.map(\.cid) + [request.cid], by: request.cid, nowMs: nowMs, into: &out)
                return (.left, out)
            }
            if rooms[request.rid] == nil, knownRooms[request.rid]?.hostCid == request.cid {
                end(request.rid, seats: [request.cid], by: request.cid, nowMs: nowMs, into: &out)
                return (.left, out)
            }
        }
        if rooms[request.rid]?.participant(request.cid) != nil {
            removeParticipant(request.cid, from: request.rid, reason: "leave", nowMs: nowMs, into: &out)
        }
        revoke(cid: request.cid, rid: request.rid, nowMs: nowMs, into: &out)
        return (.left, out)
    }

    /// Whether `token` proves a seat in `rid` held by `cid` now or lately (within the token's life), that was neither
    /// left nor ended: what HTTP requests acting for a participant (a push subscription) must show. A room id alone
    /// proves nothing: it travels in links, URLs and logs.
    public func provesSeat(rid: String, cid: String, token: String, nowMs: Int64) -> Bool {
        guard case .valid = authorities.reconnectTokens.verify(token, cid: cid, rid: rid, nowMs: nowMs) else { return false }
        return !isRevoked(cid: cid, rid: rid, nowMs: nowMs) && !seatsRoomEnded(cid: cid, rid: rid, nowMs: nowMs) && tombstones[rid] == nil
    }

    // MARK: - Read-only views (metrics, tests)

    /// The authorities, for tests that issue what a client would have been given.
    var authoritiesForTests: Authorities { authorities }

    public var roomCount: Int { rooms.count }
    public var connectionCount: Int { connections.count }
    /// Whether the core still counts this connection as open (the simulator's liveness invariant asks).
    public func isOpen(_ connection: ConnectionID) -> Bool { connections[connection] != nil }
    /// Kept as seats change, so `/metrics` reads two numbers instead of walking every room under the hub's lock.
    public func participantCount(_ status: ParticipantConnectionStatus) -> Int {
        status == .connected ? seatCounts.connected : seatCounts.suspendedCount
    }
    /// The same counts by walking every room: what `seatCounts` must always equal (tests and the simulator check).
    /// Revoked seats and seats of ended rooms remembered now (bounded by `Settings.maxRememberedSeats`).
    public var rememberedSeats: (revoked: Int, ended: Int) { (revokedSeats.count, endedSeats.count) }
    public func participantCountByWalk(_ status: ParticipantConnectionStatus) -> Int {
        rooms.values.reduce(0) { $0 + $1.participants.filter { $0.status == status }.count }
    }
    /// Seats of a room held here, else as the store last told of it (a room on another node of the cluster).
    public func occupancy(of rid: String) -> Int { rooms[rid]?.participants.count ?? knownRooms[rid]?.occupancy ?? 0 }
    /// Whether this seat exists now, connected or suspended (TURN credentials are only for a seat).
    public func hasSeat(rid: String, cid: String) -> Bool { rooms[rid]?.participant(cid) != nil }
    /// Who sits in a room (join order) and who hosts it.
    public func roomView(_ rid: String) -> (cids: [String], host: String)? {
        rooms[rid].map { ($0.participants.map(\.cid), $0.hostCid) }
    }

    // MARK: - Connections

    private mutating func opened(_ connection: ConnectionID, kind: TransportKind, sid: String?, nowMs: Int64, into out: inout [Output]) {
        var state = ConnectionState(kind: kind, sid: sid, nowMs: nowMs)
        if let sid {
            if let previous = sseStreams[sid], previous != connection, connections[previous]?.seat == nil {
                // Nothing to protect: the newer stream simply takes over, and the older one's client, if it still wants
                // it, reconnects (after a long outage, a page's abandoned attempt and its next one reached the server
                // in the other order: a `replaced` ended the call of the page whose live stream it was, run
                // 20261206T105639Z-189218, cut-2min).
                out.append(.close(previous, .superseded))
            }
            if let seatedCid = sseSeats[sid] {
                state.mustProveCid = seatedCid
            }
            sseStreams[sid] = connection
        }
        connections[connection] = state
    }

    mutating func closed(_ connection: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        guard let state = connections.removeValue(forKey: connection) else { return }
        if let sid = state.sid, sseStreams[sid] == connection { sseStreams[sid] = nil }
        for rid in state.watchedRooms { unwatch(rid, connection) }
        stopListening(connection)
        if let seat = state.seat { suspend(seat.cid, in: seat.rid, nowMs: nowMs, into: &out) }
    }

    /// The SSE stream that POSTs for `sid` go to.
    public func sseConnection(for sid: String) -> ConnectionID? { sseStreams[sid] }

    // MARK: - Messages

    private mutating func message(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64, into out: inout [Output]) {
        guard provesWhatItMust(envelope, from: connection, nowMs: nowMs) else {
            out.append(.unauthorized(connection))
            return
        }
        connections[connection]?.lastHeardMs = nowMs
        do throws(ProtocolError) {
            switch envelope.messageType {
            case .ping?:
                // Echoed when the ping had one; a ping without `ts` gets a pong without it (never `ts: null`).
                let echo = envelope.payload["ts"] ?? envelope.ts.map { .int($0) }
                out.append(.send(connection, Self.envelope(.pong, ts: nowMs, payload: echo.map { ["ts": $0] } ?? [:])))
            case .join?:
                try join(envelope, from: connection, nowMs: nowMs, into: &out)
            case .leave?:
                let seat = try requireSeat(connection)
                removeParticipant(seat.cid, from: seat.rid, reason: "leave", nowMs: nowMs, into: &out)
                revoke(cid: seat.cid, rid: seat.rid, nowMs: nowMs, into: &out)
            case .endRoom?:
                try endRoom(from: connection, nowMs: nowMs, into: &out)
            case .offer?, .answer?, .ice?, .verifyFailed?, .restartRequest?:
                try relay(envelope, from: connection, nowMs: nowMs, into: &out)
            case .mediaState?:
                try mediaState(envelope, from: connection, nowMs: nowMs, into: &out)
            case .turnRefresh?:
                guard let seat = connections[connection]?.seat else {
                    throw ProtocolError(.turnRefreshFailed, "TURN credentials are only issued to a participant of a room; join first")
                }
                let turn = authorities.turnTokens.issue(rid: seat.rid, cid: seat.cid, nowMs: nowMs)
                let payload = TurnRefreshedPayload(
                    turnToken: turn.token, turnTokenExpiresAt: turn.expiresAt, turnTokenTTLMs: authorities.turnTokens.ttlMs)
                out.append(.send(connection, Self.envelope(.turnRefreshed, rid: seat.rid, cid: seat.cid, ts: nowMs, payload)))
            case .reconnectTokenRefresh?:
                let seat = try requireSeat(connection)
                let token = authorities.reconnectTokens.issue(cid: seat.cid, rid: seat.rid, nowMs: nowMs)
                let payload = ReconnectTokenRefreshedPayload(reconnectToken: token, reconnectTokenTTLMs: authorities.reconnectTokens.ttlMs)
                out.append(.send(connection, Self.envelope(.reconnectTokenRefreshed, rid: seat.rid, cid: seat.cid, ts: nowMs, payload)))
            case .watchRooms?:
                try watchRooms(envelope, from: connection, nowMs: nowMs, into: &out)
            case .ring?:
                try ring(envelope, from: connection, nowMs: nowMs, into: &out)
            case .ringCancel?:
                try ringCancel(envelope, from: connection, nowMs: nowMs, into: &out)
            case .ringAnswer?:
                try ringAnswer(envelope, from: connection, nowMs: nowMs, into: &out)
            default:
                // Unknown or server-only types are ignored: forward compatibility.
                break
            }
        } catch {
            out.append(.send(connection, Self.errorEnvelope(error, rid: envelope.rid, nowMs: nowMs)))
        }
    }

    /// An SSE stream that reused a seated sid must first prove that seat (a join with its reconnect token); once it
    /// has, nothing more is asked of it.
    mutating func provesWhatItMust(_ envelope: Envelope, from connection: ConnectionID, nowMs: Int64) -> Bool {
        guard let mustProve = connections[connection]?.mustProveCid else { return true }
        guard envelope.messageType == .join, let join = try? envelope.payload.decode(JoinPayload.self),
            join.reconnectCid == mustProve, let token = join.reconnectToken, let rid = envelope.rid,
            case .valid = authorities.reconnectTokens.verify(token, cid: mustProve, rid: rid, nowMs: nowMs),
            !isRevoked(cid: mustProve, rid: rid, nowMs: nowMs)
        else { return false }
        connections[connection]?.mustProveCid = nil
        return true
    }

    func requireSeat(_ connection: ConnectionID) throws(ProtocolError) -> (rid: String, cid: String) {
        guard let seat = connections[connection]?.seat else {
            throw ProtocolError(.notInRoom, "this connection has not joined a room")
        }
        return seat
    }

    // MARK: - Envelopes

    static func envelope(
        _ type: MessageType, rid: String? = nil, cid: String? = nil, ts: Int64, epoch: Int64? = nil, _ payload: some Encodable
    ) -> Envelope {
        // Encoding our own payload types cannot fail.
        Envelope(type, rid: rid, cid: cid, ts: ts, epoch: epoch, payload: (try? JSONValue(encoding: payload)) ?? [:])
    }

    static func envelope(_ type: MessageType, rid: String? = nil, ts: Int64, payload: JSONValue) -> Envelope {
        Envelope(type, rid: rid, ts: ts, payload: payload)
    }

    public static func errorEnvelope(_ error: ProtocolError, rid: String? = nil, nowMs: Int64) -> Envelope {
        envelope(.error, rid: rid, ts: nowMs, ErrorPayload(code: error.code, message: error.message))
    }

    /// A cid only has to be unique in its room: every seat, token and revocation is keyed by (cid, rid). Checking
    /// every room instead made each join walk all of them (a third of the server's CPU at 500 joins/s).
    mutating func makeCid(in rid: String) -> String {
        var cid: String
        repeat {
            cid = "C-" + Hex.encode(withUnsafeBytes(of: ids.next().bigEndian) { Array($0) })
        } while rooms[rid]?.participant(cid) != nil
        return cid
    }
}

extension SignalingCore.IdRandomness {
    mutating func next() -> UInt64 {
        switch self {
        case .system:
            var generator = SystemRandomNumberGenerator()
            return generator.next()
        case .seeded(let state):
            var generator = SplitMix64(seed: state)
            let value = generator.next()
            self = .seeded(generator.state)
            return value
        }
    }
}
