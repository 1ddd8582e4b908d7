import DuetTestSupport
import Testing

/// Verified calls (issue 19) in real headless Chromium, one scenario per process in a network namespace of its own:
/// `Tests/e2e/browser/verified_calls.py`, each under the limit the script works out from its waits (`--limit`).
@Suite(.serialized) struct VerifiedCallTests {
    @Test func linkKeyStaysInTheBrowser() async throws { try await run("link-key") }
    /// Through a relay that forwards every byte: verified on both pages, the same safety code, media both ways.
    @Test func aKeyedCallIsVerifiedWithEqualSafetyCodes() async throws { try await run("verified") }
    /// Through a relay that rewrites every offer's and answer's fingerprints (Tests/e2e/browser/tampering_proxy.py):
    /// both pages show the interception screen, no description is applied, nothing retries, a reload keeps it.
    @Test func aServerRewritingFingerprintsIsCaughtOnBothPages() async throws { try await run("intercepted") }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let limit = try await scenarioLimit(script: "browser/verified_calls.py", scenario)
        try await runBrowserScenario(script: "browser/verified_calls.py", scenario, timeout: limit, sourceLocation: sourceLocation)
    }
}
