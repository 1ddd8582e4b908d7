import Crypto
import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

/// Suspension, reattach, recovery after restart, and what a reconnect token can and cannot do.
@Suite struct ReconnectTests {
    @Test("socket killed → peer sees suspended, then reattached with the same cid and host", arguments: SignalingTransportKind.allCases)
    func suspendedThenReattached(dropped: SignalingTransportKind) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.ws, to: server)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(dropped, to: server)
        let guestJoined = try await guest.join(rid)
        _ = try await host.roomState { $0.participants.count == 2 }

        // Kill the guest's transport without a goodbye.
        switch guest.connection {
        case let ws as WebSocketSignalingConnection: ws.abort()
        default: await guest.close()
        }
        let suspended = try await host.roomState { state in
            state.participants.contains { $0.cid == guestJoined.cid && $0.connectionStatus == .suspended }
        }
        #expect(suspended.participants.count == 2, "a dropped transport never removes the participant")
        #expect(suspended.hostCid == hostJoined.cid)

        // Relays to a suspended peer are refused, not queued.
        try await host.send(.offer, rid: rid, payload: ["sdp": "while away"])
        let failed = try await host.expect(.relayFailed).payload.decode(RelayFailedPayload.self)
        #expect(failed == RelayFailedPayload(reason: .targetSuspended, targets: [guestJoined.cid], of: "offer"))

        // Come back on the other transport, proving the seat with the token.
        let other: SignalingTransportKind = dropped == .ws ? .sse : .ws
        let back = try await TestClient.connect(other, to: server)
        let rejoined = try await back.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        #expect(rejoined.payload.reconnect == .reattached)
        #expect(rejoined.cid == guestJoined.cid)
        #expect(rejoined.payload.hostCid == hostJoined.cid)
        let restored = try await host.roomState { state in
            state.participants.allSatisfy { $0.connectionStatus == .connected } && state.participants.count == 2
        }
        #expect(restored.hostCid == hostJoined.cid)
        #expect(restored.epoch > suspended.epoch)

        try await host.send(.offer, rid: rid, payload: ["sdp": "after"])
        #expect(try await back.expect(.offer).payload["sdp"] == "after")
        await host.close()
        await back.close()
    }

    /// Over SSE too: the stream ends with `: close 4001 replaced`, which the client reports like the WebSocket close.
    @Test(arguments: [SignalingTransportKind.ws, .sse])
    func newestProvenTransportWinsAndOldIsClosed(_ kind: SignalingTransportKind) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let first = try await TestClient.connect(kind, to: server)
        let joined = try await first.join(rid)
        let second = try await TestClient.connect(.ws, to: server)
        let again = try await second.join(rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: joined.token))
        #expect(again.payload.reconnect == .reattached)
        #expect(again.payload.participants.count == 1, "the same cid never holds two seats")
        let reason = try await first.expectClosed()
        #expect(reason == .byServer(code: 4001, reason: "replaced"))
        await second.close()
    }

    @Test func recoveredAfterServerRestart() async throws {
        let original = try await TestServer.start()
        let rid = try await original.roomId()
        let host = try await TestClient.connect(.ws, to: original)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(.sse, to: original)
        let guestJoined = try await guest.join(rid)

        let server = try await original.restarted()
        defer { Task { await server.stop() } }
        _ = try await host.expectClosed()

        let hostBack = try await TestClient.connect(.ws, to: server)
        let recovered = try await hostBack.join(rid, JoinPayload(reconnectCid: hostJoined.cid, reconnectToken: hostJoined.token))
        #expect(recovered.payload.reconnect == .recovered)
        #expect(recovered.cid == hostJoined.cid)
        #expect(recovered.payload.hostCid == hostJoined.cid)

        let guestBack = try await TestClient.connect(.sse, to: server)
        let guestRecovered = try await guestBack.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        #expect(guestRecovered.payload.reconnect == .recovered)
        #expect(guestRecovered.cid == guestJoined.cid)
        #expect(Set(guestRecovered.payload.participants.map(\.cid)) == [hostJoined.cid, guestJoined.cid])
        _ = try await hostBack.roomState { $0.participants.count == 2 }
        await host.close()
        await guest.close()
        await hostBack.close()
        await guestBack.close()
    }

    @Test func expiredAndForgedTokensAreRefusedAndAMissingOneIsAFreshSeat() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let owner = try await TestClient.connect(.ws, to: server)
        let joined = try await owner.join(rid)

        // Correctly signed with the server's own secret, but expired.
        let secrets = try server.secrets()
        let authority = ReconnectTokenAuthority(key: SymmetricKey(data: Data(base64Encoded: secrets.reconnectSecret)!), ttlMs: 1000)
        let expired = authority.issue(cid: joined.cid, rid: rid, nowMs: Int64(Date().timeIntervalSince1970 * 1000) - 60_000)
        let intruder = try await TestClient.connect(.ws, to: server)
        try await intruder.send(.join, rid: rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: expired))
        let expiredError = try await intruder.expectError(.invalidReconnectToken)
        #expect(expiredError.message.contains("expired"))
        #expect(expiredError.retryable == false)

        let forged = String(repeating: "a", count: 64) + ".\(Int(Date().timeIntervalSince1970) + 600)"
        try await intruder.send(.join, rid: rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: forged))
        _ = try await intruder.expectError(.invalidReconnectToken)
        // A reconnectCid without a token proves nothing: a fresh seat (the seed system's clients send this, issue 33),
        // never the owner's.
        let fresh = try await intruder.join(rid, JoinPayload(reconnectCid: joined.cid))
        #expect(fresh.payload.reconnect == .fresh)
        #expect(fresh.cid != joined.cid)
        // A token for another room does not work here either.
        let otherRid = try await server.roomId()
        try await intruder.send(.join, rid: otherRid, JoinPayload(reconnectCid: joined.cid, reconnectToken: joined.token))
        _ = try await intruder.expectError(.invalidReconnectToken)

        // The owner was never disturbed.
        try await owner.send(.ping, payload: ["ts": 1])
        _ = try await owner.expect(.pong)
        await owner.close()
        await intruder.close()
    }

    @Test func leaveRevokesTheReconnectToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let client = try await TestClient.connect(.ws, to: server)
        let joined = try await client.join(rid)
        try await client.send(.leave)
        try await Task.sleep(for: .milliseconds(50))
        try await client.send(.join, rid: rid, JoinPayload(reconnectCid: joined.cid, reconnectToken: joined.token))
        _ = try await client.expectError(.invalidReconnectToken)
        await client.close()
    }

    @Test func suspendedParticipantIsEvictedAfterTimeout() async throws {
        let server = try await TestServer.start { $0.evictionTimeout = .milliseconds(1500) }
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let host = try await TestClient.connect(.ws, to: server)
        let hostJoined = try await host.join(rid)
        let guest = try await TestClient.connect(.ws, to: server)
        _ = try await guest.join(rid)
        await host.close()
        try await guest.peerSuspended()
        let afterEviction = try await guest.roomState(where: { $0.participants.count == 1 })
        #expect(afterEviction.hostCid != hostJoined.cid, "the host role passes to the remaining participant")
        await guest.close()
    }

    @Test func joinResentOnTheSameConnectionKeepsOneSeat() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let client = try await TestClient.connect(.ws, to: server)
        let first = try await client.join(rid)
        let second = try await client.join(rid)
        #expect(second.cid == first.cid)
        #expect(second.payload.reconnect == .reattached)
        #expect(second.payload.participants.count == 1)
        await client.close()
    }
}
