import DuetClient
import DuetLock
import DuetProtocol
import DuetTransport
import Foundation

/// Holding rooms open through faults (a cluster behind nginx, docs/benchmarks.md "Cluster"): N rooms, two WebSocket
/// clients each (`/ws?rid=ROOM`, so a proxy hashing the room routes both to one node), every connection kept open
/// (pings, reconnect-token refresh). A lost connection or `draining` is followed the way the call engine does it:
/// reconnect after the engine's backoff (500 ms · 2ⁿ ≤ 5 s, ± 20 %), or after `reconnectAfterMs`, and rejoin with
/// the seat's cid and token; every outcome is recorded (reconnect kind, same cid or not, errors, loss → rejoined).
///
/// Driven over stdin/stdout lines by a harness that makes the faults (Tests/e2e/cluster/rolling.py, benchmarks/cluster.py):
///   → `READY <clients>` once every client has joined
///   ← `MARK <label>` a phase starts now
///   ← `WAITBACK <timeoutSeconds>` → `BACK <label> <seconds from MARK until every client was back, or -1> <clients still away>`
///      (back: joined again, and its last room_state lists its room's two seats, both connected)
///   ← `STOP` (or end of input) → `BENCH {json}` (HoldResult), then exit
/// It ends by itself after `--max-seconds` (the result then says `timedOut`).
struct HoldResult: Codable, Sendable {
    var url: String
    var rooms: Int
    var clients: Int
    var timedOut: Bool
    var secondsRunning: Double
    /// From the first connect until every client had joined once (nil: never).
    var readySeconds: Double?
    /// Client-timed first joins (send `join` → `joined`).
    var joinMs: LatencySummary
    /// Rejoins after the first join, by `joined.reconnect`.
    var kinds: [String: Int]
    /// Each client's last `joined.reconnect` ("fresh": never lost its seat's connection).
    var lastKinds: [String: Int]
    /// Rejoins that came back with another cid than the seat's (must be 0).
    var cidChanged: Int
    /// Server `error` codes, and failed connects (`connect: …`), join timeouts.
    var errors: [String: Int]
    /// Why connections ended (close code or reason).
    var closes: [String: Int]
    var drainingReceived: Int
    var losses: Int
    /// Loss (close or `draining`) → `joined` again, over the whole run.
    var rejoinMs: LatencySummary
    var tokenRefreshes: Int
    /// At the end: clients not joined, and rooms whose two clients do not both list both seats connected (a room
    /// split over two nodes, or lost, shows here).
    var clientsAway: Int
    var roomsNotWhole: Int
    var roomsNotWholeSample: [String]
    var phases: [HoldPhaseResult]
}

struct HoldPhaseResult: Codable, Sendable {
    var label: String
    /// MARK → every client back (WAITBACK); -1: timed out; nil: no WAITBACK was asked.
    var backSeconds: Double?
    var stillAway: Int?
    var losses: Int
    var drainings: Int
    var kinds: [String: Int]
    var errors: [String: Int]
    var rejoinMs: LatencySummary
    /// Where a rejoin's time went (issue 53: a drain's budget), the parts adding up to the whole rejoin: MARK →
    /// `draining` received by a joined client (the node's announcement); loss → the first connect (the client's delay:
    /// `reconnectAfterMs`, as the engine takes it); the first connect → the last one (failed connects or
    /// refused joins and the backoffs between them, 0 for most); the last connect's own time (TCP and the upgrade
    /// through the proxy, a draining node's 503 retried by it on the next); `join` → `joined` on the new node (the
    /// room recovered from the token and the store). Connects per rejoin, by count ("1": the first one worked).
    var drainingAfterMarkMs: LatencySummary
    var rejoinWaitMs: LatencySummary
    var rejoinRetryingMs: LatencySummary
    var rejoinConnectMs: LatencySummary
    var rejoinJoinMs: LatencySummary
    var rejoinConnects: [String: Int]
    /// Clients that lost their connection more than once in this phase (a room moved more than once: 0 in a drain).
    var clientsLostMoreThanOnce: Int
}

