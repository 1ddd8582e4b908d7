import DuetTestSupport
import Foundation
import Testing

/// The soak in little (issue 34, point 3; benchmarks/soak.sh is the long one): 40 s of call-shaped churn at
/// 200 clients against the built `duet serve` (`duet-bench soak`: joins, offers, candidates, reconnects with tokens,
/// SSE streams abandoned, frozen readers, leaves, ends, seats abandoned), then every client gone and the eviction
/// timeout passed. A leak of a per-connection, per-seat or per-room entry shows here as a table that is not empty
/// once idle, within minutes where memory growth alone would take hours to see.
@Suite struct SoakTests {
    @Test func churnLeavesNoEntryBehindOnceEveryoneHasGone() async throws {
        let binary = packageRoot + "/.build/debug/duet-bench"
        try #require(FileManager.default.fileExists(atPath: binary), "build the package first: \(binary) is missing")
        let result = try await OneAtATime.heavyWork.run {
            try await runCommand(
                [
                    binary, "soak", "--clients", "200", "--seconds", "40", "--warmup-seconds", "10", "--sample-seconds", "2",
                    "--eviction-seconds", "10",
                ],
                environment: ["DUET_BINARY": packageRoot + "/.build/debug/duet"], timeout: .seconds(300))
        }
        #expect(result.status == 0, "\(result.stderr)")
        let line = try #require(
            result.stdout.split(separator: "\n").first { $0.hasPrefix("BENCH ") }, "no result: \(result.stdout.suffix(2_000))")
        let soak = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("BENCH ".count).utf8)) as? [String: Any])
        let errors = try #require(soak["errors"] as? [String: Int])
        #expect(errors.isEmpty, "client errors: \(errors)")
        // The churn did what it says: every kind of call happened.
        let outcomes = try #require(soak["outcomes"] as? [String: Int])
        for kind in ["leave", "end", "abandoned", "sseAbandoned", "slowReader"] {
            #expect(outcomes[kind, default: 0] > 0, "no \(kind) in \(outcomes)")
        }
        #expect(
            outcomes["recovered", default: 0] + outcomes["reattached", default: 0] > 0, "no guest came back with its token: \(outcomes)")
        #expect(soak["calls"] as? Int ?? 0 > 200, "\(soak["calls"] ?? "-") calls")
        // Once idle: nobody held, and every table of connections, seats and rooms empty (the check covers them all).
        let settled = try #require(soak["settled"] as? [String: Any])
        for series in ["rooms", "participants", "connections"] {
            #expect(settled[series] as? Double == 0, "\(series) once idle: \(settled[series] ?? "-")")
        }
        let checked = try #require(soak["checkedOnceIdle"] as? [String])
        #expect(
            Set(["connections", "outlets", "stream_sids", "post_tokens", "sse_seats", "visitors", "connection_slots"]).isSubset(
                of: Set(checked)))
        let left = try #require(soak["leftOnceIdle"] as? [String: Double])
        #expect(left.isEmpty, "entries left once idle (-1: the table was not reported): \(left)")
    }
}
