import DuetProtocol
import DuetRooms
import Foundation
import Logging

/// The hub's connections and rooms, and what it does with a message: run it through `SignalingCore` and
/// perform what the core asks for. Only ever touched under `SessionHub`'s lock.
struct SessionState {
    private var core: SignalingCore
    private var outlets: [ConnectionID: Outlet] = [:]
    /// Connections another shard holds that visit this one (`SignalingCore.visitors`: they listen for rings of its rooms,
    /// or were held here once): what this shard sends them (`incoming_call`, `ring_ended`, an answer's error) goes to
    /// their sink from here, until they close.
    private var visitors: [ConnectionID: OutboundSink] = [:]
    private let metrics: ServerMetrics
    private let logLevel: Logger.Level
    /// Written by `SessionHub` once its lock is released: a stalled stderr must not stall every connection.
    private var logs: [LogEntry] = []
    private let messageRate: (capacity: Double, perSecond: Double)?
    private let now: @Sendable () -> Int64
    /// Where the core's facts go to be written (`StoreService`); nil: nothing is persisted (some tests).
    private let store: StoreQueue?
    /// Where the core's push alerts go (`PushDispatcher.alert`, which returns at once); nil: push is off (some tests).
    private let pushAlerts: (@Sendable (PushAlert) -> Void)?
    /// The other nodes of a cluster (`RingBroadcast`); nil on a single node.
    private let ringBus: (@Sendable (RingBroadcast) -> Void)?
    /// One of several shards (`SessionHub`): what the core writes is also for the other shards, which learn it as other
    /// nodes of a cluster would, for their watchers (`crossShard`, delivered by the hub once this shard's lock is
    /// released). Rings need nothing of the kind: a room's listeners all listen in the room's shard.
    private let sharded: Bool
    /// Each with the ticket of its write when it is final: what another shard tells of it waits for the store too.
    private(set) var crossShard: [SharedFact] = []
    /// Whether some thread is delivering this shard's `crossShard` now: one at a time, so the others hear them in order.
    var crossShardDelivering = false

    struct Outlet {
        var kind: TransportKind
        var sink: OutboundSink
        var bucket: TokenBucket?
        /// Messages dropped for rate in the current `floodWindowMs` (a rate, not a lifetime count: a connection of
        /// a week that was told to slow down now and then is not flooding).
        var droppedInWindow = 0
        var windowStartMs: Int64 = 0
        var lastRateErrorMs: Int64?
        /// Why the server asked this connection to close; wins over what the transport reports.
        var closeReason: String?
        /// SSE only: what every POST for this stream must carry (`SSEPostBinding`).
        var postToken: String?
    }

    /// SSE POST token → its stream. POSTs are routed by token, not by sid: someone who learnt a seated sid and opens a
    /// stream with it (which must then prove the seat) does not divert the owner's POSTs, so the owner is not cut off.
    private var postTokens: [String: ConnectionID] = [:]
    /// SSE stream → its sid (a POST's token must belong to a stream of the sid in its URL).
    private var streamSids: [ConnectionID: String] = [:]
    /// Connections cut off while outputs were being performed, with the message that did not fit (`cutOff`).
    private var cutOffs: [(ConnectionID, Envelope?)] = []
    private var performing = 0
    /// News of final facts waiting for the store, and what their connections are sent after it (issue 34).
    private var gate = DurableGate()

    /// Messages dropped for rate within `floodWindowMs` before the connection is closed as abusive: a client that
    /// keeps sending twice what it may for 10 s.
    static let floodCloseThreshold = 100
    static let floodWindowMs: Int64 = 10_000

    init(
        core: SignalingCore, metrics: ServerMetrics, logger: Logger,
        messageRate: (capacity: Double, perSecond: Double)?, now: @escaping @Sendable () -> Int64, store: StoreQueue?,
        pushAlerts: (@Sendable (PushAlert) -> Void)? = nil,
        ringBus: (@Sendable (RingBroadcast) -> Void)? = nil, shard: RoomShard = .whole
    ) {
        self.sharded = shard.count > 1
        self.core = core
        self.core.shard = shard
        self.store = store
        self.pushAlerts = pushAlerts
        self.ringBus = ringBus
        self.metrics = metrics
        self.logLevel = logger.logLevel
        self.messageRate = messageRate
        self.now = now
    }