/// Everything the clients report, by phase.
final class HoldRecorder: Sendable {
    final class Phase: Sendable {
        let label: String
        let started: ContinuousClock.Instant
        let rejoin = LatencyRecorder()
        let drainingAfterMark = LatencyRecorder()
        let rejoinWait = LatencyRecorder()
        let rejoinRetrying = LatencyRecorder()
        let rejoinConnect = LatencyRecorder()
        let rejoinJoin = LatencyRecorder()
        let rejoinConnects = Mutex<[String: Int]>([:])
        /// Losses per client in this phase: a client lost twice was moved twice (its room went back and forth).
        let lossesByClient = Mutex<[ObjectIdentifier: Int]>([:])
        let counts = Mutex(Counts())
        let back = Mutex<(seconds: Double, away: Int)?>(nil)
        init(label: String, started: ContinuousClock.Instant) {
            self.label = label
            self.started = started
        }
    }

    struct Counts {
        var losses = 0
        var drainings = 0
        var kinds: [String: Int] = [:]
        var errors: [String: Int] = [:]
        var closes: [String: Int] = [:]
        var cidChanged = 0
        var tokenRefreshes = 0
    }

    let joins = LatencyRecorder()
    let rejoins = LatencyRecorder()
    private let totals = Mutex(Counts())
    private let phaseList = Mutex<[Phase]>([Phase(label: "start", started: .now)])

    var current: Phase { phaseList.withLock { $0.last! } }
    var phases: [Phase] { phaseList.withLock { $0 } }

    func mark(_ label: String) -> Phase {
        let phase = Phase(label: label, started: .now)
        phaseList.withLock { $0.append(phase) }
        return phase
    }

    private func count(_ change: (inout Counts) -> Void) {
        totals.withLock { change(&$0) }
        current.counts.withLock { change(&$0) }
    }

    func loss(draining: Bool, of client: ObjectIdentifier) {
        current.lossesByClient.withLock { $0[client, default: 0] += 1 }
        count {
            $0.losses += 1
            if draining { $0.drainings += 1 }
        }
    }
    func drainingOnly() { count { $0.drainings += 1 } }
    func drainingArrived(at instant: ContinuousClock.Instant) {
        let phase = current
        phase.drainingAfterMark.record(nanoseconds: (instant - phase.started).nanoseconds)
    }
    /// A rejoin's parts (`HoldPhaseResult`).
    func rejoinParts(wait: Duration, retrying: Duration, connect: Duration, join: Duration, connects: Int) {
        let phase = current
        phase.rejoinWait.record(nanoseconds: wait.nanoseconds)
        phase.rejoinRetrying.record(nanoseconds: retrying.nanoseconds)
        phase.rejoinConnect.record(nanoseconds: connect.nanoseconds)
        phase.rejoinJoin.record(nanoseconds: join.nanoseconds)
        phase.rejoinConnects.withLock { $0["\(connects)", default: 0] += 1 }
    }
    func error(_ key: String) { count { $0.errors[key, default: 0] += 1 } }
    func close(_ key: String) { count { $0.closes[key, default: 0] += 1 } }
    func tokenRefreshed() { count { $0.tokenRefreshes += 1 } }
    func rejoined(kind: String, sameCid: Bool, after: Duration) {
        count {
            $0.kinds[kind, default: 0] += 1
            if !sameCid { $0.cidChanged += 1 }
        }
        rejoins.record(nanoseconds: after.nanoseconds)
        current.rejoin.record(nanoseconds: after.nanoseconds)
    }

    var counts: Counts { totals.withLock { $0 } }
}

/// One participant held open for the whole run.
final class HoldClient: Sendable {
    let rid: String
    let base: String
    let recorder: HoldRecorder

    struct State {
        /// The node the last `draining` named for the room, as `CallEngine.via`: on every connect until
        /// `VIA_FAILED_CONNECTS_TO_FORGET` of them fail in a row.
        var via: String?
        var viaFailedConnects = 0
        var cid: String?
        var token: String?
        var tokenTTLMs: Int64 = 0
        var joined = false
        var everJoined = false
        var lostAt: ContinuousClock.Instant?
        var lostByDraining = false
        /// Since the loss: when the first connect began, how many connects, and how long the last one took.
        var firstConnectAt: ContinuousClock.Instant?
        var lastConnectAt: ContinuousClock.Instant?
        var connectsSinceLoss = 0
        var lastConnect: Duration = .zero
        /// Since when this client has been joined with a room_state listing both seats connected.
        var wholeSince: ContinuousClock.Instant?
        var participants: [ParticipantInfo] = []
        var lastKind: String?
        var connection: WebSocketSignalingConnection?
        var stopped = false
    }

