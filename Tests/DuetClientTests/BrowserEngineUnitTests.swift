import DuetTestSupport
import Testing

/// The browser client's pure machines (`Sources/DuetServer/Web/js/**`) have unit tests of their own in
/// `Tests/web/*.test.mjs`, run here with Node's built-in test runner so one `swift test` runs them all.
@Suite struct BrowserEngineUnitTests {
    @Test func javaScriptMachineTestsPass() async throws {
        try #require(commandExists("node"), "node is required: apt-get install nodejs (the README test command installs it)")
        let result = try await runCommand(["node", "--test", "--test-reporter=spec", packageRoot + "/Tests/web/"], timeout: .seconds(120))
        #expect(result.status == 0, "node --test failed:\n\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("# fail 0") || result.stdout.contains("ℹ fail 0"), "\(result.stdout)")
    }
}