    var isDraining: Bool { core.isDraining }

    // MARK: - Transport side

    /// A new connection of either transport; what it must send goes to `sink`.
    mutating func open(_ id: ConnectionID, _ kind: TransportKind, sid: String?, postToken: String?, sink: OutboundSink) {
        outlets[id] = Outlet(
            kind: kind, sink: sink, bucket: messageRate.map { TokenBucket(capacity: $0.capacity, refillPerSecond: $0.perSecond) },
            postToken: postToken)
        if let postToken, let sid {
            postTokens[postToken] = id
            streamSids[id] = sid
        }
        metrics.connectionOpened(kind)

        perform(core.handle(.opened(id, kind, sid: sid), nowMs: now()))
    }

    func holds(_ id: ConnectionID) -> Bool { outlets[id] != nil }

    // MARK: - Between shards

    /// The room's shard: why it would refuse this join before anything changes (`SignalingCore.joinRefusal`).
    func joinRefusal(_ envelope: Envelope) -> Envelope? { core.joinRefusal(envelope, nowMs: now()) }

    enum HandOver {
        /// Nothing moves: the message was dropped for rate, refused or not proven (the verdict says which).
        case stays(SessionHub.Verdict)
        /// `toldDraining`: this shard had told it to reconnect elsewhere (drain).
        /// `waiting`: what it was to hear here once the store has it (`DurableGate`), still to hear in order.
        case moves(Outlet, MovingConnection, toldDraining: Bool, waiting: [(ticket: UInt64, item: DurableGate.Item)])
    }

    /// A join for a room of another shard: admitted here (the rate limit is the connection's), refused with what the
    /// room's shard said (`refusal`), or handed over with what the transport gave it.
    /// `admitted`: the hub had it admitted already (`admission`).
    mutating func handOver(_ id: ConnectionID, for envelope: Envelope, refusal: Envelope?, admitted: Bool = false) -> HandOver {
        guard outlets[id] != nil else { return .stays(.unknownSession) }
        let nowMs = now()
        guard admitted || admit(id, nowMs: nowMs) else { return .stays(.accepted) }
        let (moving, outputs) = core.handOver(id, for: envelope, refusal: refusal, nowMs: nowMs)
        guard let moving else {
            metrics.messageIn(envelope.type)
            if outputs.contains(.unauthorized(id)) {
                note(.notice, "refused message on an unproven SSE stream", metadata: ["conn": "\(id)", "type": "join"])
                return .stays(.unauthorized)
            }
            perform(outputs)
            return .stays(.accepted)
        }
        perform(outputs)
        guard let outlet = outlets.removeValue(forKey: id) else { return .stays(.accepted) }
        forgetStream(outlet, id)
        // A visitor now: what it listens for here, and the rings that rang it here, still reach it.
        visitors[id] = outlet.sink
        return .moves(outlet, moving, toldDraining: core.isDraining, waiting: gate.forget(id))
    }

    /// A connection another shard handed over, and the join it moved for (already admitted there).
    mutating func takeOver(
        _ id: ConnectionID, _ outlet: Outlet, _ moving: MovingConnection, join: Envelope, toldDraining: Bool,
        waiting: [(ticket: UInt64, item: DurableGate.Item)] = []
    ) -> SessionHub.Verdict {
        outlets[id] = outlet
        visitors[id] = nil
        gate.adopt(waiting, for: id)
        // What it brought may have been written while it moved: the next write may be long in coming on a quiet
        // node, and must not be what sends it.
        if !waiting.isEmpty, let store { release(through: store.durableThrough) }
        if let token = outlet.postToken, let sid = moving.sid {
            postTokens[token] = id
            streamSids[id] = sid
        }
        core.takeOver(id, moving)
        let verdict = handle(join, from: id, nowMs: now())
        // This shard drained before it came, the one it left had not: it has not been told yet.
        if core.isDraining, !toldDraining {
            send(core.drainingNotice(for: id, nowMs: now()), to: id)
        }
        return verdict
    }

