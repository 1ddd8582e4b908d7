import DuetLock
import DuetProtocol
import DuetTransport
import Foundation

/// Call-shaped churn on one `duet serve` for a long time (issue 34, point 3: benchmarks/soak.sh for 30 minutes or
/// hours, SoakTests for three). `clients / 2` slots each make calls one after another until the end. A call: a room
/// id from the server, the host and the guest join (one guest in four on SSE), an offer and an answer (4 KB SDPs) and
/// ten ICE candidates each way, a few seconds held, and then what a real population does besides: the guest's
/// connection drops and it comes back with its reconnect token, an SSE stream is opened and abandoned, a guest reads
/// nothing (a frozen tab); and the end — both leave, the host ends it for both, or both just go (their seats then
/// wait out the eviction timeout). Every outcome and every error is counted; no error is expected.
///
/// The server is sampled every `sampleSeconds` (`SoakSampler`). After the churn every client has gone, and once the
/// eviction timeout has passed the server's tables of connections, seats and rooms must be empty again
/// (`SoakResult.settled`): a map that forgets nothing shows there within minutes, where growth alone takes hours.
struct SoakResult: Codable, Sendable {
    var url: String
    var clients: Int
    var churnSeconds: Double
    var warmupSeconds: Double
    var evictionSeconds: Int
    /// The server's `--reconnect-token-ttl` for the run (what bounds the revoked and ended seats).
    var tokenTtlSeconds: Int
    /// The server's `--ended-seat-memory` for the run (what bounds the ended seats).
    var endedSeatMemorySeconds: Int
    var calls: Int
    /// How calls went: `leave`, `end`, `abandoned` (how each ended), and `recovered` or `reattached` (the guest back
    /// with its token: after or before the server saw its old connection go), `sseAbandoned`, `slowReader` (what else
    /// happened in it).
    var outcomes: [String: Int]
    /// By kind; must be empty.
    var errors: [String: Int]
    var joinMs: LatencySummary
    var samples: [SoakSample]
    /// Per series, after the warm-up: the mean of the churn's last third of samples against its first third.
    var growth: [String: SoakGrowth]
    /// The server before the first client, and once every client had gone and the eviction timeout had passed.
    var idleBefore: SoakSample
    var settled: SoakSample
    /// The tables that must be empty once idle (`SoakSample.emptiedWhenIdle`), and those of them that were not.
    var checkedOnceIdle: [String]
    var leftOnceIdle: [String: Double]
}

struct SoakGrowth: Codable, Sendable {
    var first: Double
    var last: Double
    var percent: Double
}

enum SoakRun {
    static let sdp = "v=0\r\n" + String(repeating: "a=soak-attribute-line-of-a-typical-offer-size-ok\r\n", count: 80)

