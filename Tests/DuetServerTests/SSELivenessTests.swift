import DuetTestSupport
import Foundation
import Testing

/// `SSELiveness` on a real network: `duet serve` in a namespace, an SSE client behind a veth pair made
/// half-open with iptables (its TCP connection stays open, nothing arrives). Its peer must see it `suspended`
/// within the rule's bound, and a relay to it must be answered `relay_failed` (`Tests/e2e/sse_half_open.py`).
@Suite(.serialized) struct SSELivenessTests {
    @Test func aHalfOpenSSEClientIsSuspendedWithinTheLivenessBound() async throws {
        try #require(
            ["unshare", "nsenter", "ip", "iptables"].allSatisfy(commandExists),
            "unshare, nsenter, ip and iptables are required (the README test command installs them)")
        let duet = packageRoot + "/.build/debug/duet"
        try #require(FileManager.default.fileExists(atPath: duet), "build the package first: \(duet) is missing")
        // In a namespace of its own, waiting on the liveness timer: it shares the machine (`OneAtATime`).
        let result = try await OneAtATime.heavyWork.run("sse_half_open.py", load: .shared) {
            try await runCommand(
                ["unshare", "-n", "sh", "-c", "ip link set lo up && exec python3 \"$0\"", packageRoot + "/Tests/e2e/sse_half_open.py"],
                environment: ["DUET_BINARY": duet], timeout: .seconds(150))
        }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("sse-half-open: ok"), "\(result.stdout)")
        if let line = result.stdout.split(separator: "\n").first(where: { $0.hasPrefix("RESULT ") }) { print(line) }
    }
}
