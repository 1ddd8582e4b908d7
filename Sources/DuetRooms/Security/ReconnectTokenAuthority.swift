import Crypto
import DuetProtocol

/// `hex(HMAC-SHA256(secret, cid|rid|exp)) + "." + exp`: proves a seat without server state, so it
/// still works after a restart.
public struct ReconnectTokenAuthority: Sendable {
    public enum Verdict: Equatable, Sendable {
        case valid(expiresAt: Int64)
        case malformed, forged, expired
    }

    private let key: SymmetricKey
    public let ttlMs: Int64

    public init(key: SymmetricKey, ttlMs: Int64) {
        self.key = key
        self.ttlMs = ttlMs
    }

    public func issue(cid: String, rid: String, nowMs: Int64) -> String {
        let expiresAt = (nowMs + ttlMs + 999) / 1000  // rounded up: never shorter than the TTL
        return mac(cid: cid, rid: rid, expiresAt: expiresAt) + "." + String(expiresAt)
    }

    public func verify(_ token: String, cid: String, rid: String, nowMs: Int64) -> Verdict {
        guard let parts = ReconnectTokenParts(parsing: token) else { return .malformed }
        let expected = mac(cid: cid, rid: rid, expiresAt: parts.expiresAt)
        guard constantTimeEquals(Array(expected.utf8), Array(parts.mac.utf8)) else { return .forged }
        guard parts.expiresAt * 1000 > nowMs else { return .expired }
        return .valid(expiresAt: parts.expiresAt)
    }

    private func mac(cid: String, rid: String, expiresAt: Int64) -> String {
        let text = ReconnectTokenParts.signedText(cid: cid, rid: rid, expiresAt: expiresAt)
        return Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(text.utf8), using: key))
    }
}
