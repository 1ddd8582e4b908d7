import DuetTestSupport
import Foundation
import Testing

/// The browser client in real headless Chromium (Debian `chromium`, fake camera and microphone),
/// driven over the DevTools protocol by `Tests/e2e/browser/scenarios.py`. Each scenario runs in a
/// network namespace of its own (`unshare -n`) with its own `duet serve` (the built binary) and,
/// where needed, its own coturn; the script asserts and prints what it checked.
@Suite struct BrowserCallTests {
    @Test func twoPagesCallWithVideoAndAudioBothWays() async throws { try await run("call") }
    @Test func refusedWebSocketFallsBackToSSE() async throws { try await run("sse-fallback") }
    @Test func relayOnlyThroughRealCoturn() async throws { try await run("relay") }
    @Test func serverKilledWhileMediaFlowsThenRestartedRecovers() async throws { try await run("server-restart") }
    @Test func reloadRejoinsTheSameSeat() async throws { try await run("reload") }
    @Test func leaveReturnsPeerToWaitingAndEndEndsTheRoomForBoth() async throws { try await run("leave-end") }
    @Test func invalidLinkAndFullRoomShowTheirScreens() async throws { try await run("error-screens") }
    @Test func comingBackOnlineRestartsICE() async throws { try await run("network-online") }
    @Test func unreachableRelayEscalatesAndConnectsWhenItAppears() async throws { try await run("relay-unreachable") }
    @Test func turnServerDiesAndReturnsICERestartsThroughIt() async throws { try await run("relay-restart") }
    @Test func blockedCameraOffersAudioOnlyAndRetry() async throws { try await run("permission-denied") }
    @Test func aPageWhoseModuleFailsToLoadRetriesThenSaysSo() async throws { try await run("load-retry") }
    @Test func checkPageTestsSignalingStunTurnOverUdpTcpTlsCameraAndMicrophone() async throws { try await run("check-page") }
    @Test func blockedDirectPathWithoutRelayIsExplainedUntilMediaConnects() async throws { try await run("cannot-connect") }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await runBrowserScenario(script: "browser/scenarios.py", scenario, sourceLocation: sourceLocation)
    }
}
