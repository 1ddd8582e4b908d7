import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Testing

/// `?rid=ROOM` on either transport (docs/protocol.md, Transports): clients name the room of a call in their signaling
/// URLs — `/ws?rid=`, `GET /sse?sid=&rid=` and every `POST /sse?sid=&rid=` — so that a proxy in front of several nodes
/// (deploy/nginx/duet-cluster.conf hashes it) routes all of a room's connections to one node. The server takes it as
/// a hint only (the hub shard a connection starts in): the room is what `join` names.
@Suite struct RoomInQueryTests {
    @Test("a call whose connections all carry ?rid= works", arguments: CallExchangeTests.transports)
    func callWithRidInTheQuery(first: SignalingTransportKind, second: SignalingTransportKind) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(first, to: server, roomId: rid)
        let guest = try await TestClient.connect(second, to: server, roomId: rid)
        let hostJoined = try await host.join(rid)
        #expect(hostJoined.payload.reconnect == .fresh)
        let guestJoined = try await guest.join(rid)
        #expect(guestJoined.payload.participants.count == 2)
        _ = try await host.roomState { $0.participants.count == 2 }
        // Relayed both ways (over SSE these are POSTs to /sse?sid=…&rid=…).
        try await host.send(.offer, rid: rid, payload: ["sdp": "v=0 offer"])
        #expect(try await guest.expect(.offer).payload["from"]?.stringValue == hostJoined.cid)
        try await guest.send(.answer, rid: rid, payload: ["sdp": "v=0 answer"])
        #expect(try await host.expect(.answer).payload["from"]?.stringValue == guestJoined.cid)
        try await guest.send(.ping, payload: ["ts": 7])
        #expect(try await guest.expect(.pong).payload["ts"] == 7)

        // The guest's transport drops; it comes back on the other transport, rid in the URL, with its token.
        await guest.close()
        _ = try await host.roomState { $0.participants.contains { $0.cid == guestJoined.cid && $0.connectionStatus == .suspended } }
        let back = try await TestClient.connect(second == .ws ? .sse : .ws, to: server, roomId: rid)
        let again = try await back.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        #expect(again.payload.reconnect == .reattached)
        #expect(again.cid == guestJoined.cid)
        await host.close()
        await back.close()
    }

    /// With one hub shard and with four (where the URL's rid places the connection and the join moves it).
    @Test(arguments: [1, 4]) func ridIsIgnoredByTheServerWhateverItSays(shards: Int) async throws {
        let server = try await TestServer.start { $0.hubShards = shards }
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        // A rid naming another room (or nothing valid): the join decides the room, not the URL.
        for (kind, named) in [(SignalingTransportKind.ws, try await server.roomId()), (.sse, "not a room id & more")] {
            let client = try await TestClient.connect(kind, to: server, roomId: named)
            let joined = try await client.join(rid)
            #expect(joined.payload.reconnect == .fresh)
            #expect(server.server.hub.hasSeat(rid: rid, cid: joined.cid))
            #expect(server.server.hub.snapshot().rooms == 1, "the room was made twice")
            await client.close()
        }
        // The transports' own answers are unchanged by it.
        let ping = Envelope(.ping, payload: ["ts": 1]).encodedString()
        #expect(try await server.http(.GET, "sse?rid=" + rid).status == 400, "sid is still required")
        #expect(try await server.http(.POST, "sse?rid=" + rid, body: ping).status == 400)
        #expect(try await server.http(.POST, "sse?sid=" + SessionIdFormat.random() + "&rid=" + rid, body: ping).status == 410)
        #expect(try await server.http(.GET, "ws?rid=" + rid).status == 426, "a plain GET of /ws?rid= is told to upgrade")
        let (socket, status) = try await RawSocket.webSocket(port: server.port, path: "/ws?rid=" + rid)
        socket.close()
        #expect(status.contains("101"), "\(status)")
    }

    /// What a node that is shutting down answers a new session, rid or not: a proxy in front of a cluster must try the
    /// next node (deploy/nginx/duet-cluster.conf: `proxy_next_upstream error … http_503` on /ws and /sse).
    @Test func aDrainingServerRefusesNewSessionsSoAProxyTriesTheNextNode() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let open = try await TestClient.connect(.sse, to: server, roomId: rid)
        _ = try await open.join(rid)
        server.server.hub.drain()
        _ = try await open.expect(.draining)
        #expect(try await server.http(.GET, "sse?sid=" + SessionIdFormat.random() + "&rid=" + rid).status == 503)
        let (socket, status) = try await RawSocket.webSocket(port: server.port, path: "/ws?rid=" + rid)
        socket.close()
        // Refused in a way a proxy passes on to the next node: no answer at all, the connection closed
        // (`proxy_next_upstream error`), or 503 (`http_503`) — never a 4xx, which nginx would hand back to the client.
        #expect(status.isEmpty || status.contains(" 503 "), "a draining node's WebSocket upgrade: \(status)")
        // The stream already open still POSTs (its leave, say): only new sessions are refused.
        try await open.send(.ping, payload: ["ts": 1])
        _ = try await open.expect(.pong)
        await open.close()
    }

    @Test func signalingURLsNameTheRoomEncodedAsTheBrowserDoes() {
        let rid = "AbCdEfGhIjKlMnOpQrStUvWx-_0"
        #expect(SignalingURL.webSocket(server: "http://h:1/", roomId: rid) == "ws://h:1/ws?rid=" + rid)
        #expect(SignalingURL.webSocket(server: "https://h", roomId: rid) == "wss://h/ws?rid=" + rid)
        #expect(SignalingURL.webSocket(server: "http://h:1/") == "ws://h:1/ws")
        #expect(
            SignalingURL.sse(server: "http://h:1", sid: "S-0011223344556677", roomId: rid)
                == "http://h:1/sse?sid=S-0011223344556677&rid=" + rid)
        #expect(SignalingURL.sse(server: "http://h:1/", sid: "S-1") == "http://h:1/sse?sid=S-1")
        // encodeURIComponent's rule (Tests/web/room-in-url.test.mjs checks the browser's side with the same string).
        #expect(SignalingURL.queryComponent("a b&c=d/e?f#g+h%") == "a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh%25")
        #expect(SignalingURL.queryComponent("-_.!~*'()é") == "-_.!~*'()%C3%A9")
    }
}
