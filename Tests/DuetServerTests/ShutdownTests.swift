import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

/// The `duet` binary itself: CLI contract and graceful shutdown on SIGTERM.
@Suite struct ShutdownTests {
    /// Everything the test checks while the server drains must happen inside the grace: after it the server stops
    /// listening and a new connection is refused outright (`connect: 111`). 1.5 s was met alone, not on a loaded CI
    /// machine (two curls and two raw sockets after SIGTERM), so the grace is long, and a refused connection says how
    /// long after SIGTERM it came.
    static let drainGrace = 8.0

    @Test func sigtermDrainsThenClosesAndExits() async throws {
        let binary = try #require(ServerProcess.binary, "build the package first (swift build): .build/debug/duet not found")
        let dataDirectory = TestServer.temporaryDirectory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "serve", "--port", "0", "--stun-port", "0", "--data-dir", dataDirectory, "--rate-limit", "off", "--drain-grace",
            "\(Self.drainGrace)",
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(["DUET_LOG_LEVEL": "warning"]) { _, new in new }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        let firstLine = try await readLine(stdout.fileHandleForReading)
        let match = try #require(firstLine.wholeMatch(of: /http:\/\/127\.0\.0\.1:(\d+)\//), "first stdout line is the URL: \(firstLine)")
        let port = Int(match.1)!
        let base = "http://127.0.0.1:\(port)/"

        let ws = TestClient(try await WebSocketSignalingConnection.connect(url: "ws://127.0.0.1:\(port)/ws", timeout: .seconds(5)))
        let sse = TestClient(try await SSESignalingConnection.connect(baseURL: base, timeout: .seconds(5)))
        try await ws.send(.ping)
        _ = try await ws.expect(.pong)

        kill(process.processIdentifier, SIGTERM)
        let signalled = ContinuousClock.now
        for client in [ws, sse] {
            let draining = try await client.expect(.draining).payload.decode(DrainingPayload.self)
            // Unseated: the base delay, 0 (a seated room's is spread over the second after it, DurableStateTests).
            #expect(draining.reconnectAfterMs == 0)
        }
        let health = try await httpStatus(base + "healthz")
        #expect(health == 503, "healthz turns 503 while draining")
        #expect(try await httpStatus(base + "sse?sid=" + SessionIdFormat.random()) == 503, "no new sessions while draining")
        // A new WebSocket is refused with a status a proxy retries elsewhere and a client can act on (it used to be
        // closed unanswered), and so is a new SSE stream.
        for request in [
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            "GET /sse?sid=\(SessionIdFormat.random()) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        ] {
            let socket: RawSocket
            do {
                socket = try await RawSocket.connect(port: port)
            } catch {
                // After the grace the server stops listening: say which of the two it was.
                throw TestFailure("\(error), \(ContinuousClock.now - signalled) after SIGTERM (the grace is \(Self.drainGrace) s)")
            }
            defer { socket.close() }
            try await socket.send(request)
            let answer = try await socket.receive(until: "\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 503 "), "\(answer.prefix(80))")
            #expect(answer.lowercased().contains("retry-after: 1\r\n"), "\(answer)")
        }
        #expect(ContinuousClock.now - signalled < .seconds(Self.drainGrace), "the draining checks ran inside the grace")

