import DuetTestSupport
import Foundation
import Testing

/// The results contract end to end, on fake runs in a temporary folder (`Tests/e2e/test_results.py`): scenario
/// outcomes are recorded pass or fail, and `scripts/publish-results.sh` publishes a complete run, refuses a
/// partial or failed one (a failed one only with `--allow-failed`, its rows saying **no**), and by default takes
/// the newest complete run. The docs tables are only ever as honest as this command.
@Suite struct ResultsPublisherTests {
    @Test func publisherAcceptsCompleteRunsAndRefusesPartialOrFailedOnes() async throws {
        try #require(commandExists("python3"), "python3 is required (the README test command installs it)")
        let script = packageRoot + "/Tests/e2e/test_results.py"
        // As many tests must run as the file declares (a test class lost to a typo would otherwise pass unseen).
        let declared = try String(contentsOfFile: script, encoding: .utf8).split(separator: "\n")
            .filter { $0.hasPrefix("    def test_") }.count
        let result = try await runCommand(["python3", script], timeout: .seconds(60))
        #expect(result.status == 0, "Tests/e2e/test_results.py failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(declared >= 10 && result.stderr.contains("Ran \(declared) tests"), "\(declared) declared:\n\(result.stderr)")
        #expect(result.stderr.hasSuffix("\nOK\n"), "unittest's verdict is OK, nothing skipped:\n\(result.stderr)")
    }
}