    static func run(
        server: ServerUnderTest, clients: Int, seconds: Double, warmupSeconds: Double, sampleSeconds: Double, evictionSeconds: Int,
        tokenTtlSeconds: Int
    ) async throws -> SoakResult {
        let base = server.baseURL
        let counts = SoakCounts()
        let sampler = SoakSampler(server: server, counts: counts)
        let started = ContinuousClock.now
        let idleBefore = try await sampler.sample(since: started)
        let joins = LatencyRecorder()
        let relay = LatencyRecorder()
        let end = started + .milliseconds(Int64(seconds * 1_000))
        let slots = max(1, clients / 2)
        let sampling = Task { await sampler.run(since: started, every: sampleSeconds, until: end) }
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<slots {
                group.addTask {
                    // Slots start spread over the first ten seconds: the run does not open with one burst.
                    try? await Task.sleep(until: started + .milliseconds(Int64(index) * 10_000 / Int64(slots)))
                    let call = SoakCall(base: base, counts: counts, joins: joins, relay: relay, guestOnSSE: index % 4 == 3)
                    while ContinuousClock.now < end { await call.run(until: end) }
                }
            }
        }
        let series = await sampling.value
        // Every client has gone; a seat left without a leave waits out the eviction timeout (and a tick), then the
        // tables of connections, seats and rooms must be empty.
        try await Task.sleep(for: .seconds(Double(evictionSeconds) + 2 * sampleSeconds + 5))
        let settled = try await sampler.sample(since: started)
        let totals = counts.snapshot
        return SoakResult(
            url: base, clients: slots * 2, churnSeconds: seconds, warmupSeconds: warmupSeconds, evictionSeconds: evictionSeconds,
            tokenTtlSeconds: tokenTtlSeconds, endedSeatMemorySeconds: tokenTtlSeconds, calls: totals.calls, outcomes: totals.outcomes,
            errors: totals.errors, joinMs: joins.summary,
            samples: series,
            growth: SoakSample.growth(of: series, after: warmupSeconds), idleBefore: idleBefore, settled: settled,
            checkedOnceIdle: SoakSample.emptiedWhenIdle.sorted(),
            leftOnceIdle: SoakSample.emptiedWhenIdle.reduce(into: [:]) { left, table in
                // A table the server did not report counts as left: a renamed table must not pass unseen.
                let value = settled.tables[table] ?? .nan
                if value != 0 { left[table] = value.isNaN ? -1 : value }
            })
    }
}

/// Counts from every slot at once.
final class SoakCounts: Sendable {
    struct Totals: Sendable {
        var calls = 0
        var active = 0
        var outcomes: [String: Int] = [:]
        var errors: [String: Int] = [:]
    }

    private let state = Mutex(Totals())
    var snapshot: Totals { state.withLock { $0 } }
    func outcome(_ key: String) { state.withLock { $0.outcomes[key, default: 0] += 1 } }
    func error(_ key: String) { state.withLock { $0.errors[key, default: 0] += 1 } }
    func began() { state.withLock { $0.active += 1 } }
    func ended() {
        state.withLock {
            $0.active -= 1
            $0.calls += 1
        }
    }
}

/// One call of a slot, from its room id to its end.
struct SoakCall: Sendable {
    let base: String
    let counts: SoakCounts
    let joins: LatencyRecorder
    /// Relay latency (the payloads' send stamps): recorded, not reported.
    let relay: LatencyRecorder
    let guestOnSSE: Bool

    func run(until end: ContinuousClock.Instant) async {
        counts.began()
        defer { counts.ended() }
        var opened: [BenchClient] = []
        do {
            let rid = try await roomId()
            let host = try await connect(sse: false)
            opened.append(host)
            _ = try await join(host, rid)
            let roll = Int.random(in: 0..<100)
            if roll < 5 {
                try await frozenGuest(rid: rid, host: host, until: end)
            } else {
                var guest = try await connect(sse: guestOnSSE)
                opened.append(guest)
                let guestSeat = try await join(guest, rid)
                try await host.send(.offer, rid: rid, payload: ["sdp": .string(SoakRun.sdp)])
                try await guest.send(.answer, rid: rid, payload: ["sdp": .string(SoakRun.sdp)])
                for _ in 0..<10 {
                    try await host.send(.ice, rid: rid, payload: BenchClient.candidate)
                    try await guest.send(.ice, rid: rid, payload: BenchClient.candidate)
                }
                try await hold(Int.random(in: 2_000...8_000), until: end)
                if roll < 35 {
                    // The guest's network drops; it comes back on a new connection with its seat's cid and token.
                    await guest.close()
                    guest = try await connect(sse: guestOnSSE)
                    opened.append(guest)
                    guard let cid = guestSeat.cid else { throw BenchError("joined without a cid") }
                    let back = try await join(guest, rid, reconnect: (cid, guestSeat.payload.reconnectToken))
                    // `reattached` when the server had not yet seen the old connection go, `recovered` when it had
                    // (the seat was suspended); `fresh` would be a seat lost.
                    guard back.payload.reconnect != .fresh else { throw BenchError("guest back as fresh: its seat was lost") }
                    counts.outcome(back.payload.reconnect.rawValue)
                    try await guest.send(.ice, rid: rid, payload: BenchClient.candidate)
                    try await hold(Int.random(in: 1_000...4_000), until: end)
                } else if roll < 45 {
                    try await abandonAnSSEStream()
                    counts.outcome("sseAbandoned")
                }
                try await finish(rid: rid, host: host, guest: guest)
            }
        } catch {
            counts.error("\(error)")
            try? await Task.sleep(for: .seconds(1))
        }
        for client in opened { await client.close() }
    }

