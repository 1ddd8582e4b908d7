import DuetLock
import DuetProtocol
import DuetRooms
import Foundation
import Logging
import Synchronization

/// Where both transports meet. A transport opens a connection, feeds it raw messages and reports its
/// end; the hub runs them through `SignalingCore` and performs what the core asks for. A room never
/// learns which transport a participant uses.
///
/// A lock, not an actor: handling a message never waits for anything, so the connection's own task runs it
/// in place instead of hopping onto an actor and back for every message (docs/benchmarks.md).
public final class SessionHub: Sendable {
    public enum Verdict: Sendable, Equatable {
        case accepted
        /// The message came from an SSE stream that reused a seated sid without proving it (401).
        case unauthorized
        /// SSE POST for a sid with no open stream (410).
        case unknownSession
        /// SSE POST without the current stream's `X-Duet-Post-Token` (401): nothing was done.
        case wrongPostToken
    }

    /// One per shard of the rooms: a room lives in one shard (`shard(of:)`), and so does every connection — in its
    /// room's shard once it joined, before that where its URL's `rid` (the room it comes for) or its id put it. Two
    /// rooms of different shards never wait on each other.
    /// - A page watching rooms of several shards sees their counts as a page sees rooms of other cluster nodes: the
    ///   shards learn what the others write (`SessionState.crossShard`).
    /// - A page listening for rings of several shards listens in the shard of each room (a visitor there,
    ///   `SessionState.visit`), so that a ring counts it, rings it and ends for it exactly as in one shard; its answer is
    ///   served in the ring's shard.
    private let shards: [DuetLock.Mutex<SessionState>]
    /// Connection → its shard and the others it listens in, in stripes (with one shard, none). A connection moves once
    /// it joins a room of another shard; the move holds its stripe, so that nothing is delivered to it halfway, and so
    /// does every change of where it listens.
    private let routes: [DuetLock.Mutex<[ConnectionID: Route]>]

    struct Route {
        var shard: Int
        /// Other shards it visits (it listens there, or was held there once: `SignalingCore.visitors`): told when it
        /// closes.
        var visits: Set<Int> = []
    }
    private let nextConnection = Atomic<UInt64>(0)
    private let logger: Logger
    private let store: StoreQueue?