    let state = Mutex(State())

    init(rid: String, base: String, recorder: HoldRecorder) {
        self.rid = rid
        self.base = base
        self.recorder = recorder
    }

    /// Reconnects until the run stops: backoff as the engine's link machine, or `draining`'s delay instead, counted
    /// from when `draining` arrived (as `CallEngine` schedules it), not from when the close handshake was over.
    func run() async {
        var attempt = 0
        var next: ContinuousClock.Instant?
        while !state.withLock({ $0.stopped }) {
            if let next { try? await Task.sleep(until: next) }
            if state.withLock({ $0.stopped }) { return }
            let (joined, drain) = await session()
            if joined { attempt = 0 }
            let backoff = ContinuousClock.now + .milliseconds(Self.backoff(attempt: attempt))
            next = drain.map { $0.at + .milliseconds($0.afterMs) } ?? backoff
            attempt += 1
        }
    }

    static func backoff(attempt: Int) -> Int64 {
        let base = min(5_000, 500 << min(attempt, 4))
        return Int64(Int.random(in: base * 8 / 10...base * 12 / 10))
    }

    func stop() -> WebSocketSignalingConnection? {
        state.withLock { state in
            state.stopped = true
            return state.connection
        }
    }

    /// One connection: connect, join (with the seat's cid and token once it has one), hold. Returns whether it
    /// joined, and the delay `draining` asked for with when it arrived.
    private func session() async -> (joined: Bool, drain: (afterMs: Int64, at: ContinuousClock.Instant)?) {
        let connection: WebSocketSignalingConnection
        let connectAt = ContinuousClock.now
        let via = state.withLock { state in
            if state.lostAt != nil, state.firstConnectAt == nil { state.firstConnectAt = connectAt }
            state.lastConnectAt = connectAt
            state.connectsSinceLoss += 1
            return state.via
        }
        do {
            let url = SignalingURL.webSocket(server: base, roomId: rid, via: via)
            connection = try await WebSocketSignalingConnection.connect(url: url, timeout: .seconds(10))
            let took = ContinuousClock.now - connectAt
            state.withLock { state in
                state.lastConnect = took
                state.viaFailedConnects = 0
            }
        } catch {
            state.withLock { state in  // that node is gone: by the room from now on, as the engine does
                state.viaFailedConnects += 1
                if state.viaFailedConnects >= ResilienceConstants.VIA_FAILED_CONNECTS_TO_FORGET { state.via = nil }
            }
            switch error {
            case .timedOut: recorder.error("connect: timed out")
            case .refused(let status): recorder.error("connect: refused \(status)")
            case .unreachable: recorder.error("connect: unreachable")
            }
            return (false, nil)
        }
        let seat = state.withLock { state -> (cid: String?, token: String?)? in
            if state.stopped { return nil }
            state.connection = connection
            return (state.cid, state.token)
        }
        guard let seat else {
            await connection.close()
            return (false, nil)
        }
        let joinSent = ContinuousClock.now
        do {
            let payload = JoinPayload(reconnectCid: seat.cid, reconnectToken: seat.token, device: "bench-hold")
            try await connection.send(Envelope(.join, rid: rid, payload: try JSONValue(encoding: payload)))
        } catch {
            recorder.error("join send: \(error)")
            await connection.close()
            return (false, nil)
        }
        let joinedHere = Mutex(false)
        // A join that is not answered in 10 s: give this connection up (as the engine's join recovery would).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(10))
            if !joinedHere.withLock({ $0 }) {
                recorder.error("join timeout")
                await connection.close()
            }
        }
        // Pings every 12 s (as the engine does), and the reconnect token refreshed at half its lifetime.
        let keepAlive = Task { [rid] in
            var refreshAt = ContinuousClock.now + .seconds(3600)
            var ttlSeen: Int64 = -1
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(12))
                try await connection.send(Envelope(.ping, payload: ["ts": .int(Int64(Date().timeIntervalSince1970 * 1_000))]))
                let ttl = self.state.withLock { $0.tokenTTLMs }
                if ttl != ttlSeen, ttl > 0 {
                    ttlSeen = ttl
                    refreshAt = ContinuousClock.now + .milliseconds(ttl / 2)
                }
                if ContinuousClock.now >= refreshAt, joinedHere.withLock({ $0 }) {
                    refreshAt = ContinuousClock.now + .seconds(3600)
                    try await connection.send(Envelope(.reconnectTokenRefresh, rid: rid, payload: [:]))
                }
            }
        }
        var drain: (afterMs: Int64, at: ContinuousClock.Instant)?
        for await event in connection.events {
            switch event {
            case .message(let envelope):
                switch envelope.type {
                case "joined":
                    guard let joined = try? envelope.payload.decode(JoinedPayload.self) else {
                        recorder.error("undecodable joined")
                        continue
                    }
                    joinedHere.withLock { $0 = true }
                    didJoin(joined, cid: envelope.cid, sentAt: joinSent)
                case "room_state":
                    if let roomState = try? envelope.payload.decode(RoomStatePayload.self) { update(roomState.participants) }
                case "reconnect-token-refreshed":
                    if let refreshed = try? envelope.payload.decode(ReconnectTokenRefreshedPayload.self) {
                        state.withLock {
                            $0.token = refreshed.reconnectToken
                            $0.tokenTTLMs = refreshed.reconnectTokenTTLMs
                        }
                        recorder.tokenRefreshed()
                    }
                case "draining":
                    let at = ContinuousClock.now
                    let payload = try? envelope.payload.decode(DrainingPayload.self)
                    drain = (payload?.reconnectAfterMs ?? 0, at)
                    state.withLock { state in
                        state.via = payload?.via.flatMap(CallEngine.acceptableVia)
                        state.viaFailedConnects = 0
                    }
                    if lost(draining: true) { recorder.drainingArrived(at: at) } else { recorder.drainingOnly() }
                    await connection.close()
                case "error":
                    let code = (try? envelope.payload.decode(ErrorPayload.self))?.code.rawValue ?? "?"
                    recorder.error(code)
                    // A refused join: this connection is no use; try again after the backoff.
                    if !joinedHere.withLock({ $0 }) { await connection.close() }
                default:
                    break
                }
            case .undecodable:
                recorder.error("undecodable")
            case .closed(let reason):
                if drain == nil { recorder.close(Self.describe(reason)) } else { recorder.close("after draining") }
                _ = lost(draining: false)
            }
        }
        watchdog.cancel()
        keepAlive.cancel()
        state.withLock { if $0.connection === connection { $0.connection = nil } }
        return (joinedHere.withLock { $0 }, drain)
    }

    static func describe(_ reason: SignalingCloseReason) -> String {
        switch reason {
        case .byClient: "by client"
        case .byServer(let code, let text): "server \(code.map(String.init) ?? "-") \(text ?? "")".trimmingCharacters(in: .whitespaces)
        case .silent: "silent"
        case .failed: "failed"
        }
    }

    private func didJoin(_ joined: JoinedPayload, cid: String?, sentAt: ContinuousClock.Instant) {
        let now = ContinuousClock.now
        let first = state.withLock {
            state -> (
                first: Bool, kind: String, sameCid: Bool, lostAt: ContinuousClock.Instant?, firstConnectAt: ContinuousClock.Instant?,
                connects: Int, connect: Duration, lastConnectAt: ContinuousClock.Instant?
            ) in
            let first = !state.everJoined
            let parts = (state.firstConnectAt, state.connectsSinceLoss, state.lastConnect, state.lastConnectAt)
            state.firstConnectAt = nil
            state.connectsSinceLoss = 0
            let sameCid = state.cid == nil || state.cid == cid
            if state.cid == nil { state.cid = cid }
            state.token = joined.reconnectToken
            state.tokenTTLMs = joined.reconnectTokenTTLMs
            state.joined = true
            state.everJoined = true
            state.lastKind = joined.reconnect.rawValue
            let lostAt = state.lostAt
            state.lostAt = nil
            Self.setParticipants(joined.participants, in: &state, now: now)
            return (first, joined.reconnect.rawValue, sameCid, lostAt, parts.0, parts.1, parts.2, parts.3)
        }
        if first.first {
            recorder.joins.record(nanoseconds: (now - sentAt).nanoseconds)
        } else {
            recorder.rejoined(kind: first.kind, sameCid: first.sameCid, after: now - (first.lostAt ?? sentAt))
            if let lostAt = first.lostAt, let connectAt = first.firstConnectAt, let lastConnectAt = first.lastConnectAt {
                recorder.rejoinParts(
                    wait: connectAt - lostAt, retrying: lastConnectAt - connectAt, connect: first.connect, join: now - sentAt,
                    connects: first.connects)
            }
        }
    }

    private func update(_ participants: [ParticipantInfo]) {
        let now = ContinuousClock.now
        state.withLock { Self.setParticipants(participants, in: &$0, now: now) }
    }

    private static func setParticipants(_ participants: [ParticipantInfo], in state: inout State, now: ContinuousClock.Instant) {
        state.participants = participants
        let whole =
            state.joined && participants.count == 2 && participants.contains { $0.cid == state.cid }
            && participants.allSatisfy { ($0.connectionStatus ?? .connected) == .connected }
        if !whole { state.wholeSince = nil } else if state.wholeSince == nil { state.wholeSince = now }
    }

    /// The connection is gone (or going): from now until `joined` is this client's time away. Returns whether
    /// this was a loss of a joined seat (false: it was not joined, e.g. a connection that never got `joined`).
    private func lost(draining: Bool) -> Bool {
        let wasJoined = state.withLock { state -> Bool in
            guard state.joined else { return false }
            state.joined = false
            state.wholeSince = nil
            state.lostAt = .now
            state.firstConnectAt = nil
            state.connectsSinceLoss = 0
            return true
        }
        if wasJoined { recorder.loss(draining: draining, of: ObjectIdentifier(self)) }
        return wasJoined
    }
}