    /// A fact one shard wrote, for the others; `ticket`: the write a final fact's news waits for (nil: none).
    struct SharedFact: Sendable {
        var fact: DurableFact
        var ticket: UInt64?
    }

    mutating func takeCrossShard() -> [SharedFact] {
        defer { crossShard = [] }
        return crossShard
    }

    /// One inbound message (a WebSocket text frame or an SSE POST body), parsed by the caller before the lock.
    /// `admitted`: the hub had it admitted already (`admission`).
    mutating func receive(_ parsed: Result<Envelope, ProtocolError>, from id: ConnectionID, admitted: Bool = false) -> SessionHub.Verdict {
        guard outlets[id] != nil else { return .unknownSession }
        let nowMs = now()
        guard admitted || admit(id, nowMs: nowMs) else { return .accepted }
        let envelope: Envelope
        switch parsed {
        case .success(let parsed):
            envelope = parsed
        case .failure(let error):
            metrics.messageIn("invalid")
            note(.debug, "rejected message", metadata: ["conn": "\(id)", "error": "\(error)"])
            send(SignalingCore.errorEnvelope(error, nowMs: nowMs), to: id)
            return .accepted
        }
        return handle(envelope, from: id, nowMs: nowMs)
    }

    enum Admission {
        case notHeld
        /// Dropped for rate (the connection was told, as for any message).
        case dropped
        /// An SSE stream that must prove its seat first: its message is for its own shard to refuse.
        case mustProve
        case admitted(OutboundSink)
    }

    /// A message of `id` that another shard will serve (its rooms' listening, an answer to its ring): the rate limit is
    /// the connection's, here; the other shard sends to `sink`.
    mutating func admission(_ id: ConnectionID) -> Admission {
        guard let outlet = outlets[id] else { return .notHeld }
        let nowMs = now()
        guard admit(id, nowMs: nowMs) else { return .dropped }
        guard !core.mustProve(id) else { return .mustProve }
        // Heard from, as for a message its own shard serves (an SSE stream whose POSTs are answers is not silent).
        core.heard(from: id, nowMs: nowMs)
        return .admitted(outlet.sink)
    }

    /// A `watch_rooms` of a connection another shard holds (admitted there), for the rooms of this shard it listens
    /// for. A visitor from now until it closes (the hub tells this shard then).
    mutating func visit(_ id: ConnectionID, sink: OutboundSink, watch envelope: Envelope) {
        guard outlets[id] == nil else { return }
        visitors[id] = sink
        perform(core.listenAsVisitor(id, envelope, nowMs: now()))
    }

    /// A `ring_answer` of a connection another shard holds (admitted there), for a ring of this shard's.
    mutating func visit(_ id: ConnectionID, sink: OutboundSink, answer envelope: Envelope) {
        guard outlets[id] == nil else { return }
        metrics.messageIn(envelope.type)
        let known = visitors[id] != nil
        visitors[id] = sink
        perform(core.answerAsVisitor(id, envelope, nowMs: now()))
        if !known { visitors[id] = nil }
    }

    /// A visitor's connection closed in its own shard.
    mutating func visitEnded(_ id: ConnectionID) {
        core.visitorLeft(id)
        visitors[id] = nil
        gate.forget(id)
    }

    private mutating func handle(_ envelope: Envelope, from id: ConnectionID, nowMs: Int64) -> SessionHub.Verdict {
        metrics.messageIn(envelope.type)
        if envelope.messageType == nil {
            note(.debug, "ignored unknown message type", metadata: ["conn": "\(id)", "type": "\(envelope.type.prefix(64))"])
        }
        let started = DispatchTime.now().uptimeNanoseconds
        let outputs = core.handle(.message(id, envelope), nowMs: nowMs)
        if envelope.messageType == .join, outputs.contains(where: { if case .event(.joined) = $0 { true } else { false } }) {
            metrics.joinLatency(nanoseconds: Int64(DispatchTime.now().uptimeNanoseconds - started))
        }
        if outputs.contains(.unauthorized(id)) {
            note(.notice, "refused message on an unproven SSE stream", metadata: ["conn": "\(id)", "type": "\(envelope.type.prefix(64))"])
            return .unauthorized
        }
        perform(outputs)
        return .accepted
    }

