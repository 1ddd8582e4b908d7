import Crypto
import DuetLock
import DuetProtocol
import Foundation

/// One device that asked to be reached in one room ("Ring me here"): the browser's `PushSubscription` (endpoint and
/// keys) and the room it is for. The keys are the browser's public key and auth secret: they let the server encrypt
/// to the device (RFC 8291), not read anything.
public struct PushSubscriptionRecord: Sendable, Equatable, Codable {
    public var rid: String
    public var endpoint: String
    /// base64url, as the browser's `toJSON()` gives them: a 65-byte P-256 point and 16 bytes.
    public var p256dh: String
    public var auth: String
    public var createdAtMs: Int64
    /// The device's id (issue 31), when it gave one: a ring is not pushed to the caller's own device, nor to one
    /// that already rang live.
    public var deviceId: String?
    /// The device's snapshot key (issue 31, as Serenada's `encPublicKey`): a P-256 ECDH public key, base64url of its
    /// 65-byte uncompressed point. A joiner wraps a snapshot's content key to it; only the device can unwrap it.
    public var encPublicKey: String?
    /// The device's MAC of that key with the call link's key (base64url), which a joiner checks before sealing to it:
    /// a key the server (or its database) slipped into the list has none, so it never gets a snapshot to open.
    public var encKeyAuth: String?

    public init(
        rid: String, endpoint: String, p256dh: String, auth: String, createdAtMs: Int64, deviceId: String? = nil,
        encPublicKey: String? = nil, encKeyAuth: String? = nil
    ) {
        self.rid = rid
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
        self.createdAtMs = createdAtMs
        self.deviceId = deviceId
        self.encPublicKey = encPublicKey
        self.encKeyAuth = encKeyAuth
    }

    /// What identifies the device in a ring's count: its id, or its endpoint when it gave none.
    public var deviceKey: String { deviceId ?? endpoint }

    /// The device's id in a snapshot's recipient list: opaque (it names neither the endpoint nor the device id), the
    /// same for the device and the server, and computable by the device from its own endpoint (snapshot.js).
    public var recipientId: String { Self.recipientId(rid: rid, endpoint: endpoint) }

    public static func recipientId(rid: String, endpoint: String) -> String {
        String(Base64URL.encode(SHA256.hash(data: Data("duet-recipient|\(rid)|\(endpoint)".utf8))).prefix(22))
    }

    /// A public JWK; other members (`ext`, `key_ops`, as WebCrypto exports them) are ignored.
    public struct JWK: Codable, Sendable, Equatable {
        public var kty: String?
        public var crv: String?
        public var x: String?
        public var y: String?
        public init(kty: String?, crv: String?, x: String?, y: String?) {
            self.kty = kty
            self.crv = crv
            self.x = x
            self.y = y
        }
    }

    /// A JWK (`{kty:"EC", crv:"P-256", x, y}`) as the stored form (base64url of the uncompressed point), or why not:
    /// the point must be on the curve, so a stored key always works for the joiner.
    public static func encryptionKey(jwk: JWK) throws(PushEndpoint.Refusal) -> String {
        guard jwk.kty == "EC", jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode),
            x.count == 32, y.count == 32
        else { throw PushEndpoint.Refusal("encPublicKey must be a P-256 public JWK {kty:\"EC\", crv:\"P-256\", x, y}") }
        let point = [4] + x + y
        guard (try? P256.KeyAgreement.PublicKey(x963Representation: point)) != nil else {
            throw PushEndpoint.Refusal("encPublicKey is not a point on P-256")
        }
        return Base64URL.encode(point)
    }

    /// The stored key as a JWK, as the recipient list gives it.
    public var encryptionJWK: [String: String]? {
        // (A dictionary: it goes out through JSONSerialization with the recipient list.)
        guard let point = encPublicKey.flatMap(Base64URL.decode), point.count == 65 else { return nil }
        return ["kty": "EC", "crv": "P-256", "x": Base64URL.encode(Array(point[1..<33])), "y": Base64URL.encode(Array(point[33...]))]
    }

    /// The decoded keys, or why they are not usable (checked when subscribing, so a stored row always decodes).
    public func keys() throws(PushEndpoint.Refusal) -> (p256dh: [UInt8], auth: [UInt8]) {
        // Browsers' toJSON() gives base64url without padding; some clients pad it.
        func decode(_ text: String) -> [UInt8]? { Base64URL.decode(String(text.prefix { $0 != "=" })) }
        guard let point = decode(p256dh), point.count == 65, point.first == 4 else {
            throw PushEndpoint.Refusal("keys.p256dh must be a base64url uncompressed P-256 public key (65 bytes)")
        }
        guard let secret = decode(auth), secret.count == 16 else {
            throw PushEndpoint.Refusal("keys.auth must be 16 bytes of base64url")
        }
        return (point, secret)
    }
}

/// Where subscriptions live: the room-state store (SQLite on one node, PostgreSQL shared by a cluster), so that they
/// survive restarts and every node can reach every device. Writes are awaited (a subscribe is answered only once it
/// is stored): unlike room facts, nothing here is on the relay path.
public protocol PushSubscriptionStore: Sendable {
    /// Adds or replaces (same room and endpoint) a subscription.
    func savePushSubscription(_ subscription: PushSubscriptionRecord) async throws
    /// Removes one room's subscription of `endpoint`; true if there was one.
    @discardableResult
    func removePushSubscription(rid: String, endpoint: String) async throws -> Bool
    /// Removes `endpoint` from every room: the push service said it is gone (404/410).
    func removePushEndpoint(_ endpoint: String) async throws
    func pushSubscriptions(rid: String) async throws -> [PushSubscriptionRecord]
}

/// Subscriptions per room: bounded so that nobody can grow a room's list without limit (a device per endpoint;
/// a person has a few, a 1:1 room two people).
public enum PushSubscriptionLimits {
    public static let perRoom = 20
}

/// For a server without a store (`persistsRoomState = false`, tests): the same contract in memory.
public final class InMemoryPushSubscriptions: PushSubscriptionStore {
    private let rows = Mutex<[PushSubscriptionRecord]>([])

    public init() {}

    public func savePushSubscription(_ subscription: PushSubscriptionRecord) async throws {
        rows.withLock { rows in
            rows.removeAll { $0.rid == subscription.rid && $0.endpoint == subscription.endpoint }
            rows.append(subscription)
            // Bounded per room like the stores: the oldest make way.
            let room = rows.filter { $0.rid == subscription.rid }.sorted { ($0.createdAtMs, $0.endpoint) > ($1.createdAtMs, $1.endpoint) }
            let dropped = Set(room.dropFirst(PushSubscriptionLimits.perRoom).map(\.endpoint))
            rows.removeAll { $0.rid == subscription.rid && dropped.contains($0.endpoint) }
        }
    }

    public func removePushSubscription(rid: String, endpoint: String) async throws -> Bool {
        rows.withLock { rows in
            let before = rows.count
            rows.removeAll { $0.rid == rid && $0.endpoint == endpoint }
            return rows.count != before
        }
    }

    public func removePushEndpoint(_ endpoint: String) async throws {
        rows.withLock { $0.removeAll { $0.endpoint == endpoint } }
    }

    public func pushSubscriptions(rid: String) async throws -> [PushSubscriptionRecord] {
        rows.withLock { $0.filter { $0.rid == rid } }
    }
}
