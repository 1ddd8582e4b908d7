import DuetClient
import DuetProtocol
import DuetRooms

/// Everything of one simulated run: the clock, the server, two callers, the media plane, the network
/// and the checks. Single-threaded; every random draw comes from the seed.
final class World {
    static let turnTtlSeconds: Int64 = 600
    /// Unix time at the start of every run, so the server's clock is part of the seed too.
    static let epochMs: Int64 = 1_800_000_000_000

    let scheduler = Scheduler()
    var rng: SplitMix64
    let mutation: Mutation
    let server: SimServer
    private(set) var clients: [SimClient] = []
    private(set) var media: SimMediaPlane!
    let monitor: InvariantMonitor
    private var networks = [SideNetwork(), SideNetwork()]
    var connections: [UInt64: SimConnection] = [:]
    var nextConnectionId: UInt64 = 0
    private(set) var roomId: String?
    /// For the replaying-proxy fault.
    var firstOfferDelivered: [Envelope?] = [nil, nil]
    /// `Fault.tamperFingerprints` in force (a count: faults may overlap).
    var tamperingFingerprints = 0
    private(set) var traceLines: [String] = []
    let keepsFullTrace: Bool
    /// The server's clock jumped: liveness measured on it is off by the jump, so the SSE liveness check rests.
    var serverClockJumped = false

    /// Engine traces for the differential replay (kept only when asked for).
    let recordsEngineTraces: Bool
    private(set) var engineTraces: [EngineTrace] = []

    init(seed: UInt64, options: [Side: CallEngine.Options], mutation: Mutation, fullTrace: Bool, recordEngineTraces: Bool = false) {
        rng = SplitMix64(seed: seed)
        recordsEngineTraces = recordEngineTraces
        self.mutation = mutation
        keepsFullTrace = fullTrace
        monitor = InvariantMonitor(mutation: mutation)
        server = SimServer(seed: seed, mutation: mutation)
        monitor.world = self
        media = SimMediaPlane(world: self)
        clients = Side.allCases.map { SimClient(side: $0, world: self, options: options[$0] ?? CallEngine.Options()) }
        scheduleServerKeepAlive()
        scheduleServerTicks()
    }

    func client(_ side: Side) -> SimClient { clients[side.rawValue] }
    func replace(_ side: Side, with client: SimClient) { clients[side.rawValue] = client }
    func network(_ side: Side) -> SideNetwork { networks[side.rawValue] }
    func updateNetwork(_ side: Side, _ change: (inout SideNetwork) -> Void) {
        let before = networks[side.rawValue]
        change(&networks[side.rawValue])
        if before.signalingUp != networks[side.rawValue].signalingUp, networks[side.rawValue].signalingUp { releaseHeld(side) }
        media.evaluate()
    }

    func mediaPathUp(_ side: Side) -> Bool { network(side).mediaUp && !client(side).frozen }

    var serverNowMs: Int64 { Self.epochMs + scheduler.now + server.clockOffsetMs }

    func roomCreated(_ id: String, by side: Side) {
        if roomId == nil { roomId = id }
    }

    // MARK: - Trace

    /// A new engine starts (a client, or a relaunched one): its trace index, or nil when not recording.
    func beginEngineTrace(_ side: Side, _ options: CallEngine.Options) -> Int? {
        guard recordsEngineTraces else { return nil }
        engineTraces.append(EngineTrace(side: side, options: options.traceForm))
        return engineTraces.count - 1
    }

    func recordEngineStep(_ index: Int, _ input: CallEngine.Input, _ outputs: [CallEngine.Output]) {
        engineTraces[index].steps.append(["input": input.traceForm, "outputs": .array(outputs.map(\.traceForm))])
    }

    func trace(_ side: Side?, _ text: String) {
        let line = "\(Describe.time(scheduler.now)) \(side.map { "\($0)" } ?? "·") \(text)"
        traceLines.append(line)
        if !keepsFullTrace, traceLines.count > 4_000 { traceLines.removeFirst(2_000) }
    }

    // MARK: - Latency

    /// One-way delay on a side's signaling path now: a base of 5–15 ms, the faults' extra latency and jitter,
    /// and TCP retransmissions under loss.
    func signalingDelay(_ side: Side) -> Int64 {
        let net = network(side)
        var delay = rng.range(5, 15) + net.signaling.extraLatencyMs
        if net.signaling.jitterMs > 0 { delay += rng.range(0, net.signaling.jitterMs) }
        if net.lossPercent > 0, rng.below(100) < net.lossPercent { delay += rng.range(200, 1_000) }
        return delay
    }

    // MARK: - Server housekeeping

    private func scheduleServerKeepAlive() {
        scheduler.after(ResilienceConstants.PING_INTERVAL_MS) { [self] in
            serverKeepAlive()
            scheduleServerKeepAlive()
        }
    }

    private func scheduleServerTicks() {
        scheduler.after(1_000) { [self] in
            if server.isUp { process(server.core.handle(.tick, nowMs: serverNowMs)) }
            scheduleServerTicks()
        }
    }
}
