import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

/// Credentials from `/api/turn-credentials` against real coturn (Debian `coturn`), started by the
/// test inside its own network namespace.
@Suite struct CoturnTests {
    @Test func issuedCredentialsAllocateTamperedAndExpiredGet401() async throws {
        try #require(
            commandExists("turnserver") && commandExists("turnutils_uclient") && commandExists("unshare"),
            "coturn is required: apt-get install coturn (the README test command installs it)")
        let secret = "duet-coturn-" + UUID().uuidString
        let server = try await TestServer.start {
            $0.turnSecret = secret
            $0.turnURIs = ["turn:127.0.0.1:3478?transport=udp"]
            $0.turnCredentialTTLSeconds = 8
        }
        defer { Task { await server.stop() } }
        let fetched = try await server.joinAndFetchTurnCredentials()
        #expect(fetched.status == 200)
        let credentials = try #require(fetched.credentials)
        let username = try #require(credentials.username)
        let password = try #require(credentials.password)

        let expiresAt = try #require(username.split(separator: ":").first.flatMap { Int64($0) })
        let result = try await runCommand(
            ["unshare", "-n", "bash", packageRoot + "/Tests/e2e/coturn-check.sh"],
            environment: ["TURN_SECRET": secret, "TURN_USER": username, "TURN_PASS": password, "EXPIRES_AT": String(expiresAt)],
            timeout: .seconds(60))
        let lines = Dictionary(
            result.stdout.split(separator: "\n").compactMap { line -> (String, String)? in
                let parts = line.split(separator: ":", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), parts[1].trimmingCharacters(in: .whitespaces)) : nil
            }, uniquingKeysWith: { $1 })
        #expect(lines["good"] == "relayed", "turnutils_uclient: \(result.stderr)")
        #expect(lines["good-allocate"] == "allocated")
        #expect(lines["tampered"] == "error 401")
        #expect(lines["expired"] == "error 401")
    }
}
