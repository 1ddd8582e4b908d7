/// The properties the libFuzzer targets (`Fuzz/`, `scripts/fuzz.sh`) check on every input, shared with the
/// regression tests that replay the seed corpus and every crashing input (`Tests/DuetProtocolTests/FuzzCorpusTests`).
/// Each check takes any bytes and returns nil when they pass, or what broke: the fuzz harness traps on it, a test
/// fails on it. A refused input is a pass; only a crash, a broken round trip or an inconsistency is not.
public enum FuzzChecks {
    /// `Envelope.decode`: anything it accepts re-encodes (`encodedString()`) to text that decodes to the same
    /// envelope, and encoding is stable.
    public static func envelope(_ bytes: [UInt8]) -> String? {
        let first: Envelope
        do {
            first = try Envelope.decode(bytes)
        } catch {
            return nil
        }
        let text = first.encodedString()
        let second: Envelope
        do {
            second = try Envelope.decode(Array(text.utf8))
        } catch {
            return "the re-encoded envelope does not decode (\(error)): \(text)"
        }
        guard second == first else {
            return "the envelope changed in a round trip: \(first) became \(second) via \(text)"
        }
        guard second.encodedString() == text else {
            return "encoding is not stable: \(text) then \(second.encodedString())"
        }
        return nil
    }

    /// `JSONText.parse` and `JSONText.write`: what parses is written as JSON that parses to the same value and
    /// is written the same again; a refusal names an offset inside the input.
    public static func jsonText(_ bytes: [UInt8]) -> String? {
        let value: JSONValue
        do {
            value = try JSONText.parse(bytes)
        } catch {
            guard (0...bytes.count).contains(error.offset) else {
                return "syntax error offset \(error.offset) outside the input (\(bytes.count) bytes)"
            }
            return nil
        }
        let written = JSONText.write(value)
        let again: JSONValue
        do {
            again = try JSONText.parse(written)
        } catch {
            return "written JSON does not parse (offset \(error.offset)): \(String(decoding: written, as: UTF8.self))"
        }
        guard again == value else {
            return "the value changed in a round trip: \(value) became \(again)"
        }
        let rewritten = JSONText.write(again)
        guard rewritten == written else {
            return "writing is not stable: \(String(decoding: written, as: UTF8.self)) then \(String(decoding: rewritten, as: UTF8.self))"
        }
        return nil
    }

