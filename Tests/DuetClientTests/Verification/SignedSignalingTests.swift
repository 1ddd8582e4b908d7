import DuetClient
import DuetProtocol
import Foundation
import Testing

/// The runtime's verified-call half in DuetClient (`SignedSignaling`, `SafetyCodeSource`) against the vectors Python
/// computed (Tests/fixtures/verification); the browser's twin is checked on the same file in
/// Tests/web/signed-signaling.test.mjs.
@Suite struct SignedSignalingTests {
    typealias Vectors = VerificationVectorTests.Vectors

    /// A runtime told, as the engine tells it, that it is `me` in the room with `peer`.
    func told(_ rid: String, me: String, peer: String, key: LinkKey?) -> SignedSignaling {
        var signing = SignedSignaling(key: key)
        signing.note(.room(rid))
        let people = [peer, me].map { ParticipantInfo(cid: $0, joinedAt: 0, connectionStatus: .connected) }
        signing.note(.participants(people, hostCid: peer, myCid: me))
        return signing
    }

    @Test func anOfferIsSignedCheckedAndRefusedOnceTamperedUnsignedOrUnattributed() throws {
        let v = try #require(try VerificationVectorTests.vectors().auth.first)
        let key = try #require(LinkKey(base64url: v.key))
        let alice = told(v.rid, me: v.sender, peer: v.receiver, key: key)
        let bob = told(v.rid, me: v.receiver, peer: v.sender, key: key)
        let signed = try #require(alice.signed(Envelope(.offer, rid: v.rid, payload: ["sdp": .string(v.sdp)])))
        #expect(signed.payload["auth"]?.stringValue == v.auth)
        #expect(signed.payload["for"]?.stringValue == v.receiver, "says whom it was signed for")
        var relayed = signed
        relayed.payload["from"] = .string(v.sender)
        #expect(bob.check(relayed) == .pass)
        var swapped = relayed
        swapped.payload["sdp"] = .string(
            v.sdp.replacingOccurrences(of: "4A:AD", with: "4A:AE").replacingOccurrences(of: "4a:ad", with: "4a:ae"))
        #expect(bob.check(swapped) == .rejected, "fingerprint rewritten")
        #expect(bob.check(Envelope(.offer, payload: ["sdp": .string(v.sdp), "from": .string(v.sender)])) == .rejected, "no auth")
        #expect(bob.check(Envelope(.offer, payload: ["sdp": .string(v.sdp), "auth": .string(v.auth)])) == .rejected, "no from")
        var reflected = relayed
        reflected.payload["from"] = .string(v.receiver)
        #expect(alice.check(reflected) == .dropped, "sent back to its sender: not for her")
        reflected.payload["for"] = nil
        #expect(alice.check(reflected) == .rejected, "sent back to its sender, unaddressed")
        var unaddressed = relayed
        unaddressed.payload["for"] = nil
        #expect(bob.check(unaddressed) == .pass, "an older client's, without for")
        // Without a key nothing is signed or checked; candidates pass untouched.
        let plain = told(v.rid, me: v.sender, peer: v.receiver, key: nil)
        #expect(plain.signed(Envelope(.offer, payload: ["sdp": .string(v.sdp)])) == Envelope(.offer, payload: ["sdp": .string(v.sdp)]))
        #expect(plain.check(Envelope(.offer, payload: ["sdp": .string(v.sdp), "from": .string(v.sender)])) == .pass)
        #expect(bob.check(Envelope(.ice, payload: ["candidate": .null])) == .pass)
    }

