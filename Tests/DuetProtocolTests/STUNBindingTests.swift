import DuetProtocol
import Testing

/// The built-in STUN server's codec, against RFC 5769's published test vectors and hostile datagrams.
struct STUNBindingTests {
    /// RFC 5769 §2.1: a Binding request with SOFTWARE, PRIORITY, ICE-CONTROLLED, USERNAME, MESSAGE-INTEGRITY and
    /// FINGERPRINT — what an ICE agent sends. It parses (the FINGERPRINT checks out) and is answered.
    static let rfc5769Request: [UInt8] = [
        0x00, 0x01, 0x00, 0x58, 0x21, 0x12, 0xa4, 0x42, 0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae,
        0x80, 0x22, 0x00, 0x10, 0x53, 0x54, 0x55, 0x4e, 0x20, 0x74, 0x65, 0x73, 0x74, 0x20, 0x63, 0x6c, 0x69, 0x65, 0x6e, 0x74,
        0x00, 0x24, 0x00, 0x04, 0x6e, 0x00, 0x01, 0xff,
        0x80, 0x29, 0x00, 0x08, 0x93, 0x2f, 0xf9, 0xb1, 0x51, 0x26, 0x3b, 0x36,
        0x00, 0x06, 0x00, 0x09, 0x65, 0x76, 0x74, 0x6a, 0x3a, 0x68, 0x36, 0x76, 0x59, 0x20, 0x20, 0x20,
        0x00, 0x08, 0x00, 0x14, 0x9a, 0xea, 0xa7, 0x0c, 0xbf, 0xd8, 0xcb, 0x56, 0x78, 0x1e, 0xf2, 0xb5, 0xb2, 0xd3, 0xf2, 0x49,
        0xc1, 0xb5, 0x71, 0xa2,
        0x80, 0x28, 0x00, 0x04, 0xe5, 0x7a, 0x3b, 0xcf,
    ]
    static let transactionID: [UInt8] = [0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae]

    @Test func rfc5769RequestParsesWithItsFingerprint() throws {
        let message = try #require(STUNMessage.parse(Self.rfc5769Request))
        #expect(message.type == STUNMessage.MessageType.bindingRequest)
        #expect(message.transactionID == Self.transactionID)
        #expect(message.attributes.map(\.type) == [0x8022, 0x0024, 0x8029, 0x0006, 0x0008, 0x8028])
        #expect(message.attribute(STUNMessage.Attribute.username) == Array("evtj:h6vY".utf8))
    }

