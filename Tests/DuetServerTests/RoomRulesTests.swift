import DuetProtocol
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

@Suite struct RoomRulesTests {
    @Test func thirdParticipantGetsRoomFull() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let a = try await TestClient.connect(.ws, to: server)
        let b = try await TestClient.connect(.sse, to: server)
        let c = try await TestClient.connect(.ws, to: server)
        _ = try await a.join(rid)
        _ = try await b.join(rid)
        try await c.send(.join, rid: rid, JoinPayload())
        let error = try await c.expectError(.roomFull)
        #expect(error.retryable == false)
        // A suspended participant still holds its seat.
        await b.close()
        try await a.peerSuspended()
        try await c.send(.join, rid: rid, JoinPayload())
        _ = try await c.expectError(.roomFull)
        await a.close()
        await c.close()
    }

    @Test func hostRolePassesWhenTheHostLeaves() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let pair = try await server.callPair()
        let (host, hostJoined, guest, guestJoined) = (pair.host, pair.hostJoined, pair.guest, pair.guestJoined)
        try await host.send(.leave)
        let state = try await guest.roomState { $0.participants.count == 1 }
        #expect(state.hostCid == guestJoined.cid)
        #expect(state.participants.map(\.cid) == [guestJoined.cid])
        #expect(hostJoined.cid != guestJoined.cid)
        await host.close()
        await guest.close()
    }

    @Test func endRoomReachesEveryoneAndLeavesATombstone() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let pair = try await server.callPair(host: .ws, guest: .sse)
        let (rid, host, hostJoined, guest, guestJoined) = (pair.rid, pair.host, pair.hostJoined, pair.guest, pair.guestJoined)

        try await guest.send(.endRoom)
        _ = try await guest.expectError(.notHost)

        try await host.send(.endRoom)
        for client in [host, guest] {
            let ended = try await client.expect(.roomEnded).payload.decode(RoomEndedPayload.self)
            #expect(ended == RoomEndedPayload(by: hostJoined.cid, reason: "host_ended"))
        }
        // Reconnecting into the ended room, or joining it fresh, meets the tombstone.
        let late = try await TestClient.connect(.ws, to: server)
        try await late.send(.join, rid: rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        _ = try await late.expectError(.roomEnded)
        try await late.send(.join, rid: rid, JoinPayload())
        _ = try await late.expectError(.roomEnded)
        await host.close()
        await guest.close()
        await late.close()
    }

    /// The host's goodbye over HTTP (`end`: signaling down, or the browser's second goodbye after `end_room`) ends the
    /// call for both, whichever of the two the server takes first; a guest's `end` only leaves. Before, the host's HTTP
    /// goodbye was a leave: taken before its `end_room` (CI run 20261206T140015Z-bce760), it made the guest the host
    /// of a room nobody had ended, and the late `end_room` was refused.
    @Test func theHostsGoodbyeOverHTTPEndsTheCallForBothWhicheverComesFirst() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        func body(_ joined: TestClient.Joined, _ rid: String) throws -> String {
            String(
                decoding: try JSONEncoder().encode(LeaveRequest(rid: rid, cid: joined.cid, reconnectToken: joined.token, end: true)),
                as: UTF8.self)
        }
        let pair = try await server.callPair(host: .ws, guest: .sse)
        // A guest's `end` is a leave: the host stays, alone, and the room goes on.
        #expect(try await server.http(.POST, "api/leave", body: try body(pair.guestJoined, pair.rid)).status == 204)
        _ = try await pair.host.roomState { $0.participants.count == 1 && $0.hostCid == pair.hostJoined.cid }

        let second = try await TestClient.connect(.ws, to: server)
        let secondJoined = try await second.join(pair.rid)
        _ = try await pair.host.roomState { $0.participants.count == 2 }
        // The host's, before its `end_room`: the room ends for both.
        #expect(try await server.http(.POST, "api/leave", body: try body(pair.hostJoined, pair.rid)).status == 204)
        for client in [pair.host, second] {
            let ended = try await client.expect(.roomEnded).payload.decode(RoomEndedPayload.self)
            #expect(ended == RoomEndedPayload(by: pair.hostJoined.cid, reason: "host_ended"))
        }
        // The `end_room` that follows changes nothing, and the goodbye again is still done.
        try await pair.host.send(.endRoom)
        #expect(try await server.http(.POST, "api/leave", body: try body(pair.hostJoined, pair.rid)).status == 204)
        try await second.send(.join, rid: pair.rid, JoinPayload(reconnectCid: secondJoined.cid, reconnectToken: secondJoined.token))
        _ = try await second.expectError(.roomEnded)
        await pair.close()
        await second.close()
    }

    @Test func suspendedPeerLearnsOfEndRoomWhenItReconnects() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let pair = try await server.callPair()
        let (rid, host, guestJoined) = (pair.rid, pair.host, pair.guestJoined)
        try await pair.dropGuest()
        try await host.send(.endRoom)
        _ = try await host.expect(.roomEnded)
        let back = try await TestClient.connect(.sse, to: server)
        try await back.send(.join, rid: rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
        let error = try await back.expectError(.roomEnded)
        #expect(error.message.contains("host_ended"))
        await host.close()
        await back.close()
    }

    @Test func httpLeaveRemovesASuspendedParticipantIdempotently() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let pair = try await server.callPair()
        let (rid, host, guestJoined) = (pair.rid, pair.host, pair.guestJoined)
        try await pair.dropGuest()
        try await host.settledRoomState { $0.participants.count == 2 }

        let body = String(
            decoding: try JSONEncoder().encode(LeaveRequest(rid: rid, cid: guestJoined.cid, reconnectToken: guestJoined.token)),
            as: UTF8.self)
        #expect(try await server.http(.POST, "api/leave", body: body).status == 204)
        _ = try await host.roomState { $0.participants.count == 1 }
        #expect(try await server.http(.POST, "api/leave", body: body).status == 204, "idempotent")

        let forged = String(
            decoding: try JSONEncoder().encode(LeaveRequest(rid: rid, cid: guestJoined.cid, reconnectToken: "nope")), as: UTF8.self)
        #expect(try await server.http(.POST, "api/leave", body: forged).status == 401)
        #expect(try await server.http(.POST, "api/leave", body: "{").status == 400)
        await host.close()
    }

    @Test func forgedAndMalformedRoomIdsAreRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await TestClient.connect(.ws, to: server)
        let real = try await server.roomId()
        #expect(RoomIdFormat.isWellFormed(real))
        // Same shape, flipped last character: the HMAC no longer matches.
        var characters = Array(real)
        characters[13] = characters[13] == "A" ? "B" : "A"
        let flipped = String(characters)
        // The last character carries 2 unused bits: another spelling of the same bytes is refused too.
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let respelled = String(real.dropLast()) + String(alphabet[alphabet.firstIndex(of: real.last!)! + 1])
        for rid in [flipped, respelled, "short", String(repeating: "!", count: 27)] {
            try await client.send(.join, rid: rid, JoinPayload())
            _ = try await client.expectError(.invalidRoomId)
        }
        try await client.send(.join, payload: [:])
        _ = try await client.expectError(.badRequest)
        await client.close()
    }

    @Test func messagesThatNeedASeatSayNotInRoom() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let client = try await TestClient.connect(.sse, to: server)
        for type in [MessageType.offer, .leave, .reconnectTokenRefresh, .endRoom] {
            try await client.send(type, payload: ["sdp": "x"])
            _ = try await client.expectError(.notInRoom)
        }
        try await client.send(.turnRefresh)
        _ = try await client.expectError(.turnRefreshFailed)
        // `to` naming someone who is not in the room.
        let rid = try await server.roomId()
        _ = try await client.join(rid)
        try await client.send(.offer, rid: rid, to: "C-0000000000000000", payload: ["sdp": "x"])
        _ = try await client.expectError(.notInRoom)
        await client.close()
    }
}
