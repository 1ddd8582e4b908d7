import DuetTestSupport
import Foundation
import Testing

/// `duet-bench` keeps working: a tiny relay run over WebSocket and over SSE, a tiny
/// call-shaped run, a tiny idle run and a tiny reconnect storm against the built `duet serve` on
/// loopback. What it measures is for docs/benchmarks.md; here only that it measures.
@Suite(.serialized) struct BenchSmokeTests {
    func bench(_ arguments: [String]) async throws -> [String: Any] {
        let binary = packageRoot + "/.build/debug/duet-bench"
        try #require(FileManager.default.fileExists(atPath: binary), "build the package first: \(binary) is missing")
        // A second of a few clients on loopback, and only that it measures: it shares the machine (`OneAtATime`).
        let result = try await OneAtATime.heavyWork.run("duet-bench \(arguments.first ?? "")", load: .shared) {
            try await runCommand(
                [binary] + arguments, environment: ["DUET_BINARY": packageRoot + "/.build/debug/duet"], timeout: .seconds(60))
        }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        // Not yet a failure (a server slow to exit on SIGTERM, seen under load; being found): shown in the run's log.
        for line in result.stderr.split(separator: "\n") where line.contains("did not exit") { print("BenchSmokeTests: \(line)") }
        let line = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("BENCH ") }, "no result line: \(result.stdout)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("BENCH ".count).utf8)) as? [String: Any])
    }

    @Test(arguments: ["ws", "sse"])
    func relayRunMeasuresDeliveredMessagesAndLatency(transport: String) async throws {
        let result = try await bench(["relay", "--server", "duet", "--transport", transport, "--pairs", "2", "--seconds", "1"])
        #expect(result["transport"] as? String == transport)
        #expect((result["messagesPerSecond"] as? Double ?? 0) > 0)
        let latency = try #require(result["latencyMs"] as? [String: Any])
        #expect((latency["count"] as? Int ?? 0) > 0)
        #expect((result["serverRSSKiB"] as? Int ?? 0) > 0)
    }

    @Test func callRunReportsJoinsAsClientsAndAsTheServerSawThem() async throws {
        let result = try await bench(["call", "--server", "duet", "--rooms", "4", "--join-rate", "20", "--seconds", "1"])
        #expect((result["joinLatencyMs"] as? [String: Any])?["count"] as? Int == 8, "two joins per room, timed by the clients")
        let server = try #require(result["serverJoinMs"] as? [String: Any], "duet's own join histogram, read from /metrics")
        #expect(server["count"] as? Int == 8)
        #expect((server["p99AtMostMs"] as? Double ?? 0) > 0)
    }

    /// The idle run that docs/benchmarks.md's Scale table comes from: RSS and heap per connection (the heap read from
    /// duet's `/metrics`), after a call, the close, and a leak round.
    @Test func idleRunMeasuresMemoryCloseAndLeakRounds() async throws {
        let result = try await bench([
            "idle", "--server", "duet", "--connections", "50", "--leak-rounds", "1", "--leak-connections", "20", "--leak-settle-seconds",
            "1",
        ])
        #expect(result["connections"] as? Int == 50)
        #expect((result["kibPerConnection"] as? Double) != nil)
        #expect(result["heapKiBPerConnection"] as? Double != nil, "duet's heap, from /metrics")
        let rounds = try #require(result["heapAfterRoundsMiB"] as? [Double])
        #expect(rounds.count == 1 && rounds[0] > 1, "a live server's heap is megabytes: \(rounds)")
        #expect((result["closeCPUSeconds"] as? Double ?? -1) >= 0)
    }

    /// `duet-bench hold` (what Tests/e2e/cluster/rolling.py drives): its stdin/stdout protocol against a server of
    /// the test's own — READY, BACK for a phase in which nothing was lost, and the result at STOP.
    @Test func holdAnswersItsControlLinesAndReportsWholeRooms() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let binary = packageRoot + "/.build/debug/duet-bench"
        try #require(FileManager.default.fileExists(atPath: binary), "build the package first: \(binary) is missing")
        let script = "printf 'MARK quiet\\nWAITBACK 20\\nSTOP\\n' | \"$0\" hold --url \"$1\" --rooms 2 --join-rate 50 --max-seconds 50"
        let result = try await runCommand(["sh", "-c", script, binary, server.baseURL], timeout: .seconds(60))
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        // Not yet a failure (a server slow to exit on SIGTERM, seen under load; being found): shown in the run's log.
        for line in result.stderr.split(separator: "\n") where line.contains("did not exit") { print("BenchSmokeTests: \(line)") }
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("READY 4"), "\(lines)")
        let back = try #require(lines.first { $0.hasPrefix("BACK ") }, "\(lines)").split(separator: " ")
        #expect(back.count == 4 && back[1] == "quiet" && back[3] == "0", "\(back)")
        let line = try #require(lines.first { $0.hasPrefix("BENCH ") }, "no result line: \(result.stdout)")
        let bench = try #require(try JSONSerialization.jsonObject(with: Data(line.dropFirst("BENCH ".count).utf8)) as? [String: Any])
        #expect(bench["clients"] as? Int == 4)
        #expect(bench["lastKinds"] as? [String: Int] == ["fresh": 4])
        #expect(bench["roomsNotWhole"] as? Int == 0)
        #expect(bench["cidChanged"] as? Int == 0)
        #expect(bench["timedOut"] as? Bool == false)
        #expect((bench["joinMs"] as? [String: Any])?["count"] as? Int == 4)
    }

    @Test func reconnectStormBringsEveryClientBackWithItsSeat() async throws {
        let result = try await bench(["storm", "--clients", "20"])
        #expect(result["clients"] as? Int == 20)
        #expect((result["kinds"] as? [String: Int])?["recovered"] == 20)
    }
}
