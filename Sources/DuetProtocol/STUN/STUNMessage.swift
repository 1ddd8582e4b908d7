/// A STUN message (RFC 8489): a 20-byte header — type, length, the magic cookie, a 96-bit transaction id — and
/// type-length-value attributes padded to 4 bytes. Parsing is strict (every length must add up) because the bytes
/// come from anyone on the Internet; a message that does not parse is dropped without an answer. A "classic" RFC 3489
/// message has no magic cookie and a 128-bit transaction id (libnice, and so `duet call`, still asks that way): it is
/// kept as a 16-byte `transactionID`.
public struct STUNMessage: Sendable, Equatable {
    public static let magicCookie: UInt32 = 0x2112_A442
    public static let headerLength = 20
    /// RFC 8489 §14.7: the FINGERPRINT value is CRC-32 of the message before it, XOR this.
    static let fingerprintXor: UInt32 = 0x5354_554E

    public enum Attribute {
        public static let mappedAddress: UInt16 = 0x0001
        public static let username: UInt16 = 0x0006
        public static let messageIntegrity: UInt16 = 0x0008
        public static let errorCode: UInt16 = 0x0009
        public static let unknownAttributes: UInt16 = 0x000A
        public static let realm: UInt16 = 0x0014
        public static let nonce: UInt16 = 0x0015
        public static let messageIntegritySHA256: UInt16 = 0x001C
        public static let passwordAlgorithm: UInt16 = 0x001D
        public static let userhash: UInt16 = 0x001E
        public static let xorMappedAddress: UInt16 = 0x0020
        public static let priority: UInt16 = 0x0024
        public static let useCandidate: UInt16 = 0x0025
        public static let software: UInt16 = 0x8022
        public static let fingerprint: UInt16 = 0x8028
    }

    public enum MessageType {
        public static let bindingRequest: UInt16 = 0x0001
        public static let bindingIndication: UInt16 = 0x0011
        public static let bindingSuccess: UInt16 = 0x0101
        public static let bindingError: UInt16 = 0x0111
    }

    public var type: UInt16
    /// 12 bytes after the magic cookie (RFC 8489), or 16 bytes for a classic RFC 3489 message.
    public var transactionID: [UInt8]
    public var attributes: [(type: UInt16, value: [UInt8])]

    public init(type: UInt16, transactionID: [UInt8], attributes: [(type: UInt16, value: [UInt8])] = []) {
        self.type = type
        self.transactionID = transactionID
        self.attributes = attributes
    }

    public static func == (lhs: STUNMessage, rhs: STUNMessage) -> Bool {
        lhs.type == rhs.type && lhs.transactionID == rhs.transactionID
            && lhs.attributes.map(\.type) == rhs.attributes.map(\.type) && lhs.attributes.map(\.value) == rhs.attributes.map(\.value)
    }

    public func attribute(_ type: UInt16) -> [UInt8]? { attributes.first { $0.type == type }?.value }

    /// True for an RFC 3489 message (no magic cookie, a 16-byte transaction id).
    public var isClassic: Bool { transactionID.count == 16 }

    /// Nil unless `bytes` is exactly one well-formed STUN message whose FINGERPRINT, if present, is last and correct
    /// (a classic message, which RFC 3489 gave no FINGERPRINT, must not carry one).
    public static func parse(_ bytes: [UInt8]) -> STUNMessage? {
        guard bytes.count >= headerLength, bytes[0] & 0xC0 == 0 else { return nil }
        let type = read16(bytes, 0)
        let length = Int(read16(bytes, 2))
        guard length % 4 == 0, bytes.count == headerLength + length else { return nil }
        let classic = read32(bytes, 4) != magicCookie
        var attributes: [(type: UInt16, value: [UInt8])] = []
        var offset = headerLength
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { return nil }
            let attributeType = read16(bytes, offset)
            let valueLength = Int(read16(bytes, offset + 2))
            let padded = (valueLength + 3) & ~3
            guard bytes.count - offset - 4 >= padded else { return nil }
            if attributeType == Attribute.fingerprint {
                // Last, 4 bytes, and the CRC of everything before it.
                guard !classic, valueLength == 4, offset + 8 == bytes.count,
                    read32(bytes, offset + 4) == CRC32.checksum(bytes[0..<offset]) ^ fingerprintXor
                else { return nil }
            }
            attributes.append((attributeType, Array(bytes[(offset + 4)..<(offset + 4 + valueLength)])))
            offset += 4 + padded
        }
        return STUNMessage(type: type, transactionID: Array(bytes[(classic ? 4 : 8)..<20]), attributes: attributes)
    }

    /// The wire form; with `fingerprint` a FINGERPRINT attribute is appended (never to a classic message).
    public func encoded(fingerprint requested: Bool = false) -> [UInt8] {
        let fingerprint = requested && !isClassic
        var body: [UInt8] = []
        for attribute in attributes {
            append16(&body, attribute.type)
            append16(&body, UInt16(attribute.value.count))
            body += attribute.value
            body += [UInt8](repeating: 0, count: ((attribute.value.count + 3) & ~3) - attribute.value.count)
        }
        var bytes: [UInt8] = []
        append16(&bytes, type)
        append16(&bytes, UInt16(body.count + (fingerprint ? 8 : 0)))
        if !isClassic { append32(&bytes, Self.magicCookie) }
        bytes += transactionID
        bytes += body
        if fingerprint {
            let crc = CRC32.checksum(bytes) ^ Self.fingerprintXor
            append16(&bytes, Attribute.fingerprint)
            append16(&bytes, 4)
            append32(&bytes, crc)
        }
        return bytes
    }
}

func read16(_ bytes: [UInt8], _ offset: Int) -> UInt16 { UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1]) }
func read32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
    UInt32(read16(bytes, offset)) << 16 | UInt32(read16(bytes, offset + 2))
}
func append16(_ bytes: inout [UInt8], _ value: UInt16) { bytes += [UInt8(value >> 8), UInt8(value & 0xFF)] }
func append32(_ bytes: inout [UInt8], _ value: UInt32) {
    append16(&bytes, UInt16(value >> 16))
    append16(&bytes, UInt16(value & 0xFFFF))
}
