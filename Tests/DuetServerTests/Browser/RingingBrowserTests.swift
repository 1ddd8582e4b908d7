import DuetTestSupport
import Testing

/// Ringing (issue 31) in real headless Chromium, one scenario per process in a network namespace of its own:
/// `Tests/e2e/browser/ringing.py`, each under the limit the script works out from its waits (`--limit`). A and B are
/// two people (two browser profiles) who have been in a call once.
@Suite struct RingingBrowserTests {
    /// B's home page rings with A's verified name (Accept and Decline, focus on Accept); Decline reaches A.
    @Test func aRingOnAnOpenPageIsDeclinedAndTheCallerSeesIt() async throws { try await run("ring-decline") }
    /// Nobody answers: A sees no answer, B's history shows a missed call.
    @Test func anUnansweredRingIsNoAnswerAndAMissedCall() async throws { try await run("ring-no-answer") }
    /// A cancels mid-ring: B's ring stops.
    @Test func aCancelStopsTheRing() async throws { try await run("ring-cancel") }
    /// B on two pages accepts on one: the other stops (answered elsewhere); the verified call has media both ways.
    @Test func acceptingOnOnePageStopsTheOtherAndTheCallConnects() async throws { try await run("ring-two-pages") }
    /// No Duet page of B's open: the ring goes through a push service to B's service worker, whose notification has
    /// Accept and Decline and A's snapshot (opened with B's key, proven by the link's key); its Decline reaches A.
    /// A calls again with B's home page open: the sheet shows A's picture.
    @Test func aPushedRingIsANotificationWhoseDeclineReachesTheCaller() async throws { try await run("ring-push") }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let limit = try await scenarioLimit(script: "browser/ringing.py", scenario)
        try await runBrowserScenario(script: "browser/ringing.py", scenario, timeout: limit, sourceLocation: sourceLocation)
    }
}