enum HoldRun {
    /// `http://host:port/` from `http(s)://…`, `ws(s)://…`, with or without a trailing `/ws`.
    static func normalizedBase(_ url: String) -> String {
        var base = url
        if base.hasPrefix("ws://") {
            base = "http://" + base.dropFirst(5)
        } else if base.hasPrefix("wss://") {
            base = "https://" + base.dropFirst(6)
        }
        if let query = base.firstIndex(of: "?") { base = String(base[..<query]) }
        if base.hasSuffix("/ws") { base.removeLast(2) }
        return base.hasSuffix("/") ? base : base + "/"
    }

    /// One line on stdout, unbuffered (a harness reads it as it comes).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func run(url: String, rooms: Int, joinsPerSecond: Double, maxSeconds: Double) async throws -> Never {
        let base = normalizedBase(url)
        let started = ContinuousClock.now
        let deadline = started + .milliseconds(Int64(maxSeconds * 1_000))
        let recorder = HoldRecorder()
        let rids = try await Rooms.make(rooms, baseURL: base)
        let clients = rids.flatMap { rid in
            [HoldClient(rid: rid, base: base, recorder: recorder), HoldClient(rid: rid, base: base, recorder: recorder)]
        }
        let connectStart = ContinuousClock.now
        let interval = Duration.nanoseconds(Int64(1e9 / max(1, joinsPerSecond)))
        for (index, client) in clients.enumerated() {
            Task {
                try? await Task.sleep(until: connectStart + interval * index)
                await client.run()
            }
        }
        let finished = Mutex(false)
        let ready = Mutex<Double?>(nil)
        @Sendable func finish(timedOut: Bool) -> Never {
            if finished.withLock({
                let was = $0
                $0 = true
                return was
            }) {
                while true { sleep(60) }  // the other caller is printing and exits
            }
            let result = snapshot(
                url: base, rooms: rids.count, clients: clients, recorder: recorder, timedOut: timedOut,
                running: (ContinuousClock.now - started).seconds, ready: ready.withLock { $0 })
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            say("BENCH " + ((try? String(decoding: encoder.encode(result), as: UTF8.self)) ?? "{}"))
            exit(timedOut ? 2 : 0)
        }
        Task {
            try? await Task.sleep(until: deadline)
            FileHandle.standardError.write(Data("duet-bench hold: --max-seconds reached\n".utf8))
            finish(timedOut: true)
        }
        Task {
            while ContinuousClock.now < deadline {
                if clients.allSatisfy({ $0.state.withLock { $0.everJoined } }) {
                    ready.withLock { $0 = (ContinuousClock.now - connectStart).seconds }
                    say("READY \(clients.count)")
                    return
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        for await line in standardInputLines() {
            let words = line.split(separator: " ", maxSplits: 1).map(String.init)
            switch words.first?.uppercased() {
            case "MARK":
                _ = recorder.mark(words.count > 1 ? words[1].trimmingCharacters(in: .whitespaces) : "phase")
            case "WAITBACK":
                let timeout = words.count > 1 ? Double(words[1].trimmingCharacters(in: .whitespaces)) ?? 60 : 60
                let phase = recorder.current
                let (seconds, away) = await waitBack(clients, since: phase.started, timeout: timeout)
                phase.back.withLock { $0 = (seconds, away) }
                say("BACK \(phase.label) \(String(format: "%.3f", seconds)) \(away)")
            case "STOP":
                finish(timedOut: false)
            case nil:
                continue
            default:
                FileHandle.standardError.write(Data("duet-bench hold: unknown command \(line)\n".utf8))
            }
        }
        finish(timedOut: false)  // end of input
    }

    /// Waits until every client is back (joined, its room whole) — at least 1 s after the MARK, so that a fault made
    /// just before is seen first — and answers the time from the MARK to the last client's return (0 when no one
    /// was away), or -1 with the number still away at the timeout.
    static func waitBack(_ clients: [HoldClient], since mark: ContinuousClock.Instant, timeout: Double) async -> (Double, Int) {
        let limit = ContinuousClock.now + .milliseconds(Int64(timeout * 1_000))
        while true {
            let now = ContinuousClock.now
            var away = 0
            var latest = mark
            for client in clients {
                if let since = client.state.withLock({ $0.wholeSince }) { latest = max(latest, since) } else { away += 1 }
            }
            if away == 0, now - mark >= .seconds(1) { return ((latest - mark).seconds, 0) }
            if now >= limit { return (-1, away) }
            try? await Task.sleep(for: .milliseconds(10))
        }
    }

    static func snapshot(
        url: String, rooms: Int, clients: [HoldClient], recorder: HoldRecorder, timedOut: Bool, running: Double, ready: Double?
    ) -> HoldResult {
        let states = clients.map { $0.state.withLock { $0 } }
        var lastKinds: [String: Int] = [:]
        for state in states { lastKinds[state.lastKind ?? "never joined", default: 0] += 1 }
        var notWhole: [String] = []
        for index in stride(from: 0, to: states.count - 1, by: 2) {
            let a = states[index]
            let b = states[index + 1]
            let seats = Set([a.cid, b.cid].compactMap { $0 })
            let whole =
                a.wholeSince != nil && b.wholeSince != nil && seats.count == 2
                && Set(a.participants.map(\.cid)) == seats && Set(b.participants.map(\.cid)) == seats
            if !whole {
                func side(_ s: HoldClient.State) -> String {
                    "\(s.cid ?? "-") \(s.joined ? "joined" : "away") sees ["
                        + s.participants.map { "\($0.cid) \($0.connectionStatus?.rawValue ?? "?")" }.joined(separator: ", ") + "]"
                }
                notWhole.append("\(clients[index].rid): \(side(a)) | \(side(b))")
            }
        }
        let counts = recorder.counts
        let phases = recorder.phases.map { phase in
            let c = phase.counts.withLock { $0 }
            let back = phase.back.withLock { $0 }
            return HoldPhaseResult(
                label: phase.label, backSeconds: back?.seconds, stillAway: back?.away, losses: c.losses, drainings: c.drainings,
                kinds: c.kinds, errors: c.errors, rejoinMs: phase.rejoin.summary, drainingAfterMarkMs: phase.drainingAfterMark.summary,
                rejoinWaitMs: phase.rejoinWait.summary, rejoinRetryingMs: phase.rejoinRetrying.summary,
                rejoinConnectMs: phase.rejoinConnect.summary,
                rejoinJoinMs: phase.rejoinJoin.summary, rejoinConnects: phase.rejoinConnects.withLock { $0 },
                clientsLostMoreThanOnce: phase.lossesByClient.withLock { $0.values.filter { $0 > 1 }.count })
        }
        return HoldResult(
            url: url, rooms: rooms, clients: clients.count, timedOut: timedOut, secondsRunning: running, readySeconds: ready,
            joinMs: recorder.joins.summary, kinds: counts.kinds, lastKinds: lastKinds, cidChanged: counts.cidChanged,
            errors: counts.errors, closes: counts.closes, drainingReceived: counts.drainings, losses: counts.losses,
            rejoinMs: recorder.rejoins.summary, tokenRefreshes: counts.tokenRefreshes,
            clientsAway: states.filter { !$0.joined }.count, roomsNotWhole: notWhole.count,
            roomsNotWholeSample: Array(notWhole.prefix(10)), phases: phases)
    }

    /// Lines from stdin, read on a thread of their own (a blocking read must not hold a task's thread).
    static func standardInputLines() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread {
            while let line = readLine() { continuation.yield(line.trimmingCharacters(in: .whitespacesAndNewlines)) }
            continuation.finish()
        }
        thread.start()
        return stream
    }
}

/// Join latency through a proxy against one node directly: rooms alternate between the two targets, started at
/// the same pace, so both see the same load and the same noise. Each room: two clients connect (`/ws?rid=`), join,
/// leave. Connect (WebSocket upgrade) and join (send `join` → `joined`) are timed by the clients.
struct JoinLatencyResult: Codable, Sendable {
    struct Target: Codable, Sendable {
        var url: String
        var connectMs: LatencySummary
        var joinMs: LatencySummary
        var failures: Int
    }
    var rooms: Int
    var joinsPerSecond: Double
    var proxy: Target
    var direct: Target
}

enum JoinLatencyRun {
    static func run(url: String, directURL: String, rooms: Int, joinsPerSecond: Double) async throws -> JoinLatencyResult {
        let proxy = HoldRun.normalizedBase(url)
        let direct = HoldRun.normalizedBase(directURL)
        let rids = try await Rooms.make(rooms, baseURL: proxy)
        let recorders = [(LatencyRecorder(), LatencyRecorder()), (LatencyRecorder(), LatencyRecorder())]
        let failures = Mutex([0, 0])
        let started = ContinuousClock.now
        let pairInterval = Duration.nanoseconds(Int64(2e9 / max(1, joinsPerSecond)))
        await withTaskGroup(of: Void.self) { group in
            for (index, rid) in rids.enumerated() {
                group.addTask {
                    let side = index % 2
                    let (connects, joins) = recorders[side]
                    try? await Task.sleep(until: started + pairInterval * index)
                    do {
                        try await pair(base: side == 0 ? proxy : direct, rid: rid, connects: connects, joins: joins)
                    } catch {
                        failures.withLock { $0[side] += 1 }
                        FileHandle.standardError.write(Data("join-latency: \(rid): \(error)\n".utf8))
                    }
                }
            }
        }
        let failed = failures.withLock { $0 }
        return JoinLatencyResult(
            rooms: rooms, joinsPerSecond: joinsPerSecond,
            proxy: .init(url: proxy, connectMs: recorders[0].0.summary, joinMs: recorders[0].1.summary, failures: failed[0]),
            direct: .init(url: direct, connectMs: recorders[1].0.summary, joinMs: recorders[1].1.summary, failures: failed[1]))
    }