    /// An SSE POST: the stream it is for, found by its POST token (which must belong to a stream of `sid`), or why
    /// nothing happens. Asked before the body is parsed: a POST without the token costs no parse.
    mutating func postTarget(sid: String, postToken: String?) -> (ConnectionID?, refused: SessionHub.Verdict) {
        if let id = postStream(sid: sid, postToken: postToken) { return (id, .accepted) }
        guard hasStream(sid: sid) else { return (nil, .unknownSession) }
        refusedPost(sid: sid)
        return (nil, .wrongPostToken)
    }

    /// The stream of `sid` that `postToken` belongs to, if it is here.
    func postStream(sid: String, postToken: String?) -> ConnectionID? {
        // 192 random bits: a guess cannot hit, and looking the token up leaks nothing worth timing.
        guard let postToken, let id = postTokens[postToken], streamSids[id] == sid, outlets[id] != nil else { return nil }
        return id
    }

    /// Whether this shard knows `sid`: a stream of it is open here, or it holds a seat here.
    func knows(sid: String) -> Bool { core.knows(sid: sid) }

    /// Whether a stream of `sid` is open here.
    func hasStream(sid: String) -> Bool { core.sseConnection(for: sid) != nil }

    /// A POST for an open stream of `sid` without that stream's token (401).
    mutating func refusedPost(sid: String) {
        metrics.httpRejected("sse", status: 401)
        let stream = core.sseConnection(for: sid).map { "\($0)" } ?? "?"
        note(.notice, "refused SSE POST without the post token of an open stream of its sid", metadata: ["conn": "\(stream)"])
    }

    /// The transport is gone (socket closed, stream ended). The participant, if any, is suspended.
    mutating func closed(_ id: ConnectionID, reason: String) {
        visitors[id] = nil
        gate.forget(id)
        guard let outlet = outlets.removeValue(forKey: id) else { return }
        forgetStream(outlet, id)
        outlet.sink.finish()
        let reason = outlet.closeReason ?? reason
        metrics.connectionClosed(outlet.kind, reason: reason)
        note(.debug, "transport closed", metadata: ["conn": "\(id)", "reason": "\(reason)"])
        perform(core.handle(.closed(id), nowMs: now()))
    }

    /// A message that was refused before parsing (oversize): tell the sender, then close it.
    mutating func refuseOversize(_ id: ConnectionID) {
        send(
            SignalingCore.errorEnvelope(
                ProtocolError(.messageTooLarge, "messages are limited to \(ProtocolLimits.maxMessageBytes) bytes"), nowMs: now()), to: id)
        requestClose(id, .messageTooBig, reason: "message too large", after: nil)
    }

    // MARK: - Server side

    mutating func tick() { perform(core.handle(.tick, nowMs: now())) }

    /// What another node of the cluster said of a ring.
    mutating func heard(_ message: RingBroadcast) { perform(core.handle(.heard(message), nowMs: now())) }

    /// What the store says (at start, or another node's write), in order: in the store already.
    mutating func learn(_ facts: [DurableFact]) {
        for fact in facts { perform(core.handle(.learned(fact), nowMs: now())) }
    }

    /// What another shard of this node wrote, in order: what this shard tells of a final fact (a watcher's count)
    /// waits for the write as the writing shard's own news does.
    mutating func learn(_ facts: [SharedFact]) {
        for shared in facts { perform(core.handle(.learned(shared.fact), nowMs: now()), holding: shared.ticket) }
    }

    /// `ticket`: the leave is in the store once `StoreQueue.durable` says so (nil: nothing to wait for).
    mutating func leave(_ request: LeaveRequest) -> (SignalingCore.HTTPLeaveResult, ticket: UInt64?) {
        let (result, outputs) = core.httpLeave(request, nowMs: now())
        return (result, perform(outputs))
    }

    /// The store has every fact up to `durable`: what waited for them goes out (`DurableGate`).
    mutating func release(through durable: UInt64) {
        let ready = gate.release(through: durable)
        guard !ready.isEmpty else { return }
        performing += 1
        defer { performing -= 1 }
        for (id, item) in ready {
            switch item {
            case .send(let envelope): deliver(envelope, to: id)
            case .close(let code, let reason): closeNow(id, code, reason: reason)
            }
        }
        handleCutOffs()
    }

