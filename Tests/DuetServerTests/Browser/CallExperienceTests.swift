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
@Suite struct CallExperienceTests {
    @Test func preJoinChoicesCarryIntoTheCall() async throws { try await run("prejoin-choices") }
    @Test func deviceSwitchMidCallKeepsMediaFlowing() async throws { try await run("device-switch") }
    @Test func removedDevicesFallBackToTheDefaults() async throws { try await run("device-removed") }
    @Test func remoteMuteAndCameraOffShownAndRestoredAfterServerRestart() async throws { try await run("remote-state") }
    @Test func screenShareIsSeenByThePeer() async throws { try await run("screen-share") }
    @Test func qualityIndicatorFollowsLossAndSummaryCountsTheOutage() async throws { try await run("quality") }
    @Test func refusedAutoplayOffersClickToTurnOnSound() async throws { try await run("sound-blocked") }

    /// Each scenario under the limit call_ux.py works out from its waits (`--limit`), plus time to tear down.
    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let limit = try await scenarioLimit(script: "browser/call_ux.py", scenario)
        try await runBrowserScenario(
            script: "browser/call_ux.py", scenario, needs: ["chromium", "unshare", "ip", "iptables"],
            timeout: limit, sourceLocation: sourceLocation)
    }
}
