import DuetProtocol

/// The call link's secret: 256 random bits in the link's fragment (`/call/ROOM#k=<base64url>`), which browsers never
/// send to a server. Both people hold it because both opened the same link; the signaling server never sees it, so it
/// can authenticate what the server relays (`FingerprintAuth`). docs/security.md says what that protects.
public struct LinkKey: Sendable, Equatable, CustomStringConvertible {
    public static let byteCount = 32
    /// 32 bytes in base64url without padding.
    public static let textLength = 43

    public let bytes: [UInt8]

    /// nil unless `text` is exactly 43 base64url characters that decode to 32 bytes: a key cut short or altered in
    /// copying is refused, never used as a weaker one.
    public init?(base64url text: some StringProtocol) {
        guard text.utf8.count == Self.textLength, let bytes = Base64URL.decode(String(text)), bytes.count == Self.byteCount,
            Base64URL.encode(bytes) == text
        else { return nil }
        self.bytes = bytes
    }

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A fresh key from the system's secure generator.
    public static func random() -> LinkKey {
        var generator = SystemRandomNumberGenerator()
        return LinkKey(bytes: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })!
    }

    public var base64url: String { Base64URL.encode(bytes) }

    /// Never printed whole: logs and errors must not carry it.
    public var description: String { "LinkKey(…)" }
}
