import DuetProtocol
import Testing

@testable import DuetClient

/// The engine's side of a verified call (issue 19): the runtime checks each offer and answer against the link's
/// key and hands over only those that pass; one that fails comes as `descriptionRejected`. The engine then tells the
/// peer (`verify_failed`), leaves, says `intercepted` and never retries. The browser engine replays the same
/// inputs in `Tests/web/call-engine.test.mjs` ("verified calls").
@Suite struct VerificationEngineTests {
    let rid = "R" + String(repeating: "a", count: 26)

    func joined(cid: String, participants: [String], epoch: Int64) throws -> Envelope {
        let payload = JoinedPayload(
            hostCid: "C-h", participants: participants.map { ParticipantInfo(cid: $0, joinedAt: 0, connectionStatus: .connected) },
            maxParticipants: 2, reconnect: .fresh, epoch: epoch, reconnectToken: "token-\(cid)", reconnectTokenTTLMs: 1_200_000,
            turnToken: "turn", turnTokenExpiresAt: 0, turnTokenTTLMs: 900_000)
        return Envelope(.joined, rid: rid, cid: cid, epoch: epoch, payload: try JSONValue(encoding: payload))
    }

    func roomState(_ participants: [String], epoch: Int64) throws -> Envelope {
        let state = RoomStatePayload(
            hostCid: "C-h", participants: participants.map { ParticipantInfo(cid: $0, joinedAt: 0, connectionStatus: .connected) },
            epoch: epoch)
        return Envelope(.roomState, rid: rid, epoch: epoch, payload: try JSONValue(encoding: state))
    }

    func offer(epoch: Int64 = 2) -> Envelope {
        Envelope(.offer, rid: rid, cid: "C-g", epoch: epoch, payload: ["sdp": "v=0 offer", "from": "C-h", "auth": "forged"])
    }

    /// The guest of a two-person call on a keyed (or plain) link, signaling up.
    func guestInCall(keyed: Bool = true) throws -> CallEngine {
        var options = CallEngine.Options()
        options.keyedLink = keyed
        var engine = CallEngine(options: options)
        _ = engine.handle(.joinRoom(rid))
        _ = engine.handle(.transportOpened(.ws))
        _ = engine.handle(.message(try joined(cid: "C-g", participants: ["C-h", "C-g"], epoch: 2)))
        #expect(engine.phase.phase == .inCall)
        return engine
    }

    func sentTypes(_ outputs: [CallEngine.Output]) -> [String] {
        outputs.compactMap { if case .send(let envelope) = $0 { envelope.type } else { nil } }
    }

    @Test func anAppliedDescriptionOnAKeyedLinkIsVerified() throws {
        var engine = try guestInCall()
        let applied = engine.handle(.message(offer()))
        #expect(applied.contains(.engine(.setRemoteDescription(.offer, sdp: "v=0 offer"))))
        #expect(engine.handle(.remoteDescriptionApplied(.offer)).contains(.emit(.verification(.verified))))
        #expect(engine.verification == .verified)
        // Said once: the next one changes nothing.
        _ = engine.handle(.localDescriptionReady(.answer, sdp: "v=0 answer"))
        #expect(!engine.handle(.remoteDescriptionApplied(.offer)).contains(.emit(.verification(.verified))))
    }

    @Test func withoutAKeyNothingIsEverVerified() throws {
        var engine = try guestInCall(keyed: false)
        _ = engine.handle(.message(offer()))
        let applied = engine.handle(.remoteDescriptionApplied(.offer))
        #expect(!applied.contains { if case .emit(.verification) = $0 { true } else { false } })
        #expect(engine.verification == .unverified)
        // A plain link has no key to check with: a rejection (which its runtime never sends) and a verify_failed
        // (which anyone could forge) change nothing.
        #expect(engine.handle(.descriptionRejected(offer())).isEmpty)
        #expect(engine.handle(.message(Envelope(.verifyFailed, rid: rid, epoch: 2, payload: ["auth": "x", "from": "C-h"]))).isEmpty)
        #expect(engine.phase.phase == .inCall)
    }

