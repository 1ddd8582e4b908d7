import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// Web Push end to end: the real server, a real push service that is not Duet's code (LocalPushService), the
/// seed's join alert as the trigger.
@Suite(.serialized) struct PushDeliveryTests {
    static func server(allowPrivate: Bool, caFile: String?, dataDirectory: String? = nil) async throws -> TestServer {
        try await TestServer.start(dataDirectory: dataDirectory) {
            $0.pushAllowPrivateEndpoints = allowPrivate
            $0.pushTrustRootsFile = caFile
            $0.pushContact = "mailto:tests@duet.invalid"
        }
    }

    @Test func joinAlertIsEncryptedSignedRetriedAndGoneSubscriptionsRemoved() async throws {
        let push = try await LocalPushService.start(["b1": "201", "gone": "410", "flaky": "429:1,201"])
        defer { push.stop() }
        let server = try await Self.server(allowPrivate: true, caFile: push.caFile)
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()

        // B has been in the call: its seat proves it may ask to be told. Then B leaves.
        let b = try await TestClient.connect(.ws, to: server)
        let bJoined = try await b.join(rid)
        for name in ["b1", "gone", "flaky"] {
            let response = try await server.subscribePush(
                rid: rid, try push.subscription(name), cid: bJoined.cid, token: bJoined.payload.reconnectToken)
            #expect(response.status == 204, "\(name): \(response.body)")
        }
        #expect(try await server.server.pushStore.pushSubscriptions(rid: rid).count == 3)
        try await b.send(.leave, rid: rid)
        await b.close()

        // A takes a new seat: the seed's join alert goes to B's devices.
        let a = try await TestClient.connect(.ws, to: server)
        let aJoined = try await a.join(rid, JoinPayload(snapshotId: "SNAP-abc_1"))

        let delivered = try #require(try await push.waitForRequests("b1", count: 1).first)
        #expect(delivered["vapid"] as? Bool == true, "VAPID: \(delivered["vapidProblem"] ?? "")")
        #expect(delivered["status"] as? Int == 201)
        let payload = try #require(delivered["payload"] as? [String: Any], "decrypted by http_ece: \(delivered)")
        #expect(payload["kind"] as? String == "join")
        #expect(payload["roomId"] as? String == rid)
        #expect(payload["snapshotId"] as? String == "SNAP-abc_1")
        #expect(payload["url"] as? String == "/call/" + rid)
        #expect(delivered["urgency"] as? String == "high")
        #expect(delivered["contentEncoding"] as? String == "aes128gcm")
        let ttl = try #require((delivered["ttl"] as? String).flatMap(Int.init))
        #expect(ttl > 0 && ttl <= PushDispatcher.joinAlertTTLSeconds)
        #expect((delivered["topic"] as? String)?.count == 32)

        // 410: the subscription is forgotten.
        try await push.waitForRequests("gone", count: 1)
        try await eventually("the gone subscription is removed") {
            try await !server.server.pushStore.pushSubscriptions(rid: rid).contains {
                $0.endpoint == (try push.subscription("gone")).endpoint
            }
        }
        // 429 (Retry-After: 1), then 201: retried once, delivered once.
        let flaky = try await push.waitForRequests("flaky", count: 2)
        #expect(flaky.map { $0["status"] as? Int } == [429, 201])
        #expect((flaky[1]["payload"] as? [String: Any])?["kind"] as? String == "join")
        try await eventually("the metrics count the outcomes") {
            let sent = try await server.metric(#"duet_push_total{result="sent"}"#)
            let removed = try await server.metric(#"duet_push_total{result="removed"}"#)
            let retries = try await server.metric("duet_push_retries_total")
            return sent == 2 && removed == 1 && retries == 1
        }
        #expect(try push.requests("flaky").count == 2)
        // The subscriptions that still work are kept.
        #expect(try await server.server.pushStore.pushSubscriptions(rid: rid).count == 2)

        // (A reconnect is not news: RingingTests.aReconnectIsNoNewsAndJoinAlertsAreSpaced, in the room logic.)
        _ = aJoined
        await a.close()
    }

    @Test func aDeviceInTheRoomIsNotAlerted() async throws {
        let push = try await LocalPushService.start(["inroom": "201", "away": "201"])
        defer { push.stop() }
        let server = try await Self.server(allowPrivate: true, caFile: push.caFile)
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let b = try await TestClient.connect(.ws, to: server)
        let inRoom = try push.subscription("inroom")
        let bJoined = try await b.join(rid, JoinPayload(pushEndpoint: inRoom.endpoint))
        for name in ["inroom", "away"] {
            #expect(
                try await server.subscribePush(
                    rid: rid, try push.subscription(name), cid: bJoined.cid, token: bJoined.payload.reconnectToken
                ).status == 204)
        }
        let a = try await TestClient.connect(.ws, to: server)
        _ = try await a.join(rid)
        // Each alert is counted with the devices it goes to, once they are known: B's own join went to nobody (nothing
        // was subscribed yet), A's to one device, the one that is not here.
        try await eventually("both join alerts are dispatched") { try await server.metric(#"duet_push_alerts_total{kind="join"}"#) == 2 }
        #expect(try await server.metric(#"duet_push_alert_devices_total{kind="join"}"#) == 1)
        try await push.waitForRequests("away", count: 1)
        await a.close()
        await b.close()
    }

    @Test func subscribingNeedsASeatAPublicHttpsEndpointAndValidKeys() async throws {
        let push = try await LocalPushService.start(["local": "201"])
        defer { push.stop() }
        let server = try await Self.server(allowPrivate: false, caFile: push.caFile)
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let key = try await server.http(.GET, "api/push/vapid-public-key")
        #expect(key.status == 200)
        let keyJSON = try JSONSerialization.jsonObject(with: Data(key.body.utf8)) as? [String: String]
        let publicKey = try #require(keyJSON?["publicKey"])
        #expect(Base64URL.decode(publicKey)?.count == 65)
        #expect(publicKey == server.server.vapid.publicKeyBase64URL)

        let local = try push.subscription("local")
        // A room id alone proves nothing.
        #expect(try await server.subscribePush(rid: rid, local, cid: nil, token: nil).status == 401)
        let b = try await TestClient.connect(.ws, to: server)
        let joined = try await b.join(rid)
        let cid = joined.cid
        let token = joined.payload.reconnectToken
        #expect(
            try await server.subscribePush(rid: rid, local, cid: cid, token: (token.first == "0" ? "1" : "0") + token.dropFirst()).status
                == 401)
        // The seat proves this room only.
        let other = try await server.roomId()
        #expect(try await server.subscribePush(rid: other, local, cid: cid, token: token).status == 401)
        // Loopback is refused without --push-allow-private-endpoints, with a reason.
        let refused = try await server.subscribePush(rid: rid, local, cid: cid, token: token)
        #expect(refused.status == 400)
        #expect(refused.body.contains("loopback"))
        var plain = local
        plain.endpoint = local.endpoint.replacingOccurrences(of: "https:", with: "http:")
        #expect(try await server.subscribePush(rid: rid, plain, cid: cid, token: token).body.contains("https"))
        var badKey = local
        badKey.keys.p256dh = "AAAA"
        #expect(try await server.subscribePush(rid: rid, badKey, cid: cid, token: token).status == 400)
        #expect(try await server.http(.POST, "api/push/subscribe?roomId=" + rid, body: "{").status == 400)
        #expect(try await server.http(.POST, "api/push/subscribe?roomId=forged", body: "{}").status == 400)
        #expect(try await server.server.pushStore.pushSubscriptions(rid: rid).isEmpty)

        // A loopback subscription that got into the store anyway (its name resolved elsewhere when it was made) is
        // refused at sending time: no request reaches it.
        try await server.server.pushStore.savePushSubscription(
            PushSubscriptionRecord(
                rid: rid, endpoint: local.endpoint, p256dh: local.keys.p256dh, auth: local.keys.auth, createdAtMs: 0))
        try await b.send(.leave, rid: rid)
        let a = try await TestClient.connect(.ws, to: server)
        _ = try await a.join(rid)
        try await eventually("the push is refused") { try await server.metric(#"duet_push_total{result="refused"}"#) == 1 }
        #expect(try push.requests().isEmpty)
        await a.close()
        await b.close()
    }

    @Test func subscriptionsSurviveARestartAndCanBeRemoved() async throws {
        let push = try await LocalPushService.start(["kept": "201"])
        defer { push.stop() }
        let first = try await Self.server(allowPrivate: true, caFile: push.caFile)
        let rid = try await first.roomId()
        let b = try await TestClient.connect(.ws, to: first)
        let joined = try await b.join(rid)
        let kept = try push.subscription("kept")
        #expect(try await first.subscribePush(rid: rid, kept, cid: joined.cid, token: joined.token).status == 204)
        // Subscribing again replaces, never duplicates.
        #expect(try await first.subscribePush(rid: rid, kept, cid: joined.cid, token: joined.token).status == 204)
        await b.close()
        let key = first.server.vapid.publicKeyBase64URL
        let server = try await first.restarted()
        defer { Task { await server.stop() } }
        #expect(server.server.vapid.publicKeyBase64URL == key)
        #expect(try await server.server.pushStore.pushSubscriptions(rid: rid).map(\.endpoint) == [kept.endpoint])
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["endpoint": kept.endpoint]), as: UTF8.self)
        #expect(try await server.http(.DELETE, "api/push/subscribe?roomId=" + rid, body: body).status == 204)
        #expect(try await server.server.pushStore.pushSubscriptions(rid: rid).isEmpty)
        #expect(try await server.http(.DELETE, "api/push/subscribe?roomId=" + rid, body: body).status == 204)
    }
}

/// Polls `condition` until it holds; fails after `timeout`.
func eventually(_ what: String, timeout: Duration = .seconds(20), _ condition: @Sendable () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("\(what): not within \(timeout)") }
        try await Task.sleep(for: .milliseconds(50))
    }
}
