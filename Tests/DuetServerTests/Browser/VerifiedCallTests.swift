import DuetTestSupport
import Testing

/// Verified calls (issue 19) in real headless Chromium, one scenario per process in a network namespace of its own:
/// `Tests/e2e/browser/verified_calls.py`, each under the limit the script works out from its waits (`--limit`).
@Suite struct VerifiedCallTests {
    @Test func linkKeyStaysInTheBrowser() async throws { try await run("link-key") }
    /// Through a relay that forwards every byte: verified on both pages, the same safety code, media both ways.
    @Test func aKeyedCallIsVerifiedWithEqualSafetyCodes() async throws { try await run("verified") }
    /// Issue 32's matrix: Chromium ↔ Firefox, each way round, and Firefox ↔ Firefox: verified with one safety code and
    /// media both ways.
    @Test func aKeyedCallAcrossBrowsersIsVerified() async throws { try await run("verified-across-browsers") }
    /// Through a relay that rewrites every offer's and answer's fingerprints (Tests/e2e/browser/tampering_proxy.py):
    /// both pages show the interception screen, no description is applied, nothing retries, a reload keeps it.
    @Test func aServerRewritingFingerprintsIsCaughtOnBothPages() async throws { try await run("intercepted") }
    /// Each browser keeps its DTLS certificate: the same fingerprints and code after a reload (with media both ways
    /// again), the same fingerprint in a new call, different ones in another tab and in another profile.
    @Test func theDtlsIdentityIsStableAcrossReloadsAndCalls() async throws { try await run("stable-identity") }
    /// A real DTLS man in the middle (two aiortc peers, Tests/e2e/browser/dtls_mitm.py) on a link without a key: the
    /// call connects, and the two pages' safety codes differ.
    @Test func aDtlsManInTheMiddleGivesDifferentSafetyCodes() async throws { try await run("mitm-unkeyed", script: "browser/mitm_call.py") }
    /// Its control: the same unkeyed call straight to the server gives one code on both pages.
    @Test func withoutAManInTheMiddleTheCodesAreEqual() async throws { try await run("direct-unkeyed", script: "browser/mitm_call.py") }

    private func run(_ scenario: String, script: String = "browser/verified_calls.py", sourceLocation: SourceLocation = #_sourceLocation)
        async throws
    {
        let limit = try await scenarioLimit(script: script, scenario)
        try await runBrowserScenario(script: script, scenario, timeout: limit, sourceLocation: sourceLocation)
    }
}
