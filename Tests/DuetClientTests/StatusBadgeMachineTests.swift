import DuetClient
import Testing

/// Seed 001's badge rules; `Tests/web/status-badge-machine.test.mjs` checks the browser's copy alike.
@Suite struct StatusBadgeMachineTests {
    private func inCall(media: Bool = true) -> StatusBadgeMachine {
        var machine = StatusBadgeMachine()
        _ = machine.handle(.signaling(up: true))
        _ = machine.handle(.phase(.inCall))
        if media { _ = machine.handle(.media(connected: true)) }
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

    @Test func retryingShowsAtOnceWithLeaveCall() {
        var machine = inCall()
        _ = machine.handle(.status(.recovering))
        #expect(machine.handle(.status(.retrying)) == [.cancelDebounce, .show(.retrying(everConnected: true))])
    }

    @Test func neverConnectedBeforeMediaIs() {
        var machine = inCall(media: false)
        #expect(machine.badge == .connecting)
        _ = machine.handle(.status(.retrying))
        #expect(machine.badge == .retrying(everConnected: false), "a call that never connected says Connecting…")
        _ = machine.handle(.status(.connected))
        _ = machine.handle(.media(connected: true))
        #expect(machine.badge == .connected)
        _ = machine.handle(.media(connected: false))
        #expect(machine.badge == .connecting)
    }

    @Test func aSuspendedPeerIsTheirTroubleWhileOurSignalingIsUp() {
        var machine = inCall()
        _ = machine.handle(.peer(suspended: true))
        #expect(machine.badge == .peerReconnecting)
        _ = machine.handle(.status(.recovering))
        _ = machine.handle(.status(.retrying))
        #expect(machine.badge == .peerReconnecting, "our media died because theirs did")
        _ = machine.handle(.signaling(up: false))
        #expect(machine.badge == .retrying(everConnected: true))
        _ = machine.handle(.signaling(up: true))
        _ = machine.handle(.peer(suspended: false))
        _ = machine.handle(.status(.connected))
        #expect(machine.badge == .connected)
    }

    @Test func waitingWithSignalingDownShowsReconnectingAfterTheDebounce() {
        var machine = StatusBadgeMachine()
        _ = machine.handle(.signaling(up: true))
        _ = machine.handle(.phase(.waiting))
        #expect(machine.handle(.signaling(up: false)) == [.scheduleDebounce(afterMs: ResilienceConstants.RECONNECTING_BADGE_DEBOUNCE_MS)])
        #expect(machine.handle(.debounceElapsed) == [.show(.reconnecting)])
        #expect(machine.handle(.signaling(up: true)) == [.cancelDebounce, .show(.hidden)])
    }

    @Test func noBadgeOutsideACall() {
        var machine = StatusBadgeMachine()
        _ = machine.handle(.status(.recovering))
        _ = machine.handle(.debounceElapsed)
        #expect(machine.badge == .hidden)
        _ = machine.handle(.phase(.inCall))
        _ = machine.handle(.media(connected: true))
        #expect(machine.handle(.phase(.idle)) == [.cancelDebounce, .show(.hidden)])
    }
}