        #expect(try await ws.expectClosed(timeout: .seconds(Self.drainGrace + 10)) == .byServer(code: 1012, reason: "server shutting down"))
        _ = try await sse.expectClosed(timeout: .seconds(10))
        let exited = await waitForExit(process, timeout: .seconds(10))
        #expect(exited)
        #expect(process.terminationStatus == 0)
    }

    @Test func flagsAndEnvironmentAreValidated() async throws {
        let binary = try #require(ServerProcess.binary, "build the package first (swift build)")
        let badPort = try await runCommand([binary, "serve", "--port", "70000"], timeout: .seconds(10))
        #expect(badPort.status != 0)
        #expect(badPort.stderr.contains("port"))
        let badEnv = try await runCommand([binary, "serve"], environment: ["DUET_RATE_LIMIT": "maybe"], timeout: .seconds(10))
        #expect(badEnv.status != 0)
        #expect(badEnv.stderr.contains("DUET_RATE_LIMIT"))
        let turnWithoutUri = try await runCommand([binary, "serve", "--turn-secret", "s"], timeout: .seconds(10))
        #expect(turnWithoutUri.status != 0)
        #expect(turnWithoutUri.stderr.contains("--turn-uri"))
    }

    /// Every number is range-checked: zero, negative, NaN, absurd — a clear message naming the flag, exit 64, never
    /// a trap or a silent clamp. A broken secrets file: a clear message, exit 78.
    @Test func numericFlagsAndTheSecretsFileAreValidated() async throws {
        let binary = try #require(ServerProcess.binary, "build the package first (swift build)")
        let data = TestServer.temporaryDirectory()
        let cases: [([String], [String: String], String)] = [
            (["--ping-interval", "0"], [:], "--ping-interval"),
            (["--ping-interval", "-3"], [:], "--ping-interval"),
            (["--turn-ttl", "-5"], [:], "--turn-ttl"),
            (["--turn-ttl", "9999999999999"], [:], "--turn-ttl"),
            (["--eviction-timeout", "1e300"], [:], "--eviction-timeout"),
            (["--drain-grace", "nan"], [:], "--drain-grace"),
            (["--max-connections", "0"], [:], "--max-connections"),
            (["--max-connections-per-ip", "-1"], [:], "--max-connections-per-ip"),
            (["--trusted-proxy", "10.0.0.0/99"], [:], "--trusted-proxy"),
            (["--metrics-token", "short"], [:], "--metrics-token"),
            ([], ["DUET_PING_INTERVAL": "nan"], "DUET_PING_INTERVAL"),
            ([], ["DUET_TURN_TTL": "0"], "DUET_TURN_TTL"),
            ([], ["DUET_TRUSTED_PROXIES": "10.0.0.0/8, nonsense"], "nonsense"),
            (["--stun-port", "70000"], [:], "--stun-port"),
            (["--stun-uri", "turn:turn.example.test:3478"], [:], "--stun-uri"),
            (["--stun-uri", "stun:stun.example.test:3478?transport=udp"], [:], "takes no query"),
            ([], ["DUET_STUN_URIS": "stun://x"], "DUET_STUN_URIS"),
            (["--turn-secret", "s", "--turn-uri", "turn:turn.example.test:3478?transport=sctp"], [:], "--turn-uri"),
            (["--turn-uri", "turn:turn.example.test:3478"], [:], "--turn-secret"),
            (["--turn-secret", "s", "--turn-uri", "stun:stun.example.test"], [:], "--turn-uri"),
            (["--tls-cert", "/nonexistent.pem"], [:], "--tls-key"),
            // deploy/duet.env's placeholder, as the package installs it: never served with.
            ([], ["DUET_TURN_SECRET": "CHANGE_ME_TURN_SECRET", "DUET_TURN_URIS": "turn:turn.example.test:3478"], "placeholder"),
            (["--web-root", "/nonexistent"], [:], "--web-root"),
            (["--reconnect-token-ttl", "30"], [:], "--reconnect-token-ttl"),
            ([], ["DUET_RECONNECT_TOKEN_TTL": "100000"], "DUET_RECONNECT_TOKEN_TTL"),
            // A seat must not outlive the token that takes it back (the default eviction timeout is 600 s).
            (["--reconnect-token-ttl", "300"], [:], "shorter than --eviction-timeout"),
        ]
        for (flags, environment, named) in cases {
            let result = try await runCommand(
                [binary, "serve", "--port", "0", "--stun-port", "0", "--data-dir", data] + flags, environment: environment,
                timeout: .seconds(10))
            #expect(result.status == 64, "\(flags) \(environment): exit \(result.status)")
            #expect(result.stderr.contains(named), "\(flags) \(environment): \(result.stderr)")
        }

        let broken = TestServer.temporaryDirectory()
        try Data("{\"roomIdSecret\": 5}".utf8).write(to: URL(fileURLWithPath: broken + "/secrets.json"))
        let refused = try await runCommand([binary, "serve", "--port", "0", "--data-dir", broken], timeout: .seconds(10))
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("not a valid secrets file"), "\(refused.stderr)")
        let weak = TestServer.temporaryDirectory()
        try Data(#"{"roomIdSecret":"c2hvcnQ=","reconnectSecret":"c2hvcnQ=","turnTokenSecret":"c2hvcnQ="}"#.utf8).write(
            to: URL(fileURLWithPath: weak + "/secrets.json"))
        let short = try await runCommand([binary, "serve", "--port", "0", "--data-dir", weak], timeout: .seconds(10))
        #expect(short.status == 78)
        #expect(short.stderr.contains("at least 32 bytes"), "\(short.stderr)")
    }

    /// The secrets file appears with mode 0600 from the start, and a second server uses the first one's keys.
    @Test func theSecretsFileIsCreatedOnceAndPrivate() throws {
        let directory = TestServer.temporaryDirectory() + "/fresh"
        let first = try ServerSecrets.loadOrCreate(in: directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/secrets.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try ServerSecrets.loadOrCreate(in: directory) == first)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["secrets.json"], "no temporary file left behind")
    }

    private func readLine(_ handle: FileHandle) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                while true {
                    let chunk = handle.readData(ofLength: 1)
                    guard let byte = chunk.first else {
                        continuation.resume(throwing: TestFailure("stdout closed before a line: \(String(decoding: bytes, as: UTF8.self))"))
                        return
                    }
                    if byte == 0x0a { break }
                    bytes.append(byte)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
    }

    private func waitForExit(_ process: Process, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(50)) }
        return !process.isRunning
    }

    private func httpStatus(_ url: String) async throws -> Int {
        let result = try await runCommand(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2", url], timeout: .seconds(5))
        return Int(result.stdout) ?? 0
    }
}
