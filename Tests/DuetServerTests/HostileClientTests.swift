import Crypto
import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Foundation
import NIOHTTP1
import Testing

/// What a hostile client, or a client behind the recommended proxy, can do to everyone else: nothing. Real
/// server, real sockets.
@Suite struct HostileClientTests {
    // MARK: - Behind a proxy

    /// Without `--trusted-proxy`, X-Forwarded-For is the client's own words: every spoofed address lands in the
    /// caller's one bucket.
    @Test func spoofedForwardedForFromAnUntrustedPeerEscapesNothing() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = true
            $0.rateRules.api = .init(capacity: 3, refillPerSecond: 0.001)
        }
        defer { Task { await server.stop() } }
        var statuses: [Int] = []
        for index in 0..<6 {
            statuses.append(
                try await server.http(
                    .GET, "api/room-id", headers: [("X-Forwarded-For", "198.51.100.\(index)"), ("Forwarded", "for=203.0.113.\(index)")]
                ).status)
        }
        #expect(statuses == [200, 200, 200, 429, 429, 429])
    }

    /// Behind a trusted proxy, each client has its own bucket (IPv6: its /64), and what a client writes to the left
    /// of the proxy's entry proves nothing.
    @Test func behindATrustedProxyDistinctClientsGetDistinctBuckets() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = true
            $0.rateRules.api = .init(capacity: 2, refillPerSecond: 0.001)
            $0.trustedProxies = [CIDRRange("127.0.0.0/8")!]
        }
        defer { Task { await server.stop() } }
        func status(_ forwardedFor: String) async throws -> Int {
            try await server.http(.GET, "api/room-id", headers: [("X-Forwarded-For", forwardedFor)]).status
        }
        #expect(try await status("203.0.113.1") == 200)
        #expect(try await status("203.0.113.1") == 200)
        #expect(try await status("203.0.113.1") == 429)
        // A forged entry to the left of what the proxy appended: still 203.0.113.1's bucket.
        #expect(try await status("198.51.100.7, 203.0.113.1") == 429)
        // Another client behind the same proxy is served.
        #expect(try await status("203.0.113.2") == 200)
        // IPv6: one /64 is one subscriber.
        #expect(try await status("2001:db8:1:2::1") == 200)
        #expect(try await status("2001:db8:1:2::ffff") == 200)
        #expect(try await status("2001:db8:1:2:aaaa::1") == 429)
        #expect(try await status("2001:db8:1:3::1") == 200)
        // The proxy writes X-Forwarded-For: a client's own Forwarded header is not read (all three land in the
        // proxy's own bucket).
        var viaForwarded: [Int] = []
        for index in 1...3 {
            viaForwarded.append(
                try await server.http(.GET, "api/room-id", headers: [("Forwarded", "for=\"[2001:db8:\(index)::1]:4711\"")]).status)
        }
        #expect(viaForwarded == [200, 200, 429])
    }

    // MARK: - Connection caps

    @Test func aConnectionFloodFromOneAddressIsCappedWhileAnotherIsServed() async throws {
        let server = try await TestServer.start {
            $0.maxConnectionsPerAddress = 4
            $0.maxConnections = 6
        }
        defer { Task { await server.stop() } }
        var held: [TestClient] = []
        for _ in 0..<2 { held.append(try await TestClient.connect(.ws, to: server)) }
        for _ in 0..<2 { held.append(try await TestClient.connect(.sse, to: server)) }

        // A fifth from 127.0.0.1: the WebSocket upgrade is refused with 503 (+ Retry-After, WebSocketRulesTests), a plain
        // GET /ws says why with 503 + Retry-After, and so does an SSE stream.
        let (refusedSocket, refusedStatus) = try await RawSocket.webSocket(port: server.port)
        refusedSocket.close()
        #expect(refusedStatus.hasPrefix("HTTP/1.1 503"), "\(refusedStatus)")
        let why = try await server.http(.GET, "ws")
        #expect(why.status == 503)
        #expect(why.headers["retry-after"] == "5")
        #expect(why.body.contains("too many open connections from this address"), "\(why.body)")
        let sse = try await server.http(.GET, "sse?sid=" + SessionIdFormat.random())
        #expect(sse.status == 503)
        #expect(sse.headers["retry-after"] == "5")

        // Another address is served meanwhile.
        let (other, otherStatus) = try await RawSocket.webSocket(port: server.port, source: "127.0.0.2")
        defer { other.close() }
        #expect(otherStatus.contains("101"), "\(otherStatus)")
        let (second, secondStatus) = try await RawSocket.webSocket(port: server.port, source: "127.0.0.2")
        defer { second.close() }
        #expect(secondStatus.contains("101"), "\(secondStatus)")
        // Now the total (6) is reached: a third address is refused too.
        let (third, thirdStatus) = try await RawSocket.webSocket(port: server.port, source: "127.0.0.3")
        defer { third.close() }
        #expect(!thirdStatus.contains("101"), "\(thirdStatus)")
        #expect(try await server.http(.GET, "ws").body.contains("connection limit"))

        // A slot comes back when its connection ends.
        await held.removeFirst().close()
        var admitted = false
        for _ in 0..<100 where !admitted {
            let (retry, status) = try await RawSocket.webSocket(port: server.port)
            retry.close()
            admitted = status.contains("101")
            if !admitted { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(admitted, "a closed connection's slot was not returned")
        for client in held { await client.close() }
    }

    // MARK: - TURN only for a seat

    @Test func turnCredentialsOnlyForASeatThatExists() async throws {
        let server = try await TestServer.start {
            $0.turnSecret = "coturn-shared-secret"
            $0.turnURIs = ["turn:127.0.0.1:3478"]
            $0.rateLimits = true
            $0.rateRules.turnCredentials = .init(capacity: 4, refillPerSecond: 0.001)
        }
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.ws, to: server)
        let guest = try await TestClient.connect(.ws, to: server)
        let hostJoined = try await host.join(rid)
        let guestJoined = try await guest.join(rid)
        func fetch(_ token: String) async throws -> Int { try await server.http(.GET, "api/turn-credentials?token=" + token).status }
        #expect(try await fetch(guestJoined.payload.turnToken) == 200)

        // A suspended seat still gets them (its owner is reconnecting).
        await guest.close()
        _ = try await host.roomState { $0.participants.contains { $0.cid == guestJoined.cid && $0.connectionStatus == .suspended } }
        #expect(try await fetch(guestJoined.payload.turnToken) == 200)

        // The seat left: its token is worthless, and so is the refreshed one it got before.
        let back = try await TestClient.connect(.ws, to: server)
        _ = try await back.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        try await back.send(.turnRefresh)
        let refreshed = try await back.expect(.turnRefreshed).payload.decode(TurnRefreshedPayload.self)
        #expect(try await fetch(refreshed.turnToken) == 200)
        try await back.send(.leave, rid: rid)
        for _ in 0..<200 where server.server.hub.hasSeat(rid: rid, cid: guestJoined.cid) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!server.server.hub.hasSeat(rid: rid, cid: guestJoined.cid))
        #expect(try await fetch(guestJoined.payload.turnToken) == 401)
        #expect(try await fetch(refreshed.turnToken) == 401)

        // Per seat, rate-limited (4 here): the host's fifth request is refused, while the seat still exists.
        for _ in 0..<4 { #expect(try await fetch(hostJoined.payload.turnToken) == 200) }
        #expect(try await fetch(hostJoined.payload.turnToken) == 429)

        // The room ended: the host's token is worthless too.
        try await host.send(.endRoom, rid: rid)
        _ = try await host.expect(.roomEnded)
        #expect(try await fetch(hostJoined.payload.turnToken) == 401)
        await host.close()
        await back.close()
    }

    // MARK: - Operations surface

    @Test func metricsNeedTheTokenWhenOneIsSet() async throws {
        let server = try await TestServer.start { $0.metricsToken = "a-long-enough-metrics-token" }
        defer { Task { await server.stop() } }
        #expect(try await server.http(.GET, "metrics").status == 403)
        #expect(try await server.http(.GET, "metrics", headers: [("Authorization", "Bearer wrong-token-of-some-length")]).status == 403)
        let scraped = try await server.http(.GET, "metrics", headers: [("Authorization", "Bearer a-long-enough-metrics-token")])
        #expect(scraped.status == 200)
        #expect(scraped.body.contains("duet_rooms"))
    }

    @Test func everyResponseCarriesTheSecurityHeaders() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for path in ["", "call/abc", "js/constants.js", "api/room-id", "no-such-page", "healthz"] {
            let response = try await server.http(.GET, path)
            #expect(response.headers["referrer-policy"] == "no-referrer", "\(path)")
            #expect(response.headers["x-content-type-options"] == "nosniff", "\(path)")
            #expect(response.headers["permissions-policy"]?.contains("camera=(self)") == true, "\(path)")
            let policy = try #require(response.headers["content-security-policy"], "\(path)")
            #expect(
                policy.contains("script-src 'self'") && !policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "\(policy)")
            #expect(policy.contains("frame-ancestors 'none'"))
        }
        // The one inline script the pages carry (the load guard) is allowed by its hash, and nothing else inline is.
        let page = try await server.http(.GET, "")
        let policy = page.headers["content-security-policy"] ?? ""
        let inline = page.body.components(separatedBy: "<script>").dropFirst().compactMap { $0.components(separatedBy: "</script>").first }
        #expect(inline.count == 1)
        for script in inline {
            let hash = "'sha256-" + Data(SHA256.hash(data: Data(script.utf8))).base64EncodedString() + "'"
            #expect(policy.contains(hash), "the inline script's hash \(hash) is not in \(policy)")
        }
    }

    // MARK: - Hostile frames

    /// Binary garbage, invalid UTF-8, a message fragmented past 64 KiB, deep nesting: each gets a clear answer, and a
    /// call in another room never notices.
    @Test func hostileFramesGetClearErrorsAndNeverTouchAnotherRoom() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.sse, to: server)
        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await host.join(rid)
        _ = try await guest.join(rid)
        func stillRelaying(_ tag: String) async throws {
            try await host.send(.offer, rid: rid, payload: ["sdp": .string(tag)])
            #expect(try await guest.expect(.offer).payload["sdp"]?.stringValue == tag)
        }
        func errorCode(_ frames: [(opcode: UInt8, payload: [UInt8])]) -> String? {
            frames.lazy.compactMap { frame -> String? in
                guard frame.opcode == 1, let envelope = try? Envelope.decode(frame.payload), envelope.type == "error" else { return nil }
                return envelope.payload["code"]?.stringValue
            }.first
        }
        func closeCode(_ frames: [(opcode: UInt8, payload: [UInt8])]) -> Int? {
            frames.first { $0.opcode == 8 }.flatMap { $0.payload.count >= 2 ? Int($0.payload[0]) << 8 | Int($0.payload[1]) : nil }
        }

        // Binary frame of garbage: BAD_REQUEST, and the connection keeps working.
        let (binary, _) = try await RawSocket.webSocket(port: server.port)
        try await binary.send(RawSocket.frame(opcode: 2, [0xff, 0xfe, 0x00, 0x7b, 0x80]))
        #expect(errorCode(try await binary.readFrames { op, _ in op == 1 }) == "BAD_REQUEST")
        try await binary.sendText(#"{"v":1,"type":"ping","payload":{"ts":1}}"#)
        #expect(
            try await binary.readFrames { op, payload in op == 1 && String(decoding: payload, as: UTF8.self).contains("pong") }.contains {
                $0.opcode == 1
            })
        binary.close()
        try await stillRelaying("after binary")

        // A text frame that is not UTF-8: close 1007 (RFC 6455), never parsed or relayed.
        let (invalid, _) = try await RawSocket.webSocket(port: server.port)
        try await invalid.send(RawSocket.frame(opcode: 1, Array(#"{"v":1,"type":"ping","x":""#.utf8) + [0xc3, 0x28] + Array(#""}"#.utf8)))
        let invalidFrames = try await invalid.readFrames { op, _ in op == 1 || op == 8 }
        #expect(closeCode(invalidFrames) == 1007, "\(invalidFrames.map { ($0.opcode, String(decoding: $0.payload, as: UTF8.self)) })")
        invalid.close()
        try await stillRelaying("after invalid UTF-8")

        // A message fragmented past 64 KiB (each fragment small): MESSAGE_TOO_LARGE, then close 1009.
        let (fragmented, _) = try await RawSocket.webSocket(port: server.port)
        let prefix = Array(#"{"v":1,"type":"ping","payload":{"pad":""#.utf8)
        try await fragmented.send(RawSocket.frame(opcode: 1, prefix, fin: false))
        for _ in 0..<9 { try await fragmented.send(RawSocket.frame(opcode: 0, [UInt8](repeating: 0x78, count: 8_000), fin: false)) }
        try await fragmented.send(RawSocket.frame(opcode: 0, Array(#""}}"#.utf8), fin: true))
        let fragmentFrames = try await fragmented.readFrames { op, _ in op == 8 }
        #expect(errorCode(fragmentFrames) == "MESSAGE_TOO_LARGE")
        #expect(closeCode(fragmentFrames) == 1009)
        fragmented.close()
        try await stillRelaying("after fragments")

        // Fragments past the socket's hard cap (1 MiB) are cut by the WebSocket layer itself.
        let (huge, _) = try await RawSocket.webSocket(port: server.port)
        try await huge.send(RawSocket.frame(opcode: 1, prefix, fin: false))
        for _ in 0..<20 { try? await huge.send(RawSocket.frame(opcode: 0, [UInt8](repeating: 0x78, count: 60_000), fin: false)) }
        let hugeFrames = try await huge.readFrames { op, _ in op == 8 }
        #expect(
            closeCode(hugeFrames) == 1009,
            "\(hugeFrames.map { ($0.opcode, String(decoding: $0.payload.prefix(200), as: UTF8.self)) }) close \(closeCode(hugeFrames).map(String.init) ?? "none")"
        )
        huge.close()
        try await stillRelaying("after a huge fragmented message")

        // Deep nesting: BAD_REQUEST, no stack overflow.
        let (nested, _) = try await RawSocket.webSocket(port: server.port)
        try await nested.sendText(
            #"{"v":1,"type":"ping","payload":"# + String(repeating: "[", count: 50_000) + String(repeating: "]", count: 50_000) + "}")
        let nestedFrames = try await nested.readFrames { op, _ in op == 1 || op == 8 }
        #expect(errorCode(nestedFrames) == "BAD_REQUEST" || errorCode(nestedFrames) == "MESSAGE_TOO_LARGE")
        nested.close()
        try await stillRelaying("after deep nesting")
        await host.close()
        await guest.close()
    }
}
