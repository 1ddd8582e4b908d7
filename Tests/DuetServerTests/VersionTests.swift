import DuetTestSupport
import Foundation
import Testing

/// `duet --version` and `duet-call --version` say which release and which commit a binary is (issue 35): the version CHANGELOG.md's newest
/// release names, and the commit of this checkout as git tells it.
@Suite struct VersionTests {
    @Test(arguments: ["duet", "duet-call"]) func versionNamesTheReleaseAndTheCommit(of binary: String) async throws {
        let result = try await runCommand([packageRoot + "/.build/debug/" + binary, "--version"], timeout: .seconds(20))
        #expect(result.status == 0)
        let changelog = try String(contentsOfFile: packageRoot + "/CHANGELOG.md", encoding: .utf8)
        let release = try #require(changelog.firstMatch(of: /\n## \[(\d+\.\d+\.\d+)\]/)?.output.1, "CHANGELOG.md names a release")
        let git = try await runCommand(["git", "-C", packageRoot, "rev-parse", "--short=10", "HEAD"], timeout: .seconds(20))
        let commit = git.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(git.status == 0 && commit.count == 10)
        #expect(result.stdout.hasPrefix("\(release) (commit \(commit)"), "\(binary) --version printed \(result.stdout)")
    }
}
