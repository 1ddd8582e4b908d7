import DuetClient
import DuetTestSupport
import Testing

/// `DuetCall` feeding its `QualityTracker` (the rule itself is QualityTrackerTests'): readings come out as
/// `.quality` events while in the call, and the summary counts the outage's time without media and its reconnect.
/// Two runtimes on the simulated WebRTC pair against the real server, on a clock 20× real time.
@Suite struct RuntimeQualityTests {
    @Test func summaryCountsTheOutageAsTimeWithoutMediaAndItsReconnect() async throws {
        let server = try await TestServer.start()
        let (alice, bob, media, clock) = try await startCallThenCutMedia(server: server)
        try await alice.waitFor("retrying") { await $0.call.connectionStatus == .retrying }
        try await alice.waitFor("readings without media during the outage") { participant in
            await participant.call.qualitySummary.noMediaMs > 0
        }
        clock.speedUp(2)  // the recovery takes real I/O (startCallThenCutMedia)
        await media.restore()
        try await alice.waitInCallConnected(timeout: .seconds(15))
        try await alice.waitFor("a reading with media and a MOS after the outage") { participant in
            await participant.events.last { if case .quality = $0 { true } else { false } }.map {
                if case .quality(let reading) = $0 { reading.mediaFlowing && reading.mos != nil } else { false }
            } == true
        }
        let summary = await alice.call.qualitySummary
        // Every drop from connected in the call is one reconnect: count them in the status log.
        var previous = ConnectionStatus.connected
        var drops = 0
        for status in await alice.statuses() {
            if previous == .connected, status != .connected { drops += 1 }
            previous = status
        }
        #expect(drops >= 1)
        #expect(summary.reconnects == drops)
        #expect(summary.noMediaMs > 0 && summary.noMediaMs < summary.durationMs)
        #expect(summary.averageMos != nil)
        await alice.finish(); await bob.finish(); await media.shutdown(); await server.stop()
    }
}
