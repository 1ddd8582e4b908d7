import Crypto
import DuetProtocol
import Foundation

/// The server's VAPID identity (RFC 8292): one P-256 key pair per deployment, shared by every node of a cluster, so
/// that a push service accepts any node's pushes for a subscription the browser made with the public key.
///
/// Browsers bind a subscription to the `applicationServerKey` it was made with; a new key makes every stored
/// subscription useless. That is why the key is a secret kept like the others (`secrets.json` beside them, or the
/// database in a cluster) and never regenerated while one exists.
public struct VAPIDKey: Sendable {
    let privateKey: P256.Signing.PrivateKey

    public init() { privateKey = P256.Signing.PrivateKey() }

    /// The 32-byte private scalar as base64url (how it is stored).
    public init(privateKeyBase64URL text: String) throws {
        guard let raw = Base64URL.decode(text), raw.count == 32 else {
            throw ConfigurationError("the VAPID private key must be 32 bytes of base64url")
        }
        do {
            privateKey = try P256.Signing.PrivateKey(rawRepresentation: raw)
        } catch {
            throw ConfigurationError("the VAPID private key is not a P-256 private key (\(error))")
        }
    }

    public var privateKeyBase64URL: String { Base64URL.encode(privateKey.rawRepresentation) }

    /// The uncompressed point (65 bytes, 0x04 ‖ X ‖ Y) as base64url: what a page passes to `pushManager.subscribe`
    /// as `applicationServerKey`, and the `k` of the Authorization header.
    public var publicKeyBase64URL: String { Base64URL.encode(privateKey.publicKey.x963Representation) }

    /// `Authorization: vapid t=<JWT>,k=<public key>` for a push to `endpoint` (RFC 8292 §3).
    ///
    /// - `aud` is the endpoint's origin (scheme, host and any non-default port), as the push service checks it.
    /// - `exp` is at most 24 h ahead (§2); pushes are sent right away, so 12 h leaves room for clock skew.
    /// - `sub` is the operator's contact (`--push-contact`), which push services use to reach whoever misbehaves.
    /// No space after the comma: some verifiers (py_vapid among them) split the header on its last space.
    func authorization(audience: String, subject: String, nowSeconds: Int64, lifetimeSeconds: Int64 = 12 * 3600) throws -> String {
        let header = #"{"typ":"JWT","alg":"ES256"}"#
        let claims = try JSONSerialization.data(
            withJSONObject: ["aud": audience, "exp": nowSeconds + min(lifetimeSeconds, 24 * 3600), "sub": subject], options: [.sortedKeys])
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(claims)
        // ES256 in a JWT is the raw r ‖ s (64 bytes), not DER (RFC 7518 §3.4).
        let signature = try privateKey.signature(for: Data(signingInput.utf8)).rawRepresentation
        return "vapid t=\(signingInput).\(Base64URL.encode(signature)),k=\(publicKeyBase64URL)"
    }
}
