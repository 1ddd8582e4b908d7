import DuetClient
import DuetProtocol
import DuetTestSupport
import Foundation
import Testing

@testable import DuetRooms

/// The caller's sealed name (issue 31) in Swift: it opens the seals Python's `cryptography` made
/// (Tests/fixtures/ringing/caller-seal.json, also opened by the browser's caller-seal.js), and refuses every altered one.
@Suite struct CallerSealTests {
    struct Fixture: Decodable {
        struct Case: Decodable {
            var linkKey, rid, callId, name: String
            var at: Int64
            var caller: JSONValue
        }
        var cases: [Case]
    }

    @Test func sealsMadeByAnIndependentImplementationOpen() throws {
        let fixture = try JSONDecoder().decode(
            Fixture.self, from: Data(contentsOf: URL(fileURLWithPath: packageRoot + "/Tests/fixtures/ringing/caller-seal.json")))
        #expect(fixture.cases.count == 2)
        for vector in fixture.cases {
            let key = try #require(LinkKey(base64url: vector.linkKey))
            let now = vector.at + 1_000
            #expect(CallerSeal.open(vector.caller, rid: vector.rid, callId: vector.callId, key: key, nowMs: now) == .verified(vector.name))
            #expect(CallerSeal.open(vector.caller, rid: vector.rid, callId: "other", key: key, nowMs: now) == .altered)
            #expect(CallerSeal.open(vector.caller, rid: "other-room", callId: vector.callId, key: key, nowMs: now) == .altered)
            #expect(CallerSeal.open(vector.caller, rid: vector.rid, callId: vector.callId, key: LinkKey.random(), nowMs: now) == .altered)
            // A replayed ring: its seal is older than a ring can be (or from the future by as much).
            #expect(
                CallerSeal.open(
                    vector.caller, rid: vector.rid, callId: vector.callId, key: key, nowMs: vector.at + RingLimits.callerSealMaxAgeMs)
                    == .verified(vector.name))
            #expect(
                CallerSeal.open(
                    vector.caller, rid: vector.rid, callId: vector.callId, key: key, nowMs: vector.at + RingLimits.callerSealMaxAgeMs + 1)
                    == .altered)
            #expect(
                CallerSeal.open(
                    vector.caller, rid: vector.rid, callId: vector.callId, key: key, nowMs: vector.at - RingLimits.callerSealMaxAgeMs - 1)
                    == .altered)
        }
    }

    @Test func aRoundTripAndWhatIsNeverShownAsAName() throws {
        let key = LinkKey.random()
        let sealed = try CallerSeal.seal(name: " Mum\u{7} ", rid: "r", callId: "c", key: key)
        #expect(!String(decoding: JSONText.write(sealed), as: UTF8.self).contains("Mum"), "the name is not in the clear")
        #expect(CallerSeal.open(sealed, rid: "r", callId: "c", key: key) == .verified("Mum"))
        // A plain name in a keyed call is the server's word: never shown.
        #expect(CallerSeal.open(["v": 1, "plain": "Bank"], rid: "r", callId: "c", key: key) == .altered)
        #expect(
            CallerSeal.open(try CallerSeal.seal(name: "Mum", rid: "r", callId: "c", key: nil), rid: "r", callId: "c", key: nil)
                == .unverified("Mum"))
        #expect(CallerSeal.open(nil, rid: "r", callId: "c", key: key) == .altered)
        #expect(CallerSeal.clean(String(repeating: "x", count: 100)).count == 64)
    }

    /// The answer secrets go sealed; their commitments are their SHA-256 (Python's hashlib, an independent hash, agrees
    /// through the browser's twin test; here the server's own check, `SignalingCore.reveals`, must accept them).
    @Test func answerSecretsTravelSealedAndProveTheirAnswer() throws {
        let key = LinkKey.random()
        let secrets = CallerSeal.AnswerSecrets.random()
        #expect(secrets.accept != secrets.decline)
        let sealed = try CallerSeal.seal(name: "Ann", rid: "r", callId: "c", key: key, answers: secrets)
        #expect(!String(decoding: JSONText.write(sealed), as: UTF8.self).contains(secrets.accept))
        let opened = CallerSeal.opened(sealed, rid: "r", callId: "c", key: key)
        #expect(opened.caller == .verified("Ann") && opened.answers == secrets)
        #expect(CallerSeal.opened(sealed, rid: "r", callId: "c", key: LinkKey.random()).answers == nil)
        let commitments = secrets.commitments
        #expect(commitments.isWellFormed)
        #expect(SignalingCore.reveals(secrets.decline, commitments.decline) && !SignalingCore.reveals(secrets.accept, commitments.decline))
    }
}
