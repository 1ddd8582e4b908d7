import Foundation

/// Many idle WebSocket connections: the server's resident memory per connection.
struct IdleResult: Codable, Sendable {
    var server: ServerUnderTest.Kind
    var connections: Int
    var rssBeforeKiB: Int
    var rssAfterKiB: Int
    var kibPerConnection: Double
}

enum IdleRun {
    static func run(_ kind: ServerUnderTest.Kind, connections count: Int) async throws -> IdleResult {
        let server = try ServerUnderTest(kind)
        let latency = LatencyRecorder()
        // Warm up (allocator arenas, first-connection costs) so the difference is per connection.
        let warm = try await open(200, to: server, latency: latency)
        for client in warm { await client.close() }
        try await Task.sleep(for: .seconds(1))
        let before = server.sample
        let clients = try await open(count, to: server, latency: latency)
        try await Task.sleep(for: .seconds(3))
        let after = server.sample
        for client in clients { await client.close() }
        server.stop()
        return IdleResult(
            server: kind, connections: clients.count, rssBeforeKiB: before.rssKiB, rssAfterKiB: after.rssKiB,
            kibPerConnection: Double(after.rssKiB - before.rssKiB) / Double(clients.count))
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
