import DuetTestSupport
import AsyncHTTPClient
import DuetProtocol
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
        for try await chunk in response.body {
            text += String(buffer: chunk)
            comments += parser.feed(chunk.readableBytesView).compactMap { if case .comment(let c) = $0 { c } else { nil } }
            if comments.filter({ $0 == "ping" }).count >= 2 { break }
        }
        #expect(text.hasPrefix(": ready\n\n"))
        #expect(comments.first == "ready")
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
        let sid = (client.connection as! SSESignalingConnection).sid
        #expect(try await server.http(.POST, "sse?sid=" + sid, body: ping).status == 204)
        _ = try await client.expect(.pong)
        await client.close()
        // After the stream is gone, its sid is gone too — once the server has seen the close (which takes as long as
        // the close takes to arrive: a fixed 100 ms wait failed under load). Until then a POST is still 204.
        let deadline = ContinuousClock.now + .seconds(5)
        var status = try await server.http(.POST, "sse?sid=" + sid, body: ping).status
        while status == 204, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            status = try await server.http(.POST, "sse?sid=" + sid, body: ping).status
        }
        #expect(status == 410)
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
            try await hijacker.send(.join, rid: rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: (joined.token.first == "0" ? "1" : "0") + joined.token.dropFirst()))
        }
        await #expect(throws: SignalingSendError.rejected(status: 401)) {
            try await hijacker.send(.join, rid: rid, JoinPayload())
        }
        try await owner.expectNo(.roomState)
        await hijacker.close()

        // The owner reconnecting with the same sid proves the seat and gets it back.
        await owner.close()
        let back = try await TestClient.connect(.sse, to: server, sid: sid)
        let again = try await back.join(rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: joined.token))
        #expect(again.payload.reconnect == .reattached)
        #expect(again.cid == joined.cid)
        await back.close()
    }

    @Test func silentStreamIsDetectedByTheClient() async throws {
        // The client watchdog: a stream with no bytes for the silence timeout is closed as `.silent`.
        let server = try await TestServer.start { $0.pingInterval = .seconds(60) }
        defer { Task { await server.stop() } }
        let connection = try await SSESignalingConnection.connect(baseURL: server.baseURL, timeout: .seconds(5), silenceTimeout: .milliseconds(600))
        var reason: SignalingCloseReason?
        for await event in connection.events {
            if case .closed(let why) = event { reason = why }
        }
        #expect(reason == .silent)
    }
}
