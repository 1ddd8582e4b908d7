import AsyncHTTPClient
import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation
import NIOCore
import Testing

/// The SSE rules of the protocol, on the wire.
@Suite struct SSETransportTests {
    @Test func streamStartsWithReadyAndPingsAtTheInterval() async throws {
        let server = try await TestServer.start { $0.pingInterval = .milliseconds(200) }
        defer { Task { await server.stop() } }
        let request = HTTPClientRequest(url: server.baseURL + "sse?sid=" + SessionIdFormat.random())
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(5))
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "content-type") == "text/event-stream")
        var text = ""
        var parser = SSEParser()
        var comments: [String] = []
        var data: [String] = []
        for try await chunk in response.body {
            text += String(buffer: chunk)
            for item in parser.feed(chunk.readableBytesView) {
                switch item {
                case .comment(let comment): comments.append(comment)
                case .data(let message): data.append(message)
                }
            }
            if comments.filter({ $0 == "ping" }).count >= 2 { break }
        }
        #expect(text.hasPrefix(": ready\n\n"))
        #expect(comments.first == "ready")
        // The first message binds POSTs to this stream.
        let first = try #require(data.first)
        #expect(SSEPostBinding.token(inFirstMessage: first).map { $0.utf8.count >= 22 } == true, "\(first)")
    }

    @Test func postRulesBadRequestGoneNoContent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let ping = Envelope(.ping, payload: ["ts": 1]).encodedString()
        #expect(try await server.http(.POST, "sse", body: ping).status == 400)
        #expect(try await server.http(.POST, "sse?sid=nope", body: ping).status == 400)
        #expect(try await server.http(.GET, "sse").status == 400)
        #expect(try await server.http(.POST, "sse?sid=" + SessionIdFormat.random(), body: ping).status == 410)
        let client = try await TestClient.connect(.sse, to: server)
        let connection = client.connection as! SSESignalingConnection
        let sid = connection.sid
        let token = try #require(connection.postToken)
        #expect(try await server.http(.POST, "sse?sid=" + sid, body: ping, headers: [(SSEPostBinding.header, token)]).status == 204)
        _ = try await client.expect(.pong)
        await client.close()
        // After the stream is gone, its sid is gone too — once the server has seen the close (which takes as long as
        // the close takes to arrive: a fixed 100 ms wait failed under load). Until then a POST is still 204.
        let deadline = ContinuousClock.now + .seconds(5)
        var status = try await server.http(.POST, "sse?sid=" + sid, body: ping, headers: [(SSEPostBinding.header, token)]).status
        while status == 204, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            status = try await server.http(.POST, "sse?sid=" + sid, body: ping, headers: [(SSEPostBinding.header, token)]).status
        }
        #expect(status == 410)
    }

    /// The sid is in URLs (proxy logs); only the stream's POST token authorizes a POST. Someone who learnt a seated
    /// participant's sid cannot leave, end the room or relay as them — and their attempts change nothing.
    @Test func aStolenSidCannotLeaveEndOrRelay() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.sse, to: server)
        let connection = host.connection as! SSESignalingConnection
        _ = try await host.join(rid)
        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await guest.join(rid)
        _ = try await host.roomState()
        _ = try await guest.roomState()

        let token = try #require(connection.postToken)
        #expect(token.utf8.count >= 22, "at least 128 bits of base64url")
        let attempts: [(String, String)] = [
            ("leave", Envelope(.leave, rid: rid).encodedString()),
            ("end_room", Envelope(.endRoom, rid: rid).encodedString()),
            ("offer", Envelope(.offer, rid: rid, payload: ["sdp": "v=0 forged"]).encodedString()),
            ("ice", Envelope(.ice, rid: rid, payload: ["candidate": .null]).encodedString()),
        ]
        let wrongToken = (token.first == "A" ? "B" : "A") + token.dropFirst()
        for (name, body) in attempts {
            for headers in [[], [(SSEPostBinding.header, wrongToken)], [(SSEPostBinding.header, "")]] {
                let status = try await server.http(.POST, "sse?sid=" + connection.sid, body: body, headers: headers).status
                #expect(status == 401, "\(name) with \(headers) answered \(status)")
            }
        }
        // Nothing happened: nobody left, the room did not end, no forged offer or candidate reached the guest.
        try await guest.expectNo(.roomState)
        try await guest.expectNo(.roomEnded)
        try await guest.expectNo(.offer)
        try await guest.expectNo(.ice)
        #expect(server.server.hub.occupancy(of: rid) == 2)
        // The owner, with the token, still relays.
        try await host.send(.offer, rid: rid, payload: ["sdp": "v=0 real"])
        #expect(try await guest.expect(.offer).payload["sdp"]?.stringValue == "v=0 real")
    }

    @Test func reusingASeatedSidNeedsTheReconnectToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let owner = try await TestClient.connect(.sse, to: server)
        let sid = (owner.connection as! SSESignalingConnection).sid
        let joined = try await owner.join(rid)
        _ = try await owner.roomState()

        // Someone who learnt the sid opens a stream with it: nothing is accepted without proof.
        let hijacker = try await TestClient.connect(.sse, to: server, sid: sid)
        await #expect(throws: SignalingSendError.rejected(status: 401)) { try await hijacker.send(.ping) }
        await #expect(throws: SignalingSendError.rejected(status: 401)) {
            try await hijacker.send(
                .join, rid: rid,
                JoinPayload(reconnectCid: joined.cid, reconnectToken: (joined.token.first == "0" ? "1" : "0") + joined.token.dropFirst()))
        }
        await #expect(throws: SignalingSendError.rejected(status: 401)) {
            try await hijacker.send(.join, rid: rid, JoinPayload())
        }
        try await owner.expectNo(.roomState)
        // Nor does the hijacker's stream divert the owner's POSTs (they are routed by the owner's token): the owner
        // is not cut off.
        try await owner.send(.ping, payload: ["ts": 42])
        #expect(try await owner.expect(.pong).payload["ts"] == 42)
        await hijacker.close()

        // The owner reconnecting with the same sid proves the seat and gets it back.
        let oldToken = try #require((owner.connection as! SSESignalingConnection).postToken)
        await owner.close()
        let back = try await TestClient.connect(.sse, to: server, sid: sid)
        let again = try await back.join(rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: joined.token))
        #expect(again.payload.reconnect == .reattached)
        #expect(again.cid == joined.cid)
        // The old stream's token died with it: only the new stream's token posts.
        #expect((back.connection as! SSESignalingConnection).postToken != oldToken)
        let leave = Envelope(.leave, rid: rid).encodedString()
        #expect(try await server.http(.POST, "sse?sid=" + sid, body: leave, headers: [(SSEPostBinding.header, oldToken)]).status == 401)
        #expect(server.server.hub.occupancy(of: rid) == 1)
        await back.close()
    }

    @Test func silentStreamIsDetectedByTheClient() async throws {
        // The client watchdog: a stream with no bytes for the silence timeout is closed as `.silent`.
        let server = try await TestServer.start { $0.pingInterval = .seconds(60) }
        defer { Task { await server.stop() } }
        let connection = try await SSESignalingConnection.connect(
            baseURL: server.baseURL, timeout: .seconds(5), silenceTimeout: .milliseconds(600))
        var reason: SignalingCloseReason?
        for await event in connection.events {
            if case .closed(let why) = event { reason = why }
        }
        #expect(reason == .silent)
    }

    /// A stream that answers 200 but never sends its first message (`sse_session`), and either ends or stays silent:
    /// `connect` fails at once with the reason, not after its timeout (it used to wait the whole 5 s and then say
    /// "timed out", and a server slow to answer was taken for a silent one: the watchdog counted from the request).
    /// The error is the evidence: a connect that waited for its timeout throws `.timedOut` (a wall-clock bound was
    /// not: at the start of the suite, with every suite starting at once, even a trivial suite took 8 s).
    /// The stream that ends gets a silence timeout far longer than the end takes to arrive (its "ended" then shows it
    /// was neither the silence nor the timeout); with 300 ms for both cases, a loaded machine once read the end late
    /// and the 300 ms of silence won the race (CI-like run 20261206T071324Z-4d1d08).
    @Test(arguments: [ScriptedHTTPServer.Then.close, .staySilent])
    func aStreamThatNeverOpensFailsAtOnceWithItsReason(then: ScriptedHTTPServer.Then) async throws {
        let server = try ScriptedHTTPServer(answer: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n: hello\n\n", then: then)
        defer { server.stop() }
        let silence: Duration = then == .close ? .seconds(20) : .milliseconds(300)
        do {
            let connection = try await SSESignalingConnection.connect(
                baseURL: server.baseURL, timeout: .seconds(60), silenceTimeout: silence)
            await connection.close()
            Issue.record("connected to a stream that never said how to post")
        } catch {
            guard case .unreachable(let why) = error else { throw TestFailure("expected unreachable, got \(error)") }
            #expect(why.contains(then == .close ? "ended" : "silent"), "\(why)")
        }
    }
}
