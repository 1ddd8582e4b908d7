import Crypto
import DuetProtocol
import Foundation

/// coturn's TURN REST API (`--use-auth-secret`): username `<unix expiry>:<label>`,
/// password base64(HMAC-SHA1(static-auth-secret, username)).
public struct TurnCredentialIssuer: Sendable {
    public let uris: [String]
    public let ttlSeconds: Int64
    private let key: SymmetricKey
    private let label: String

    /// Nil when no TURN server is configured (the endpoint then answers 503).
    public init?(secret: String?, uris: [String], ttlSeconds: Int64, label: String = "duet") {
        guard let secret, !secret.isEmpty, !uris.isEmpty else { return nil }
        self.key = SymmetricKey(data: Data(secret.utf8))
        self.uris = uris
        self.ttlSeconds = ttlSeconds
        self.label = label
    }

    /// The TURN entry of the ICE server list, with credentials valid for `ttlSeconds` from now.
    public func credentials(nowMs: Int64) -> IceServer {
        let username = "\(nowMs / 1000 + ttlSeconds):\(label)"
        let mac = HMAC<Insecure.SHA1>.authenticationCode(for: Array(username.utf8), using: key)
        return IceServer(urls: uris, username: username, credential: Data(mac).base64EncodedString())
    }
}