    /// `SSEParser`: the events do not depend on how the stream is cut into chunks (whole, split at a position
    /// taken from the first byte, one byte at a time); no event holds a line break it should have split on; and
    /// writing the events back as a stream (`data: ` lines, `: ` comments) parses to the same events.
    public static func sseParser(_ bytes: [UInt8]) -> String? {
        var whole = SSEParser()
        let items = whole.feed(bytes)

        let cut = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        var split = SSEParser()
        let splitItems = split.feed(bytes[..<cut]) + split.feed(bytes[cut...])
        guard splitItems == items else {
            return "split at \(cut) the stream gives \(splitItems), whole \(items)"
        }

        var bytewise = SSEParser()
        var bytewiseItems: [SSEParser.Item] = []
        for byte in bytes { bytewiseItems += bytewise.feed(CollectionOfOne(byte)) }
        guard bytewiseItems == items else {
            return "byte by byte the stream gives \(bytewiseItems), whole \(items)"
        }

        var rewritten: [UInt8] = []
        for item in items {
            switch item {
            case .comment(let text):
                guard !text.utf8.contains(0x0A), !text.utf8.contains(0x0D) else { return "a comment holds a line break: \(items)" }
                rewritten += ": ".utf8
                rewritten += text.utf8
                rewritten.append(0x0A)
            case .data(let text):
                guard !text.utf8.contains(0x0D) else { return "data holds a CR: \(items)" }
                for line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
                    rewritten += "data: ".utf8
                    rewritten += line
                    rewritten.append(0x0A)
                }
                rewritten.append(0x0A)
            }
        }
        var again = SSEParser()
        let againItems = again.feed(rewritten)
        guard againItems == items else {
            return "the events written back as a stream parse as \(againItems), not \(items)"
        }
        return nil
    }

    /// The STUN server's datagram path: `STUNMessage.parse` accepts only what it would write back byte for byte
    /// (encode ∘ parse is the identity, so no two spellings of one message); `STUNBinding.reply` answers only Binding
    /// requests, with a reply that parses, carries the request's transaction id, is under 2.5× its size, and names the
    /// sender exactly (XOR-MAPPED-ADDRESS decodes to it).
    public static func stun(_ bytes: [UInt8]) -> String? {
        let parsed = STUNMessage.parse(bytes)
        if let parsed {
            let fingerprinted = parsed.attributes.last?.type == STUNMessage.Attribute.fingerprint
            let body = STUNMessage(
                type: parsed.type, transactionID: parsed.transactionID,
                attributes: fingerprinted ? Array(parsed.attributes.dropLast()) : parsed.attributes)
            // Padding bytes are not kept (RFC 5769's own vector pads with spaces), so the FINGERPRINT of the re-encoding
            // may differ: compare everything else, and that a FINGERPRINT is there again.
            guard let again = STUNMessage.parse(body.encoded(fingerprint: fingerprinted)),
                STUNMessage(
                    type: again.type, transactionID: again.transactionID,
                    attributes: fingerprinted ? Array(again.attributes.dropLast()) : again.attributes) == body,
                (again.attributes.last?.type == STUNMessage.Attribute.fingerprint) == fingerprinted
            else { return "parse → encode → parse changed \(bytes)" }
        }
        let sources = [
            STUNBinding.Endpoint(address: [203, 0, 113, bytes.first ?? 0], port: 40_000),
            STUNBinding.Endpoint(address: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: bytes.last ?? 1, count: 12), port: 1),
        ]
        for source in sources {
            guard let reply = STUNBinding.reply(to: bytes, from: source) else { continue }
            guard let request = parsed, request.type == STUNMessage.MessageType.bindingRequest else {
                return "answered something that is not a Binding request: \(bytes)"
            }
            guard let response = STUNMessage.parse(reply) else { return "the reply does not parse: \(reply)" }
            guard response.transactionID == request.transactionID else { return "the reply has another transaction id" }
            guard reply.count * 2 < bytes.count * 5 else { return "reply of \(reply.count) bytes to \(bytes.count): an amplifier" }
            if response.type == STUNMessage.MessageType.bindingSuccess {
                let named =
                    request.isClassic
                    ? response.attribute(STUNMessage.Attribute.mappedAddress).flatMap(STUNBinding.plainEndpoint)
                    : response.attribute(STUNMessage.Attribute.xorMappedAddress).flatMap {
                        STUNBinding.mappedEndpoint($0, transactionID: request.transactionID)
                    }
                guard named == source, response.isClassic == request.isClassic else { return "the reply does not name the sender" }
            } else if response.type != STUNMessage.MessageType.bindingError {
                return "a reply of type \(response.type)"
            }
        }
        return nil
    }

    /// The shape checks (`RoomIdFormat`, `SessionIdFormat`, `ParticipantIdFormat`) against a plain restatement
    /// of their patterns; `Base64URL` round trips; `ReconnectTokenParts` accepts only the spelling it would write.
    public static func identifiers(_ bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let utf8 = Array(text.utf8)

        func isBase64URL(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"):
                true
            default: false
            }
        }
        func isLowerHex(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): true
            default: false
            }
        }
        func prefixedHex(_ letter: Character) -> Bool {
            let prefix = Array("\(letter)-".utf8)
            return utf8.count == 18 && Array(utf8[0..<2]) == prefix && utf8[2...].allSatisfy(isLowerHex)
        }

        // ^[A-Za-z0-9_-]{27}$, ^S-[0-9a-f]{16}$, ^C-[0-9a-f]{16}$
        let roomIdShape = utf8.count == 27 && utf8.allSatisfy(isBase64URL)
        guard RoomIdFormat.isWellFormed(text) == roomIdShape else {
            return "RoomIdFormat.isWellFormed(\(text.debugDescription)) is \(!roomIdShape)"
        }
        guard SessionIdFormat.isWellFormed(text) == prefixedHex("S") else {
            return "SessionIdFormat.isWellFormed(\(text.debugDescription)) is \(!prefixedHex("S"))"
        }
        guard ParticipantIdFormat.isWellFormed(text) == prefixedHex("C") else {
            return "ParticipantIdFormat.isWellFormed(\(text.debugDescription)) is \(!prefixedHex("C"))"
        }

        // Any bytes encode to text that decodes to them.
        let encoded = Base64URL.encode(bytes)
        guard encoded.utf8.allSatisfy(isBase64URL), encoded.utf8.count == (bytes.count * 4 + 2) / 3 else {
            return "Base64URL.encode(\(bytes)) is \(encoded.debugDescription)"
        }
        guard Base64URL.decode(encoded) == bytes else {
            return "Base64URL.decode(encode(\(bytes))) is \(String(describing: Base64URL.decode(encoded)))"
        }
        // Text decodes exactly when it is all alphabet and no length ≡ 1 (mod 4); the bytes re-encode to text that
        // decodes to them again.
        let decodable = utf8.allSatisfy(isBase64URL) && utf8.count % 4 != 1
        let decoded = Base64URL.decode(text)
        guard (decoded != nil) == decodable else {
            return "Base64URL.decode(\(text.debugDescription)) is \(String(describing: decoded))"
        }
        if let decoded {
            guard decoded.count == utf8.count * 3 / 4 else {
                return "Base64URL.decode(\(text.debugDescription)) has \(decoded.count) bytes"
            }
            guard Base64URL.decode(Base64URL.encode(decoded)) == decoded else {
                return "Base64URL does not round trip \(decoded)"
            }
        }

        // A reconnect token is `hex(mac) "." exp`; the parts parsed must spell the token again.
        if let parts = ReconnectTokenParts(parsing: text) {
            guard parts.mac.utf8.count == 64, parts.mac.utf8.allSatisfy(isLowerHex), parts.expiresAt > 0 else {
                return "ReconnectTokenParts(parsing: \(text.debugDescription)) gave \(parts)"
            }
            guard parts.mac + "." + String(parts.expiresAt) == text else {
                return "ReconnectTokenParts(parsing: \(text.debugDescription)) accepts a second spelling of \(parts.mac).\(parts.expiresAt)"
            }
        }
        return nil
    }
}