    /// News of final facts waiting for the store (`DurableGate`).
    var waitingForStore: Int { gate.waitingCount }

    /// Graceful shutdown, step 1: tell every client to reconnect elsewhere (each room's to its node of `successors`).
    mutating func drain(successors: [String]) {
        let count = outlets.count
        note(.info, "draining: telling \(count) connections to reconnect (successors: \(successors))")
        perform(core.handle(.drain(successors: successors), nowMs: now()))
    }

    /// Graceful shutdown, last step.
    mutating func closeAll() {
        // What still waits for the store is not said: the last step of a shutdown closes every connection now.
        gate.removeAll()
        for id in outlets.keys {
            closeNow(id, .serviceRestart, reason: "server shutting down")
            outlets[id]?.sink.finish()
        }
    }

    func snapshot() -> (rooms: Int, connections: Int, connected: Int, suspended: Int) {
        (core.roomCount, outlets.count, core.participantCount(.connected), core.participantCount(.suspended))
    }

    /// The core's tables and this shard's own (`SignalingCore.tableSizes`; `duet_table_entries`).
    func tableSizes() -> [String: Int] {
        core.tableSizes.merging([
            "outlets": outlets.count, "visitors": visitors.count, "post_tokens": postTokens.count, "stream_sids": streamSids.count,
            "cut_offs": cutOffs.count, "cross_shard": crossShard.count, "durable_waiting": gate.waitingCount, "logs": logs.count,
        ]) { $0 + $1 }
    }

    func occupancy(of rid: String) -> Int { core.occupancy(of: rid) }

    func hasSeat(rid: String, cid: String) -> Bool { core.hasSeat(rid: rid, cid: cid) }

    func provesSeat(rid: String, cid: String, token: String) -> Bool { core.provesSeat(rid: rid, cid: cid, token: token, nowMs: now()) }

    func provesMember(rid: String, deviceId: String, token: String) -> Bool {
        core.provesMember(rid: rid, deviceId: deviceId, token: token, nowMs: now())
    }

    mutating func ringPushed(_ report: SignalingCore.RingPushReport) {
        performOutputs(core.handle(.ringPushed(report), nowMs: now()))
    }

    /// False when the answer does not prove its device (nothing done).
    mutating func answerRing(_ answer: RingAnswerPayload) -> Bool {
        guard core.proves(answer, nowMs: now()) else { return false }
        performOutputs(core.handle(.httpRingAnswer(answer), nowMs: now()))
        return true
    }

    // MARK: - Internals

    private mutating func admit(_ id: ConnectionID, nowMs: Int64) -> Bool {
        guard var outlet = outlets[id], var bucket = outlet.bucket else { return true }
        defer { outlets[id] = outlet }
        if bucket.take(nowMs: nowMs) {
            outlet.bucket = bucket
            return true
        }
        outlet.bucket = bucket
        if nowMs - outlet.windowStartMs >= Self.floodWindowMs {
            outlet.windowStartMs = nowMs
            outlet.droppedInWindow = 0
        }
        outlet.droppedInWindow += 1
        if outlet.droppedInWindow >= Self.floodCloseThreshold {
            note(.notice, "closing flooding connection", metadata: ["conn": "\(id)"])
            outlet.closeReason = "rate_limited"
            _ = outlet.sink.yield(.close(.policyViolation, reason: "rate limited"))
        } else if outlet.lastRateErrorMs.map({ nowMs - $0 >= 1000 }) ?? true {
            outlet.lastRateErrorMs = nowMs
            let error = SignalingCore.errorEnvelope(ProtocolError(.rateLimited, "too many messages; slow down"), nowMs: nowMs)
            _ = outlet.sink.yield(.text(error.encodedString()))
            metrics.messageOut(error.type)
            metrics.error(.rateLimited)
        }
        return false
    }

    /// A close the core asked for: after what waits for the connection (`DurableGate`).
    private mutating func requestClose(_ id: ConnectionID, _ code: CloseCode, reason: String, after ticket: UInt64?) {
        guard outlets[id] != nil else { return }
        switch gate.admit(.close(code, reason: reason), for: id, ticket: ticket) {
        case .now: closeNow(id, code, reason: reason)
        case .held: break
        case .full: cutOff(id, undelivered: nil)
        }
    }

