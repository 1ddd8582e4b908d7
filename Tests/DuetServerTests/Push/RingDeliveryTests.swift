import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// Ringing through the real server (issue 31): live to a listening page, by push to a device that is not open
/// (through LocalPushService, a push service that is not Duet's code), answered over signaling and over HTTP.
@Suite(.serialized) struct RingDeliveryTests {
    static let callee = "callee-browser-0000000001"
    static let caller = "caller-browser-0000000002"

    /// B has been in the call with its device id (and so holds a member token); A is seated, alone.
    struct Call {
        let server: TestServer
        let rid: String
        let a: TestClient
        let memberToken: String
    }

    static func call(_ server: TestServer) async throws -> Call {
        let rid = try await server.roomId()
        let b = try await TestClient.connect(.ws, to: server)
        let joined = try await b.join(rid, JoinPayload(deviceId: callee))
        let token = try #require(joined.payload.memberToken)
        #expect(joined.payload.memberTokenTTLMs.map { $0 / 86_400_000 } == 180)
        try await b.send(.leave, rid: rid)
        await b.close()
        let a = try await TestClient.connect(.ws, to: server)
        _ = try await a.join(rid, JoinPayload(deviceId: caller))
        return Call(server: server, rid: rid, a: a, memberToken: token)
    }

    static func listen(_ call: Call, device: String = callee, token: String? = nil) async throws -> TestClient {
        let page = try await TestClient.connect(.ws, to: call.server)
        try await page.send(
            .watchRooms,
            WatchRoomsPayload(rids: [call.rid], listen: ListenPayload(deviceId: device, members: [call.rid: token ?? call.memberToken])))
        _ = try await page.expect(.roomStatuses)
        return page
    }

    static func state(_ client: TestClient, _ expected: String) async throws -> RingStatePayload {
        let envelope = try await client.expect(.ringState) { (try? $0.payload.decode(RingStatePayload.self).state) == expected }
        return try envelope.payload.decode(RingStatePayload.self)
    }

