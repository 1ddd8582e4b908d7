import DuetTestSupport
import Foundation
import Testing

/// `duet serve --tls-cert --tls-key` (issue 16, point 2): HTTPS and WSS from the server itself, with a certificate made
/// here by openssl; curl checks the chain against the test CA, so a server that fell back to plain HTTP, or served
/// another certificate, fails.
struct TLSServeTests {
    /// A CA and a certificate for 127.0.0.1 / localhost signed by it, in a fresh directory.
    static func makeCertificates() async throws -> (directory: String, ca: String, cert: String, key: String) {
        let dir = TestServer.temporaryDirectory()
        let steps: [[String]] = [
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=Duet Test CA", "-keyout", dir + "/ca.key", "-out", dir + "/ca.pem",
            ],
            [
                "openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=localhost",
                "-keyout", dir + "/server.key", "-out", dir + "/server.csr",
            ],
            ["sh", "-c", "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > \"$0/ext.cnf\"", dir],
            [
                "openssl", "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.pem", "-CAkey", dir + "/ca.key",
                "-CAcreateserial", "-days", "2", "-extfile", dir + "/ext.cnf", "-out", dir + "/server.pem",
            ],
        ]
        for step in steps {
            let result = try await runCommand(step, timeout: .seconds(30))
            guard result.status == 0 else { throw TestFailure("\(step.joined(separator: " ")): \(result.stderr)") }
        }
        return (dir, dir + "/ca.pem", dir + "/server.pem", dir + "/server.key")
    }

    @Test func httpsAndWssAreServedWithTheGivenCertificate() async throws {
        try #require(
            commandExists("openssl") && commandExists("curl"), "openssl and curl are required (the README test command installs them)")
        let files = try await Self.makeCertificates()
        let server = try await ServerProcess.start(["--tls-cert", files.cert, "--tls-key", files.key])
        defer { Task { await server.stop() } }
        #expect(server.announced.hasPrefix("https://127.0.0.1:"), "the first stdout line is the https URL: \(server.announced)")
        let base = "https://127.0.0.1:\(server.port)/"

        let page = try await runCommand(
            ["curl", "-sS", "--cacert", files.ca, "-o", "/dev/null", "-w", "%{http_code}", base], timeout: .seconds(15))
        #expect(page.stdout == "200", "GET / over HTTPS: \(page.stdout) \(page.stderr)")
        let roomId = try await runCommand(["curl", "-sS", "--cacert", files.ca, "-X", "POST", base + "api/room-id"], timeout: .seconds(15))
        #expect(roomId.stdout.contains("\"roomId\""), "\(roomId.stdout) \(roomId.stderr)")
        // The WebSocket upgrade over TLS (WSS): the handshake answers 101; curl then holds the socket until --max-time.
        let upgrade = try await runCommand(
            [
                "curl", "-sS", "-i", "--http1.1", "--cacert", files.ca, "--max-time", "2",
                "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
                "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-H", "Origin: https://127.0.0.1:\(server.port)", base + "ws",
            ],
            timeout: .seconds(15))
        #expect(upgrade.stdout.hasPrefix("HTTP/1.1 101"), "WSS upgrade: \(upgrade.stdout.prefix(200)) \(upgrade.stderr)")
        // Plain HTTP to the TLS port is not served.
        let plain = try await runCommand(
            ["curl", "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(server.port)/"],
            timeout: .seconds(15))
        #expect(plain.stdout != "200", "plain HTTP must not be served on the TLS port")
    }

    @Test func aMissingOrMismatchedKeyIsAClearStartupError() async throws {
        try #require(commandExists("openssl"), "openssl is required")
        let binary = try #require(ServerProcess.binary, "build the package first (swift build)")
        let files = try await Self.makeCertificates()
        func serve(_ cert: String, _ key: String) async throws -> CommandResult {
            try await runCommand(
                [
                    binary, "serve", "--port", "0", "--stun-port", "0", "--data-dir", TestServer.temporaryDirectory(),
                    "--tls-cert", cert, "--tls-key", key,
                ], timeout: .seconds(10))
        }
        let missing = try await serve(files.directory + "/nope.pem", files.key)
        #expect(missing.status == 78 && missing.stderr.contains("nope.pem"), "\(missing.status) \(missing.stderr)")
        let mismatched = try await serve(files.cert, files.directory + "/ca.key")
        #expect(mismatched.status == 78 && mismatched.stderr.contains("does not fit"), "\(mismatched.status) \(mismatched.stderr)")
        #expect(mismatched.stdout.isEmpty)
    }
}
