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
    /// Firefox's own push client (issue 52, `Tests/e2e/browser/firefox_push.py`): B's Ring me here subscribes through
    /// `PushManager.subscribe` to the test's push service (Mozilla's protocol to Firefox, RFC 8030 with VAPID to the
    /// server); with no Duet page of B's open, A's join alert and ring are pushes Firefox decrypts itself: B's worker
    /// shows the alert with A's picture, then the ring with A's verified name, picture, Accept and Decline; A's cancel
    /// makes it a missed call; B's other device accepting the next ring makes it "Answered on another device"; Ring me
    /// here off drops the browser's subscription and A's next ring reaches nobody.
    @Test func firefoxsOwnPushClientRingsWithEveryDuetPageClosed() async throws {
        let limit = try await scenarioLimit(script: "browser/firefox_push.py", "ring-firefox-push")
        try await runBrowserScenario(
            script: "browser/firefox_push.py", "ring-firefox-push", needs: ["chromium", "firefox-esr", "unshare", "ip"], timeout: limit)
    }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let limit = try await scenarioLimit(script: "browser/ringing.py", scenario)
        try await runBrowserScenario(script: "browser/ringing.py", scenario, timeout: limit, sourceLocation: sourceLocation)
    }
}
