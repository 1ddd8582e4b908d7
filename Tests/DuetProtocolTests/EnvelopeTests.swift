import DuetProtocol
import Foundation
import Testing

@Suite struct EnvelopeTests {
    @Test func roundTripKeepsEveryFieldAndUnknownPayloadFields() throws {
        let original = Envelope(
            .offer, rid: "r", sid: "S-0123456789abcdef", cid: "C-0123456789abcdef", to: "C-fedcba9876543210", ts: 1_700_000_000_000,
            epoch: 3, payload: ["sdp": "v=0\r\n", "custom": ["nested": [1, 2.5, true, nil]]])
        let decoded = try Envelope.decode(original.encoded())
        #expect(decoded == original)
    }

    @Test func largeIntegersSurvive() throws {
        let decoded = try Envelope.decode(Data(#"{"v":1,"type":"ping","payload":{"ts":9007199254740993}}"#.utf8))
        #expect(decoded.payload["ts"] == .int(9_007_199_254_740_993))
    }

    @Test(
        "envelope errors name the problem",
        arguments: [
            ("", ErrorCode.badRequest), ("{", .badRequest), ("3", .badRequest), (#"{"v":1}"#, .badRequest),
            (#"{"type":"x"}"#, .badRequest), (#"{"v":1.5,"type":"x"}"#, .badRequest), (#"{"v":0,"type":"x"}"#, .unsupportedVersion),
            (#"{"v":1,"type":""}"#, .badRequest), (#"{"v":1,"type":"x","to":[]}"#, .badRequest),
            (#"{"v":1,"type":"x","ts":"now"}"#, .badRequest),
        ])
    func invalidEnvelopes(text: String, code: ErrorCode) {
        #expect(throws: ProtocolError.self) { try Envelope.decode(Data(text.utf8)) }
        do {
            _ = try Envelope.decode(Data(text.utf8))
        } catch {
            #expect(error.code == code)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func unknownTypeParsesAndIsNotAKnownMessageType() throws {
        let envelope = try Envelope.decode(Data(#"{"v":1,"type":"hologram"}"#.utf8))
        #expect(envelope.messageType == nil)
        #expect(envelope.payload == [:])
    }

    @Test func typedPayloadErrorsNameTheField() {
        let payload: JSONValue = ["capabilities": ["trickleIce": "yes"]]
        #expect(throws: ProtocolError(.badRequest, "payload.capabilities.trickleIce: expected Bool")) {
            try payload.decode(JoinPayload.self)
        }
        #expect(throws: ProtocolError(.badRequest, "payload.sdp: missing")) {
            try JSONValue.object([:]).decode(SessionDescriptionPayload.self)
        }
    }

    @Test func endOfCandidatesEncodesExplicitNull() throws {
        let json = try JSONValue(encoding: IcePayload(candidate: nil))
        #expect(json == ["candidate": nil])
    }
}

@Suite struct IdentifierTests {
    @Test func base64URLRoundTripsEveryLength() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(($0 * 37 + 11) % 256) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("="))
            #expect(Base64URL.decode(text) == bytes)
        }
        #expect(Base64URL.decode("a") == nil)
        #expect(Base64URL.decode("ab+/") == nil)
    }

    @Test func roomIdShape() {
        #expect(RoomIdFormat.isWellFormed("abcdefghijklmnopqrstuvwxy_-"))
        #expect(!RoomIdFormat.isWellFormed("abcdefghijklmnopqrstuvwxy_"))
        #expect(!RoomIdFormat.isWellFormed("abcdefghijklmnopqrstuvwxy_+"))
    }

    @Test func sessionAndParticipantIds() {
        let sid = SessionIdFormat.random()
        #expect(SessionIdFormat.isWellFormed(sid))
        #expect(!SessionIdFormat.isWellFormed("S-0123456789ABCDEF"))
        #expect(ParticipantIdFormat.isWellFormed("C-0123456789abcdef"))
        #expect(!ParticipantIdFormat.isWellFormed("S-0123456789abcdef"))
    }

    @Test func reconnectTokenParts() {
        let mac = String(repeating: "ab", count: 32)
        #expect(ReconnectTokenParts(parsing: mac + ".1700000000") == ReconnectTokenParts(parsing: mac + ".1700000000"))
        #expect(ReconnectTokenParts(parsing: mac + ".1700000000")?.expiresAt == 1_700_000_000)
        #expect(ReconnectTokenParts(parsing: mac) == nil)
        #expect(ReconnectTokenParts(parsing: mac + ".x") == nil)
        #expect(ReconnectTokenParts(parsing: String(mac.dropLast()) + "Z.1") == nil)
        #expect(ReconnectTokenParts.signedText(cid: "c", rid: "r", expiresAt: 5) == "c|r|5")
    }
}