    /// `shards`: how many; 1 is one lock for everything (the hub before issue 33).
    public init(
        core: SignalingCore, metrics: ServerMetrics, logger: Logger,
        messageRate: (capacity: Double, perSecond: Double)?,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) },
        store: StoreQueue? = nil,
        pushAlerts: (@Sendable (PushAlert) -> Void)? = nil,
        ringBus: (@Sendable (RingBroadcast) -> Void)? = nil,
        shards count: Int = 1
    ) {
        let count = max(1, count)
        shards = (0..<count).map { index in
            DuetLock.Mutex(
                SessionState(
                    core: core, metrics: metrics, logger: logger, messageRate: messageRate, now: now, store: store, pushAlerts: pushAlerts,
                    ringBus: ringBus, shard: RoomShard(index: index, count: count)))
        }
        routes = count > 1 ? (0..<64).map { _ in DuetLock.Mutex([:]) } : []
        self.logger = logger
        self.store = store
    }

    public var shardCount: Int { shards.count }

    /// The shard of a room (`RoomShard`). Tests ask this function which rooms share a shard.
    func shard(of rid: String) -> Int { RoomShard.index(of: rid, count: shards.count) }

    /// Runs `body` under one shard's lock, then writes what it logged and hands what the other shards must hear to
    /// them, outside the lock.
    /// `deliver` false: the caller hands the other shards their items itself, later (`deliverCrossShard`), because it
    /// holds a route stripe now.
    private func locked<Result: Sendable>(_ index: Int, deliver: Bool = true, _ body: (inout SessionState) -> Result) -> Result {
        let (result, logs, crossShard) = shards[index].withLock { state in
            (body(&state), state.takeLogs(), !state.crossShard.isEmpty)
        }
        for entry in logs { logger.log(level: entry.level, entry.message, metadata: entry.metadata) }
        if crossShard, deliver { deliverCrossShard(from: index) }
        return result
    }

    private func everyShard(_ body: (inout SessionState) -> Void) {
        for index in shards.indices { locked(index, body) }
    }

    /// `body` with two shards' locks held, taken in index order (nothing else holds two, so this cannot deadlock):
    /// a move is one step for every other thread.
    private func locked<Result: Sendable>(
        _ first: Int, _ second: Int, _ body: (inout SessionState, inout SessionState) -> Result
    ) -> Result {
        let (low, high) = first < second ? (first, second) : (second, first)
        let (result, logs) = shards[low].withLock { lowState in
            shards[high].withLock { highState in
                let result = first < second ? body(&lowState, &highState) : body(&highState, &lowState)
                return (result, lowState.takeLogs() + highState.takeLogs())
            }
        }
        for entry in logs { logger.log(level: entry.level, entry.message, metadata: entry.metadata) }
        return result
    }

    /// Moves so far (counted with both shards' locks held): a look at every shard, one at a time, that saw the same
    /// count before and after saw no connection move behind it.
    private let moves = Atomic<UInt64>(0)

    /// `look` over every shard, one lock at a time, until no move happened meanwhile (a moving connection is seen once,
    /// never twice or not at all). After a few tries, with every lock held (in index order): never needed unless
    /// connections move without pause, and then once.
    private func consistently<Result>(_ look: (_ shard: Int, inout SessionState) -> Void, result: () -> Result, reset: () -> Void) -> Result
    {
        for _ in 0..<4 {
            let before = moves.load(ordering: .acquiring)
            for index in shards.indices { locked(index) { look(index, &$0) } }
            if moves.load(ordering: .acquiring) == before { return result() }
            reset()
        }
        func hold(_ index: Int) {
            guard index < shards.count else { return }
            shards[index].withLock { state in
                look(index, &state)
                hold(index + 1)
            }
        }
        hold(0)
        return result()
    }

    /// What `source` wrote and broadcast, to every other shard, in the order it was said: one thread at a time delivers
    /// a shard's items (`crossShardDelivering`); one that finds another delivering leaves its items to it.
    private func deliverCrossShard(from source: Int) {
        var first = true
        while true {
            let batch: [SessionState.SharedFact]? = shards[source].withLock { state -> [SessionState.SharedFact]? in
                if first {
                    guard !state.crossShardDelivering else { return nil }
                    state.crossShardDelivering = true
                }
                let items = state.takeCrossShard()
                if items.isEmpty { state.crossShardDelivering = false }
                return items.isEmpty ? nil : items
            }
            first = false
            guard let batch else { return }
            for target in shards.indices where target != source {
                locked(target) { $0.learn(batch) }
            }
        }
    }

    private func stripe(_ id: ConnectionID) -> Int { Int(id.raw % UInt64(routes.count)) }

    private func route(_ id: ConnectionID) -> Int? {
        shards.count == 1 ? 0 : routes[stripe(id)].withLock { $0[id]?.shard }
    }

    /// `body` in the shard that holds `id`; nil when no shard does (closed). A connection that moved meanwhile is
    /// followed to its new shard.
    private func routed<Result: Sendable>(_ id: ConnectionID, _ body: (inout SessionState) -> Result) -> Result? {
        while let index = route(id) {
            if let result = locked(index, { $0.holds(id) ? body(&$0) : nil }) { return result }
            if route(id) == index { return nil }
        }
        return nil
    }

    /// Asked on every upgrade and SSE open: a flag, not a lock.
    public var isDraining: Bool { draining.load(ordering: .relaxed) }
    private let draining = Atomic<Bool>(false)

    // MARK: - Transport side

    private func openConnection(_ kind: TransportKind, shard index: Int?, sid: String?, postToken: String?, sink: OutboundSink)
        -> ConnectionID
    {
        let id = ConnectionID(nextConnection.wrappingAdd(1, ordering: .relaxed).newValue)
        let index = index ?? Int(id.raw % UInt64(shards.count))
        if shards.count > 1 { routes[stripe(id)].withLock { $0[id] = Route(shard: index) } }
        locked(index) { $0.open(id, kind, sid: sid, postToken: postToken, sink: sink) }
        return id
    }

    /// An SSE stream: what the hub queues for it goes to `sink`; POSTs for `sid` are accepted only with `postToken`
    /// (the stream's first message, `sse_session`, gives it to the client). `rid`: the room it comes for (its URL's).
    func openSSE(sid: String, postToken: String, sink: OutboundSink, rid: String? = nil) -> ConnectionID {
        // Where its sid is known (a stream of it, or the seat it holds), whatever the URL says: a reused sid must prove
        // that seat, and a newer stream replaces an older one, in the shard that knows them. Else its room, else its sid.
        let known = shards.count == 1 ? 0 : shards.indices.first { index in locked(index) { $0.knows(sid: sid) } }
        return openConnection(.sse, shard: known ?? shard(of: rid ?? sid), sid: sid, postToken: postToken, sink: sink)
    }

    /// A connection whose outbound messages go to `sink` (WebSocket). `rid`: the room it comes for (its URL's).
    public func open(_ kind: TransportKind, sink: OutboundSink, rid: String? = nil) -> ConnectionID {
        openConnection(kind, shard: rid.map(shard(of:)), sid: nil, postToken: nil, sink: sink)
    }

    /// One inbound message (a WebSocket text frame or an SSE POST body). Parsed before the lock: parsing is the
    /// largest part of a message's work and needs nothing shared (docs/benchmarks.md: the lock was contended).
    @discardableResult
    public func receive(_ bytes: [UInt8], from id: ConnectionID) -> Verdict {
        deliver(Self.parse(bytes), from: id)
    }

    /// An SSE POST: find the stream by sid; it must carry that stream's POST token.
    public func receive(_ bytes: [UInt8], sid: String, postToken: String?) -> Verdict {
        guard shards.count > 1 else {
            let (target, refused) = locked(0) { $0.postTarget(sid: sid, postToken: postToken) }
            guard let id = target else { return refused }
            // The stream may end meanwhile: the hub then answers `unknownSession`, as for any closed connection.
            return deliver(Self.parse(bytes), from: id)
        }
        for index in shards.indices {
            if let id = locked(index, { $0.postStream(sid: sid, postToken: postToken) }) { return deliver(Self.parse(bytes), from: id) }
        }
        // Not found one shard at a time: the stream may have moved behind the search. Looked for again where no move
        // can hide it.
        var found: ConnectionID?
        var stream: Int?
        let (id, refusedIn) = consistently(
            { index, state in
                guard found == nil, stream == nil else { return }
                if let id = state.postStream(sid: sid, postToken: postToken) {
                    found = id
                } else if state.hasStream(sid: sid) {
                    stream = index
                }
            }, result: { (found, stream) }, reset: { (found, stream) = (nil, nil) })
        if let id { return deliver(Self.parse(bytes), from: id) }
        guard let refusedIn else { return .unknownSession }
        locked(refusedIn) { $0.refusedPost(sid: sid) }
        return .wrongPostToken
    }

    private func deliver(_ parsed: Result<Envelope, ProtocolError>, from id: ConnectionID) -> Verdict {
        guard shards.count > 1 else { return locked(0) { $0.receive(parsed, from: id) } }
        if case .success(let envelope) = parsed {
            switch envelope.messageType {
            case .join?:
                if let rid = envelope.rid { return join(envelope, room: shard(of: rid), from: id) }
            case .watchRooms?:
                return watch(envelope, from: id)
            case .ringAnswer?:
                let rid = (try? envelope.payload.decode(RingAnswerPayload.self))?.rid ?? envelope.rid
                if let rid { return answer(envelope, ring: shard(of: rid), from: id) }
            default:
                break
            }
        }
        return routed(id) { $0.receive(parsed, from: id) } ?? .unknownSession
    }

    /// A `watch_rooms`: served in the connection's shard, and, for the rings it listens for, in the shard of each room
    /// (and in each shard where it listened until now, which it may no longer). The other shards first: a ring in
    /// progress there rings it before its shard answers `room_statuses`, as one shard does, and a ring begun once it
    /// has that answer counts it.
    private func watch(_ envelope: Envelope, from id: ConnectionID) -> Verdict {
        let listened = Set(((try? envelope.payload.decode(WatchRoomsPayload.self))?.listen?.members.keys).map { $0.map(shard(of:)) } ?? [])
        var involved: Set<Int> = []
        let verdict: Verdict = routes[stripe(id)].withLock { table in
            guard var route = table[id] else { return .unknownSession }
            let home = route.shard
            involved = route.visits.union(listened).union([home])
            switch locked(home, deliver: false, { $0.admission(id) }) {
            case .notHeld: return .unknownSession
            case .dropped: return .accepted
            case .mustProve: break
            case .admitted(let sink):
                for target in involved.sorted() where target != home {
                    locked(target, deliver: false) { $0.visit(id, sink: sink, watch: envelope) }
                    route.visits.insert(target)
                }
                table[id] = route
            }
            return locked(home, deliver: false) { $0.receive(.success(envelope), from: id, admitted: true) }
        }
        for index in involved.sorted() { deliverCrossShard(from: index) }
        return verdict
    }

    /// A `ring_answer`: served in the ring's shard, where the connection listens for the room if it does (admitted in
    /// its own shard: the rate limit is the connection's).
    private func answer(_ envelope: Envelope, ring target: Int, from id: ConnectionID) -> Verdict {
        var home: Int?
        let verdict: Verdict = routes[stripe(id)].withLock { table in
            guard let route = table[id] else { return .unknownSession }
            // Its own shard's ring: served there, the stripe still held, so that a move cannot take it elsewhere first.
            guard route.shard != target else { return locked(target, deliver: false) { $0.receive(.success(envelope), from: id) } }
            home = route.shard
            switch locked(route.shard, deliver: false, { $0.admission(id) }) {
            case .notHeld: return .unknownSession
            case .dropped: return .accepted
            case .mustProve: return locked(route.shard, deliver: false) { $0.receive(.success(envelope), from: id, admitted: true) }
            case .admitted(let sink):
                locked(target, deliver: false) { $0.visit(id, sink: sink, answer: envelope) }
                return .accepted
            }
        }
        if let home { deliverCrossShard(from: home) }
        deliverCrossShard(from: target)
        return verdict
    }

    /// A join, in its room's shard: a connection held by another shard moves there first (`SessionState.handOver`),
    /// unless the room's shard refuses the join as it stands (then nothing moves, as with one shard).
    private func join(_ envelope: Envelope, room target: Int, from id: ConnectionID) -> Verdict {
        while let current = route(id) {
            if current == target {
                if let verdict = locked(current, { $0.holds(id) ? $0.receive(.success(envelope), from: id) : nil }) { return verdict }
                if route(id) == current { return .unknownSession }
                continue
            }
            let moved: Verdict? = routes[stripe(id)].withLock { table in
                guard var route = table[id], route.shard == current else { return nil }
                // The rate limit first, with one lock: a flood of joins for another shard's room does not take its lock.
                switch locked(current, deliver: false, { $0.admission(id) }) {
                case .notHeld: return .unknownSession
                case .dropped: return .accepted
                case .mustProve, .admitted: break
                }
                // Both shards held: nothing that happens in either (a count a watcher must see, a ring ending) falls
                // between the connection leaving one and arriving in the other.
                return locked(current, target) { from, to in
                    let refusal = to.joinRefusal(envelope)
                    switch from.handOver(id, for: envelope, refusal: refusal, admitted: true) {
                    case .stays(let verdict):
                        return verdict
                    case .moves(let outlet, let moving, let toldDraining, let waiting):
                        moves.wrappingAdd(1, ordering: .releasing)
                        route.shard = target
                        route.visits.remove(target)
                        route.visits.insert(current)
                        table[id] = route
                        return to.takeOver(id, outlet, moving, join: envelope, toldDraining: toldDraining, waiting: waiting)
                    }
                }
            }
            // What the two shards said for the others, now that the stripe is released.
            deliverCrossShard(from: current)
            deliverCrossShard(from: target)
            if let moved { return moved }
        }
        return .unknownSession
    }

    private static func parse(_ bytes: [UInt8]) -> Result<Envelope, ProtocolError> {
        do throws(ProtocolError) { return .success(try Envelope.decode(bytes)) } catch { return .failure(error) }
    }

    /// The transport is gone (socket closed, stream ended). The participant, if any, is suspended.
    public func closed(_ id: ConnectionID, reason: String) {
        guard shards.count > 1 else { return locked(0) { $0.closed(id, reason: reason) } }
        // Out of the table first: nothing routed to it from now on, and no shard it listens in can be added behind.
        guard let route = routes[stripe(id)].withLock({ $0.removeValue(forKey: id) }) else { return }
        // Where it visits first: a ring starting there meanwhile must not count a page that is gone.
        for index in route.visits.sorted() where index != route.shard { locked(index) { $0.visitEnded(id) } }
        locked(route.shard) { $0.closed(id, reason: reason) }
    }

    /// A message that was refused before parsing (oversize): tell the sender, then close it.
    public func refuseOversize(_ id: ConnectionID) {
        _ = routed(id) { $0.refuseOversize(id) }
    }

    // MARK: - Server side

    public func tick() { everyShard { $0.tick() } }

    /// What the store says: at start, another node's write, a dead node's rooms. Every shard hears it, as every node
    /// of a cluster does: a room's shard holds it, the others know it for their watchers.
    public func learn(_ facts: [DurableFact]) {
        guard !facts.isEmpty else { return }
        everyShard { $0.learn(facts) }
    }

    /// Another node's claim, read from its row (`RoomStateStore.snapshotMark(taking:)`: after a notification, a
    /// resync or a `reread`): a claim, unless this node claimed the room since `mark` — its claim queued, being written,
    /// or written after the row was read. A claim still queued is newer than the row (it is written after it, and the
    /// other node hears it and gives the room up); one being written or just written may be older or newer — only the
    /// database's order says — so the caller reads the row again once it is written (returns false: set aside).
    /// Judged under each shard's lock: a claim a shard queues (a recovery there) is in the queue before the check or
    /// comes after the fact is applied, never between the two.
    @discardableResult
    public func learn(snapshotClaim fact: DurableFact, unlessClaimedHereSince mark: UInt64) -> Bool {
        guard let rid = fact.claimedRid, let store else {
            learn([fact])
            return true
        }
        var setAside = false
        everyShard { shard in
            if store.claimedHere(rid, since: mark) { setAside = true } else { shard.learn([fact]) }
        }
        return !setAside
    }

    /// `POST /api/leave`: answered once the leave is in the store (acknowledged means durable, issue 34); false for
    /// `stored` when the server stopped before the store took it, or the store did not take it within `bound` (it
    /// is down: the leave stays queued and is written when it is back, but the client is not told it is stored).
    public func leave(_ request: LeaveRequest, within bound: Duration = SessionHub.leaveStoreBound) async -> (
        result: SignalingCore.HTTPLeaveResult, stored: Bool
    ) {
        let (result, ticket) = locked(shard(of: request.rid)) { $0.leave(request) }
        guard let ticket, let store else { return (result, true) }
        return (result, await store.durable(ticket, within: bound))
    }

    /// How long `POST /api/leave` waits for the store before answering 503: a healthy store writes within
    /// milliseconds, and a request must not hold a shutdown or a client for a store that is down.
    public static let leaveStoreBound: Duration = .seconds(5)

    /// The store has every fact up to `durable` (`StoreQueue.written`): the news of them goes out (`DurableGate`).
    public func durable(through durable: UInt64) { everyShard { $0.release(through: durable) } }

    /// News of final facts waiting for the store, over every shard (a gauge: it stays near 0 while the store is up).
    public var waitingForStore: Int {
        var total = 0
        everyShard { total += $0.waitingForStore }
        return total
    }

    /// Graceful shutdown, step 1: tell every client to reconnect elsewhere.
    /// A connection that moves from a shard not yet drained to one drained already is told on arrival
    /// (`SessionState.takeOver`).
    /// Graceful shutdown, step 0: `/healthz` says draining and new sessions are refused, before the drain's
    /// successors are read from the store (up to `DrainService.successorsLimit`).
    public func refuseNewSessions() { draining.store(true, ordering: .relaxed) }

    /// `successors`: the cluster's other live nodes, which the rooms are handed to (`DrainRoute`); empty on a node alone.
    public func drain(successors: [String] = []) {
        draining.store(true, ordering: .relaxed)
        everyShard { $0.drain(successors: successors) }
    }

    /// Graceful shutdown, last step.
    public func closeAll() { everyShard { $0.closeAll() } }

    /// A connection moving between two shards is counted once (`consistently`).
    public func snapshot() -> (rooms: Int, connections: Int, connected: Int, suspended: Int) {
        var total = (rooms: 0, connections: 0, connected: 0, suspended: 0)
        return consistently(
            { _, state in
                let part = state.snapshot()
                total = (
                    total.rooms + part.rooms, total.connections + part.connections, total.connected + part.connected,
                    total.suspended + part.suspended
                )
            }, result: { total }, reset: { total = (0, 0, 0, 0) })
    }

    /// Entries per table, summed over the shards (`SessionState.tableSizes`): what the soak watches for leaks.
    public func tableSizes() -> [String: Int] {
        var total: [String: Int] = [:]
        return consistently({ _, state in total.merge(state.tableSizes()) { $0 + $1 } }, result: { total }, reset: { total = [:] })
    }

    public func occupancy(of rid: String) -> Int { locked(shard(of: rid)) { $0.occupancy(of: rid) } }

    public func hasSeat(rid: String, cid: String) -> Bool { locked(shard(of: rid)) { $0.hasSeat(rid: rid, cid: cid) } }

    /// See `SignalingCore.provesSeat`.
    public func provesSeat(rid: String, cid: String, token: String) -> Bool {
        locked(shard(of: rid)) { $0.provesSeat(rid: rid, cid: cid, token: token) }
    }

    /// Whether `token` is the member token of `deviceId` in `rid` (issue 31: it has been in this call).
    public func provesMember(rid: String, deviceId: String, token: String) -> Bool {
        locked(shard(of: rid)) { $0.provesMember(rid: rid, deviceId: deviceId, token: token) }
    }

    /// The push dispatcher's report on a ring's pushes (the ring is its room's shard's).
    public func ringPushed(_ report: SignalingCore.RingPushReport) { locked(shard(of: report.rid)) { $0.ringPushed(report) } }

    /// What another node of the cluster said of a ring: every shard hears it, as every node does.
    public func heard(_ message: RingBroadcast) { everyShard { $0.heard(message) } }

    /// `POST /api/ring/answer`; false when it does not prove its device.
    public func answerRing(_ answer: RingAnswerPayload) -> Bool { locked(shard(of: answer.rid ?? "")) { $0.answerRing(answer) } }
}
