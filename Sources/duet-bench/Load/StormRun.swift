import DuetProtocol
import Foundation

/// Reconnect storm: clients in rooms, the server killed and restarted on the same port and data directory;
/// every client reconnects with the engine's backoff (500 ms · 2ⁿ ≤ 5 s, ± 20 %) and proves its seat.
struct StormResult: Codable, Sendable {
    var clients: Int
    var secondsUntilAllBack: Double
    var kinds: [String: Int]
}

enum StormRun {
    static func run(clients count: Int) async throws -> StormResult {
        let first = try ServerUnderTest(.duet)
        let latency = LatencyRecorder()
        let rids = try await Rooms.make(count / 2, on: first)
        var seats: [(rid: String, cid: String, token: String)] = []
        for start in stride(from: 0, to: rids.count, by: 100) {
            seats += try await withThrowingTaskGroup(of: [(String, String, String)].self) { group in
                for rid in rids[start..<min(rids.count, start + 100)] {
                    group.addTask {
                        var out: [(String, String, String)] = []
                        for _ in 0..<2 {
                            let client = try await BenchClient.connect(first.webSocketURL, latency: latency)
                            let (joined, _) = try await client.join(rid)
                            let payload = try joined.payload.decode(JoinedPayload.self)
                            out.append((rid, joined.cid ?? "", payload.reconnectToken))
                        }
                        return out
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        // The clients notice the kill at once and start their backoff then; the clock runs from the restart.
        let killedAt = ContinuousClock.now
        let server = try first.restarted()
        let back = ContinuousClock.now
        let kinds = try await withThrowingTaskGroup(of: String.self) { group in
            for seat in seats {
                group.addTask {
                    var attempt = 0
                    var next = killedAt
                    while true {
                        let base = min(5_000, 500 << min(attempt, 4))
                        next += .milliseconds(Int.random(in: base * 8 / 10...base * 12 / 10))
                        try await Task.sleep(until: next)
                        attempt += 1
                        guard let client = try? await BenchClient.connect(server.webSocketURL, latency: latency),
                            let (joined, _) = try? await client.join(seat.rid, reconnect: (seat.cid, seat.token))
                        else { continue }
                        return joined.payload["reconnect"]?.stringValue ?? "?"
                    }
                }
            }
            return try await group.reduce(into: [String: Int]()) { $0[$1, default: 0] += 1 }
        }
        let took = (ContinuousClock.now - back).seconds
        server.stop()
        return StormResult(clients: seats.count, secondsUntilAllBack: took, kinds: kinds)
    }
}
