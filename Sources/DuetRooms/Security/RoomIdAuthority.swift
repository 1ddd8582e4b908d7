import Crypto
import DuetProtocol

/// Room ids are self-authenticating: 12 random bytes + the first 8 bytes of
/// HMAC-SHA256(roomSecret, random ‖ "id:v1|room"), base64url (27 characters). A forged id is
/// refused without any server-side lookup, and ids survive restarts.
public struct RoomIdAuthority: Sendable {
    private let key: SymmetricKey
    private static let context = Array("id:v1|room".utf8)

    public init(key: SymmetricKey) { self.key = key }

    public func issue() -> String {
        var generator = SystemRandomNumberGenerator()
        return issue(using: &generator)
    }

    /// With a seeded generator, the simulator's room ids are part of its replay.
    public func issue(using generator: inout some RandomNumberGenerator) -> String {
        let random = (0..<12).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Base64URL.encode(random + tag(for: random))
    }

    public func isAuthentic(_ roomId: String) -> Bool {
        // Re-encoding rejects ids whose unused low bits were altered: one room, one spelling.
        guard RoomIdFormat.isWellFormed(roomId), let bytes = Base64URL.decode(roomId), bytes.count == 20,
            Base64URL.encode(bytes) == roomId
        else {
            return false
        }
        return constantTimeEquals(Array(bytes[12...]), tag(for: Array(bytes[..<12])))
    }

    private func tag(for random: [UInt8]) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: random + Self.context, using: key).prefix(8))
    }
}