    private static func pair(base: String, rid: String, connects: LatencyRecorder, joins: LatencyRecorder) async throws {
        var connections: [WebSocketSignalingConnection] = []
        defer {
            let open = connections
            Task { for connection in open { await connection.close() } }
        }
        for _ in 0..<2 {
            let begun = ContinuousClock.now
            let connection = try await WebSocketSignalingConnection.connect(
                url: SignalingURL.webSocket(server: base, roomId: rid), timeout: .seconds(10))
            connects.record(nanoseconds: (ContinuousClock.now - begun).nanoseconds)
            connections.append(connection)
            var events = connection.events.makeAsyncIterator()
            let sent = ContinuousClock.now
            try await connection.send(Envelope(.join, rid: rid, payload: try JSONValue(encoding: JoinPayload(device: "bench-join"))))
            while true {
                guard let event = await events.next() else { throw BenchError("closed before joined") }
                guard case .message(let envelope) = event else {
                    if case .closed(let reason) = event { throw BenchError("closed before joined: \(reason)") }
                    continue
                }
                if envelope.type == "joined" { break }
                if envelope.type == "error" { throw BenchError("join refused: \(envelope.payload)") }
            }
            joins.record(nanoseconds: (ContinuousClock.now - sent).nanoseconds)
        }
        for connection in connections { try? await connection.send(Envelope(.leave, rid: rid, payload: [:])) }
    }
}
