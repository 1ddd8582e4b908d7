import Crypto
import DuetProtocol
import Foundation

/// Permission to fetch TURN credentials for one seat: base64url(JSON{v:2,k:"turn",rid,cid,exp}) "." base64url(HMAC-SHA256).
/// The token names the seat it was issued to, so `/api/turn-credentials` can answer only while that seat exists: a
/// participant who left, was evicted or whose room ended cannot keep minting relay credentials with it.
public struct TurnTokenAuthority: Sendable {
    public struct Seat: Sendable, Equatable {
        public var rid: String
        public var cid: String
        public init(rid: String, cid: String) {
            self.rid = rid
            self.cid = cid
        }
    }

    private struct Claims: Codable {
        var v: Int
        var k: String
        var rid: String
        var cid: String
        var exp: Int64
    }

    private let key: SymmetricKey
    public let ttlMs: Int64

    public init(key: SymmetricKey, ttlMs: Int64) {
        self.key = key
        self.ttlMs = ttlMs
    }

    /// Returns the token and its expiry in unix seconds.
    public func issue(rid: String, cid: String, nowMs: Int64) -> (token: String, expiresAt: Int64) {
        let expiresAt = (nowMs + ttlMs + 999) / 1000  // rounded up: never shorter than the TTL
        let claims = Claims(v: 2, k: "turn", rid: rid, cid: cid, exp: expiresAt)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding five plain fields cannot fail.
        let body = Base64URL.encode(Array((try? encoder.encode(claims)) ?? Data()))
        return (body + "." + signature(body), expiresAt)
    }

    /// The seat a valid, unexpired token was issued to; nil for anything else (malformed, forged, expired, old format).
    public func seat(of token: String, nowMs: Int64) -> Seat? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].utf8.count < 512, parts[1].utf8.count < 128 else { return nil }
        let body = String(parts[0])
        guard constantTimeEquals(Array(signature(body).utf8), Array(parts[1].utf8)),
            let json = Base64URL.decode(body),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(json)),
            claims.v == 2, claims.k == "turn", claims.exp * 1000 > nowMs
        else { return nil }
        return Seat(rid: claims.rid, cid: claims.cid)
    }

    private func signature(_ body: String) -> String {
        Base64URL.encode(HMAC<SHA256>.authenticationCode(for: Array(body.utf8), using: key))
    }
}
