import DuetProtocol
import DuetRooms
import Foundation
import Hummingbird

/// Web Push, under Serenada's names so that its clients can use a Duet server:
/// - `GET /api/push/vapid-public-key` → `{publicKey}` (the `applicationServerKey` to subscribe with);
/// - `POST /api/push/subscribe?roomId=R` `{endpoint, keys:{p256dh, auth}, encPublicKey?, cid, reconnectToken}` (or
///   `deviceId` and `memberToken` instead of the seat) → 204;
/// - `DELETE /api/push/subscribe?roomId=R` `{endpoint}` → 204.
///
/// Where Serenada is unsafe Duet asks for more: subscribing needs a proven seat in the room (the `cid` and its
/// reconnect token), because a room id travels in links and logs, and whoever subscribes there will be told when
/// someone joins (a device that has been in the call may show its member token instead). Unsubscribing needs only the endpoint, an unguessable URL only its device and this server know.
/// Nothing here ever hands out another device's keys (docs/security.md).
struct PushRoutes: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let roomIds: RoomIdAuthority
    let vapid: VAPIDKey
    let subscriptions: any PushSubscriptionStore
    let destinations: PushDestinationPolicy

    struct SubscribeBody: Decodable {
        struct Keys: Decodable {
            var p256dh: String?
            var auth: String?
        }
        var endpoint: String?
        var keys: Keys?
        var transport: String?
        /// Serenada's snapshot key: a P-256 public JWK.
        var encPublicKey: PushSubscriptionRecord.JWK?
        /// Duet's: that key's MAC with the link's key (snapshot.js), passed on to joiners, who check it.
        var encKeyAuth: String?
    }

    struct UnsubscribeBody: Decodable {
        var endpoint: String?
    }

    func register(on router: Router<DuetRequestContext>) {
        router.get("/api/push/vapid-public-key") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            return .json(.ok, ["publicKey": vapid.publicKeyBase64URL])
        }

        router.post("/api/push/subscribe") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            let rid: String
            switch room(of: request) {
            case .success(let value): rid = value
            case .failure(let response): return response
            }
            var request = request
            let body: SubscribeBody
            let proof: PushProof
            do {
                let bytes = try await request.collectBody(upTo: ProtocolLimits.maxMessageBytes)
                body = try JSONDecoder().decode(SubscribeBody.self, from: Data(bytes.readableBytesView))
                proof = try JSONDecoder().decode(PushProof.self, from: Data(bytes.readableBytesView))
            } catch {
                return .text(.badRequest, "body must be JSON {endpoint, keys:{p256dh, auth}, cid, reconnectToken}")
            }
            if let transport = body.transport, transport.lowercased() != "webpush" {
                return .text(.badRequest, "only Web Push subscriptions (transport \"webpush\") are supported")
            }
            guard let endpointText = body.endpoint, let p256dh = body.keys?.p256dh, let auth = body.keys?.auth else {
                return .text(.badRequest, "endpoint, keys.p256dh and keys.auth are required (a browser's PushSubscription.toJSON())")
            }
            guard proof.proves(rid: rid, hub: hub) else { return .text(.unauthorized, "subscribing: " + PushProof.refusal) }
            let deviceId = proof.deviceId.flatMap { RingLimits.isValidId($0, minimum: 16) ? $0 : nil }
            var record = PushSubscriptionRecord(
                rid: rid, endpoint: endpointText, p256dh: p256dh, auth: auth, createdAtMs: Int64(Date().timeIntervalSince1970 * 1000),
                deviceId: deviceId)
            do {
                _ = try record.keys()
                record.encPublicKey = try body.encPublicKey.map { jwk throws(PushEndpoint.Refusal) in
                    try PushSubscriptionRecord.encryptionKey(jwk: jwk)
                }
                if let keyAuth = body.encKeyAuth {
                    guard record.encPublicKey != nil, keyAuth.utf8.count <= 64, Base64URL.decode(keyAuth) != nil else {
                        throw PushEndpoint.Refusal("encKeyAuth must be base64url of at most 64 characters, beside an encPublicKey")
                    }
                    record.encKeyAuth = keyAuth
                }
                let endpoint = try PushEndpoint(endpointText)
                _ = try await destinations.destination(for: endpoint)
            } catch {
                return .text(.badRequest, String(describing: error))
            }
            do {
                try await subscriptions.savePushSubscription(record)
            } catch {
                return .text(.serviceUnavailable, "the subscription could not be stored; try again shortly")
            }
            return Response(status: .noContent)
        }

        router.delete("/api/push/subscribe") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            let rid: String
            switch room(of: request) {
            case .success(let value): rid = value
            case .failure(let response): return response
            }
            var request = request
            guard let bytes = try? await request.collectBody(upTo: ProtocolLimits.maxMessageBytes),
                let body = try? JSONDecoder().decode(UnsubscribeBody.self, from: Data(bytes.readableBytesView)),
                let endpoint = body.endpoint
            else {
                return .text(.badRequest, "body must be JSON {endpoint}")
            }
            do {
                try await subscriptions.removePushSubscription(rid: rid, endpoint: endpoint)
            } catch {
                return .text(.serviceUnavailable, "the subscription could not be removed; try again shortly")
            }
            // Idempotent: removing what is not there is done too.
            return Response(status: .noContent)
        }
    }

    private enum RoomResult {
        case success(String)
        case failure(Response)
    }

    private func room(of request: Request) -> RoomResult {
        switch PushRoom.of(request, roomIds: roomIds) {
        case .success(let rid): .success(rid)
        case .failure(let refusal): .failure(refusal.response)
        }
    }
}

/// The room of a push request: Serenada's `?roomId=`, or `?rid=` (what a cluster's proxy routes by).
enum PushRoom {
    static func of(_ request: Request, roomIds: RoomIdAuthority) -> Result<String, PushRoomRefusal> {
        let query = request.uri.queryParameters
        guard let rid = (query["roomId"] ?? query["rid"]).map(String.init), !rid.isEmpty else {
            return .failure(PushRoomRefusal(response: .text(.badRequest, "missing roomId")))
        }
        guard roomIds.isAuthentic(rid) else {
            return .failure(PushRoomRefusal(response: .text(.badRequest, "roomId is not a room id issued by this server")))
        }
        return .success(rid)
    }
}

struct PushRoomRefusal: Error {
    var response: Response
}