    @Test func aListeningPageRingsAndItsDeclineReachesTheCaller() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let call = try await Self.call(server)
        let home = try await Self.listen(call)
        try await call.a.send(.ring, rid: call.rid, RingPayload(callId: "call-1", caller: ["sealed": "name"]))
        #expect(try await Self.state(call.a, "ringing").devices == 1)
        let incoming = try await home.expect(.incomingCall).payload.decode(IncomingCallPayload.self)
        #expect(incoming.rid == call.rid && incoming.callId == "call-1" && incoming.caller == ["sealed": "name"])
        try await home.send(.ringAnswer, rid: call.rid, RingAnswerPayload(rid: call.rid, callId: "call-1", answer: .decline))
        _ = try await Self.state(call.a, "declined")
        #expect(try await home.expect(.ringEnded).payload.decode(RingEndedPayload.self).reason == "declined")
        #expect(try await server.metric(#"duet_rings_total{event="declined"}"#) == 1)
        await home.close()
        await call.a.close()
    }

    @Test func acceptingOnOnePageStopsTheOtherAndTheCallerSeesAccepted() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let call = try await Self.call(server)
        let one = try await Self.listen(call)
        let two = try await Self.listen(call)
        try await call.a.send(.ring, rid: call.rid, RingPayload(callId: "c2"))
        _ = try await one.expect(.incomingCall)
        _ = try await two.expect(.incomingCall)
        try await one.send(.ringAnswer, rid: call.rid, RingAnswerPayload(rid: call.rid, callId: "c2", answer: .accept))
        _ = try await Self.state(call.a, "accepted")
        #expect(try await one.expect(.ringEnded).payload.decode(RingEndedPayload.self).reason == "accepted")
        #expect(try await two.expect(.ringEnded).payload.decode(RingEndedPayload.self).reason == "answered_elsewhere")
        await one.close()
        await two.close()
        await call.a.close()
    }

    @Test func aDeviceThatIsNotOpenRingsByPushAndACancelReplacesIt() async throws {
        let push = try await LocalPushService.start(["phone": "201"])
        defer { push.stop() }
        let server = try await PushDeliveryTests.server(allowPrivate: true, caFile: push.caFile)
        defer { Task { await server.stop() } }
        let call = try await Self.call(server)
        // B's phone subscribed with its member token (no seat now): "ring me here".
        let phone = try push.subscription("phone")
        var body: [String: Any] = ["endpoint": phone.endpoint, "keys": ["p256dh": phone.keys.p256dh, "auth": phone.keys.auth]]
        body["deviceId"] = Self.callee
        body["memberToken"] = call.memberToken
        let subscribed = try await server.http(
            .POST, "api/push/subscribe?roomId=" + call.rid,
            body: String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self))
        #expect(subscribed.status == 204, "\(subscribed.body)")

        try await call.a.send(.ring, rid: call.rid, RingPayload(callId: "c3", caller: ["sealed": "Mum"]))
        _ = try await Self.state(call.a, "ringing")
        let ring = try #require(try await push.waitForRequests("phone", count: 1).first)
        #expect(ring["vapid"] as? Bool == true)
        let payload = try #require(ring["payload"] as? [String: Any], "\(ring)")
        #expect(payload["kind"] as? String == "ring" && payload["callId"] as? String == "c3" && payload["tag"] as? String == "c3")
        #expect((payload["caller"] as? [String: String]) == ["sealed": "Mum"])
        let ttl = try #require((ring["ttl"] as? String).flatMap(Int.init))
        #expect(ttl > 0 && ttl <= Int(RingLimits.ringTimeoutMs / 1000))
        #expect(ring["urgency"] as? String == "high")
        // The push service took it: the caller sees one device ringing.
        _ = try await call.a.expect(.ringState) { (try? $0.payload.decode(RingStatePayload.self))?.devices == 1 }

        try await call.a.send(.ringCancel, rid: call.rid, RingCancelPayload(callId: "c3"))
        _ = try await Self.state(call.a, "cancelled")
        let end = try await push.waitForRequests("phone", count: 2)[1]
        #expect((end["payload"] as? [String: Any])?["kind"] as? String == "ring_end")
        #expect((end["payload"] as? [String: Any])?["reason"] as? String == "cancelled")
        #expect(end["topic"] as? String == ring["topic"] as? String, "a cancel replaces a ring not yet delivered")
        await call.a.close()
    }

    @Test func aNotificationAnswersOverHTTPWithItsMemberToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let call = try await Self.call(server)
        let home = try await Self.listen(call)
        try await call.a.send(.ring, rid: call.rid, RingPayload(callId: "c4"))
        _ = try await home.expect(.incomingCall)
        func answer(_ token: String) async throws -> Int {
            let body = try JSONEncoder().encode(
                RingAnswerPayload(rid: call.rid, callId: "c4", answer: .decline, deviceId: Self.callee, memberToken: token))
            return try await server.http(.POST, "api/ring/answer", body: String(decoding: body, as: UTF8.self)).status
        }
        // Altered in its first character (always changed: a hex digit replaced by another one).
        let altered = (call.memberToken.first == "0" ? "1" : "0") + call.memberToken.dropFirst()
        #expect(try await answer(altered) == 401)
        #expect(try await server.http(.POST, "api/ring/answer", body: "{").status == 400)
        #expect(try await answer(call.memberToken) == 204)
        _ = try await Self.state(call.a, "declined")
        // Late (the ring is over): accepted, changes nothing.
        #expect(try await answer(call.memberToken) == 204)
        await home.close()
        await call.a.close()
    }

    @Test func nobodyToRingIsUnreachableAndTheCallersReconnectKeepsItsRing() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let call = try await Self.call(server)
        try await call.a.send(.ring, rid: call.rid, RingPayload(callId: "lonely"))
        _ = try await Self.state(call.a, "unreachable")

        // With a listening page: the caller's link drops and comes back mid-ring; its ring is still there.
        let rid = try await server.roomId()
        let b = try await TestClient.connect(.ws, to: server)
        let bJoined = try await b.join(rid, JoinPayload(deviceId: Self.callee))
        try await b.send(.leave, rid: rid)
        await b.close()
        let a = try await TestClient.connect(.ws, to: server)
        let aJoined = try await a.join(rid, JoinPayload(deviceId: Self.caller))
        let other = Call(server: server, rid: rid, a: a, memberToken: try #require(bJoined.payload.memberToken))
        let home = try await Self.listen(other)
        try await a.send(.ring, rid: rid, RingPayload(callId: "kept"))
        _ = try await home.expect(.incomingCall)
        await a.close()
        let back = try await TestClient.connect(.sse, to: server)
        try await back.send(.join, rid: rid, JoinPayload(reconnectCid: aJoined.cid, reconnectToken: aJoined.token, deviceId: Self.caller))
        _ = try await Self.state(back, "ringing")
        try await home.send(.ringAnswer, rid: rid, RingAnswerPayload(rid: rid, callId: "kept", answer: .accept))
        _ = try await Self.state(back, "accepted")
        await home.close()
        await back.close()
        await call.a.close()
    }
}