    @Test func aRejectedDescriptionEndsTheCallAsInterceptedAndTellsThePeerFirst() throws {
        var engine = try guestInCall()
        let out = engine.handle(.descriptionRejected(offer()))
        #expect(!out.contains { if case .engine(.setRemoteDescription) = $0 { true } else { false } }, "never applied")
        #expect(sentTypes(out) == ["verify_failed", "leave"], "the peer hears why before we go")
        let verdict = try #require(out.firstIndex(of: .emit(.verification(.intercepted))))
        let ending = try #require(out.firstIndex(of: .emit(.phase(.ending))))
        #expect(verdict < ending, "the app shows the interception before the call looks merely ended")
        #expect(out.contains(.teardown) && out.contains(.engine(.close)))
        #expect(engine.phase.phase == .ending)
        _ = engine.handle(.teardownFinished)
        #expect(engine.phase.phase == .idle)
        #expect(engine.verification == .intercepted, "kept after the call: the screen must not go back")
        // No retry into the same trap: every timer of the call is cancelled, and nothing reconnects.
        for timer in TimerID.allCases { #expect(out.contains(.timer(.cancel(timer))), "\(timer)") }
        #expect(engine.handle(.transportClosed(.networkError)).isEmpty)
        #expect(engine.handle(.networkOnline).isEmpty)
    }

    @Test func aRejectedAnswerToOurOfferEndsTheCallToo() throws {
        var engine = try guestInCall()
        _ = engine.handle(.timerFired(.nonHostFallback))  // the guest offers after 4 s without an offer
        _ = engine.handle(.localDescriptionReady(.offer, sdp: "v=0 our offer"))
        let answer = Envelope(.answer, rid: rid, epoch: 2, payload: ["sdp": "v=0 answer", "from": "C-h"])
        #expect(sentTypes(engine.handle(.descriptionRejected(answer))) == ["verify_failed", "leave"])
    }

    @Test func aRejectionThatWouldHaveBeenDroppedAnywayEndsNothing() throws {
        var engine = try guestInCall()
        // From an older peer session (epoch before this peer's): stale, dropped like any stale description.
        #expect(engine.handle(.descriptionRejected(offer(epoch: 1))).isEmpty)
        // Not a description at all.
        #expect(engine.handle(.descriptionRejected(Envelope(.ice, rid: rid, epoch: 2, payload: ["candidate": .null]))).isEmpty)
        #expect(engine.phase.phase == .inCall)
        // Our offer is kept for after a rejoin, so any answer now answers an offer the peer never saw: dropped.
        _ = engine.handle(.timerFired(.nonHostFallback))
        _ = engine.handle(.transportClosed(.networkError))
        _ = engine.handle(.localDescriptionReady(.offer, sdp: "v=0 kept offer"))
        #expect(engine.queuedRelayTypes == ["offer"])
        #expect(engine.handle(.descriptionRejected(Envelope(.answer, rid: rid, epoch: 2, payload: ["sdp": "old"]))).isEmpty)
        #expect(engine.phase.phase == .inCall)
    }

    /// duet call's runtime holds the DTLS handshake's certificate to the applied description (webrtcbin does not): a
    /// mismatch is about a description already applied, so none of the rules that drop a stale rejection applies —
    /// not even while our offer waits in the outbox for signaling to come back, when a rejected answer is dropped.
    @Test func aCertificateMismatchAlwaysEndsTheCallOnAKeyedLink() throws {
        var engine = try guestInCall()
        _ = engine.handle(.timerFired(.nonHostFallback))
        _ = engine.handle(.transportClosed(.networkError))
        _ = engine.handle(.localDescriptionReady(.offer, sdp: "v=0 kept offer"))
        #expect(engine.queuedRelayTypes == ["offer"])
        let out = engine.handle(.certificateMismatch)
        #expect(out.contains(.emit(.verification(.intercepted))))
        #expect(out.contains { if case .httpLeave = $0 { true } else { false } }, "signaling is down: the seat is given up over HTTP")
        #expect(engine.phase.phase == .ending)
        // Without a key there is nothing verified to contradict: the runtime shows it in the safety code instead.
        var plain = try guestInCall(keyed: false)
        #expect(plain.handle(.certificateMismatch).isEmpty)
        #expect(plain.phase.phase == .inCall)
    }

    @Test func aVerifyFailedFromThePeerEndsTheCallWithoutAnswering() throws {
        var engine = try guestInCall()
        let out = engine.handle(.message(Envelope(.verifyFailed, rid: rid, epoch: 2, payload: ["auth": "proven", "from": "C-h"])))
        #expect(sentTypes(out) == ["leave"], "the peer already knows: no verify_failed back")
        #expect(out.contains(.emit(.verification(.intercepted))))
        // About an earlier peer session: ignored.
        var other = try guestInCall()
        #expect(other.handle(.message(Envelope(.verifyFailed, rid: rid, epoch: 1, payload: ["auth": "old"]))).isEmpty)
    }

    @Test func withNobodyOnTheOtherSideNothingIsProven() throws {
        var engine = try guestInCall()
        _ = engine.handle(.message(offer()))
        _ = engine.handle(.remoteDescriptionApplied(.offer))
        #expect(engine.verification == .verified)
        #expect(engine.handle(.message(try roomState(["C-g"], epoch: 3))).contains(.emit(.verification(.unverified))))
    }

    @Test func nothingLateTakesTheInterceptionBackAndANewPeerIsNotVerifiedByTheOld() throws {
        var engine = try guestInCall()
        _ = engine.handle(.message(offer()))
        _ = engine.handle(.remoteDescriptionApplied(.offer))
        // Another peer in the seat (no empty room in between): nothing of it is proven yet.
        #expect(engine.handle(.message(try roomState(["C-x", "C-g"], epoch: 3))).contains(.emit(.verification(.unverified))))

        var caught = try guestInCall()
        _ = caught.handle(.descriptionRejected(offer()))
        // Late news of the ended call: a membership change, an answer WebRTC finished applying.
        _ = caught.handle(.message(try roomState(["C-x", "C-g"], epoch: 3)))
        _ = caught.handle(.remoteDescriptionApplied(.answer))
        #expect(caught.verification == .intercepted)
        _ = caught.handle(.teardownFinished)
        // Only a new call starts over.
        #expect(caught.handle(.joinRoom(rid)).contains(.emit(.verification(.unverified))))
    }
}
