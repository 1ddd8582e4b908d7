import Crypto
import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

@testable import DuetServer

@Suite struct HTTPAPITests {
    @Test func roomIdsAreIssuedByGetAndPost() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for method in [HTTPMethodName.get, .post] {
            let response = try await server.http(method == .get ? .GET : .POST, "api/room-id")
            #expect(response.status == 200)
            let id = try JSONDecoder().decode(RoomIdResponse.self, from: Data(response.body.utf8)).roomId
            #expect(id.count == 27)
            #expect(RoomIdFormat.isWellFormed(id))
        }
        let a = try await server.roomId()
        let b = try await server.roomId()
        #expect(a != b)
    }

    enum HTTPMethodName { case get, post }

    @Test func turnCredentialsAre503WithoutTurnServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let client = try await TestClient.connect(.ws, to: server)
        let joined = try await client.join(rid)
        #expect(try await server.http(.GET, "api/turn-credentials?token=" + joined.payload.turnToken).status == 503)
        await client.close()
    }

    @Test func turnCredentialsFollowCoturnRestForm() async throws {
        let secret = "coturn-shared-secret"
        let server = try await TestServer.start {
            $0.turnSecret = secret
            $0.turnURIs = ["turn:127.0.0.1:3478?transport=udp", "turn:127.0.0.1:3478?transport=tcp"]
        }
        defer { Task { await server.stop() } }
        let fetched = try await server.joinAndFetchTurnCredentials()
        #expect(fetched.status == 200)
        let credentials = try #require(fetched.credentials)
        let joined = fetched.joined
        #expect(credentials.uris.count == 2)
        #expect(credentials.ttl == 3600)
        let username = try #require(credentials.username)
        let parts = username.split(separator: ":")
        let expiry = try #require(Int64(parts[0]))
        #expect(abs(expiry - Int64(Date().timeIntervalSince1970) - 3600) < 5)
        let expected = Data(HMAC<Insecure.SHA1>.authenticationCode(for: Data(username.utf8), using: SymmetricKey(data: Data(secret.utf8))))
            .base64EncodedString()
        #expect(credentials.password == expected)
        // The list a client hands its RTCPeerConnection: TURN only (no STUN configured on this server), with these credentials.
        #expect(credentials.iceServers == [IceServer(urls: credentials.uris, username: username, credential: expected)])

        #expect(try await server.http(.GET, "api/turn-credentials").status == 401)
        #expect(try await server.http(.GET, "api/turn-credentials?token=x.y").status == 401)
        let tampered = "A" + joined.payload.turnToken.dropFirst()
        #expect(try await server.http(.GET, "api/turn-credentials?token=" + tampered).status == 401)
    }

    /// Accepted until the expiry the join stated, refused after it. The TTL is long enough for the first request to
    /// come well within it while the in-process suites start all at once (with 1 s, a join and a request took longer
    /// than that in run 20261206T150051Z-2e010e: the fresh token was already refused); the wait after it lasts until the
    /// stated expiry, not a guess at it.
    @Test func expiredTurnTokenIsRefused() async throws {
        let server = try await TestServer.start {
            $0.turnSecret = "s"
            $0.turnURIs = ["turn:127.0.0.1:3478"]
            $0.turnTokenTTL = .seconds(15)
        }
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let client = try await TestClient.connect(.ws, to: server)
        let joined = try await client.join(rid)
        let token = joined.payload.turnToken
        #expect(try await server.http(.GET, "api/turn-credentials?token=" + token).status == 200)
        // (`turnTokenExpiresAt` is in seconds since the epoch, rounded up.)
        let untilExpiry = joined.payload.turnTokenExpiresAt * 1000 - Int64(Date().timeIntervalSince1970 * 1000)
        try await Task.sleep(for: .milliseconds(max(0, untilExpiry) + 100))
        #expect(try await server.http(.GET, "api/turn-credentials?token=" + token).status == 401)
        await client.close()
    }

    @Test func originsAreCheckedOnApiSseAndWebSocket() async throws {
        let server = try await TestServer.start { $0.allowedOrigins = ["https://app.example"] }
        defer { Task { await server.stop() } }
        let sid = "sse?sid=" + SessionIdFormat.random()
        for path in ["api/room-id", sid] {
            #expect(try await server.http(.GET, path, headers: [("Origin", "https://evil.example")]).status == 403, "\(path)")
            #expect(try await server.http(.GET, path, headers: [("Origin", "null")]).status == 403, "\(path)")
        }
        #expect(try await server.http(.GET, "api/room-id", headers: [("Origin", "https://app.example")]).status == 200)
        #expect(try await server.http(.GET, "api/room-id", headers: [("Origin", "http://localhost:3000")]).status == 200)
        #expect(try await server.http(.GET, "api/room-id").status == 200, "no Origin: not a browser")
        await #expect(throws: SignalingConnectError.self) {
            _ = try await WebSocketSignalingConnection.connect(
                url: server.webSocketURL, timeout: .seconds(3), headers: [.origin: "https://evil.example"])
        }
        // A plain GET /ws explains itself.
        #expect(try await server.http(.GET, "ws").status == 426)
    }

    /// A refill of one token per 1,000 s: the 11th request is refused however slowly this machine sends them
    /// (with the default 10/s, a loaded machine sending 100 requests in 37 s never ran the bucket dry).
    @Test func perIPRateLimitAnswers429() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = true
            $0.rateRules.api = .init(capacity: 10, refillPerSecond: 0.001)
        }
        defer { Task { await server.stop() } }
        var statuses: [Int] = []
        for _ in 0..<12 { statuses.append(try await server.http(.GET, "api/room-id").status) }
        #expect(statuses == Array(repeating: 200, count: 10) + [429, 429])
    }

    @Test func blockedWebSocketRefusesUpgradesAndSSEStillWorks() async throws {
        let server = try await TestServer.start { $0.blockWebSocket = true }
        defer { Task { await server.stop() } }
        await #expect(throws: SignalingConnectError.self) {
            _ = try await WebSocketSignalingConnection.connect(url: server.webSocketURL, timeout: .seconds(3))
        }
        let client = try await TestClient.connect(.sse, to: server)
        try await client.send(.ping)
        _ = try await client.expect(.pong)
        await client.close()
    }

    @Test func metricsExposeConnectionsRoomsMessagesErrorsAndJoinLatency() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let ws = try await TestClient.connect(.ws, to: server)
        let sse = try await TestClient.connect(.sse, to: server)
        _ = try await ws.join(rid)
        _ = try await sse.join(rid)
        try await ws.sendRaw("nope")
        _ = try await ws.expectError(.badRequest)
        await sse.close()
        try await ws.peerSuspended()

        let metrics = try await server.http(.GET, "metrics")
        #expect(metrics.status == 200)
        let text = metrics.body
        for line in [
            #"duet_connections{transport="ws"} 1"#,
            #"duet_rooms 1"#,
            #"duet_participants{status="suspended"} 1"#,
            #"duet_participants{status="connected"} 1"#,
            #"duet_messages_in_total{type="join"} 2"#,
            #"duet_messages_out_total{type="joined"} 2"#,
            #"duet_errors_total{code="BAD_REQUEST"} 1"#,
            #"duet_join_latency_seconds_count 2"#,
            #"duet_disconnects_total{reason="client_closed",transport="sse"} 1"#,
        ] {
            #expect(text.contains(line), "missing \(line)")
        }
        // The C heap in use (mallinfo2): a live server has megabytes of it; 0 would mean the shim reads nothing. Under
        // a sanitizer (scripts/sanitize.sh sets DUET_SANITIZER) malloc is the sanitizer's, which glibc's mallinfo2
        // does not see: there the line must still be served, with whatever it reads.
        let heapLine = try #require(text.split(separator: "\n").first { $0.hasPrefix("duet_heap_in_use_bytes ") })
        let heap = try #require(Double(heapLine.split(separator: " ")[1]))
        if ProcessInfo.processInfo.environment["DUET_SANITIZER"] == nil { #expect(heap > 1_000_000, "\(heapLine)") }
        await ws.close()
    }

    @Test func healthzIsOkWhileServing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let health = try await server.http(.GET, "healthz")
        #expect(health.status == 200)
        #expect(health.body.contains("ok"))
    }

    /// The load guard has one source (`js/load-guard.js`) and is served inline in every page, before the page's
    /// module: it must run even when every other script fails to load.
    @Test func everyPageCarriesTheLoadGuardInline() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let guardScript = try await server.http(.GET, "js/load-guard.js")
        #expect(guardScript.status == 200)
        #expect(guardScript.body.contains("duet.loadAttempts"))
        for page in ["", "call/" + (try await server.roomId()), "check"] {
            let html = try await server.http(.GET, page)
            #expect(html.status == 200)
            #expect(html.body.contains("<script>\n" + guardScript.body + "</script>"), "/\(page) lacks the inline guard")
            #expect(!html.body.contains("data-duet-inline"), "/\(page) still names the guard instead of inlining it")
            let guardAt = try #require(html.body.range(of: "duet.loadAttempts")).lowerBound
            let moduleAt = try #require(html.body.range(of: "<script type=\"module\"")).lowerBound
            #expect(guardAt < moduleAt, "/\(page): the guard must run before the module loads")
        }
    }

    @Test func inliningLeavesOtherScriptsUnknownFilesAndUnsafeScriptsAlone() {
        let page = """
            — ’ 🎧<script src="/a.js" data-duet-inline></script><script src="/b.js"></script>\
            <script src="/missing.js" data-duet-inline></script><script src="/a.js" data-duet-inline></script>\
            <script src="/ends.js" data-duet-inline></script>
            """
        let sources = ["/a.js": "A('’ 🎧')", "/ends.js": "x = '</SCRIPT>'"]
        let out = WebAssets.inliningScripts(page) { sources[$0] }
        #expect(
            out == """
                — ’ 🎧<script>\nA('’ 🎧')\n</script><script src="/b.js"></script>\
                <script src="/missing.js" data-duet-inline></script><script>\nA('’ 🎧')\n</script>\
                <script src="/ends.js" data-duet-inline></script>
                """)
    }
}
