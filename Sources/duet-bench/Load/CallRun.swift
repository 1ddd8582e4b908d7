import DuetProtocol
import DuetTransport
import Foundation

/// Call-shaped load: rooms start at a steady join rate; in each, two clients join, one offers, the other
/// answers, each trickles 20 ICE candidates, then both ping once a second until the end.
struct CallResult: Codable, Sendable {
    var server: ServerUnderTest.Kind
    var transport: String
    var rooms: Int
    var joinsPerSecond: Double
    var joinLatencyMs: LatencySummary
    /// duet only: the server's own time per join (nil for the Node relay, which does not measure it).
    var serverJoinMs: BucketSummary?
    var relayLatencyMs: LatencySummary
    var messagesPerSecond: Double
    var serverRSSKiB: Int
    var serverCPUPercent: Double
    /// The load generator's own CPU over the run (this process: every client, AsyncHTTPClient's POSTs for SSE): on a
    /// machine of few cores a generator that needs them all is where a latency comes from, not the server.
    var generatorCPUPercent: Double
}

enum CallRun {
    static let sdp = "v=0\r\n" + String(repeating: "a=candidate-free-attribute-line-for-size\r\n", count: 50)

    static func run(
        _ kind: ServerUnderTest.Kind, over transport: SignalingTransportKind = .ws, rooms: Int, joinsPerSecond: Double, seconds: Double
    ) async throws -> CallResult {
        let server = try ServerUnderTest(kind)
        let relay = LatencyRecorder()
        let joins = LatencyRecorder()
        let rids = try await Rooms.make(rooms, on: server)
        let before = server.sample
        let generatorBefore = ProcessSample(pid: getpid())
        let started = ContinuousClock.now
        let end = started + .milliseconds(Int64(seconds * 1_000))
        let pairInterval = Duration.nanoseconds(Int64(2e9 / joinsPerSecond))
        let delivered = try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, rid) in rids.enumerated() {
                group.addTask {
                    try await Task.sleep(until: started + pairInterval * index)
                    let a = try await BenchClient.connect(to: server, over: transport, latency: relay)
                    let b = try await BenchClient.connect(to: server, over: transport, latency: relay)
                    for client in [a, b] { joins.record(nanoseconds: try await client.join(rid).1.nanoseconds) }
                    try await a.send(.offer, rid: rid, payload: ["sdp": .string(sdp)])
                    try await b.send(.answer, rid: rid, payload: ["sdp": .string(sdp)])
                    for _ in 0..<20 {
                        try await a.send(.ice, rid: rid, payload: BenchClient.candidate)
                        try await b.send(.ice, rid: rid, payload: BenchClient.candidate)
                    }
                    while ContinuousClock.now < end {
                        try await Task.sleep(for: .seconds(1))
                        for client in [a, b] { try await client.connection.send(Envelope(.ping, payload: ["ts": 0])) }
                    }
                    try await Task.sleep(for: .milliseconds(300))
                    let received = a.received + b.received
                    await a.close()
                    await b.close()
                    return received
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let after = server.sample
        let generatorAfter = ProcessSample(pid: getpid())
        let serverJoins = try await ServerJoinHistogram.read(from: server)
        server.stop()
        return CallResult(
            server: kind, transport: transport.rawValue, rooms: rooms, joinsPerSecond: joinsPerSecond, joinLatencyMs: joins.summary,
            serverJoinMs: serverJoins, relayLatencyMs: relay.summary,
            messagesPerSecond: Double(delivered) / elapsed, serverRSSKiB: after.rssKiB,
            serverCPUPercent: 100 * (after.cpuSeconds - before.cpuSeconds) / elapsed,
            generatorCPUPercent: 100 * (generatorAfter.cpuSeconds - generatorBefore.cpuSeconds) / elapsed)
    }
}