    @Test func aBindingRequestIsAnsweredWithTheSendersAddressXored() throws {
        // RFC 5769 §2.2 and §2.3: 192.0.2.1:32853 and 2001:db8:1234:5678:11:2233:4455:6677 port 32853.
        let v4 = STUNBinding.Endpoint(address: [192, 0, 2, 1], port: 32853)
        let reply = try #require(STUNBinding.reply(to: Self.rfc5769Request, from: v4))
        let response = try #require(STUNMessage.parse(reply), "the reply is itself well-formed, FINGERPRINT included")
        #expect(response.type == STUNMessage.MessageType.bindingSuccess)
        #expect(response.transactionID == Self.transactionID)
        #expect(response.attribute(STUNMessage.Attribute.xorMappedAddress) == [0x00, 0x01, 0xa1, 0x47, 0xe1, 0x12, 0xa6, 0x43])
        #expect(response.attribute(STUNMessage.Attribute.fingerprint) != nil, "the request had a FINGERPRINT, so the reply has one")

        let v6 = STUNBinding.Endpoint(
            address: [0x20, 0x01, 0x0d, 0xb8, 0x12, 0x34, 0x56, 0x78, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77], port: 32853)
        let reply6 = try #require(STUNBinding.reply(to: Self.rfc5769Request, from: v6).flatMap(STUNMessage.parse))
        let mapped6 = try #require(reply6.attribute(STUNMessage.Attribute.xorMappedAddress))
        #expect(
            mapped6 == [
                0x00, 0x02, 0xa1, 0x47, 0x01, 0x13, 0xa9, 0xfa, 0xa5, 0xd3, 0xf1, 0x79, 0xbc, 0x25, 0xf4, 0xb5, 0xbe, 0xd2, 0xb9, 0xd9,
            ])
        #expect(STUNBinding.mappedEndpoint(mapped6, transactionID: Self.transactionID) == v6)
    }

    @Test func aBareBindingRequestGetsABareAnswer() throws {
        let id: [UInt8] = Array(1...12)
        let request = STUNMessage(type: STUNMessage.MessageType.bindingRequest, transactionID: id).encoded()
        #expect(request.count == 20)
        let source = STUNBinding.Endpoint(address: [10, 0, 0, 7], port: 50_000)
        let response = try #require(STUNBinding.reply(to: request, from: source).flatMap(STUNMessage.parse))
        #expect(response.attributes.map(\.type) == [STUNMessage.Attribute.xorMappedAddress], "no FINGERPRINT unless asked for one")
        #expect(
            STUNBinding.mappedEndpoint(try #require(response.attribute(STUNMessage.Attribute.xorMappedAddress)), transactionID: id)
                == source)
    }

    @Test func anUnknownComprehensionRequiredAttributeGets420() throws {
        // CHANGE-REQUEST (0x0003, RFC 5780) is what old NAT-type probes send; this server does not do it.
        let request = STUNMessage(
            type: STUNMessage.MessageType.bindingRequest, transactionID: Array(repeating: 9, count: 12),
            attributes: [(0x0003, [0, 0, 0, 6]), (0x8022, Array("x".utf8))]
        ).encoded()
        let response = try #require(
            STUNBinding.reply(to: request, from: .init(address: [127, 0, 0, 1], port: 1)).flatMap(STUNMessage.parse))
        #expect(response.type == STUNMessage.MessageType.bindingError)
        #expect(response.attribute(STUNMessage.Attribute.errorCode)?.prefix(4) == [0, 0, 4, 20])
        #expect(
            response.attribute(STUNMessage.Attribute.unknownAttributes) == [0x00, 0x03], "names the unknown attribute, not the optional one"
        )
    }

    @Test func whatIsNotAWellFormedBindingRequestIsNeverAnswered() {
        let source = STUNBinding.Endpoint(address: [127, 0, 0, 1], port: 9)
        var badFingerprint = Self.rfc5769Request
        badFingerprint[badFingerprint.count - 1] ^= 1
        var noCookie = Self.rfc5769Request
        noCookie[4] = 0
        var shortLength = Self.rfc5769Request
        shortLength[3] = 0x54
        let response = STUNMessage(type: STUNMessage.MessageType.bindingSuccess, transactionID: Array(repeating: 1, count: 12)).encoded()
        let indication = STUNMessage(type: STUNMessage.MessageType.bindingIndication, transactionID: Array(repeating: 1, count: 12))
            .encoded()
        let overrun =
            STUNMessage(type: STUNMessage.MessageType.bindingRequest, transactionID: Array(repeating: 1, count: 12)).encoded()
            .enumerated().map { $0.offset == 3 ? 4 : $0.element } + [0x80, 0x22, 0x00, 0x08]  // attribute longer than the message
        let cases: [(String, [UInt8])] = [
            ("empty", []), ("short header", Array(Self.rfc5769Request.prefix(19))), ("bad fingerprint", badFingerprint),
            ("a classic (RFC 3489) message with a FINGERPRINT", noCookie), ("length disagrees", shortLength), ("a response", response),
            ("an indication", indication), ("attribute overruns", overrun), ("trailing byte", Self.rfc5769Request + [0]),
            ("HTTP", Array("GET / HTTP/1.1\r\n\r\n".utf8)),
        ]
        for (name, datagram) in cases {
            #expect(STUNBinding.reply(to: datagram, from: source) == nil, "\(name) must not be answered")
        }
        #expect(STUNBinding.reply(to: Self.rfc5769Request, from: .init(address: [1, 2, 3], port: 1)) == nil, "a source that is no address")
    }

    /// libnice (webrtcbin, so `duet call`) asks the RFC 3489 way: no magic cookie, a 128-bit transaction id. It gets
    /// MAPPED-ADDRESS, the only address attribute it knows, and never a reply aimed elsewhere: RESPONSE-ADDRESS
    /// (0x0002) is an unknown comprehension-required attribute, answered 420 to the sender.
    @Test func aClassicRFC3489RequestGetsMappedAddress() throws {
        let id: [UInt8] = Array(100..<116)
        let request = [0x00, 0x01, 0x00, 0x00] + id
        let source = STUNBinding.Endpoint(address: [203, 0, 113, 11], port: 51_000)
        let reply = try #require(STUNBinding.reply(to: request, from: source))
        #expect(Array(reply[4..<20]) == id, "the whole 16-byte transaction id comes back, no magic cookie")
        let response = try #require(STUNMessage.parse(reply))
        #expect(response.type == STUNMessage.MessageType.bindingSuccess && response.isClassic)
        #expect(response.attributes.map(\.type) == [STUNMessage.Attribute.mappedAddress])
        #expect(response.attribute(STUNMessage.Attribute.mappedAddress) == [0, 1, 0xC7, 0x38, 203, 0, 113, 11])

        let redirect = [0x00, 0x01, 0x00, 0x0C] + id + [0x00, 0x02, 0x00, 0x08, 0x00, 0x01, 0x00, 0x35, 192, 0, 2, 1]
        let refused = try #require(STUNBinding.reply(to: redirect, from: source).flatMap(STUNMessage.parse))
        #expect(
            refused.type == STUNMessage.MessageType.bindingError
                && refused.attribute(STUNMessage.Attribute.unknownAttributes) == [0x00, 0x02])
    }
}
