import DuetTestSupport
import Foundation
import Testing

/// Runs one scenario of a Python script under Tests/e2e/ (`script` is relative to it) in a network namespace of its own
/// (`unshare -n`, loopback up) with the built `duet serve`, in a shared slot of `OneAtATime`; the script asserts and ends with
/// `scenario <name>: ok`. Outcomes and screenshots go to .build/results/$DUET_RUN_ID/ (Tests/e2e/results.py), never
/// to docs/.
func runBrowserScenario(
    script: String, _ scenario: String, needs tools: [String] = ["chromium", "unshare", "ip"],
    timeout: Duration = .seconds(150), sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    try #require(
        tools.allSatisfy(commandExists), "\(tools.joined(separator: ", ")) are required (the README test command installs them)",
        sourceLocation: sourceLocation)
    let duet = packageRoot + "/.build/debug/duet"
    try #require(
        FileManager.default.fileExists(atPath: duet), "build the package first: \(duet) is missing", sourceLocation: sourceLocation)
    let path = packageRoot + "/Tests/e2e/" + script
    // Filed under the calling suite's file, so that the timing table knows its tests wrap this job (scripts/timing.py).
    let result = try await OneAtATime.heavyWork.run(
        "\(script) \(scenario)", load: .shared, fileID: sourceLocation.fileID
    ) {
        try await runCommand(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && exec python3 \"$0\" \"$1\"", path, scenario],
            environment: ["DUET_BINARY": duet],
            timeout: timeout)
    }
    #expect(result.status == 0, "scenario \(scenario) failed:\n\(result.stdout)\n\(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stdout.contains("scenario \(scenario): ok"), "\(result.stdout)", sourceLocation: sourceLocation)
}

/// A scenario's time limit as its own script works it out (`script.py --limit NAME`, scenarios.main_with_limits:
/// Chromium's start plus the scenario's summed wait deadlines, with a margin), plus `teardown` for the script to stop
/// its servers and Chromium after a failure. One number, kept where the waits are.
func scenarioLimit(script: String, _ scenario: String, teardown: Duration = .seconds(30)) async throws -> Duration {
    let result = try await runCommand(["python3", packageRoot + "/Tests/e2e/" + script, "--limit", scenario], timeout: .seconds(30))
    let seconds = try #require(
        Int64(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)),
        "\(script) --limit \(scenario): \(result.stdout) \(result.stderr)")
    return .seconds(seconds) + teardown
}