    private mutating func closeNow(_ id: ConnectionID, _ code: CloseCode, reason: String) {
        guard var outlet = outlets[id] else { return }
        outlet.closeReason = outlet.closeReason ?? reason.replacingOccurrences(of: " ", with: "_")
        _ = outlet.sink.yield(.close(code, reason: reason))
        outlets[id] = outlet
    }

    /// `ticket`: the final fact this message tells of (`DurableGate`); it waits for it, and behind whatever waits for
    /// the connection already. A pong tells nothing and never waits: a client whose partner's leave waits for a store
    /// that is away must not think its own connection dead.
    private mutating func send(_ envelope: Envelope, to id: ConnectionID, after ticket: UInt64? = nil) {
        if envelope.messageType == .pong { return deliver(envelope, to: id) }
        switch gate.admit(.send(envelope), for: id, ticket: ticket) {
        case .now: deliver(envelope, to: id)
        case .held: break
        case .full: cutOff(id, undelivered: envelope)
        }
    }

    private mutating func deliver(_ envelope: Envelope, to id: ConnectionID) {
        guard let outlet = outlets[id] else {
            guard let sink = visitors[id] else { return }
            if sink.yield(.text(envelope.encodedString())) {
                counted(envelope)
            } else {
                // A visitor that stopped reading: its own shard cuts it off as the transport closes.
                sink.abort()
            }
            return
        }
        guard outlet.sink.yield(.text(envelope.encodedString())) else {
            cutOff(id, undelivered: envelope)
            return
        }
        counted(envelope)
    }

    private func counted(_ envelope: Envelope) {
        metrics.messageOut(envelope.type)
        if envelope.messageType == .error, let code = envelope.payload["code"]?.stringValue.flatMap(ErrorCode.init(rawValue:)) {
            metrics.error(code)
        }
    }

    /// Room and participant gauges are not touched here: counting them walks every room, so `/metrics`
    /// refreshes them when it is scraped (OperationsRoutes).
    /// The ticket of the last final fact among `outputs` (nil: none). `holding`: every message and close of
    /// `outputs` waits for this ticket too.
    @discardableResult
    private mutating func perform(_ outputs: [SignalingCore.Output], holding: UInt64? = nil) -> UInt64? {
        performing += 1
        defer { performing -= 1 }
        let ticket = performOutputs(outputs, holding: holding)
        handleCutOffs()
        return ticket
    }

    /// Outermost only: cut-offs met while performing are handed to the core after the whole batch went out.
    private mutating func handleCutOffs() {
        while performing == 1, !cutOffs.isEmpty {
            let (id, envelope) = cutOffs.removeFirst()
            if let envelope {
                performOutputs(core.handle(.undeliverable(id, envelope), nowMs: now()))
            } else {
                performOutputs(core.handle(.closed(id), nowMs: now()))
            }
        }
    }

    /// The facts first, then the messages: a message about a room waits for the final fact of that room that the
    /// same step decided (`DurableGate`) — `room_ended`, the partner's `room_state` after a leave or an eviction,
    /// a watcher's `room_status_update`. A tick that evicts seats in several rooms, or suspends one room's silent
    /// stream while it evicts in another, holds each room's news for its own write only; a room with nothing final
    /// is not held at all. What a connection is sent after something held waits behind it anyway (the gate keeps
    /// each connection's order), and `holding` (another shard's final fact) holds everything of the step.
    @discardableResult
    private mutating func performOutputs(_ outputs: [SignalingCore.Output], holding: UInt64? = nil) -> UInt64? {
        var finals: [String: UInt64] = [:]
        var last: UInt64?
        for output in outputs {
            guard case .persist(let fact) = output else { continue }
            let ticket = store?.add(fact)
            if fact.isFinal, let ticket {
                finals[fact.rid] = ticket
                last = ticket
            }
            if sharded { crossShard.append(SharedFact(fact: fact, ticket: fact.isFinal ? ticket : nil)) }
        }
        let holds: [UInt64?] = outputs.map { output in
            guard case .send(_, let envelope) = output else { return holding }
            return [envelope.rid.flatMap { finals[$0] }, holding].compactMap { $0 }.max()
        }
        for (output, ticket) in zip(outputs, holds) {
            switch output {
            case .send(let id, let envelope):
                send(envelope, to: id, after: ticket)
            case .close(let id, let reason):
                let code: CloseCode =
                    switch reason {
                    case .replaced: .replaced
                    case .superseded: .superseded
                    case .rateLimited: .policyViolation
                    case .shutdown: .serviceRestart
                    case .silent: .goingAway
                    case .notReading: .notReading
                    case .moved: .serviceRestart
                    }
                requestClose(id, code, reason: reason.rawValue, after: ticket)
            case .unauthorized:
                break
            case .event(let event):
                log(event)
            case .persist:
                break
            case .push(let alert):
                pushAlerts?(alert)
            case .broadcast(let message):
                ringBus?(message)
            }
        }
        return last
    }

