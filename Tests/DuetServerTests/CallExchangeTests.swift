import DuetProtocol
import DuetTestSupport
import DuetTransport
import Testing

/// A whole call's signaling between two real clients, over every transport combination.
@Suite struct CallExchangeTests {
    static let transports: [(SignalingTransportKind, SignalingTransportKind)] = [(.ws, .ws), (.sse, .sse), (.ws, .sse)]

    @Test("two-party call exchange", arguments: transports)
    func twoPartyCall(first: SignalingTransportKind, second: SignalingTransportKind) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(first, to: server)
        let guest = try await TestClient.connect(second, to: server)

        let hostJoined = try await host.join(rid)
        #expect(hostJoined.payload.reconnect == .fresh)
        #expect(hostJoined.payload.hostCid == hostJoined.cid)
        #expect(hostJoined.payload.participants.map(\.cid) == [hostJoined.cid])
        #expect(hostJoined.payload.maxParticipants == 2)
        #expect(ParticipantIdFormat.isWellFormed(hostJoined.cid))
        if first == .sse { #expect(hostJoined.envelope.sid != nil) }
        _ = try await host.roomState { $0.participants.count == 1 }

        let guestJoined = try await guest.join(rid)
        #expect(guestJoined.payload.hostCid == hostJoined.cid)
        #expect(guestJoined.payload.participants.count == 2)
        let seenByHost = try await host.roomState { $0.participants.count == 2 }
        #expect(seenByHost.participants.allSatisfy { $0.connectionStatus == .connected })
        #expect(seenByHost.epoch > hostJoined.payload.epoch)

        // offer → answer → trickled candidates both ways → end-of-candidates.
        try await host.send(.offer, rid: rid, payload: ["sdp": "v=0 offer", "x-extension": ["tag": "abc"]])
        let offer = try await guest.expect(.offer)
        #expect(offer.payload["sdp"] == "v=0 offer")
        #expect(offer.payload["from"]?.stringValue == hostJoined.cid)
        #expect(offer.payload["x-extension"] == ["tag": "abc"], "unknown payload fields are relayed verbatim")
        #expect(offer.epoch == seenByHost.epoch)

        try await guest.send(.answer, rid: rid, payload: ["sdp": "v=0 answer"])
        let answer = try await host.expect(.answer)
        #expect(answer.payload["from"]?.stringValue == guestJoined.cid)

        let candidate: JSONValue = [
            "candidate": ["candidate": "candidate:1 1 udp 2122260223 10.0.0.1 5000 typ host", "sdpMid": "0", "sdpMLineIndex": 0]
        ]
        try await host.send(.ice, rid: rid, payload: candidate)
        try await guest.send(.ice, rid: rid, payload: candidate)
        let iceAtGuest = try await guest.expect(.ice)
        #expect(iceAtGuest.payload["candidate"]?["candidate"] == candidate["candidate"]?["candidate"])
        _ = try await host.expect(.ice)
        try await guest.send(.ice, rid: rid, payload: ["candidate": nil])
        let end = try await host.expect(.ice) { $0.payload["candidate"] == .null }
        #expect(end.payload["from"]?.stringValue == guestJoined.cid)

        // Addressed relay with `to`.
        try await host.send(.ice, rid: rid, to: guestJoined.cid, payload: candidate)
        _ = try await guest.expect(.ice)

        await host.close()
        await guest.close()
    }

    @Test func relayWithNobodyElseAnswersNoPeer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let alone = try await TestClient.connect(.ws, to: server)
        _ = try await alone.join(rid)
        try await alone.send(.offer, rid: rid, payload: ["sdp": "x"])
        let failed = try await alone.expect(.relayFailed).payload.decode(RelayFailedPayload.self)
        #expect(failed.reason == .noPeer)
        #expect(failed.of == "offer")
        await alone.close()
    }

    @Test func pingIsAnsweredWithPongEchoingTs() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        for kind in SignalingTransportKind.allCases {
            let client = try await TestClient.connect(kind, to: server)
            try await client.send(.ping, payload: ["ts": 1_700_000_000_123])
            let pong = try await client.expect(.pong)
            #expect(pong.payload["ts"] == 1_700_000_000_123)
            await client.close()
        }
    }

    @Test func turnAndReconnectTokenRefresh() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let client = try await TestClient.connect(.ws, to: server)
        let joined = try await client.join(rid)
        #expect(joined.payload.turnTokenTTLMs == 900_000)
        #expect(joined.payload.reconnectTokenTTLMs == 1_200_000)

        try await client.send(.turnRefresh)
        let turn = try await client.expect(.turnRefreshed).payload.decode(TurnRefreshedPayload.self)
        #expect(!turn.turnToken.isEmpty)
        #expect(turn.turnTokenExpiresAt >= joined.payload.turnTokenExpiresAt)

        try await client.send(.reconnectTokenRefresh)
        let refreshed = try await client.expect(.reconnectTokenRefreshed).payload.decode(ReconnectTokenRefreshedPayload.self)
        #expect(ReconnectTokenParts(parsing: refreshed.reconnectToken) != nil)
        // The refreshed token proves the seat.
        let other = try await TestClient.connect(.sse, to: server)
        let again = try await other.join(rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: refreshed.reconnectToken))
        #expect(again.payload.reconnect == .reattached)
        #expect(again.cid == joined.cid)
        await client.close()
        await other.close()
    }

    @Test func watchRoomsReportsOccupancyAndChanges() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let busy = try await server.roomId()
        let empty = try await server.roomId()
        let watcher = try await TestClient.connect(.sse, to: server)
        let member = try await TestClient.connect(.ws, to: server)
        _ = try await member.join(busy)

        try await watcher.send(.watchRooms, WatchRoomsPayload(rids: [busy, empty]))
        let statuses = try await watcher.expect(.roomStatuses)
        #expect(statuses.payload[busy] == 1)
        #expect(statuses.payload[empty] == 0)

        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await guest.join(busy)
        let update = try await watcher.expect(.roomStatusUpdate).payload.decode(RoomStatusUpdatePayload.self)
        #expect(update == RoomStatusUpdatePayload(rid: busy, count: 2))

        // A suspended participant keeps its seat: the count does not drop.
        if let ws = guest.connection as? WebSocketSignalingConnection { ws.abort() }
        try await member.peerSuspended()
        try await watcher.expectNo(.roomStatusUpdate)

        try await member.send(.leave)
        let afterLeave = try await watcher.expect(.roomStatusUpdate).payload.decode(RoomStatusUpdatePayload.self)
        #expect(afterLeave.count == 1)
        await watcher.close()
        await member.close()
    }
}
