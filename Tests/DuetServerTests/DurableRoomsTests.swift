import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

/// One node, the default store (SQLite in the data directory): what a restart used to forget. Before issue 17 an
/// ended room could be recreated after a restart, and a participant who left could `recover` its seat with an
/// unexpired token.
@Suite struct DurableRoomsTests {
    @Test(arguments: [SignalingTransportKind.ws, .sse])
    func anEndedRoomIsStillEndedAfterARestart(kind: SignalingTransportKind) async throws {
        let original = try await TestServer.start()
        let rid = try await original.roomId()
        let host = try await TestClient.connect(kind, to: original, roomId: rid)
        _ = try await host.join(rid)
        let guest = try await TestClient.connect(.ws, to: original, roomId: rid)
        let guestJoined = try await guest.join(rid)
        try await host.send(.endRoom, rid: rid)
        _ = try await guest.expect(.roomEnded)

        let server = try await original.restarted()
        defer { Task { await server.stop() } }
        let guestBack = try await TestClient.connect(.ws, to: server, roomId: rid)
        try await guestBack.send(.join, rid: rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        #expect(try await guestBack.expectError(.roomEnded).code == .roomEnded)
        let stranger = try await TestClient.connect(.ws, to: server, roomId: rid)
        try await stranger.send(.join, rid: rid, JoinPayload())
        #expect(try await stranger.expectError(.roomEnded).code == .roomEnded, "a fresh join does not recreate it either")
        for client in [host, guest, guestBack, stranger] { await client.close() }
    }

    @Test func aSeatThatLeftCannotBeRecoveredAfterARestart() async throws {
        let original = try await TestServer.start()
        let rid = try await original.roomId()
        let host = try await TestClient.connect(.ws, to: original, roomId: rid)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(.ws, to: original, roomId: rid)
        let guestJoined = try await guest.join(rid)
        // The host's state from before the guest came also shows one participant: it must not pass for the leave.
        try await host.settledRoomState { $0.participants.count == 2 }
        try await guest.send(.leave, rid: rid)
        _ = try await host.roomState { $0.participants.count == 1 }

        let server = try await original.restarted()
        defer { Task { await server.stop() } }
        let guestBack = try await TestClient.connect(.ws, to: server, roomId: rid)
        try await guestBack.send(.join, rid: rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        #expect(try await guestBack.expectError(.invalidReconnectToken).code == .invalidReconnectToken)
        // The host, who did not leave, still recovers its seat, keeps hosting, and the epoch goes on.
        let hostBack = try await TestClient.connect(.ws, to: server, roomId: rid)
        let recovered = try await hostBack.join(rid, JoinPayload(reconnectCid: hostJoined.cid, reconnectToken: hostJoined.token))
        #expect(recovered.payload.reconnect == .recovered)
        #expect(recovered.payload.hostCid == hostJoined.cid)
        #expect(recovered.payload.epoch > guestJoined.payload.epoch, "the epoch continues from the last one written")
        for client in [host, guest, guestBack, hostBack] { await client.close() }
    }

    /// A host and a guest in a call, the server restarted, and the guest back first (holding the room for the host).
    struct GuestBackFirst {
        var server: TestServer
        var rid: String
        var hostJoined: TestClient.Joined
        var guestBack: TestClient
        var clients: [TestClient]
    }

    func guestBackFirstAfterARestart() async throws -> GuestBackFirst {
        let original = try await TestServer.start()
        let rid = try await original.roomId()
        let host = try await TestClient.connect(.ws, to: original, roomId: rid)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(.ws, to: original, roomId: rid)
        let guestJoined = try await guest.join(rid)
        let server = try await original.restarted()
        let guestBack = try await TestClient.connect(.ws, to: server, roomId: rid)
        _ = try await guestBack.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        return GuestBackFirst(server: server, rid: rid, hostJoined: hostJoined, guestBack: guestBack, clients: [host, guest, guestBack])
    }

    /// The host is away when the server restarts and the guest comes back first: the guest holds the room until
    /// the host returns, then the host hosts again (before, whoever came back first became the host).
    @Test func theHostIsKeptAcrossARestart() async throws {
        let back = try await guestBackFirstAfterARestart()
        let (server, rid, hostJoined, guestBack) = (back.server, back.rid, back.hostJoined, back.guestBack)
        defer { Task { await server.stop() } }
        let hostBack = try await TestClient.connect(.ws, to: server, roomId: rid)
        let hostRecovered = try await hostBack.join(rid, JoinPayload(reconnectCid: hostJoined.cid, reconnectToken: hostJoined.token))
        #expect(hostRecovered.payload.hostCid == hostJoined.cid)
        _ = try await guestBack.roomState { $0.hostCid == hostJoined.cid && $0.participants.count == 2 }
        for client in back.clients + [hostBack] { await client.close() }
    }

    /// The host, away when the server restarted, ends the call over HTTP (`end`) while the guest holds the room for it:
    /// the room ends for the guest, who is not left host of a room nobody ended (the review of 72d692c).
    @Test func theHostEndsOverHTTPWhileTheGuestHoldsTheRoomForIt() async throws {
        let back = try await guestBackFirstAfterARestart()
        let (server, rid, hostJoined, guestBack) = (back.server, back.rid, back.hostJoined, back.guestBack)
        defer { Task { await server.stop() } }
        let end = String(
            decoding: try JSONEncoder().encode(LeaveRequest(rid: rid, cid: hostJoined.cid, reconnectToken: hostJoined.token, end: true)),
            as: UTF8.self)
        #expect(try await server.http(.POST, "api/leave?rid=\(rid)", body: end).status == 204)
        let ended = try await guestBack.expect(.roomEnded).payload.decode(RoomEndedPayload.self)
        #expect(ended == RoomEndedPayload(by: hostJoined.cid, reason: "host_ended"))
        // And a room this node knows only from the store: its host's `end` ends it before anyone is back.
        let other = try await server.roomId()
        let a = try await TestClient.connect(.ws, to: server, roomId: other)
        let aJoined = try await a.join(other)
        let b = try await TestClient.connect(.ws, to: server, roomId: other)
        let bJoined = try await b.join(other)
        let again = try await server.restarted()
        defer { Task { await again.stop() } }
        let endOther = String(
            decoding: try JSONEncoder().encode(LeaveRequest(rid: other, cid: aJoined.cid, reconnectToken: aJoined.token, end: true)),
            as: UTF8.self)
        #expect(try await again.http(.POST, "api/leave?rid=\(other)", body: endOther).status == 204)
        let bBack = try await TestClient.connect(.ws, to: again, roomId: other)
        try await bBack.send(.join, rid: other, JoinPayload(reconnectCid: bJoined.cid, reconnectToken: bJoined.token))
        _ = try await bBack.expectError(.roomEnded)
        for client in back.clients + [a, b, bBack] { await client.close() }
    }

    /// `kill -9`: no shutdown flushes anything. A fact is in the store once `/metrics` says nothing is pending
    /// (written within milliseconds of the event); the restarted binary then knows the room was ended.
    @Test func anEndedRoomSurvivesKillMinus9() async throws {
        let first = try await ServerProcess.start(["--rate-limit", "off"])
        let rid = try await first.roomId()
        let host = try await TestClient.connect(.ws, baseURL: first.baseURL, roomId: rid)
        _ = try await host.join(rid)
        try await host.send(.endRoom, rid: rid)
        _ = try await host.expect(.roomEnded)
        try await first.waitForMetric("duet_store_pending_facts", equals: 0, andAtLeast: ("duet_store_writes_total{result=\"ok\"}", 2))
        let second = try await first.killedAndStartedAgain()
        defer { Task { await second.stop() } }
        let stranger = try await TestClient.connect(.ws, baseURL: second.baseURL, roomId: rid)
        try await stranger.send(.join, rid: rid, JoinPayload())
        #expect(try await stranger.expectError(.roomEnded).code == .roomEnded)
        await host.close()
        await stranger.close()
    }

    @Test func healthzSaysTheStoreIsUp() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        // A node starts serving from memory when its store takes longer than `startLoadLimit` to open (a loaded
        // machine), and says so until the store is up: wait for that, never for long.
        let deadline = ContinuousClock.now + .seconds(30)
        var health = try await server.http(.GET, "healthz")
        while !health.body.contains("store sqlite: up"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            health = try await server.http(.GET, "healthz")
        }
        #expect(health.status == 200)
        #expect(health.body.contains("store sqlite: up"), "\(health.body)")
    }
}
