import Crypto
import DuetProtocol

/// `hex(HMAC-SHA256(key, "member|v1|" rid "|" deviceId "|" exp)) + "." + exp`: proves that a device has held a seat
/// in a room, without server state (it survives restarts and works on every node). A seat's reconnect token lives
/// 20 minutes; this lives for months, because "ring me here" must keep working long after the last call, and it
/// grants only that: listening for and answering rings in that room, and subscribing that device to its pushes.
public struct MemberTokenAuthority: Sendable {
    private let key: SymmetricKey
    public let ttlMs: Int64
    public static let defaultTTLMs: Int64 = 180 * 24 * 3_600_000

    public init(key: SymmetricKey, ttlMs: Int64 = MemberTokenAuthority.defaultTTLMs) {
        self.key = key
        self.ttlMs = ttlMs
    }

    public func issue(rid: String, deviceId: String, nowMs: Int64) -> String {
        let expiresAt = (nowMs + ttlMs + 999) / 1000
        return mac(rid: rid, deviceId: deviceId, expiresAt: expiresAt) + "." + String(expiresAt)
    }

    public func isValid(_ token: String, rid: String, deviceId: String, nowMs: Int64) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count == 64, let expiresAt = Int64(parts[1]), expiresAt > 0, expiresAt < 1 << 40 else {
            return false
        }
        guard constantTimeEquals(Array(mac(rid: rid, deviceId: deviceId, expiresAt: expiresAt).utf8), Array(parts[0].utf8)) else {
            return false
        }
        return expiresAt * 1000 > nowMs
    }

    private func mac(rid: String, deviceId: String, expiresAt: Int64) -> String {
        Hex.encode(HMAC<SHA256>.authenticationCode(for: Array("member|v1|\(rid)|\(deviceId)|\(expiresAt)".utf8), using: key))
    }
}
