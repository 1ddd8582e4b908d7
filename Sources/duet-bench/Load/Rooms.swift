import AsyncHTTPClient
import DuetProtocol
import DuetTransport
import Foundation

/// Room ids: authentic ones from `duet serve`, any string for the Node relay.
enum Rooms {
    static func make(_ count: Int, on server: ServerUnderTest) async throws -> [String] {
        guard server.kind == .duet else { return (0..<count).map { "room-\($0)" } }
        var ids: [String] = []
        for _ in 0..<count {
            var request = HTTPClientRequest(url: server.baseURL + "api/room-id")
            request.method = .POST
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
            let body = try await response.body.collect(upTo: 4_096)
            ids.append(try JSONDecoder().decode(RoomIdResponse.self, from: Data(body.readableBytesView)).roomId)
        }
        return ids
    }
}

/// Pairs of clients in rooms of their own. For the echo server each client is its own peer; it still gets two
/// clients per pair, so the generator does the same work whichever server it measures.
struct Pair: Sendable {
    var a: BenchClient
    var b: BenchClient
    var rid: String
}

enum Pairs {
    static func connect(
        _ count: Int, on server: ServerUnderTest, over transport: SignalingTransportKind = .ws, latency: LatencyRecorder
    ) async throws -> [Pair] {
        let rids = try await Rooms.make(count, on: server)
        return try await withThrowingTaskGroup(of: Pair.self) { group in
            for rid in rids {
                group.addTask {
                    let a = try await BenchClient.connect(to: server, over: transport, latency: latency)
                    let b = try await BenchClient.connect(to: server, over: transport, latency: latency)
                    if server.kind == .echo { return Pair(a: a, b: b, rid: rid) }
                    for client in [a, b] { _ = try await client.join(rid) }
                    return Pair(a: a, b: b, rid: rid)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
    }
}