    @Test func aVerifyFailedCarriesTheVectorAuthAndAForgedOrKeylessOneIsDropped() throws {
        let v = try VerificationVectorTests.vectors().verifyFailed
        let key = try #require(LinkKey(base64url: v.key))
        #expect(
            VerificationVectorTests.hex(FingerprintAuth.verifyFailedMessage(rid: v.rid, sender: v.sender, receiver: v.receiver))
                == v.messageHex)
        let bob = told(v.rid, me: v.sender, peer: v.receiver, key: key)
        #expect(bob.signed(Envelope(.verifyFailed, rid: v.rid))?.payload["auth"]?.stringValue == v.auth)
        let alice = told(v.rid, me: v.receiver, peer: v.sender, key: key)
        #expect(alice.check(Envelope(.verifyFailed, payload: ["auth": .string(v.auth), "from": .string(v.sender)])) == .pass)
        #expect(
            alice.check(
                Envelope(
                    .verifyFailed,
                    payload: ["auth": .string((v.auth.first == "A" ? "B" : "A") + v.auth.dropFirst()), "from": .string(v.sender)]))
                == .dropped)
        #expect(alice.check(Envelope(.verifyFailed, payload: ["from": .string(v.sender)])) == .dropped)
        let keyless = told(v.rid, me: v.receiver, peer: v.sender, key: nil)
        #expect(keyless.check(Envelope(.verifyFailed, payload: ["auth": .string(v.auth), "from": .string(v.sender)])) == .dropped)
    }

    /// The seat changed hands while a signed message was on its way (Bob left, Carol, who has the link, came): what
    /// Alice signed for Bob reaches Carol, who drops it instead of ending an honest call as intercepted; and a keyed
    /// link never sends a description unsigned.
    @Test func aMessageSignedForAnotherSeatIsDroppedAndNothingGoesUnsigned() throws {
        let v = try #require(try VerificationVectorTests.vectors().auth.first)
        let key = try #require(LinkKey(base64url: v.key))
        let alice = told(v.rid, me: v.sender, peer: v.receiver, key: key)
        var relayed = try #require(alice.signed(Envelope(.offer, rid: v.rid, payload: ["sdp": .string(v.sdp)])))
        relayed.payload["from"] = .string(v.sender)
        let carol = told(v.rid, me: "C-carol", peer: v.sender, key: key)
        #expect(carol.check(relayed) == .dropped)
        relayed.payload["for"] = "C-carol"
        #expect(carol.check(relayed) == .rejected, "addressed to her but not vouched for: an interception after all")
        var failed = try #require(alice.signed(Envelope(.verifyFailed, rid: v.rid)))
        failed.payload["from"] = .string(v.sender)
        #expect(carol.check(failed) == .dropped)
        var alone = SignedSignaling(key: key)
        alone.note(.room(v.rid))
        alone.note(
            .participants([ParticipantInfo(cid: v.sender, joinedAt: 0, connectionStatus: .connected)], hostCid: v.sender, myCid: v.sender))
        #expect(alone.signed(Envelope(.offer, rid: v.rid, payload: ["sdp": .string(v.sdp)])) == nil, "nobody to sign for")
        #expect(alice.signed(Envelope(.answer, rid: v.rid, payload: [:])) == nil, "no SDP to sign")
        #expect(
            alice.signed(Envelope(.ice, rid: v.rid, payload: ["candidate": .null]))
                == Envelope(.ice, rid: v.rid, payload: ["candidate": .null]))
    }

    @Test func theSafetyCodeComesOnceBothSidesAreKnownAndGoesWithThePeer() throws {
        let vectors = try VerificationVectorTests.vectors()
        let (offer, answer) = (vectors.auth[0], vectors.auth[1])
        var source = SafetyCodeSource()
        #expect(source.handle(.room(vectors.safetyCode.rid)) == .none)
        #expect(source.handle(.localDescription(sdp: offer.sdp)) == .none, "only our side known")
        #expect(source.handle(.remoteDescriptionApplied(sdp: answer.sdp)) == .some(vectors.safetyCode.code))
        #expect(source.handle(.remoteDescriptionApplied(sdp: answer.sdp)) == .none, "unchanged: not said again")
        #expect(source.handle(.peerGone) == .some(nil))
        var other = SafetyCodeSource()
        _ = other.handle(.room(vectors.safetyCode.rid))
        _ = other.handle(.localDescription(sdp: answer.sdp))
        #expect(other.handle(.remoteDescriptionApplied(sdp: offer.sdp)) == .some(vectors.safetyCode.code))
    }

    @Test func aDescriptionSignedForOurPreviousSeatIsStillOurs() throws {
        let v = try #require(try VerificationVectorTests.vectors().auth.first)
        let key = try #require(LinkKey(base64url: v.key))
        var bob = told(v.rid, me: v.receiver, peer: v.sender, key: key)
        // Bob's seat was renewed (a fresh join with a new cid); Alice signed for his old one just before she knew.
        bob.note(
            .participants(
                [v.sender, "C-bob-new"].map { ParticipantInfo(cid: $0, joinedAt: 0, connectionStatus: .connected) }, hostCid: v.sender,
                myCid: "C-bob-new"))
        #expect(bob.myCid == "C-bob-new")
        #expect(bob.check(Envelope(.offer, payload: ["sdp": .string(v.sdp), "auth": .string(v.auth), "from": .string(v.sender)])) == .pass)
        // Someone else's seat is not ours.
        let carol = told(v.rid, me: "C-carol", peer: v.sender, key: key)
        #expect(
            carol.check(Envelope(.offer, payload: ["sdp": .string(v.sdp), "auth": .string(v.auth), "from": .string(v.sender)])) == .rejected
        )
    }

    /// duet call, on a link without a key, found the handshake's certificate is not the described one: the code is
    /// then over that certificate, so it differs from the code the other side computes over the descriptions.
    @Test func aHandshakeCertificateOtherThanTheDescribedOneChangesTheCode() throws {
        let vectors = try VerificationVectorTests.vectors()
        var source = SafetyCodeSource()
        _ = source.handle(.room(vectors.safetyCode.rid))
        _ = source.handle(.localDescription(sdp: vectors.auth[0].sdp))
        let described = FingerprintAuth.fingerprints(inSDP: vectors.auth[1].sdp)
        // The described certificate itself (in any order, repeated) is the code the descriptions give.
        #expect(source.handle(.handshakeCertificate(fingerprints: described.reversed() + described)) == .some(vectors.safetyCode.code))
        let presented = try #require(CertificateFingerprint.der(fromPEM: try CertificateFingerprintTests.fixture("certificate.pem")))
        let other = try #require(CertificateFingerprint.fingerprint(of: presented, algorithm: "sha-256"))
        let changed = source.handle(.handshakeCertificate(fingerprints: [other]))
        #expect(changed != .none && changed != .some(vectors.safetyCode.code) && changed != .some(nil))
    }

    @Test func aClosedOrRenewedConnectionForgetsTheCode() throws {
        let vectors = try VerificationVectorTests.vectors()
        var source = SafetyCodeSource()
        _ = source.handle(.room(vectors.safetyCode.rid))
        _ = source.handle(.localDescription(sdp: vectors.auth[0].sdp))
        _ = source.handle(.remoteDescriptionApplied(sdp: vectors.auth[1].sdp))
        #expect(source.handle(.connectionGone) == .some(nil))
        #expect(source.handle(.remoteDescriptionApplied(sdp: vectors.auth[1].sdp)) == .none, "our side is not known again yet")
    }
}
