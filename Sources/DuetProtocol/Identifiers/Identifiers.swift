/// Shapes of the identifiers on the wire. Only the shape is checked here; authenticity (HMAC) is
/// the server's business.
public enum RoomIdFormat {
    public static let length = 27
    /// `^[A-Za-z0-9_-]{27}$`
    public static func isWellFormed(_ value: String) -> Bool {
        value.utf8.count == length && value.utf8.allSatisfy(Base64URL.isAlphabet)
    }
}

/// SSE session id made by the client: `S-` + 16 lowercase hex digits.
public enum SessionIdFormat {
    public static func isWellFormed(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 18 && bytes[0] == UInt8(ascii: "S") && bytes[1] == UInt8(ascii: "-")
            && bytes[2...].allSatisfy(Hex.isLowerDigit)
    }

    public static func random() -> String {
        "S-" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
    }
}

/// Participant id chosen by the server: `C-` + 16 lowercase hex digits.
public enum ParticipantIdFormat {
    public static func isWellFormed(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        return bytes.count == 18 && bytes[0] == UInt8(ascii: "C") && bytes[1] == UInt8(ascii: "-")
            && bytes[2...].allSatisfy(Hex.isLowerDigit)
    }
}

/// `hex(HMAC-SHA256(secret, cid|rid|exp)) + "." + exp` — `exp` in unix seconds.
public struct ReconnectTokenParts: Sendable, Equatable {
    public var mac: String
    public var expiresAt: Int64

    public init?(parsing token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        // `exp` only as it is issued, decimal digits with no sign and no leading zero: one token, one spelling
        // (`Int64` alone also reads "01700001200", as fuzz-tokens found, and "+1700001200").
        guard parts.count == 2, parts[0].utf8.count == 64, parts[0].utf8.allSatisfy(Hex.isLowerDigit),
            let first = parts[1].utf8.first, first != UInt8(ascii: "0"),
            parts[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let exp = Int64(parts[1]), exp > 0
        else { return nil }
        self.mac = String(parts[0])
        self.expiresAt = exp
    }

    public static func signedText(cid: String, rid: String, expiresAt: Int64) -> String {
        "\(cid)|\(rid)|\(expiresAt)"
    }
}

public enum Hex {
    static func isLowerDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66)
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

public enum Base64URL {
    static func isAlphabet(_ byte: UInt8) -> Bool {
        (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || (byte >= 0x30 && byte <= 0x39)
            || byte == 0x2d || byte == 0x5f
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index < input.count {
            let chunk = input[index..<min(index + 3, input.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            let characters = chunk.count + 1
            for position in 0..<characters {
                out.append(alphabet[Int((value >> (18 - 6 * position)) & 0x3f)])
            }
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case 0x41...0x5a: values.append(byte - 0x41)
            case 0x61...0x7a: values.append(byte - 0x61 + 26)
            case 0x30...0x39: values.append(byte - 0x30 + 52)
            case 0x2d: values.append(62)
            case 0x5f: values.append(63)
            default: return nil
            }
        }
        guard values.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        var index = 0
        while index < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            var value: UInt32 = 0
            for (offset, sextet) in chunk.enumerated() { value |= UInt32(sextet) << (18 - 6 * offset) }
            for position in 0..<(chunk.count - 1) { out.append(UInt8((value >> (16 - 8 * position)) & 0xff)) }
            index += 4
        }
        return out
    }
}