    /// Both leave, the host ends the room for both, or both just go (the seats wait out the eviction timeout).
    private func finish(rid: String, host: BenchClient, guest: BenchClient?) async throws {
        switch Int.random(in: 0..<10) {
        case 0..<4:
            try await host.send(.leave, rid: rid, payload: [:])
            if let guest { try await guest.send(.leave, rid: rid, payload: [:]) }
            counts.outcome("leave")
        case 4..<8:
            try await host.send(.endRoom, rid: rid, payload: [:])
            counts.outcome("end")
        default:
            counts.outcome("abandoned")
        }
        // What was sent reaches the server before the sockets close (going without a word is `abandoned`'s share).
        try await Task.sleep(for: .milliseconds(300))
    }

    private func roomId() async throws -> String {
        do { return try await Rooms.make(1, baseURL: base)[0] } catch { throw BenchError("room id: \(error)") }
    }

    private func connect(sse: Bool) async throws -> BenchClient {
        do {
            if sse {
                return BenchClient.start(
                    try await SSESignalingConnection.connect(baseURL: base, timeout: .seconds(10), http: BenchClient.sseHTTP),
                    latency: relay)
            }
            return try await BenchClient.connect(SignalingURL.webSocket(server: base, roomId: nil), latency: relay)
        } catch {
            throw BenchError("connect \(sse ? "sse" : "ws"): \(error)")
        }
    }

    private func join(_ client: BenchClient, _ rid: String, reconnect: (cid: String, token: String)? = nil) async throws -> (
        cid: String?, payload: JoinedPayload
    ) {
        let (envelope, took) = try await client.join(rid, reconnect: reconnect, timeout: .seconds(10))
        guard envelope.type == MessageType.joined.rawValue, let joined = try? envelope.payload.decode(JoinedPayload.self) else {
            throw BenchError("join answered \(envelope.type): \(envelope.payload)")
        }
        joins.record(nanoseconds: took.nanoseconds)
        return (envelope.cid, joined)
    }

    private func hold(_ ms: Int, until end: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: min(end, .now + .milliseconds(ms)))
    }

    /// A page that opens its SSE stream and is gone before it joins (a tab closed while loading).
    private func abandonAnSSEStream() async throws {
        let stream: SSESignalingConnection
        do {
            stream = try await SSESignalingConnection.connect(baseURL: base, timeout: .seconds(10), http: BenchClient.sseHTTP)
        } catch {
            throw BenchError("connect sse (abandoned): \(error)")
        }
        await stream.close()
    }

    /// A guest that joins and then reads nothing (a frozen tab): the host's offer and fifty candidates go to it and
    /// wait in the socket and in the server's bounded outbound queue; then the host leaves and the guest's socket goes.
    private func frozenGuest(rid: String, host: BenchClient, until end: ContinuousClock.Instant) async throws {
        let guest = try await SlowReader.open(base: base, joining: rid)
        defer { guest.close() }
        try await host.send(.offer, rid: rid, payload: ["sdp": .string(SoakRun.sdp)])
        for _ in 0..<50 { try await host.send(.ice, rid: rid, payload: BenchClient.candidate) }
        try await hold(Int.random(in: 1_000...3_000), until: end)
        counts.outcome("slowReader")
        try await finish(rid: rid, host: host, guest: nil)
    }
}
