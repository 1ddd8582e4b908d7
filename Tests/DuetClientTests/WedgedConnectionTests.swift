import DuetProtocol
import Testing

@testable import DuetClient

/// Issue 32 point 3: a peer connection that refuses a remote description or a rollback is replaced, and the new one
/// offers afresh; a second wedge within the replacement's cooldown waits for its end with nothing negotiated on the
/// wedged connection; results and refusals of the replaced connection are its own.
@Suite struct WedgedConnectionTests {
    typealias Machine = NegotiationMachine
    typealias Driver = Driven<Machine, Machine.Action>

    func described(_ name: String, session: String, version: Int) -> String {
        "v=0\r\no=- \(session) \(version) IN IP4 127.0.0.1\r\ns=-\r\na=ice-ufrag:\(name)\r\n"
    }

    static let replaced: [Machine.Action] = [
        .renewPeerConnection, .timer(.cancel(.offerTimeout)), .timer(.cancel(.iceRestartDelay)),
        .timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)),
        .iceRestartStarted(.peerConnectionWedged), .createOffer(iceRestart: false),
    ]

    func guest(restartsOnlyAsHost: Bool = false) -> Driver {
        var guest = Driven(Machine(restartsOnlyAsHost: restartsOnlyAsHost)) { machine, timer in machine.handle(.timerFired(timer)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 1)) }
        return guest
    }

    /// The replacement's fresh offer (session `ours`) goes out, and the peer's renewed connection (`theirs`) answers it.
    func expectFreshOfferAnswered(_ side: inout Driver, ours: String, theirs: String, sourceLocation: SourceLocation = #_sourceLocation) {
        side.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: ours, version: 2))) }
        let answer = described("r1", session: theirs, version: 2)
        #expect(
            side.send { $0.handle(.remoteDescription(.answer, sdp: answer, epoch: 1)) }.contains(
                .setRemoteDescription(.answer, sdp: answer)),
            sourceLocation: sourceLocation)
    }

    /// A host in a call with the guest's connection "G1", which has just restarted ICE (its restart offer is out, in
    /// the restart's cooldown) and got an answer back.
    func hostAnsweredAfterRestart() -> Driver {
        var host = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        host.send { $0.handle(.peer(present: true, isHost: true, peerEpoch: 1)) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("h1", session: "H", version: 2))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("g1", session: "G1", version: 2), epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.send { $0.handle(.iceStateChanged(.connected)) }
        host.send { $0.handle(.networkOnline) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("h2", session: "H", version: 3))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("g2", session: "G1", version: 3), epoch: 1)) }
        return host
    }

    @Test(
        "a refused answer (Chromium refusing a DTLS role flipped by Firefox) replaces the connection at once, even in the restart's cooldown, and the new one offers afresh"
    )
    func aRefusedAnswerReplacesTheConnection() {
        var host = hostAnsweredAfterRestart()
        #expect(host.send { $0.handle(.remoteDescriptionFailed(.answer)) } == Self.replaced)
        // Anything more from the guest's old connection belongs to the one we gave up.
        let late = described("g3", session: "G1", version: 4)
        #expect(host.send { $0.handle(.remoteDescription(.offer, sdp: late, epoch: 1)) }.isEmpty, "the peer's old connection is retired")
        expectFreshOfferAnswered(&host, ours: "H2", theirs: "G2")
    }

    @Test(
        "a refused remote offer replaces the connection too: a peer connection that took an offer of ours renews for the new session, and what its old one sends is stale"
    )
    func aRefusedOfferReplacesTheConnection() {
        var guest = guest()
        // The non-host's fallback offer, answered by the host's connection "H": it holds one of ours.
        guest.advance(by: ResilienceConstants.NON_HOST_FALLBACK_DELAY_MS)
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: described("g1", session: "G", version: 2))) }
        guest.send { $0.handle(.remoteDescription(.answer, sdp: described("h1", session: "H", version: 2), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h2", session: "H", version: 3), epoch: 1)) }
        #expect(guest.send { $0.handle(.remoteDescriptionFailed(.offer)) } == Self.replaced)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h3", session: "H", version: 4), epoch: 1)) }.isEmpty,
            "the host's old connection, which renews for our new session")
        expectFreshOfferAnswered(&guest, ours: "G2", theirs: "H2")
    }

    @Test(
        "the first offer of a peer connection refused: it never took one of ours, so it will not renew — its next offer is taken by the new connection (the review's deadlock: retired, it was dropped for good)"
    )
    func aRefusedFirstOfferLeavesThePeersConnectionUsable() {
        var guest = guest()
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "H", version: 2), epoch: 1)) }
        #expect(guest.send { $0.handle(.remoteDescriptionFailed(.offer)) } == Self.replaced)
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: "G2", version: 2))) }
        // The host ignored our offer (its own was out) and restarts after its offer timeout: we yield and take it.
        let restart = described("h2", session: "H", version: 3)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: restart, epoch: 1)) }.contains(
                .setRemoteDescription(.offer, sdp: restart)))
    }

    @Test(
        "the peer connection left behind (it took no offer of ours) is retired once the peer answers ours from another: a late copy of the offer that wedged us is then stale (issue 51, duet call seed 2268)"
    )
    func aConnectionLeftBehindIsRetiredOnceThePeerRenews() {
        let wedging = described("h1", session: "H", version: 2)
        var guest = guest()
        guest.send { $0.handle(.remoteDescription(.offer, sdp: wedging, epoch: 1)) }
        #expect(guest.send { $0.handle(.remoteDescriptionFailed(.offer)) } == Self.replaced)
        // The peer renewed all the same, and its new connection answers our fresh offer.
        expectFreshOfferAnswered(&guest, ours: "G2", theirs: "H2")
        guest.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: wedging, epoch: 1)) }.isEmpty,
            "a copy of the offer that wedged us, from the connection the peer left")
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h2", session: "H", version: 3), epoch: 1)) }.isEmpty)
        let restart = described("h3", session: "H2", version: 3)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: restart, epoch: 1)) }.contains(
                .setRemoteDescription(.offer, sdp: restart)),
            "the new one's restart is taken")

        // The same connection of the peer's answering our fresh offer: it goes on, and is not retired.
        var same = self.guest()
        same.send { $0.handle(.remoteDescription(.offer, sdp: wedging, epoch: 1)) }
        same.send { $0.handle(.remoteDescriptionFailed(.offer)) }
        same.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: "G2", version: 2))) }
        let answer = described("r1", session: "H", version: 3)
        #expect(
            same.send { $0.handle(.remoteDescription(.answer, sdp: answer, epoch: 1)) }.contains(
                .setRemoteDescription(.answer, sdp: answer)))
        same.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        let again = described("h4", session: "H", version: 4)
        #expect(
            same.send { $0.handle(.remoteDescription(.offer, sdp: again, epoch: 1)) }.contains(.setRemoteDescription(.offer, sdp: again)))
    }

    @Test(
        "a webrtcbin guest (restarts only as host) replaces a wedged connection and offers afresh: an initial offer of a new session, which browsers follow (its restart offers they cannot)"
    )
    func aWebrtcbinGuestReplacesAWedgedConnection() {
        var guest = guest(restartsOnlyAsHost: true)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "H", version: 2), epoch: 1)) }
        #expect(guest.send { $0.handle(.remoteDescriptionFailed(.offer)) } == Self.replaced)
    }

    @Test("a failed rollback replaces the connection; a failed rollback of the connection just replaced does not replace the new one")
    func aFailedRollbackReplacesTheConnection() {
        var host = hostAnsweredAfterRestart()
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
        // A restart whose rollback of an unanswered offer fails.
        host.send { $0.handle(.requestIceRestart) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("h3", session: "H", version: 4))) }
        let timedOut = host.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        #expect(timedOut.contains(.rollback))
        #expect(host.send { $0.handle(.rollbackFailed) } == Self.replaced)
        // The restart offer asked of the old connection with that rollback fails there: its own, and so is a second
        // failed rollback that was queued before the renewal.
        #expect(host.send { $0.handle(.localDescriptionFailed) }.isEmpty)
        #expect(host.send { $0.handle(.rollbackFailed) }.isEmpty, "the replaced connection's rollback")
        #expect(!host.machine.renewalPending)
    }

    @Test("a second wedge within the replacement's cooldown waits for its end; nothing is negotiated on the wedged connection meanwhile")
    func aSecondWedgeWaitsForTheCooldown() {
        var host = hostAnsweredAfterRestart()
        host.send { $0.handle(.remoteDescriptionFailed(.answer)) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: "H2", version: 2))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("r1", session: "G2", version: 2), epoch: 1)) }
        #expect(host.send { $0.handle(.remoteDescriptionFailed(.answer)) }.isEmpty, "within the replacement's cooldown")
        #expect(host.machine.renewalPending)
        #expect(host.send { $0.handle(.requestIceRestart) }.isEmpty, "no restart on a wedged connection")
        #expect(host.send { $0.handle(.requestOfferResend) }.isEmpty, "no offer resent from a wedged connection")
        #expect(
            host.send { $0.handle(.remoteDescription(.offer, sdp: described("r2", session: "G2", version: 3), epoch: 1)) }.isEmpty,
            "no description handed to a wedged connection")
        #expect(host.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS - 1).isEmpty)
        #expect(host.advance(by: 1) == Self.replaced)
    }

    @Test("the peer leaving with a replacement waiting: replaced now, no rollback asked of it, no offer to nobody")
    func aWaitingReplacementHappensWhenThePeerLeaves() {
        var host = hostAnsweredAfterRestart()
        host.send { $0.handle(.remoteDescriptionFailed(.answer)) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: "H2", version: 2))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("r1", session: "G2", version: 2), epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionFailed(.answer)) }
        let left = host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }
        #expect(left.first == .renewPeerConnection)
        #expect(!left.contains(.rollback) && !left.contains { if case .createOffer = $0 { true } else { false } })
        #expect(!host.machine.renewalPending)
    }

    @Test("an offer of the replacement that times out while another wedge waits: replaced at once, not restarted on the wedged one")
    func anOfferTimeoutWithAWaitingReplacement() {
        var host = hostAnsweredAfterRestart()
        host.send { $0.handle(.remoteDescriptionFailed(.answer)) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("n1", session: "H2", version: 2))) }
        host.send { $0.handle(.rollbackFailed) }  // the new connection's own (it made an offer): a second wedge
        #expect(host.machine.renewalPending)
        let timedOut = host.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        #expect(timedOut == [.timer(.cancel(.iceRestartCooldown))] + Self.replaced)
    }
}
