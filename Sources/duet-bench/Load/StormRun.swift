import DuetProtocol
import Foundation

/// Reconnect storm: clients in rooms, the server killed and restarted on the same port and data directory;
/// every client reconnects with the engine's backoff (500 ms · 2ⁿ ≤ 5 s, ± 20 %) and proves its seat.
struct StormResult: Codable, Sendable {
    var clients: Int
    var secondsUntilAllBack: Double
    var kinds: [String: Int]
    /// Where the time goes. From the kill until the new server answered (`restarted`): the clients' first attempts
    /// in that time fail.
    var secondsToRestart: Double
    /// From the restart until the last client made its first attempt since: its backoff's next slot. No server can
    /// bring a client back before it tries.
    var secondsUntilLastFirstTry: Double
    /// Each client's successful attempt, its start to `joined` (connect, upgrade, join with its proof), p50 / p99 /
    /// max in milliseconds: what the server took once asked.
    var attemptMs: [Double]
    /// Attempts that failed after the restart (refused, dropped or timed out), all clients together.
    var failedAfterRestart: Int
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
        /// One client's way back: how it came back, when it first tried after the restart, how long that last
        /// attempt took, and how many attempts failed after the restart.
        struct Return: Sendable {
            var kind: String
            var firstTryAfterRestart: Duration
            var attempt: Duration
            var failedAfterRestart: Int
        }
        let returns = try await withThrowingTaskGroup(of: Return.self) { group in
            for seat in seats {
                group.addTask {
                    var attempt = 0
                    var next = killedAt
                    var firstTry: Duration?
                    var failed = 0
                    while true {
                        let base = min(5_000, 500 << min(attempt, 4))
                        next += .milliseconds(Int.random(in: base * 8 / 10...base * 12 / 10))
                        try await Task.sleep(until: next)
                        attempt += 1
                        let started = ContinuousClock.now
                        if started >= back, firstTry == nil { firstTry = started - back }
                        guard let client = try? await BenchClient.connect(server.webSocketURL, latency: latency),
                            let (joined, _) = try? await client.join(seat.rid, reconnect: (seat.cid, seat.token))
                        else {
                            if started >= back { failed += 1 }
                            continue
                        }
                        return Return(
                            kind: joined.payload["reconnect"]?.stringValue ?? "?", firstTryAfterRestart: firstTry ?? .zero,
                            attempt: ContinuousClock.now - started, failedAfterRestart: failed)
                    }
                }
            }
            return try await group.reduce(into: [Return]()) { $0.append($1) }
        }
        let took = (ContinuousClock.now - back).seconds
        server.stop()
        let attempts = returns.map { $0.attempt.seconds * 1000 }.sorted()
        func quantile(_ q: Double) -> Double { attempts.isEmpty ? 0 : attempts[min(attempts.count - 1, Int(Double(attempts.count) * q))] }
        return StormResult(
            clients: seats.count, secondsUntilAllBack: took,
            kinds: returns.reduce(into: [String: Int]()) { $0[$1.kind, default: 0] += 1 },
            secondsToRestart: (back - killedAt).seconds,
            secondsUntilLastFirstTry: returns.map(\.firstTryAfterRestart.seconds).max() ?? 0,
            attemptMs: [quantile(0.5), quantile(0.99), attempts.last ?? 0],
            failedAfterRestart: returns.map(\.failedAfterRestart).reduce(0, +))
    }
}
