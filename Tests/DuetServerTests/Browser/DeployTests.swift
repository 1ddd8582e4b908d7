import DuetTestSupport
import Foundation
import Testing

/// The deployment folder (`deploy/`) as it is: `Tests/e2e/deploy/deploy_scenarios.py` checks the files (nginx -t
/// inside Debian's nginx.conf, systemd-analyze verify and an offline security review of the units, one secret and
/// one set of names and ports across them, each check shown to fail on a broken copy), then runs the real nginx,
/// coturn and the built `duet serve` from exactly those files — only their marked placeholders replaced, each
/// replacement asserted — in a network namespace of its own, with a certificate for duet.test made by the test, and
/// calls through https://duet.test/ with two headless Chromium pages.
@Suite struct DeployTests {
    @Test func deployFilesPassNginxTAndSystemdAnalyzeVerify() async throws {
        try await run("files", namespace: false)
    }

    @Test func httpsCallThroughNginxOverWebSocketWithTheClientAddressForwarded() async throws {
        try await run("https-call")
    }

    @Test func httpsCallThroughNginxOverSSE() async throws { try await run("https-sse") }

    @Test func relayOnlyCallThroughCoturnOverTLS() async throws { try await run("turns-relay") }

    private func run(_ scenario: String, namespace: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try #require(
            commandExists("nginx") && commandExists("turnserver") && commandExists("systemd-analyze")
                && commandExists("openssl"),
            "nginx, coturn, systemd-analyze and openssl are required (the README test command installs them)")
        let script = packageRoot + "/Tests/e2e/deploy/deploy_scenarios.py"
        // The files under test are the repository's deploy/: DUET_DEPLOY_DIR (for proving the checks fail on a
        // broken copy by hand) is cleared.
        var environment = ["DUET_DEPLOY_DIR": ""]
        let command: [String]
        if namespace {
            try #require(
                commandExists("chromium") && commandExists("unshare") && commandExists("ip"),
                "chromium, unshare and ip are required (the README test command installs them)")
            let duet = packageRoot + "/.build/debug/duet"
            try #require(FileManager.default.fileExists(atPath: duet), "build the package first: \(duet) is missing")
            environment["DUET_BINARY"] = duet
            command = ["unshare", "-n", "-m", "sh", "-c", "ip link set lo up && exec python3 \"$0\" \"$1\"", script, scenario]
        } else {
            command = ["python3", script, scenario]
        }
        let fixed = environment
        let result = try await OneAtATime.heavyWork.run("deploy/deploy_scenarios.py \(scenario)", load: .shared) {
            try await runCommand(command, environment: fixed, timeout: .seconds(150))
        }
        #expect(result.status == 0, "scenario \(scenario) failed:\n\(result.stdout)\n\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("scenario \(scenario): ok"), "\(result.stdout)", sourceLocation: sourceLocation)
    }
}
