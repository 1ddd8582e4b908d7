import DuetProtocol
import DuetTestBasics
import DuetTestSupport
import Foundation
import Testing

@testable import DuetServer

/// Join and ring snapshots through the real server (issue 31): sealed and opened by Python's `cryptography`
/// (Tests/e2e/push/snapshot_crypto.py), delivered through LocalPushService (a push service that is not Duet's code).
/// The server hands device keys only to someone in the call, stores only ciphertext, and each device's push carries
/// the content key wrapped for it alone.
@Suite(.serialized) struct SnapshotTests {
    static let callee = "callee-browser-0000000001"
    static let caller = "caller-browser-0000000002"

    static func python(_ mode: String, _ request: [String: Any]? = nil) async throws -> [String: Any] {
        var arguments = ["python3", packageRoot + "/Tests/e2e/push/snapshot_crypto.py", mode]
        if let request { arguments.append(String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)) }
        let result = try await runCommand(arguments)
        guard result.status == 0, let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
            throw TestFailure("snapshot_crypto.py \(mode) failed: \(result.stdout) \(result.stderr)")
        }
        return object
    }

    static func post(_ server: TestServer, _ path: String, _ body: [String: Any]) async throws -> TestServer.HTTPResult {
        let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
        return try await server.http(.POST, path, body: json, headers: [("Content-Type", "application/json")])
    }

    /// The ring's push among the two a device gets (A's join alert, which names no snapshot, and the ring), whatever
    /// order their deliveries finished in.
    static func ringPush(_ push: LocalPushService, _ name: String) async throws -> [String: Any]? {
        try await push.waitForRequests(name, count: 2).compactMap { $0["payload"] as? [String: Any] }.first {
            $0["kind"] as? String == "ring"
        }
    }

    static func json(_ text: String) throws -> Any { try JSONSerialization.jsonObject(with: Data(text.utf8)) }

    @Test func aSnapshotReachesOnlyTheDevicesItWasSealedForAndOpensThere() async throws {
        let push = try await LocalPushService.start(["keyed": "201", "keyless": "201"])
        defer { push.stop() }
        let server = try await PushDeliveryTests.server(allowPrivate: true, caFile: push.caFile)
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let device = try await Self.python("keypair")
        let publicJwk = try #require(device["public"] as? [String: String])
        let linkKey = Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
        let keyAuth = try #require(
            try await Self.python("keyauth", ["linkKey": linkKey, "rid": rid, "jwk": publicJwk])["keyAuth"] as? String)

        // B has been in the call: it subscribes two devices, one with a snapshot key, one without (a Serenada client).
        let b = try await TestClient.connect(.ws, to: server)
        let bJoined = try await b.join(rid, JoinPayload(deviceId: Self.callee))
        let keyed = try push.subscription("keyed")
        let keyless = try push.subscription("keyless")
        let subscribe = try await Self.post(
            server, "api/push/subscribe?roomId=" + rid,
            [
                "endpoint": keyed.endpoint, "keys": ["p256dh": keyed.keys.p256dh, "auth": keyed.keys.auth],
                // As WebCrypto exports it (ext, key_ops): the extra members are ignored.
                "encPublicKey": publicJwk.mapValues { $0 as Any }.merging(["ext": true, "key_ops": [String]()]) { a, _ in a },
                "encKeyAuth": keyAuth, "deviceId": Self.callee, "cid": bJoined.cid, "reconnectToken": bJoined.payload.reconnectToken,
            ])
        #expect(subscribe.status == 204, "\(subscribe.body)")
        #expect(try await server.subscribePush(rid: rid, keyless, cid: bJoined.cid, token: bJoined.payload.reconnectToken).status == 204)
        // A key that is not a point on P-256 is refused, and changes nothing.
        let offCurve = try await Self.post(
            server, "api/push/subscribe?roomId=" + rid,
            [
                "endpoint": keyed.endpoint, "keys": ["p256dh": keyed.keys.p256dh, "auth": keyed.keys.auth],
                "encPublicKey": ["kty": "EC", "crv": "P-256", "x": publicJwk["x"]!, "y": publicJwk["x"]!],
                "cid": bJoined.cid, "reconnectToken": bJoined.payload.reconnectToken,
            ])
        #expect(offCurve.status == 400 && offCurve.body.contains("not a point"), "\(offCurve.body)")
        try await b.send(.leave, rid: rid)
        await b.close()

        // A is seated, alone. The room's keys are for someone in the call only.
        let a = try await TestClient.connect(.ws, to: server)
        let aJoined = try await a.join(rid, JoinPayload(deviceId: Self.caller))
        let seat: [String: Any] = ["cid": aJoined.cid, "reconnectToken": aJoined.payload.reconnectToken]
        #expect(try await Self.post(server, "api/push/recipients?roomId=" + rid, [:]).status == 401)
        #expect(
            try await Self.post(server, "api/push/recipients?roomId=" + rid, ["cid": aJoined.cid, "reconnectToken": "forged"]).status == 401
        )
        let listed = try await Self.post(server, "api/push/recipients?roomId=" + rid, seat)
        let recipients = try #require(try Self.json(listed.body) as? [[String: Any]], "\(listed.body)")
        let expectedId = PushSubscriptionRecord.recipientId(rid: rid, endpoint: keyed.endpoint)
        let listedIds = recipients.compactMap { $0["id"] as? String }
        #expect(listedIds == [expectedId], "only the device with a key")
        let listedKey = recipients.first?["publicKey"] as? [String: String]
        #expect(listedKey == publicJwk)
        #expect(recipients.first?["keyAuth"] as? String == keyAuth, "the device's MAC, for the joiner to check")
        // The device's own list leaves itself out (a snapshot is news for the others).
        let own = try await Self.post(
            server, "api/push/recipients?roomId=" + rid,
            ["deviceId": Self.callee, "memberToken": try #require(bJoined.payload.memberToken)])
        #expect((try Self.json(own.body) as? [[String: Any]])?.isEmpty == true, "\(own.body)")

        // Sealed by Python, uploaded; the server keeps the ciphertext only.
        let image = Array("\u{FF}\u{D8}a picture of Alice".utf8) + (0..<2000).map { UInt8($0 % 251) }
        let at = Int64(Date().timeIntervalSince1970 * 1000)
        let sealed = try await Self.python(
            "seal",
            [
                "image": Data(image).base64EncodedString(), "rid": rid, "recipients": [[expectedId, publicJwk]], "linkKey": linkKey,
                "at": at,
                "purpose": "ring:call-1",
            ])
        #expect(try await Self.post(server, "api/push/snapshot?roomId=" + rid, sealed).status == 401, "an upload needs proof too")
        let uploaded = try await Self.post(server, "api/push/snapshot?roomId=" + rid, sealed.merging(seat) { a, _ in a })
        let snapshot = try #require(try Self.json(uploaded.body) as? [String: String], "\(uploaded.body)")
        let snapshotId = try #require(snapshot["id"])
        #expect(snapshot["url"] == "/api/push/snapshot/\(snapshotId)?rid=\(rid)")
        let stored = try #require(server.server.snapshots.get(snapshotId, nowMs: WebPushSender.nowMs()))
        #expect(Data(stored.ciphertext).range(of: Data("a picture of Alice".utf8)) == nil, "the server holds ciphertext, not the picture")
        let fetched = try await server.http(.GET, "api/push/snapshot/\(snapshotId)")
        #expect(fetched.status == 200 && fetched.headers["content-type"] == "application/octet-stream")
        #expect(fetched.headers["content-length"] == String(stored.ciphertext.count))
        // What a page rung live reads: the whole snapshot as uploaded (base64 here, whatever the upload used).
        let envelope = try #require(
            try Self.json(try await server.http(.GET, "api/push/snapshot/\(snapshotId)?format=envelope").body) as? [String: Any])
        #expect(envelope["ciphertext"] as? String == sealed["ciphertext"] as? String && envelope["purpose"] as? String == "ring:call-1")
        #expect(envelope["auth"] as? String == sealed["snapshotAuth"] as? String && envelope["rid"] as? String == rid)
        #expect(try await server.http(.GET, "api/push/snapshot/SNAP-nothing").status == 404)

        // A rings with it: the keyed device's push carries the content key wrapped for it, and opens to the picture.
        try await a.send(.ring, rid: rid, RingPayload(callId: "call-1", caller: ["sealed": "name"], snapshotId: snapshotId))
        // (The first push each device got was A's join alert, which named no snapshot.)
        let ring = try #require(try await Self.ringPush(push, "keyed"))
        #expect(ring["kind"] as? String == "ring" && ring["snapshotId"] as? String == snapshotId)
        // Opened by Python from the push's fields and the bytes the server serves (the envelope's).
        let ciphertext = try #require(envelope["ciphertext"] as? String)
        let opened = try await Self.python(
            "open",
            [
                "fields": ring, "ciphertext": ciphertext, "privateJwk": try #require(device["private"]), "linkKey": linkKey, "rid": rid,
                "purpose": "ring:call-1",
            ])
        #expect(opened["image"] as? String == Data(image).base64EncodedString())
        // The device without a key is rung, with no key material for the snapshot (it was not sealed for it).
        let plain = try #require(try await Self.ringPush(push, "keyless"))
        #expect(plain["kind"] as? String == "ring" && plain["snapshotKey"] == nil && plain["snapshotEphemeralPubKey"] == nil)
        try await a.send(.ringCancel, rid: rid, RingCancelPayload(callId: "call-1"))
        try await a.send(.leave, rid: rid)
        await a.close()

        // The seed's join alert: A, back another day, proves itself with its member token, uploads a snapshot and
        // joins with its id; the device opens it.
        let member: [String: Any] = ["deviceId": Self.caller, "memberToken": try #require(aJoined.payload.memberToken)]
        let second = try await Self.python(
            "seal",
            [
                "image": Data(image.reversed()).base64EncodedString(), "rid": rid, "recipients": [[expectedId, publicJwk]],
                "linkKey": linkKey,
                "at": at + 1, "purpose": "join",
            ])
        let upload = try await Self.post(server, "api/push/snapshot?rid=" + rid, second.merging(member) { a, _ in a })
        let joinSnapshot = try #require((try Self.json(upload.body) as? [String: String])?["id"], "\(upload.body)")
        let back = try await TestClient.connect(.ws, to: server)
        _ = try await back.join(rid, JoinPayload(snapshotId: joinSnapshot, deviceId: Self.caller))
        let alerts = try await push.waitForRequests("keyed", count: 4).compactMap { $0["payload"] as? [String: Any] }
        let alert = try #require(
            alerts.first { $0["kind"] as? String == "join" && $0["snapshotId"] as? String == joinSnapshot }, "\(alerts)")
        let openedJoin = try await Self.python(
            "open",
            [
                "fields": alert, "ciphertext": try #require(second["ciphertext"] as? String), "privateJwk": try #require(device["private"]),
                "linkKey": linkKey, "rid": rid, "purpose": "join",
            ])
        #expect(openedJoin["image"] as? String == Data(image.reversed()).base64EncodedString())
        await back.close()
    }

    @Test func uploadsAreCheckedAndBounded() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let rid = try await server.roomId()
        let a = try await TestClient.connect(.ws, to: server)
        let joined = try await a.join(rid, JoinPayload(deviceId: Self.caller))
        let proof: [String: Any] = ["deviceId": Self.caller, "memberToken": try #require(joined.payload.memberToken)]
        let device = try await Self.python("keypair")
        let at = Int64(Date().timeIntervalSince1970 * 1000)
        let good = try await Self.python(
            "seal",
            [
                "image": Data([1, 2, 3]).base64EncodedString(), "rid": rid, "recipients": [["r1", try #require(device["public"])]],
                "linkKey": Base64URL.encode([UInt8](repeating: 7, count: 32)), "at": at, "purpose": "join",
            ]
        ).merging(proof) { a, _ in a }
        #expect(try await Self.post(server, "api/push/snapshot?roomId=" + rid, good).status == 200, "a member token proves too")
        let huge = Data(count: SnapshotLimits.maxCiphertextBytes + 1).base64EncodedString()
        for (change, reason) in [
            (["ciphertext": huge] as [String: Any], "ciphertext"),
            (["snapshotIv": "AAAA"], "snapshotIv"),
            (["snapshotEphemeralPubKey": Data([4] + [UInt8](repeating: 1, count: 64)).base64EncodedString()], "snapshotEphemeralPubKey"),
            (["snapshotMime": "text/html"], "snapshotMime"),
            (["recipients": [[String: String]]()], "recipients"),
            (["recipients": [["id": "r1", "wrappedKey": "AAAA", "wrappedKeyIv": "AAAA"]]], "each recipient"),
            (["snapshotPurpose": "ring:"], "snapshotPurpose"),
        ] {
            let response = try await Self.post(server, "api/push/snapshot?roomId=" + rid, good.merging(change) { _, new in new })
            // The field's own refusal (not the generic one for a body that is not JSON, which names every field).
            #expect(
                response.status == 413 || (response.status == 400 && response.body.hasPrefix(reason)),
                "\(reason): \(response.status) \(response.body)")
        }
        // Memory stays bounded: a room keeps its newest few.
        for _ in 0..<(SnapshotLimits.perRoom + 3) {
            #expect(try await Self.post(server, "api/push/snapshot?roomId=" + rid, good).status == 200)
        }
        #expect(server.server.snapshots.count == SnapshotLimits.perRoom)
        await a.close()
    }
}
