import DuetClient
import Testing

/// Seed 001's badge rules; `Tests/web/status-badge-machine.test.mjs` checks the browser's copy alike.
@Suite struct StatusBadgeMachineTests {
    private func inCall() -> StatusBadgeMachine {
        var machine = StatusBadgeMachine()
        _ = machine.handle(.phase(.inCall))
        return machine
    }

    @Test func reconnectingShowsOnlyAfterTheDebounce() {
        var machine = inCall()
        let actions = machine.handle(.status(.recovering))
        #expect(actions.contains(.scheduleDebounce(afterMs: ResilienceConstants.RECONNECTING_BADGE_DEBOUNCE_MS)))
        #expect(machine.badge == .pending, "nothing shown, and not 'connected' either")
        #expect(machine.handle(.debounceElapsed) == [.show(.reconnecting)])
    }

    @Test func aBlipShorterThanTheDebounceNeverShows() {
        var machine = inCall()
        _ = machine.handle(.status(.recovering))
        #expect(machine.handle(.status(.connected)) == [.cancelDebounce, .show(.connected)])
        #expect(machine.handle(.debounceElapsed) == [], "a late firing changes nothing")
    }

    @Test func retryingShowsAtOnceAndOurRecoveryOutranksThePeers() {
        var machine = inCall()
        _ = machine.handle(.peer(suspended: true))
        #expect(machine.badge == .peerReconnecting)
        _ = machine.handle(.status(.recovering))
        _ = machine.handle(.status(.retrying))
        #expect(machine.badge == .retrying)
        _ = machine.handle(.status(.connected))
        #expect(machine.badge == .peerReconnecting)
        _ = machine.handle(.peer(suspended: false))
        #expect(machine.badge == .connected)
    }

    @Test func noBadgeOutsideACall() {
        var machine = StatusBadgeMachine()
        _ = machine.handle(.status(.recovering))
        _ = machine.handle(.debounceElapsed)
        #expect(machine.badge == .hidden)
        _ = machine.handle(.phase(.inCall))
        #expect(machine.handle(.phase(.idle)) == [.cancelDebounce, .show(.hidden)])
    }
}
