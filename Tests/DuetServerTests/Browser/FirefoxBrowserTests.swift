import DuetTestSupport
import Testing

/// Every browser (issue 32), first step: Firefox ESR (driven through WebDriver BiDi, `Tests/e2e/browser/bidi.py`)
/// in a call with Chromium in both join orders, and with another Firefox, each in a network namespace of its own
/// (`Tests/e2e/browser/firefox.py`): in call, video and decoded audio both ways.
@Suite struct FirefoxBrowserTests {
    /// Firefox joins first (it makes the offer), Chromium answers.
    @Test func firefoxHostsChromium() async throws { try await run("firefox-chromium") }
    /// Chromium joins first (it makes the offer), Firefox answers.
    @Test func chromiumHostsFirefox() async throws { try await run("chromium-firefox") }
    /// Two Firefoxes, profiles of their own.
    @Test func firefoxCallsFirefox() async throws { try await run("firefox-firefox") }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let limit = try await scenarioLimit(script: "browser/firefox.py", scenario)
        try await runBrowserScenario(
            script: "browser/firefox.py", scenario, needs: ["chromium", "firefox-esr", "unshare", "ip"], timeout: limit,
            sourceLocation: sourceLocation)
    }
}
