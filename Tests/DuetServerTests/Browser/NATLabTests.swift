import DuetTestSupport
import Foundation
import Testing

/// The NAT lab (issue 16, point 5): two homes, each behind a NAT router of its own, a "public" network with
/// `duet serve` (HTTP + STUN) and coturn, all in network namespaces that `Tests/e2e/natlab/natlab.py` makes
/// (`ip netns add`, names unique to the run), wires with veth pairs and a bridge, NATs with iptables, and deletes
/// when it ends. Chromium (or `duet call`) runs inside the homes. Each scenario checks media both ways (video frames
/// and decoded audio) and the candidate types of the path it names, and records its time to connect and the
/// candidate types under .build/results/$DUET_RUN_ID/natlab/ (scripts/publish-results.sh makes docs/networks.md's
/// table from a complete run).
@Suite struct NATLabTests {
    @Test func endpointIndependentNATsConnectDirectlyThroughSTUN() async throws { try await run("direct") }
    @Test func symmetricNATConnectsThroughTheRelay() async throws { try await run("symmetric-turn") }
    @Test func symmetricNATWithoutTURNExplainsThenConnectsOnceTURNIsAdded() async throws { try await run("symmetric-no-turn") }
    @Test func blockedUDPConnectsThroughTURNOverTCP() async throws { try await run("udp-blocked-tcp") }
    @Test func blockedUDPAndTURNPortConnectThroughTURNOverTLS() async throws { try await run("udp-blocked-tls") }
    @Test func routerAddressChangeMidCallRecoversWithAnICERestart() async throws { try await run("mapping-flush") }
    @Test func duetCallBehindOneNATAndChromiumBehindTheOtherConnectDirectly() async throws { try await run("duet-call") }

    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try #require(
            ["chromium", "unshare", "ip", "iptables", "turnserver", "setpriv", "ss", "curl", "openssl"].allSatisfy(commandExists),
            "chromium, unshare, setpriv, ip, ss, iptables, coturn, curl and openssl are required (the README test command installs them)")
        let duet = packageRoot + "/.build/debug/duet"
        try #require(FileManager.default.fileExists(atPath: duet), "build the package first: \(duet) is missing")
        var environment = ["DUET_BINARY": duet]
        if scenario == "duet-call" {
            let peer = packageRoot + "/.build/debug/duet-call"
            try #require(FileManager.default.fileExists(atPath: peer), "build the package first: \(peer) is missing")
            environment["DUET_CALL_BINARY"] = peer
        }
        let script = packageRoot + "/Tests/e2e/natlab/natlab.py"
        let env = environment
        // The script's own network namespace (`unshare -n`) only ever runs `ip netns …` on the lab's namespaces.
        let result = try await OneAtATime.heavyWork.run("natlab/natlab.py \(scenario)", load: .shared) {
            try await runCommand(
                ["unshare", "-n", "python3", script, scenario], environment: env, timeout: .seconds(170))
        }
        #expect(result.status == 0, "natlab \(scenario) failed:\n\(result.stdout)\n\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("scenario \(scenario): ok"), "\(result.stdout)", sourceLocation: sourceLocation)
    }
}
