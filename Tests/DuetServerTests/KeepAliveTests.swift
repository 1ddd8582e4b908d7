import DuetTestSupport
import Foundation
import Testing

/// The server's WebSocket keep-alive, seen by a raw client that never answers pings.
@Suite struct KeepAliveTests {
    @Test func silentWebSocketIsPingedThenClosedWithinTwoIntervals() async throws {
        let interval = 1.0
        let server = try await TestServer.start { $0.pingInterval = .milliseconds(Int64(interval * 1000)) }
        defer { Task { await server.stop() } }
        let result = try await runCommand(
            ["python3", packageRoot + "/Tests/e2e/silent_websocket.py", "127.0.0.1", String(server.port)], timeout: .seconds(20))
        let match = try #require(
            result.stdout.firstMatch(of: /pings=(\d+) close=(\d+) after=([\d.]+)/), "\(result.stdout) \(result.stderr)")
        #expect(Int(match.1)! >= 1, "the server pinged")
        #expect(match.2 == "1001", "going away: ping timeout")
        let after = Double(match.3)!
        // Cut at the first ping left unanswered by the next one: never before one interval; the
        // protocol's bound is 30 s for a 12 s interval (2.5 intervals), plus slack for a loaded machine.
        #expect(after >= interval && after <= interval * 2.5 + 1.5, "closed after \(after) s")
    }
}
