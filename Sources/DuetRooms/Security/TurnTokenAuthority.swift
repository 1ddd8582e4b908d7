import Crypto
import DuetProtocol
import Foundation

/// Stateless permission to fetch TURN credentials: base64url(JSON{v:1,k:"call",exp}) "." base64url(HMAC-SHA256).
public struct TurnTokenAuthority: Sendable {
    private struct Claims: Codable {
        var v: Int
        var k: String
        var exp: Int64
    }

    private let key: SymmetricKey
    public let ttlMs: Int64

    public init(key: SymmetricKey, ttlMs: Int64) {
        self.key = key
        self.ttlMs = ttlMs
    }

    /// Returns the token and its expiry in unix seconds.
    public func issue(nowMs: Int64) -> (token: String, expiresAt: Int64) {
        let expiresAt = (nowMs + ttlMs + 999) / 1000  // rounded up: never shorter than the TTL
        let claims = "{\"exp\":\(expiresAt),\"k\":\"call\",\"v\":1}"
        let body = Base64URL.encode(Array(claims.utf8))
        return (body + "." + signature(body), expiresAt)
    }

    public func isValid(_ token: String, nowMs: Int64) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count < 512 else { return false }
        let body = String(parts[0])
        guard constantTimeEquals(Array(signature(body).utf8), Array(parts[1].utf8)),
            let json = Base64URL.decode(body),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(json)),
            claims.v == 1, claims.k == "call"
        else { return false }
        return claims.exp * 1000 > nowMs
    }

    private func signature(_ body: String) -> String {
        Base64URL.encode(HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: key))
    }
}
