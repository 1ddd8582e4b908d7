import DuetTestSupport
import Foundation
import Testing

/// The browser client's pure machines (`Sources/DuetWeb/Web/js/**`) have unit tests of their own in
/// `Tests/web/*.test.mjs`, run here with Node's built-in test runner so one `swift test` runs them all.
@Suite struct BrowserEngineUnitTests {
    @Test func javaScriptMachineTestsPass() async throws {
        try #require(commandExists("node"), "node is required: apt-get install nodejs (the README test command installs it)")
        let declared = try declaredTests(in: packageRoot + "/Tests/web")
        let result = try await runCommand(["node", "--test", "--test-reporter=spec", packageRoot + "/Tests/web/"], timeout: .seconds(120))
        #expect(result.status == 0, "node --test failed:\n\(result.stdout)\n\(result.stderr)")
        // Every declared test ran and passed: a file the runner no longer finds, a test skipped or one that never
        // got to run shows up as a count that does not match.
        #expect(declared > 100, "the test files declare \(declared) tests")
        let summary = runnerSummary(result.stdout)
        #expect(summary["tests"] == declared, "node ran \(summary["tests"] ?? -1) tests, the files declare \(declared):\n\(result.stdout)")
        #expect(summary["pass"] == declared, "\(summary["pass"] ?? -1) of \(declared) passed:\n\(result.stdout)")
        #expect(summary["fail"] == 0 && summary["skipped"] == 0 && summary["todo"] == 0 && summary["cancelled"] == 0, "\(summary)")
    }

    /// Tests as the files declare them: a `test(` (or `test.skip(`…) call at the start of a line, the way every
    /// `Tests/web/**/*.test.mjs` writes them. Every `.mjs` file is read, so a test file misnamed into one the
    /// runner does not pick up still counts.
    private func declaredTests(in folder: String) throws -> Int {
        let files = FileManager.default.enumerator(atPath: folder)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".mjs") } ?? []
        let call = try Regex(#"^(test|it)(\.[a-z]+)?\("#)
        return try files.reduce(0) { count, file in
            let lines = try String(contentsOfFile: folder + "/" + file, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false)
            return count + lines.filter { $0.firstMatch(of: call) != nil }.count
        }
    }

    /// The runner's closing counts (`ℹ tests 114`, `ℹ pass 114`, … with the spec reporter; `# tests 114` with TAP).
    private func runnerSummary(_ output: String) -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in output.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 3, words[0] == "ℹ" || words[0] == "#", let value = Int(words[2]) { counts[String(words[1])] = value }
        }
        return counts
    }
}
