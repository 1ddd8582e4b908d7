import AsyncHTTPClient
import DuetProtocol
import Foundation

/// Many idle WebSocket connections: what each costs the server, idle and after a call, what closing them all costs,
/// and whether memory comes back (docs/benchmarks.md).
struct IdleResult: Codable, Sendable {
    var server: ServerUnderTest.Kind
    var connections: Int
    var rssBeforeKiB: Int
    var rssAfterKiB: Int
    var kibPerConnection: Double
    /// `duet serve` only (its `duet_heap_in_use_bytes`): C heap in use per connection, independent of how the
    /// allocator holds pages.
    var heapKiBPerConnection: Double?
    /// After each connection sent one SDP-sized message (the connection keeps its largest read buffer).
    var kibPerConnectionAfterCall: Double
    var heapKiBPerConnectionAfterCall: Double?
    /// Server CPU (user + system) from the first close to 3 s after the last.
    var closeCPUSeconds: Double
    /// Heap in use after each of 3 rounds of opening `leakRoundConnections` and closing them all (duet only).
    var heapAfterRoundsMiB: [Double]?
    var leakRoundConnections: Int?
}

enum IdleRun {
    /// An offer's size: what a connection reads once in a call.
    static let callMessageBytes = 4_096

    static func run(
        _ kind: ServerUnderTest.Kind, connections count: Int, leakRounds: Int = 3, leakRoundConnections: Int = 10_000,
        leakSettleSeconds: Int = 14
    ) async throws -> IdleResult {
        let server = try ServerUnderTest(kind)
        let latency = LatencyRecorder()
        // Warm up (allocator arenas, first-connection costs) so the difference is per connection.
        let warm = try await open(200, to: server, latency: latency)
        for client in warm { await client.close() }
        try await Task.sleep(for: .seconds(1))
        let before = server.sample
        let heapBefore = try await heap(server)
        let clients = try await open(count, to: server, latency: latency)
        try await Task.sleep(for: .seconds(3))
        let after = server.sample
        let heapAfter = try await heap(server)

        let call = Envelope(.ping, payload: ["pad": .string(String(repeating: "x", count: callMessageBytes))])
        for start in stride(from: 0, to: clients.count, by: 500) {
            await withTaskGroup(of: Void.self) { group in
                for client in clients[start..<min(clients.count, start + 500)] { group.addTask { try? await client.connection.send(call) } }
            }
        }
        try await Task.sleep(for: .seconds(3))
        let afterCall = server.sample
        let heapAfterCall = try await heap(server)

        let cpuBeforeClose = server.sample.cpuSeconds
        await withTaskGroup(of: Void.self) { group in
            for client in clients { group.addTask { await client.close() } }
        }
        try await Task.sleep(for: .seconds(3))
        let closeCPU = server.sample.cpuSeconds - cpuBeforeClose

        var rounds: [Double]?
        if heapBefore != nil {
            rounds = []
            for _ in 0..<leakRounds {
                let round = try await open(leakRoundConnections, to: server, latency: latency)
                await withTaskGroup(of: Void.self) { group in
                    for client in round { group.addTask { await client.close() } }
                }
                // Past a ping interval (12 s): a closed connection's late ping callback holds its handler until then.
                try await Task.sleep(for: .seconds(leakSettleSeconds))
                rounds?.append(Double(try await heap(server) ?? 0) / 1_048_576)
            }
        }
        server.stop()
        let n = Double(clients.count)
        func perConnection(_ from: Int?, _ to: Int?) -> Double? {
            guard let from, let to else { return nil }
            return Double(to - from) / 1024 / n
        }
        return IdleResult(
            server: kind, connections: clients.count, rssBeforeKiB: before.rssKiB, rssAfterKiB: after.rssKiB,
            kibPerConnection: Double(after.rssKiB - before.rssKiB) / n,
            heapKiBPerConnection: perConnection(heapBefore, heapAfter),
            kibPerConnectionAfterCall: Double(afterCall.rssKiB - before.rssKiB) / n,
            heapKiBPerConnectionAfterCall: perConnection(heapBefore, heapAfterCall),
            closeCPUSeconds: closeCPU, heapAfterRoundsMiB: rounds, leakRoundConnections: rounds == nil ? nil : leakRoundConnections)
    }

    /// `duet serve`'s heap in use, from its `/metrics` (loopback needs no token); nil for the other servers.
    static func heap(_ server: ServerUnderTest) async throws -> Int? {
        guard server.kind == .duet else { return nil }
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: server.baseURL + "metrics"), timeout: .seconds(10))
        let body = String(buffer: try await response.body.collect(upTo: 1 << 22))
        guard let line = body.split(separator: "\n").first(where: { $0.hasPrefix("duet_heap_in_use_bytes") }),
            let value = line.split(separator: " ").last.flatMap({ Double($0) })
        else { throw BenchError("duet serve's /metrics has no duet_heap_in_use_bytes") }
        return Int(value)
    }

    static func open(_ count: Int, to server: ServerUnderTest, latency: LatencyRecorder) async throws -> [BenchClient] {
        var clients: [BenchClient] = []
        for start in stride(from: 0, to: count, by: 500) {
            clients += try await withThrowingTaskGroup(of: BenchClient.self) { group in
                for _ in start..<min(count, start + 500) {
                    group.addTask { try await BenchClient.connect(server.webSocketURL, latency: latency) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
        }
        return clients
    }
}
