import DuetTestSupport
import Foundation
import Testing

/// `duet call` (the GStreamer peer) end to end, each scenario in a network namespace of its own with its own
/// `duet serve` (and Chromium or coturn where the scenario needs them): `Tests/e2e/peer/peer_scenarios.py`
/// asserts and prints what it checked.
@Suite struct DuetCallPeerTests {
    @Test func mediaBothWaysWithChromium() async throws { try await run("chromium") }
    @Test func chromiumAcceptsDuetCallsOfferWhenItHosts() async throws { try await run("chromium-joins-second") }
    @Test func duetCallToDuetCall() async throws { try await run("peer-to-peer") }
    /// Issue 32's matrix: duet call hosts and Firefox joins (WebDriver BiDi): media both ways, mute heard as silence.
    @Test func firefoxJoinsDuetCall() async throws { try await run("firefox-joins-duet-call") }
    /// And Firefox hosts: its offer's payload types (Opus 109, VP8 120) are not Chromium's, which duet call sends with.
    @Test func firefoxHostsDuetCall() async throws { try await run("firefox-hosts-duet-call") }
    /// Issue 19: a keyed link between Chromium and duet call, each way round: verified, one safety code, media.
    @Test func verifiedBetweenChromiumAndDuetCall() async throws { try await run("verified-duet-call") }
    /// Issue 19: a server rewriting fingerprints between Chromium and duet call, each way round: both end as
    /// intercepted (the screen; exit 6 and the event), no media, no retry.
    @Test func interceptedBetweenChromiumAndDuetCall() async throws { try await run("intercepted-duet-call") }
    /// Issue 19: a server that keeps every signed fingerprint but terminates DTLS itself (aiortc peers), each way
    /// round: webrtcbin accepts the wrong certificate, duet call's own check of it ends the call as intercepted, and
    /// the page learns it from duet call's verify_failed.
    @Test func certificateSwapCaughtByDuetCall() async throws { try await run("certificate-swap-duet-call") }
    @Test func relayOnlyThroughRealCoturn() async throws { try await run("relay") }
    @Test func refreshedTURNCredentialsReachTheLiveSession() async throws { try await run("turn-refresh") }
    @Test func audioOnlyThroughTURNOverTCP() async throws { try await run("relay-tcp-audio-only") }
    @Test func refusedWebSocketRunsOverSSE() async throws { try await run("sse") }
    /// Issue 31: `duet call --ring` ↔ `duet call --answer` (nobody to ring exits 9; then the verified name, accepted,
    /// media both ways), and Chromium ↔ `duet call` each way round (the home page's sheet; the saved call's Call).
    @Test func duetCallRingsDuetCall() async throws { try await run("ring-duet-calls") }
    @Test func duetCallRingsChromium() async throws { try await run("ring-chromium-answers") }
    @Test func chromiumRingsDuetCall() async throws { try await run("ring-duet-call-answers") }
    @Test func linkCutForEightSecondsRecoversWithoutUserAction() async throws {
        let output = try await run("link-cut")
        // The scenario reports how long recovery took after the link came back.
        let line = output.split(separator: "\n").first { $0.hasPrefix("time to recover:") }
        #expect(line != nil, "the scenario reports the time to recover")
        if let line { print("duet call link cut: \(line)") }
    }

    @Test func linkCutBetweenChromiumAndDuetCallRecovers() async throws {
        let output = try await run("link-cut-chromium")
        #expect(output.contains("time to recover:"), "the scenario reports the time to recover")
    }

    @Test func linkCutWhileDuetCallHostsRecovers() async throws {
        let output = try await run("link-cut-duet-call-hosts")
        #expect(output.contains("time to recover:"), "the scenario reports the time to recover")
    }

    /// Issue 32: media to `duet call` (the guest) stops while both ICE agents stay connected; it cannot restart ICE in
    /// place, so it asks Chromium, the host, which restarts (`peerRequest`).
    @Test func aStalledDuetCallGuestAsksTheHostToRestart() async throws {
        let output = try await run("stall-duet-call-guest")
        #expect(output.contains("time to recover:"), "the scenario reports the time to recover")
    }

    @discardableResult
    private func run(_ scenario: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        try #require(commandExists("unshare") && commandExists("ip") && commandExists("nsenter"), "unshare, nsenter and ip are required")
        let peer = packageRoot + "/.build/debug/duet-call"
        let duet = packageRoot + "/.build/debug/duet"
        try #require(
            FileManager.default.fileExists(atPath: peer) && FileManager.default.fileExists(atPath: duet),
            "build the package first (swift build --build-tests builds duet and duet-call)")
        let script = packageRoot + "/Tests/e2e/peer/peer_scenarios.py"
        let result = try await OneAtATime.heavyWork.run("peer/peer_scenarios.py \(scenario)", load: .shared) {
            try await runCommand(
                ["unshare", "-n", "sh", "-c", "ip link set lo up && exec python3 \"$0\" \"$1\"", script, scenario],
                environment: ["DUET_BINARY": duet, "DUET_CALL_BINARY": peer], timeout: .seconds(150))
        }
        #expect(result.status == 0, "scenario \(scenario) failed:\n\(result.stdout)\n\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.contains("scenario \(scenario): ok"), "\(result.stdout)", sourceLocation: sourceLocation)
        return result.stdout
    }
}
