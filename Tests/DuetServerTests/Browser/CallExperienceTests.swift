import DuetTestSupport
import Foundation
import Testing

/// The call as people use it (issue 18) in real headless Chromium with two fake cameras and microphones, driven by
/// `Tests/e2e/browser/call_ux.py` (which reuses scenarios.py's helpers): the pre-join screen, device switching, devices
/// removed mid-call (devicechange) falling back to the defaults, the other person's mute and camera-off (media_state)
/// through a server restart and a reattach, state kept over an ICE restart, screen sharing, the quality indicator and
/// end-of-call summary under loss made with iptables, and "Click to turn on sound" when the browser refuses to play
/// sound. Each scenario runs in a network namespace of its own (`unshare -n`) with its own `duet serve`; screenshots
/// go to .build/results/<run-id>/screenshots.
///
/// Time limits: call_ux.py's `WAITS_S` adds up each scenario's wait deadlines and bounds the scenario itself with
/// (30 s Chromium start + those waits) × 1.2, rounded up to 10 s; the limit here is that + 30 s for the teardown
/// (server stop 5 s, Chromium close 3 + 5 s, python's start), so the script's own diagnosis always comes first.
@Suite(.serialized) struct CallExperienceTests {
    // (30 + 270) × 1.2 = 360, + 30
    @Test func preJoinChoicesCarryIntoTheCall() async throws { try await run("prejoin-choices", limit: 390) }
    // (30 + 516) × 1.2 = 655.2 → 660, + 30
    @Test func deviceSwitchMidCallKeepsMediaFlowing() async throws { try await run("device-switch", limit: 690) }
    // (30 + 225) × 1.2 = 306 → 310, + 30
    @Test func removedDevicesFallBackToTheDefaults() async throws { try await run("device-removed", limit: 340) }
    // (30 + 417) × 1.2 = 536.4 → 540, + 30
    @Test func remoteMuteAndCameraOffShownAndRestoredAfterServerRestart() async throws { try await run("remote-state", limit: 570) }
    // (30 + 344) × 1.2 = 448.8 → 450, + 30
    @Test func screenShareIsSeenByThePeer() async throws { try await run("screen-share", limit: 480) }
    // (30 + 459) × 1.2 = 586.8 → 590, + 30
    @Test func qualityIndicatorFollowsLossAndSummaryCountsTheOutage() async throws { try await run("quality", limit: 620) }
    // (30 + 113) × 1.2 = 171.6 → 180, + 30
    @Test func refusedAutoplayOffersClickToTurnOnSound() async throws { try await run("sound-blocked", limit: 210) }

    private func run(_ scenario: String, limit seconds: Int64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await runBrowserScenario(script: "browser/call_ux.py", scenario, needs: ["chromium", "unshare", "ip", "iptables"],
                                     timeout: .seconds(seconds), sourceLocation: sourceLocation)
    }
}