    /// The client stopped reading and its queue reached `OutboundBound`: nothing more is buffered for it. The
    /// connection is closed at once (a close frame could not reach a client that does not read) and the core treats
    /// it as a lost transport — the seat is suspended, the partner is told, and the partner's message that did not
    /// fit is answered `relay_failed`. The client reconnects and reattaches when it reads again.
    /// `envelope` nil: what did not fit was a close that waited for the store (the core hears of a lost transport).
    private mutating func cutOff(_ id: ConnectionID, undelivered envelope: Envelope?) {
        gate.forget(id)
        guard let outlet = outlets.removeValue(forKey: id) else {
            // A visitor whose news did not fit: its own shard cuts it off as the transport closes.
            visitors[id]?.abort()
            return
        }
        forgetStream(outlet, id)
        note(
            .notice, "cut off a connection that stopped reading",
            metadata: ["conn": "\(id)", "bound": "\(OutboundBound.messages) messages / \(OutboundBound.bytes) bytes"])
        metrics.connectionClosed(outlet.kind, reason: CloseCode.notReading.reason)
        _ = outlet.sink.yield(.close(.notReading, reason: CloseCode.notReading.reason))
        outlet.sink.finish()
        outlet.sink.abort()
        // The core hears of it once the outputs being performed are all out: its answer (a room_state saying the
        // reader is suspended) must not reach the partner before an older room_state still waiting in this batch.
        cutOffs.append((id, envelope))
    }

    private mutating func forgetStream(_ outlet: Outlet, _ id: ConnectionID) {
        if let token = outlet.postToken { postTokens[token] = nil }
        streamSids[id] = nil
    }

    mutating func takeLogs() -> [LogEntry] {
        defer { logs = [] }
        return logs
    }

    private mutating func note(
        _ level: Logger.Level, _ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard level >= logLevel else { return }
        logs.append(LogEntry(level: level, message: message(), metadata: metadata()))
    }

    private mutating func log(_ event: SignalingCore.Event) {
        switch event {
        case .joined(let rid, let cid, let kind):
            note(.info, "joined", metadata: ["rid": "\(rid)", "cid": "\(cid)", "reconnect": "\(kind.rawValue)"])
        case .suspended(let rid, let cid):
            note(.info, "suspended", metadata: ["rid": "\(rid)", "cid": "\(cid)"])
        case .left(let rid, let cid, let reason):
            note(.info, "left", metadata: ["rid": "\(rid)", "cid": "\(cid)", "reason": "\(reason)"])
        case .roomEnded(let rid):
            note(.info, "room ended", metadata: ["rid": "\(rid)"])
        case .released(let rid):
            note(.notice, "room taken over by another node: its clients were sent there", metadata: ["rid": "\(rid)"])
        case .ringing(let rid, let callId):
            metrics.ring("started")
            note(.info, "ringing", metadata: ["rid": "\(rid)", "call": "\(callId)"])
        case .ringEnded(let rid, let callId, let outcome):
            metrics.ring(outcome)
            note(.info, "ring ended", metadata: ["rid": "\(rid)", "call": "\(callId)", "outcome": "\(outcome)"])
        }
    }
}

struct LogEntry: Sendable {
    var level: Logger.Level
    var message: Logger.Message
    var metadata: Logger.Metadata
}
