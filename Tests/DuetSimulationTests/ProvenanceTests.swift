import DuetSimulation
import DuetTestBasics
import Foundation
import Testing

/// The commit and dirty flag a result is stamped with are worked out by `Tests/e2e/results.py` (scenario outcomes,
/// run.json) and by `Provenance` (the sweep's report). The two must agree: on this checkout, and on a scratch
/// repository clean, with a change, with an untracked file, and with only results under `.build`.
@Suite struct ProvenanceTests {
    struct Python: Decodable, Equatable {
        let commit: String
        let dirty: Bool
    }

    func python(_ root: String) async throws -> Python {
        let result = try await runCommand(["python3", root + "/Tests/e2e/results.py", "provenance"], timeout: .seconds(30))
        try #require(result.status == 0, "results.py provenance failed: \(result.stderr)")
        return try JSONDecoder().decode(Python.self, from: Data(result.stdout.utf8))
    }

    func swift(_ root: String) -> Python {
        let provenance = Provenance.current(in: root)
        return Python(commit: provenance.commit, dirty: provenance.dirty)
    }

    @Test func bothCopiesAgreeOnThisCheckout() async throws {
        #expect(try await python(packageRoot) == swift(packageRoot))
    }

    @Test func bothCopiesAgreeOnEveryKindOfChange() async throws {
        let root = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let git = { (arguments: [String]) async throws in
            // No user configuration (commit signing, hidden untracked files) may change what is tested.
            let result = try await runCommand(["git", "-C", root] + arguments, environment: ["GIT_CONFIG_GLOBAL": "/dev/null"])
            try #require(result.status == 0, "git \(arguments) failed: \(result.stderr)")
        }
        try FileManager.default.createDirectory(atPath: root + "/Tests/e2e", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: packageRoot + "/Tests/e2e/results.py", toPath: root + "/Tests/e2e/results.py")
        try "x\n".write(toFile: root + "/file.txt", atomically: true, encoding: .utf8)
        try await git(["init", "-q"])
        try await git(["add", "."])
        try await git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "scratch"])

        var seen: [Python] = []
        for (change, dirty) in [("clean", false), ("results under .build", false), ("untracked file", true), ("changed file", true)] {
            switch change {
            case "results under .build":
                try FileManager.default.createDirectory(atPath: root + "/.build/results", withIntermediateDirectories: true)
                try "{}".write(toFile: root + "/.build/results/run.json", atomically: true, encoding: .utf8)
            case "untracked file": try "new".write(toFile: root + "/new.txt", atomically: true, encoding: .utf8)
            case "changed file":
                try FileManager.default.removeItem(atPath: root + "/new.txt")
                try "y\n".write(toFile: root + "/file.txt", atomically: true, encoding: .utf8)
            default: break
            }
            let fromPython = try await python(root)
            #expect(fromPython == swift(root), "\(change)")
            #expect(fromPython.dirty == dirty, "\(change)")
            seen.append(fromPython)
        }
        #expect(Set(seen.map(\.commit)).count == 1 && seen[0].commit.count == 40)
    }
}
