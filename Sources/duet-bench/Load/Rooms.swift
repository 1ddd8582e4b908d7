import AsyncHTTPClient
import DuetProtocol
import DuetTransport
import Foundation

/// Room ids: authentic ones from `duet serve`, any string for the Node relay.
enum Rooms {
    static func make(_ count: Int, on server: ServerUnderTest) async throws -> [String] {
        guard server.kind == .duet else { return (0..<count).map { "room-\($0)" } }
        return try await make(count, baseURL: server.baseURL)
    }

    /// `POST /api/room-id` at any Duet base URL (a node, or nginx in front of a cluster: any node's ids are valid
    /// on every node), 8 requests at a time.
    static func make(_ count: Int, baseURL: String) async throws -> [String] {
        let url = (baseURL.hasSuffix("/") ? baseURL : baseURL + "/") + "api/room-id"
        var ids: [String] = []
        for start in stride(from: 0, to: count, by: 8) {
            ids += try await withThrowingTaskGroup(of: String.self) { group in
                for _ in start..<min(count, start + 8) {
                    group.addTask {
                        var request = HTTPClientRequest(url: url)
                        request.method = .POST
                        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                        let body = try await response.body.collect(upTo: 4_096)
                        guard response.status == .ok else {
                            throw BenchError("POST \(url): \(response.status.code) \(String(buffer: body))")
                        }
                        return try JSONDecoder().decode(RoomIdResponse.self, from: Data(body.readableBytesView)).roomId
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
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
