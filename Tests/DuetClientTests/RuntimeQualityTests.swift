import DuetClient
import DuetTestSupport
import Testing

/// `DuetCall` feeding its `QualityTracker` (the rule itself is QualityTrackerTests'): readings come out as
/// `.quality` events while in the call, and the summary counts the outage's time without media and its reconnect.
/// Two runtimes on the simulated WebRTC pair against the real server; the engines' clock runs 20× real time
/// through the outage (to pass the 10 s retrying threshold quickly) and 2× for the recovery (real I/O).
@Suite struct RuntimeQualityTests {
    @Test func summaryCountsTheOutageAsTimeWithoutMediaAndItsReconnect() async throws {
        let server = try await TestServer.start()
        var timing = SimulatedMediaNetwork.Timing()
        timing.failAfterCut = .milliseconds(300)
        let media = SimulatedMediaNetwork(timing: timing)
        let clock = FastClock()
        let (alice, bob) = try await startCall(server: server, media: media, clock: clock)
        // Media has flowed in a reading before the fault: only then is a drop from connected a *re*connect.
        try await alice.waitFor("a reading with media") { participant in
            await participant.events.contains { if case .quality(let reading) = $0 { reading.mediaFlowing } else { false } }
        }
        clock.setRate(20)
        await media.cut()
        try await alice.waitFor("retrying") { await $0.call.connectionStatus == .retrying }
        try await alice.waitFor("readings without media during the outage") { participant in
            await participant.call.qualitySummary.noMediaMs > 0
        }
        clock.setRate(2)  // the recovery takes real I/O (startCallThenCutMedia)
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
        await alice.finish()
        await bob.finish()
        await media.shutdown()
        await server.stop()
    }
}
