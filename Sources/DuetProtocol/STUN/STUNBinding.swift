/// The one STUN exchange `duet serve` answers: a Binding request gets a Binding success response naming the
/// address and port the request came from (XOR-MAPPED-ADDRESS), which is how a browser behind a NAT learns its
/// server-reflexive candidate. Pure: bytes and the sender in, the reply bytes (or nothing) out.
public enum STUNBinding {
    /// Where a datagram came from: 4 (IPv4) or 16 (IPv6) address bytes and the port.
    public struct Endpoint: Sendable, Equatable {
        public var address: [UInt8]
        public var port: UInt16
        public init(address: [UInt8], port: UInt16) {
            self.address = address
            self.port = port
        }
    }

    /// Attributes a Binding request may carry that this server does not act on but must not refuse: credentials
    /// and ICE attributes (a server without authentication ignores them, RFC 8489 §9).
    static let tolerated: Set<UInt16> = [
        STUNMessage.Attribute.username, STUNMessage.Attribute.messageIntegrity, STUNMessage.Attribute.messageIntegritySHA256,
        STUNMessage.Attribute.realm, STUNMessage.Attribute.nonce, STUNMessage.Attribute.passwordAlgorithm,
        STUNMessage.Attribute.userhash, STUNMessage.Attribute.priority, STUNMessage.Attribute.useCandidate,
    ]

    /// The reply to `datagram` from `source`: nil for anything that is not a well-formed Binding request (responses,
    /// indications, garbage — never answered, so the server cannot be made to talk to a third party more than it
    /// is talked to); a 420 error for a request with an unknown comprehension-required attribute (RFC 8489 §6.3.1).
    /// The reply carries a FINGERPRINT when the request did.
    public static func reply(to datagram: [UInt8], from source: Endpoint) -> [UInt8]? {
        guard source.address.count == 4 || source.address.count == 16,
            let request = STUNMessage.parse(datagram), request.type == STUNMessage.MessageType.bindingRequest
        else { return nil }
        let fingerprint = request.attribute(STUNMessage.Attribute.fingerprint) != nil
        let unknown = request.attributes.map(\.type).filter { $0 < 0x8000 && !tolerated.contains($0) }
        if !unknown.isEmpty {
            var list: [UInt8] = []
            for type in unknown.prefix(16) { append16(&list, type) }
            let reason = Array("Unknown Attribute".utf8)
            let error = STUNMessage(
                type: STUNMessage.MessageType.bindingError, transactionID: request.transactionID,
                attributes: [
                    (STUNMessage.Attribute.errorCode, [0, 0, 4, 20] + reason),
                    (STUNMessage.Attribute.unknownAttributes, list),
                ])
            return error.encoded(fingerprint: fingerprint)
        }
        // A classic (RFC 3489) client knows only MAPPED-ADDRESS (RFC 8489 §12.2's backwards compatibility); its
        // RESPONSE-ADDRESS and CHANGE-REQUEST are unknown attributes above, so a reply never goes anywhere but back.
        let mapped =
            request.isClassic
            ? (STUNMessage.Attribute.mappedAddress, mappedAddress(source))
            : (STUNMessage.Attribute.xorMappedAddress, xorMappedAddress(source, transactionID: request.transactionID))
        let response = STUNMessage(type: STUNMessage.MessageType.bindingSuccess, transactionID: request.transactionID, attributes: [mapped])
        return response.encoded(fingerprint: fingerprint)
    }

    /// RFC 8489 §14.2: family, port XOR the cookie's top half, address XOR the cookie (IPv6: cookie + transaction id).
    static func xorMappedAddress(_ endpoint: Endpoint, transactionID: [UInt8]) -> [UInt8] {
        var cookie: [UInt8] = []
        append32(&cookie, STUNMessage.magicCookie)
        let mask = endpoint.address.count == 4 ? cookie : cookie + transactionID
        var value: [UInt8] = [0, endpoint.address.count == 4 ? 0x01 : 0x02]
        append16(&value, endpoint.port ^ UInt16(STUNMessage.magicCookie >> 16))
        value += zip(endpoint.address, mask).map { $0 ^ $1 }
        return value
    }

    /// RFC 3489 §11.2.1: family, port, address, in the clear.
    static func mappedAddress(_ endpoint: Endpoint) -> [UInt8] {
        var value: [UInt8] = [0, endpoint.address.count == 4 ? 0x01 : 0x02]
        append16(&value, endpoint.port)
        return value + endpoint.address
    }

    /// The endpoint a MAPPED-ADDRESS value names.
    public static func plainEndpoint(_ value: [UInt8]) -> Endpoint? {
        guard value.count >= 4 else { return nil }
        let length = value[1] == 0x01 ? 4 : value[1] == 0x02 ? 16 : 0
        guard length > 0, value.count == 4 + length else { return nil }
        return Endpoint(address: Array(value[4...]), port: read16(value, 2))
    }

    /// The reverse, for clients and tests: the endpoint an XOR-MAPPED-ADDRESS value names.
    public static func mappedEndpoint(_ value: [UInt8], transactionID: [UInt8]) -> Endpoint? {
        guard value.count >= 4 else { return nil }
        let length = value[1] == 0x01 ? 4 : value[1] == 0x02 ? 16 : 0
        guard length > 0, value.count == 4 + length else { return nil }
        var cookie: [UInt8] = []
        append32(&cookie, STUNMessage.magicCookie)
        let mask = length == 4 ? cookie : cookie + transactionID
        return Endpoint(address: zip(value[4...], mask).map { $0 ^ $1 }, port: read16(value, 2) ^ UInt16(STUNMessage.magicCookie >> 16))
    }
}
