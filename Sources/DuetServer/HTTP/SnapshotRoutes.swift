import Crypto
import DuetProtocol
import DuetRooms
import Foundation
import Hummingbird

/// Join and ring snapshots (issue 31), under Serenada's names:
/// - `POST /api/push/recipients?roomId=R` `{proof}` → `[{id, publicKey}]`: the room's devices that can open a snapshot
///   (Serenada's is a GET open to anyone with the room id; Duet hands keys only to someone in the call);
/// - `POST /api/push/snapshot?roomId=R` `{ciphertext, snapshotIv, snapshotSalt, snapshotEphemeralPubKey, snapshotMime,
///   recipients:[{id, wrappedKey, wrappedKeyIv}], snapshotAuth?, snapshotAt?, proof}` → `{id, url}`;
/// - `GET /api/push/snapshot/{id}` → the ciphertext (`?format=envelope`: everything but the plaintext, as JSON).
/// The server never sees a picture: it stores ciphertext for 10 minutes, at most 300 KB each (`SnapshotLimits`).
struct SnapshotRoutes: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let roomIds: RoomIdAuthority
    let subscriptions: any PushSubscriptionStore
    let snapshots: SnapshotStore

    struct UploadBody: Decodable {
        struct Recipient: Decodable {
            var id: String?
            var wrappedKey: String?
            var wrappedKeyIv: String?
        }
        var ciphertext: String?
        var snapshotIv: String?
        var snapshotSalt: String?
        var snapshotEphemeralPubKey: String?
        var snapshotMime: String?
        var snapshotAuth: String?
        var snapshotAt: Int64?
        /// What the picture is for, covered by `snapshotAuth`: `join`, or `ring:<callId>`.
        var snapshotPurpose: String?
        var recipients: [Recipient]?
    }

    /// base64 of the largest ciphertext, the recipients and the rest.
    static let maxUploadBytes = SnapshotLimits.maxCiphertextBytes / 3 * 4 + 64 * 1024

    func register(on router: Router<DuetRequestContext>) {
        router.post("/api/push/recipients") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            let rid: String
            switch PushRoom.of(request, roomIds: roomIds) {
            case .success(let value): rid = value
            case .failure(let refusal): return refusal.response
            }
            var request = request
            guard let bytes = try? await request.collectBody(upTo: ProtocolLimits.maxMessageBytes),
                let proof = try? JSONDecoder().decode(PushProof.self, from: Data(bytes.readableBytesView))
            else { return .text(.badRequest, "body must be JSON {cid, reconnectToken} or {deviceId, memberToken}") }
            guard proof.proves(rid: rid, hub: hub) else { return .text(.unauthorized, "the recipient list: " + PushProof.refusal) }
            let devices: [PushSubscriptionRecord]
            do {
                devices = try await subscriptions.pushSubscriptions(rid: rid)
            } catch {
                return .text(.serviceUnavailable, "the room's devices could not be read; try again shortly")
            }
            // Not the asker's own device: a snapshot is news for the others.
            let list: [[String: Any]] = devices.compactMap { device in
                guard device.deviceId == nil || device.deviceId != proof.deviceId, let key = device.encryptionJWK else { return nil }
                var entry: [String: Any] = ["id": device.recipientId, "publicKey": key]
                if let keyAuth = device.encKeyAuth { entry["keyAuth"] = keyAuth }
                return entry
            }
            return .jsonObject(list)
        }

        router.post("/api/push/snapshot") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            let rid: String
            switch PushRoom.of(request, roomIds: roomIds) {
            case .success(let value): rid = value
            case .failure(let refusal): return refusal.response
            }
            var request = request
            let body: UploadBody
            let proof: PushProof
            do {
                let bytes = try await request.collectBody(upTo: Self.maxUploadBytes)
                body = try JSONDecoder().decode(UploadBody.self, from: Data(bytes.readableBytesView))
                proof = try JSONDecoder().decode(PushProof.self, from: Data(bytes.readableBytesView))
            } catch {
                return .text(
                    .badRequest,
                    "body must be JSON {ciphertext, snapshotIv, snapshotSalt, snapshotEphemeralPubKey, snapshotMime, recipients} of at most \(Self.maxUploadBytes) bytes"
                )
            }
            guard proof.proves(rid: rid, hub: hub) else { return .text(.unauthorized, "uploading a snapshot: " + PushProof.refusal) }
            let nowMs = WebPushSender.nowMs()
            switch Self.validate(body, rid: rid, nowMs: nowMs) {
            case .failure(let refusal):
                return .text(.badRequest, refusal.reason)
            case .success(let make):
                let id = snapshots.put(make, nowMs: nowMs)
                return .jsonObject(["id": id, "url": Snapshot.url(id: id, rid: rid)])
            }
        }

        router.get("/api/push/snapshot/{id}") { request, context -> Response in
            if let refusal = gate.refusal(request, context: context, entry: .api) { return refusal.response }
            guard let id = context.parameters.get("id"), PushAlert.isValidSnapshotId(id),
                let snapshot = snapshots.get(id, nowMs: WebPushSender.nowMs())
            else { return .text(.notFound, "no such snapshot (they last 10 minutes)") }
            if request.uri.queryParameters["format"] == "envelope" { return .jsonObject(snapshot.envelope) }
            return Response(
                status: .ok, headers: [.contentType: "application/octet-stream", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: snapshot.ciphertext)))
        }
    }

    struct Refusal: Error {
        var reason: String
    }

    /// Checks every field (sizes of what AES-GCM and P-256 make); the snapshot to store, or what is wrong.
    static func validate(_ body: UploadBody, rid: String, nowMs: Int64) -> Result<@Sendable (String) -> Snapshot, Refusal> {
        guard let ciphertext = Snapshot.bytes(body.ciphertext), (17...SnapshotLimits.maxCiphertextBytes).contains(ciphertext.count) else {
            return .failure(Refusal(reason: "ciphertext must be base64 of 17 to \(SnapshotLimits.maxCiphertextBytes) bytes"))
        }
        guard let iv = Snapshot.bytes(body.snapshotIv), iv.count == 12 else {
            return .failure(Refusal(reason: "snapshotIv must be 12 bytes"))
        }
        guard let salt = Snapshot.bytes(body.snapshotSalt), (16...64).contains(salt.count) else {
            return .failure(Refusal(reason: "snapshotSalt must be 16 to 64 bytes"))
        }
        guard let ephemeral = Snapshot.bytes(body.snapshotEphemeralPubKey), ephemeral.count == 65,
            (try? P256.KeyAgreement.PublicKey(x963Representation: ephemeral)) != nil
        else { return .failure(Refusal(reason: "snapshotEphemeralPubKey must be an uncompressed P-256 public key (65 bytes)")) }
        let mime = body.snapshotMime ?? "image/jpeg"
        guard SnapshotLimits.allowedMimeTypes.contains(mime) else {
            return .failure(
                Refusal(reason: "snapshotMime must be one of \(SnapshotLimits.allowedMimeTypes.sorted().joined(separator: ", "))"))
        }
        if let auth = body.snapshotAuth, !(auth.utf8.count <= 64 && Base64URL.decode(auth) != nil) {
            return .failure(Refusal(reason: "snapshotAuth must be base64url of at most 64 characters"))
        }
        if let purpose = body.snapshotPurpose, !Snapshot.isValidPurpose(purpose) {
            return .failure(Refusal(reason: "snapshotPurpose must be \"join\" or \"ring:<callId>\""))
        }
        guard let list = body.recipients, (1...SnapshotLimits.maxRecipients).contains(list.count) else {
            return .failure(Refusal(reason: "recipients must list 1 to \(SnapshotLimits.maxRecipients) devices"))
        }
        var recipients: [String: Snapshot.Recipient] = [:]
        for recipient in list {
            guard let id = recipient.id, (1...64).contains(id.utf8.count), Base64URL.decode(id) != nil,
                let wrapped = Snapshot.bytes(recipient.wrappedKey), wrapped.count == 48,
                let wrappedIv = Snapshot.bytes(recipient.wrappedKeyIv), wrappedIv.count == 12
            else {
                return .failure(
                    Refusal(
                        reason:
                            "each recipient needs an id, a wrappedKey of 48 bytes (an AES-256 key sealed with AES-GCM) and a wrappedKeyIv of 12"
                    ))
            }
            recipients[id] = Snapshot.Recipient(wrappedKey: wrapped, wrappedKeyIv: wrappedIv)
        }
        let auth = body.snapshotAuth
        let at = body.snapshotAt
        let purpose = body.snapshotPurpose
        let wrapped = recipients
        return .success { id in
            Snapshot(
                id: id, rid: rid, ciphertext: ciphertext, iv: iv, salt: salt, ephemeralPublicKey: ephemeral, mime: mime, auth: auth, at: at,
                purpose: purpose, recipients: wrapped, expiresAtMs: nowMs + SnapshotLimits.lifetimeMs)
        }
    }
}
