import DuetProtocol
import Testing

@testable import DuetClient

/// Offer/answer, offer timeout, non-host fallback, ICE restart triggers and cooldown, glare, buffer.
@Suite struct NegotiationMachineTests {
    typealias Machine = NegotiationMachine
    typealias Driver = Driven<Machine, Machine.Action>

    func side(host: Bool, restartsOnlyAsHost: Bool = false) -> Driver {
        var driven = Driven(Machine(restartsOnlyAsHost: restartsOnlyAsHost)) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.peer(present: true, isHost: host, peerEpoch: 1)) }
        return driven
    }

    /// Host with an answered offer and ICE connected.
    func connectedHost(restartsOnlyAsHost: Bool = false) -> Driver {
        var host = side(host: true, restartsOnlyAsHost: restartsOnlyAsHost)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o1")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "a1", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.send { $0.handle(.iceStateChanged(.connected)) }
        return host
    }

    @Test("host offers when the peer arrives") func hostOffers() {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        #expect(
            driven.send { $0.handle(.peer(present: true, isHost: true, peerEpoch: 1)) } == [
                .timer(.cancel(.nonHostFallback)), .createOffer(iceRestart: false),
            ])
        let sent = driven.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        #expect(sent.first == .sendOffer(sdp: "o"))
        #expect(driven.remaining(.offerTimeout) == 8_000)
    }

    @Test("Offer timeout: no answer in 8 s → rollback + ICE restart; nothing at 7.999 s") func offerTimeout() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        #expect(host.advance(by: 7_999).isEmpty)
        let actions = host.advance(by: 1)
        #expect(actions.contains(.rollback))
        #expect(actions.contains(.iceRestartStarted(.offerTimeout)))
        #expect(actions.contains(.createOffer(iceRestart: true)))
    }

    /// Issue 51: an answer names the offer it answers (`answers`), and an answer to an offer rolled back since is never
    /// applied to the offer now out — it would leave this side holding ICE credentials the peer has moved on from.
    @Test("an answer naming an offer rolled back since is not applied to the next offer; the one naming it is")
    func answerToARolledBackOffer() {
        func sdp(_ session: String, _ version: Int) -> String { "v=0\r\no=- \(session) \(version) IN IP4 0.0.0.0\r\ns=-\r\n" }
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: sdp("111", 2))) }
        let timedOut = host.advance(by: 8_000)
        #expect(timedOut.contains(.rollback) && timedOut.contains(.createOffer(iceRestart: true)))
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: sdp("111", 3))) }
        // The peer's answer to the first offer, late: not applied to the second.
        #expect(host.send { $0.handle(.remoteDescription(.answer, sdp: sdp("222", 2), epoch: 1, answers: "111 2")) }.isEmpty)
        #expect(host.machine.signalingState == .haveLocalOffer)
        // Its answer to the second is.
        #expect(
            host.send { $0.handle(.remoteDescription(.answer, sdp: sdp("222", 3), epoch: 1, answers: "111 3")) }
                .contains(.setRemoteDescription(.answer, sdp: sdp("222", 3))))

        // A peer that names no offer is taken at its word, as before.
        var older = side(host: true)
        older.send { $0.handle(.localDescriptionReady(.offer, sdp: sdp("111", 2))) }
        #expect(
            older.send { $0.handle(.remoteDescription(.answer, sdp: sdp("222", 2), epoch: 1)) }
                .contains(.setRemoteDescription(.answer, sdp: sdp("222", 2))))

        // The answering side names the offer it answered, and names it again when the same offer comes again.
        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: sdp("111", 3), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        #expect(
            guest.send { $0.handle(.localDescriptionReady(.answer, sdp: sdp("222", 3))) } == [
                .sendAnswer(sdp: sdp("222", 3), answers: "111 3")
            ])
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: sdp("111", 3), epoch: 1)) } == [
                .sendAnswer(sdp: sdp("222", 3), answers: "111 3")
            ])
    }

    @Test("an answer in time cancels the offer timeout") func answerCancelsTimeout() {
        var host = connectedHost()
        #expect(!host.isScheduled(.offerTimeout))
        #expect(host.advance(by: 60_000).isEmpty)
    }

    @Test("Non-host fallback: no offer after 4 s → non-host offers; at most 2 attempts") func nonHostFallback() {
        var guest = side(host: false)
        #expect(guest.advance(by: 3_999).isEmpty)
        #expect(guest.advance(by: 1) == [.createOffer(iceRestart: false)])
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: "f1")) }
        // Unanswered: rolled back after 8 s, second attempt 4 s later.
        let timedOut = guest.advance(by: 8_000)
        #expect(timedOut.contains(.rollback))
        #expect(
            !timedOut.contains { if case .iceRestartStarted = $0 { true } else { false } },
            "a fallback offer timing out is not an ICE problem")
        #expect(guest.advance(by: 4_000) == [.createOffer(iceRestart: false)])
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: "f2")) }
        guest.advance(by: 8_000)
        #expect(guest.machine.nonHostFallbackAttempts == 2)
        #expect(!guest.advance(by: 60_000).contains(.createOffer(iceRestart: false)), "no third attempt")
    }

    @Test("non-host fallback is cancelled by the host's offer") func fallbackCancelledByOffer() {
        var guest = side(host: false)
        let actions = guest.send { $0.handle(.remoteDescription(.offer, sdp: "o", epoch: 1)) }
        #expect(actions.contains(.setRemoteDescription(.offer, sdp: "o")))
        #expect(!guest.isScheduled(.nonHostFallback))
        #expect(guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }.contains(.createAnswer))
        #expect(guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a")) } == [.sendAnswer(sdp: "a")])
    }

    @Test("ICE restart (disconnected): after 2 s, not at 1.999 s; cancelled if ICE recovers") func iceDisconnected() {
        var host = connectedHost()
        host.send { $0.handle(.iceStateChanged(.disconnected)) }
        #expect(host.advance(by: 1_999).isEmpty)
        #expect(host.advance(by: 1).contains(.iceRestartStarted(.iceDisconnected)))

        var recovering = connectedHost()
        recovering.send { $0.handle(.iceStateChanged(.disconnected)) }
        recovering.advance(by: 1_500)
        recovering.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(recovering.advance(by: 10_000).isEmpty)
    }

    @Test("a suspended peer gets no restart offer (the relay would fail): not for ICE down, a stall, a network change or an escalation")
    func noRestartTowardsASuspendedPeer() {
        var host = connectedHost()
        #expect(host.send { $0.handle(.peerSuspended(true)) } == [])
        #expect(host.send { $0.handle(.iceStateChanged(.disconnected)) } == [], "no disconnected delay scheduled")
        #expect(host.advance(by: 30_000).isEmpty, "no restart on the disconnected delay")
        for event: Machine.Event in [.iceStateChanged(.failed), .mediaStalled, .networkOnline, .requestIceRestart] {
            let actions = host.send { $0.handle(event) }
            #expect(actions.allSatisfy { if case .timer(.cancel) = $0 { true } else { false } }, "\(event): \(actions)")
        }
        // Back, media still down: the restart owed (the last reason) is made at once.
        let back = host.send { $0.handle(.peerSuspended(false)) }
        #expect(back.contains(.iceRestartStarted(.escalation)) && back.contains(.createOffer(iceRestart: true)), "\(back)")

        // The guest that asks the host instead does not ask a suspended one either; it asks when the host is back.
        var guest = Driven(Machine(restartsOnlyAsHost: true)) { machine, timer in machine.handle(.timerFired(timer)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 1)) }
        guest.send { $0.handle(.signaling(up: true)) }
        guest.send { $0.handle(.peerSuspended(true)) }
        #expect(guest.send { $0.handle(.mediaStalled) } == [])
        #expect(guest.send { $0.handle(.peerSuspended(false)) } == [.askPeerToRestart(.mediaStall)])
    }

    @Test(
        "back from a suspension: media up needs no restart, unless what is owed outlasts media (a timed-out offer the peer may have taken)")
    func backFromSuspension() {
        var healthy = connectedHost()
        healthy.send { $0.handle(.peerSuspended(true)) }
        healthy.send { $0.handle(.iceStateChanged(.disconnected)) }
        healthy.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(healthy.send { $0.handle(.peerSuspended(false)) } == [], "media came back by itself")

        var owed = connectedHost()
        owed.send { $0.handle(.iceStateChanged(.failed)) }
        owed.send { $0.handle(.localDescriptionReady(.offer, sdp: "o2")) }  // the restart offer, sent
        owed.send { $0.handle(.peerSuspended(true)) }
        let timedOut = owed.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        #expect(
            timedOut.contains(.rollback) && !timedOut.contains(.createOffer(iceRestart: true)), "rolled back, nothing offered to nobody")
        owed.send { $0.handle(.iceStateChanged(.connected)) }
        let back = owed.send { $0.handle(.peerSuspended(false)) }
        #expect(back.contains(.iceRestartStarted(.offerTimeout)), "the peer may hold the offer we rolled back: \(back)")
    }

    @Test("the peer's leaving forgets its suspension: the next peer is restarted with as usual") func leavingForgetsSuspension() {
        var host = connectedHost()
        host.send { $0.handle(.peerSuspended(true)) }
        host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }
        #expect(host.machine.peerSuspended == false)
    }

    @Test("ICE restart (failed): immediate") func iceFailed() {
        var host = connectedHost()
        let actions = host.send { $0.handle(.iceStateChanged(.failed)) }
        #expect(actions.contains(.iceRestartStarted(.iceFailed)))
        #expect(actions.contains(.createOffer(iceRestart: true)))
    }

    @Test("restartsOnlyAsHost: the non-host never makes a restart offer; the host still does, and the non-host answers it")
    func restartsOnlyAsHost() {
        var guest = Driven(Machine(restartsOnlyAsHost: true)) { machine, timer in machine.handle(.timerFired(timer)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 1)) }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
        guest.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(guest.send { $0.handle(.iceStateChanged(.failed)) }.allSatisfy { if case .createOffer = $0 { false } else { true } })
        #expect(guest.send { $0.handle(.networkOnline) } == [.askPeerToRestart(.networkOnline)], "asked of the host instead")
        #expect(guest.advance(by: 60_000).allSatisfy { if case .createOffer = $0 { false } else { true } }, "no crossing offers, ever")
        let restartOffer = guest.send { $0.handle(.remoteDescription(.offer, sdp: "o2-restart", epoch: 1)) }
        #expect(restartOffer.contains(.setRemoteDescription(.offer, sdp: "o2-restart")), "the host's restart is answered")

        var host = connectedHost(restartsOnlyAsHost: true)
        #expect(host.send { $0.handle(.iceStateChanged(.failed)) }.contains(.createOffer(iceRestart: true)))
    }

    /// A connected guest that cannot restart in place (`duet call`).
    func connectedWebRtcBinGuest() -> Driver {
        var guest = Driven(Machine(restartsOnlyAsHost: true)) { machine, timer in machine.handle(.timerFired(timer)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 1)) }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
        guest.send { $0.handle(.iceStateChanged(.connected)) }
        return guest
    }

    @Test(
        "restartsOnlyAsHost guest: a stall or an escalation asks the host (restart_request), never while the host's offer is being taken or signaling is down"
    )
    func theGuestThatCannotRestartAsksTheHost() {
        var guest = connectedWebRtcBinGuest()
        #expect(guest.send { $0.handle(.mediaStalled) } == [.askPeerToRestart(.mediaStall)])
        #expect(guest.send { $0.handle(.requestIceRestart) } == [.askPeerToRestart(.escalation)], "asked again at each escalation step")
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o2-restart", epoch: 1)) }
        #expect(guest.send { $0.handle(.requestIceRestart) }.isEmpty, "the host's offer is being applied: that is the restart")
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        #expect(guest.send { $0.handle(.requestIceRestart) }.isEmpty, "…and being answered")
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a2")) }
        #expect(guest.send { $0.handle(.requestIceRestart) } == [.askPeerToRestart(.escalation)])
        guest.send { $0.handle(.signaling(up: false)) }
        #expect(guest.send { $0.handle(.requestIceRestart) }.isEmpty, "nobody to hear it")
        #expect(guest.send { $0.handle(.peerAskedForRestart) }.isEmpty, "it cannot restart: never asks back")
        guest.send { $0.handle(.signaling(up: true)) }
        #expect(guest.send { $0.handle(.peerAskedForRestart) }.isEmpty, "it cannot restart: never asks back")
    }

    @Test("peerAskedForRestart: the host restarts (reason peerRequest), not over its own restart offer, and paced by its cooldown")
    func theHostRestartsWhenAsked() {
        var host = connectedHost()
        let asked = host.send { $0.handle(.peerAskedForRestart) }
        #expect(asked == [.iceRestartStarted(.peerRequest), .createOffer(iceRestart: true)])
        #expect(host.send { $0.handle(.peerAskedForRestart) }.isEmpty, "the restart offer being made is the one asked for")
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        #expect(host.send { $0.handle(.peerAskedForRestart) }.isEmpty, "…and so is the one waiting for its answer")
        host.send { $0.handle(.remoteDescription(.answer, sdp: "ra1", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        #expect(host.send { $0.handle(.peerAskedForRestart) }.isEmpty, "within the cooldown")
        #expect(host.machine.pendingRestart == .peerRequest)
        host.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(host.machine.pendingRestart == .peerRequest, "our ICE back says nothing of the peer's media")
        let later = host.advance(by: 10_000)
        #expect(later.contains(.iceRestartStarted(.peerRequest)), "at the cooldown's end, though our own media is up")
        #expect(host.machine.pendingRestart == nil)
        var alone = side(host: true)
        alone.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }
        #expect(alone.send { $0.handle(.peerAskedForRestart) }.isEmpty, "nobody to restart with")
        var guest = side(host: false)
        #expect(
            guest.send { $0.handle(.peerAskedForRestart) }.contains(.createOffer(iceRestart: true)), "a browser guest can restart: it does")
    }

    @Test("a stall that outlasts its restart is restarted again at each cooldown's end, until media flows")
    func aLastingStallIsRestartedEveryCooldown() {
        var host = stalledHostAfterItsRestart()
        #expect(!host.advance(by: 9_999).contains(.iceRestartStarted(.mediaStall)))
        #expect(host.advance(by: 1).contains(.iceRestartStarted(.mediaStall)), "still stalled at the cooldown's end")
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r2")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "ra2", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.send { $0.handle(.mediaFlowing) }
        #expect(host.advance(by: 30_000).allSatisfy { if case .iceRestartStarted = $0 { false } else { true } }, "media flows: no more")
    }

    /// Host whose media stalled, which restarted for it and whose restart was answered: in its cooldown, still stalled.
    func stalledHostAfterItsRestart() -> Driver {
        var host = connectedHost()
        #expect(host.send { $0.handle(.mediaStalled) }.contains(.iceRestartStarted(.mediaStall)))
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "ra1", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        return host
    }

    /// Host that restarted (network online) and whose restart was answered: in its cooldown, media up.
    func hostInCooldown() -> Driver {
        var host = connectedHost()
        host.send { $0.handle(.networkOnline) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "ra1", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        return host
    }

    @Test("the peer's request outranks our own waiting reason, outlasts our media flowing, and survives a signaling drop")
    func thePeersRequestIsKeptUntilItRuns() {
        var host = hostInCooldown()
        host.send { $0.handle(.requestIceRestart) }
        #expect(host.machine.pendingRestart == .escalation)
        host.send { $0.handle(.peerAskedForRestart) }
        #expect(host.machine.pendingRestart == .peerRequest, "the peer's media is down; ours says nothing of it")
        host.send { $0.handle(.mediaStalled) }
        host.send { $0.handle(.mediaFlowing) }
        #expect(host.machine.pendingRestart == .peerRequest)
        host.send { $0.handle(.signaling(up: false)) }
        host.send { $0.handle(.networkOnline) }
        #expect(host.machine.pendingRestart == .peerRequest, "a reason of ours meanwhile does not replace it")
        #expect(host.advance(by: 10_000).allSatisfy { if case .createOffer = $0 { false } else { true } }, "nobody to send it to")
        #expect(host.machine.pendingRestart == .peerRequest)
        host.send { $0.handle(.signaling(up: true)) }
        #expect(host.send { $0.handle(.roomStateAfterReconnect) }.contains(.iceRestartStarted(.peerRequest)), "though our media is up")
        #expect(host.machine.pendingRestart == nil)
    }

    @Test(
        "a stall still there when the cooldown ends with signaling down is restarted after the reconnect; a restart that runs clears what waited"
    )
    func aLastingStallSurvivesASignalingDrop() {
        var host = stalledHostAfterItsRestart()
        host.send { $0.handle(.signaling(up: false)) }
        host.advance(by: 10_000)
        #expect(host.machine.pendingRestart == .mediaStall)
        host.send { $0.handle(.signaling(up: true)) }
        #expect(host.send { $0.handle(.roomStateAfterReconnect) }.contains(.iceRestartStarted(.signalingReconnect)))

        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.requestIceRestart) }
        #expect(guest.machine.pendingRestart == .escalation, "waits for the answer being made")
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
        #expect(guest.send { $0.handle(.networkOnline) }.contains(.iceRestartStarted(.networkOnline)))
        #expect(guest.machine.pendingRestart == nil, "the restart that ran is the one that waited")
    }

    @Test(
        "a stall that outlasts MEDIA_STALL_RESTARTS_BEFORE_RENEWAL restarts answered under a working ICE, whatever asked for them, replaces the connection at its next stall restart; media flowing or ICE down count afresh; unanswered restarts do not count"
    )
    func aStallThatRestartsCannotMendRenewsTheConnection() {
        /// Still stalled with ICE connected at the cooldown's end: restarted again (its answer applied) and reports what it did.
        func restartAgain(_ host: inout Driver, _ n: Int) -> [Machine.Action] {
            let actions = host.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
            guard actions.contains(.iceRestartStarted(.mediaStall)) else { return actions }
            host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r\(n)")) }
            host.send { $0.handle(.remoteDescription(.answer, sdp: "ra\(n)", epoch: 1)) }
            host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
            host.send { $0.handle(.iceStateChanged(.connected)) }
            return actions
        }
        var host = stalledHostAfterItsRestart()  // restart 1, answered, ICE connected
        #expect(ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL == 2)
        #expect(host.machine.restartsWithoutMedia == 1)
        #expect(restartAgain(&host, 2).contains(.iceRestartStarted(.mediaStall)), "restart 2")
        let third = host.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
        #expect(third.contains(.renewPeerConnection), "a third restart would not help: the connection is replaced")
        #expect(third.contains(.iceRestartStarted(.peerConnectionWedged)))
        #expect(third.contains(.createOffer(iceRestart: false)), "the new connection offers afresh")
        #expect(!third.contains(.iceRestartStarted(.mediaStall)))
        #expect(host.machine.restartsWithoutMedia == 0, "the new connection gets its own restarts")

        var flowed = stalledHostAfterItsRestart()
        flowed.send { $0.handle(.mediaFlowing) }
        flowed.send { $0.handle(.mediaStalled) }  // held by the cooldown: restarted at its end
        #expect(restartAgain(&flowed, 2).contains(.iceRestartStarted(.mediaStall)))
        #expect(restartAgain(&flowed, 3).contains(.iceRestartStarted(.mediaStall)), "media flowed between: counted afresh")

        var unanswered = connectedHost()
        #expect(unanswered.send { $0.handle(.mediaStalled) }.contains(.iceRestartStarted(.mediaStall)))
        unanswered.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        #expect(unanswered.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS).contains(.iceRestartStarted(.offerTimeout)))
        unanswered.send { $0.handle(.localDescriptionReady(.offer, sdp: "r2")) }
        unanswered.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        #expect(unanswered.machine.restartsWithoutMedia == 0, "nobody answered: the path may well be what is broken")

        var outage = stalledHostAfterItsRestart()
        #expect(restartAgain(&outage, 2).contains(.iceRestartStarted(.mediaStall)))
        outage.send { $0.handle(.iceStateChanged(.disconnected)) }
        outage.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(outage.machine.restartsWithoutMedia == 0, "ICE went down between: the path, not the connection")
        #expect(restartAgain(&outage, 3).contains(.iceRestartStarted(.mediaStall)), "restarted in place again")

        // A restart made with ICE up whose answer comes after ICE went down (the path moved meanwhile): it proves nothing.
        var moved = stalledHostAfterItsRestart()
        #expect(moved.machine.restartsWithoutMedia == 1)
        #expect(moved.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS).contains(.iceRestartStarted(.mediaStall)))
        moved.send { $0.handle(.localDescriptionReady(.offer, sdp: "r2")) }
        moved.send { $0.handle(.iceStateChanged(.disconnected)) }
        moved.send { $0.handle(.remoteDescription(.answer, sdp: "ra2", epoch: 1)) }
        moved.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        #expect(moved.machine.restartsWithoutMedia == 0, "answered after the path went down: not counted")

        var online = stalledHostAfterItsRestart()
        #expect(restartAgain(&online, 2).contains(.iceRestartStarted(.mediaStall)))
        online.send { $0.handle(.networkOnline) }  // held by the cooldown
        let onlineRestart = online.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
        #expect(onlineRestart.contains(.iceRestartStarted(.networkOnline)), "a network change is restarted in place")
        #expect(!onlineRestart.contains(.renewPeerConnection))

        // A stall amid signaling trouble (sweep seed 1440): the reconnect's restart and a network change's restart, both
        // answered with ICE up and media still stalled, count as the stall's own would; its next stall restart renews.
        var reasons = connectedHost()
        reasons.send { $0.handle(.signaling(up: false)) }
        reasons.send { $0.handle(.mediaStalled) }  // owed: nobody to send it to
        reasons.send { $0.handle(.signaling(up: true)) }
        #expect(reasons.send { $0.handle(.roomStateAfterReconnect) }.contains(.iceRestartStarted(.signalingReconnect)))
        func answer(_ n: Int) {
            reasons.send { $0.handle(.localDescriptionReady(.offer, sdp: "r\(n)")) }
            reasons.send { $0.handle(.remoteDescription(.answer, sdp: "ra\(n)", epoch: 1)) }
            reasons.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        }
        answer(1)
        #expect(reasons.machine.restartsWithoutMedia == 1, "the reconnect's restart moved the path: it counts")
        reasons.send { $0.handle(.networkOnline) }  // held by the cooldown
        #expect(
            reasons.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS).contains(.iceRestartStarted(.networkOnline)),
            "a network change is restarted in place")
        answer(2)
        #expect(reasons.machine.restartsWithoutMedia == 2)
        let renewed = reasons.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
        #expect(renewed.contains(.renewPeerConnection), "the stall restart after them replaces the connection")
        #expect(!renewed.contains(.iceRestartStarted(.mediaStall)))

        // webrtcbin (`restartsOnlyAsHost`) as the host: it keeps restarting; it gives a silent session up by itself.
        var webrtcbin = connectedHost(restartsOnlyAsHost: true)
        #expect(webrtcbin.send { $0.handle(.mediaStalled) }.contains(.iceRestartStarted(.mediaStall)))
        webrtcbin.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        webrtcbin.send { $0.handle(.remoteDescription(.answer, sdp: "ra1", epoch: 1)) }
        webrtcbin.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        for n in 2...4 {
            #expect(restartAgain(&webrtcbin, n).contains(.iceRestartStarted(.mediaStall)), "restart \(n), never a renewal")
        }
    }

    @Test("a lasting stall is not restarted again over the peer's renegotiation, nor by a guest once ICE itself failed")
    func aLastingStallLeavesThePeersRestartAndICEFailureAlone() {
        var host = stalledHostAfterItsRestart()
        host.send { $0.handle(.remoteDescription(.offer, sdp: "peer-restart", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        host.send { $0.handle(.localDescriptionReady(.answer, sdp: "a2")) }
        #expect(
            host.advance(by: 10_000).allSatisfy { if case .iceRestartStarted = $0 { false } else { true } },
            "the peer's renegotiation is given its chance")
        #expect(host.advance(by: 10_000).contains(.iceRestartStarted(.mediaStall)), "one cooldown later, still stalled: again")

        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
        guest.send { $0.handle(.iceStateChanged(.connected)) }
        #expect(guest.send { $0.handle(.mediaStalled) }.contains(.iceRestartStarted(.mediaStall)))
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: "g1")) }
        guest.send { $0.handle(.remoteDescription(.answer, sdp: "ga1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        guest.send { $0.handle(.iceStateChanged(.failed)) }
        #expect(
            guest.advance(by: 10_000).allSatisfy { if case .createOffer = $0 { false } else { true } },
            "ICE failed: the host's job, not a stall to restart again")
    }

    @Test("ICE restart (network): online at once; path change only when ICE is degraded") func networkTriggers() {
        var host = connectedHost()
        #expect(host.send { $0.handle(.networkPathChanged) }.isEmpty)
        #expect(host.send { $0.handle(.networkOnline) }.contains(.iceRestartStarted(.networkOnline)))
    }

    @Test("ICE restart cooldown: a second request within 10 s waits for the cooldown, then runs")
    func cooldown() {
        var host = connectedHost()
        host.send { $0.handle(.iceStateChanged(.failed)) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "ra1", epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        // Still failing: a new trigger at 1 s must not restart before 10 s.
        host.advance(by: 1_000)
        #expect(host.send { $0.handle(.networkOnline) }.isEmpty)
        #expect(host.machine.pendingRestart == .networkOnline)
        #expect(!host.advance(by: 8_999).contains(.createOffer(iceRestart: true)))
        #expect(host.advance(by: 1).contains(.createOffer(iceRestart: true)))
    }

    @Test("a restart wanted while signaling is down fires after the post-reconnect room_state")
    func rememberedWhileSignalingDown() {
        var host = connectedHost()
        host.send { $0.handle(.signaling(up: false)) }
        #expect(!host.send { $0.handle(.iceStateChanged(.failed)) }.contains(.createOffer(iceRestart: true)))
        #expect(host.machine.pendingRestart == .iceFailed)
        host.send { $0.handle(.signaling(up: true)) }
        let actions = host.send { $0.handle(.roomStateAfterReconnect) }
        #expect(actions.contains(.iceRestartStarted(.signalingReconnect)))
    }

    @Test("glare: crossing offers converge — the non-host yields, the host keeps its offer") func glare() {
        var host = side(host: true)
        var guest = side(host: false)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "host-offer")) }
        guest.advance(by: 4_000)
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: "guest-offer")) }
        // Both offers cross on the wire.
        #expect(host.send { $0.handle(.remoteDescription(.offer, sdp: "guest-offer", epoch: 1)) }.isEmpty)
        let yielded = guest.send { $0.handle(.remoteDescription(.offer, sdp: "host-offer", epoch: 1)) }
        #expect(yielded.prefix(1) == [.rollback])
        #expect(yielded.contains(.setRemoteDescription(.offer, sdp: "host-offer")))
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "guest-answer")) }
        #expect(
            host.send { $0.handle(.remoteDescription(.answer, sdp: "guest-answer", epoch: 1)) }.contains(
                .setRemoteDescription(.answer, sdp: "guest-answer")))
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        #expect(host.machine.signalingState == .stable)
        #expect(guest.machine.signalingState == .stable)
    }

    @Test("remote candidates wait for a remote description (≤ 50, oldest dropped) and flush after an offer or an answer")
    func candidateBuffer() {
        var guest = side(host: false)
        for index in 0..<60 {
            #expect(
                guest.send { $0.handle(.remoteCandidate(IceCandidate(candidate: "c\(index)", sdpMid: "0", sdpMLineIndex: 0), epoch: 1)) }
                    .isEmpty)
        }
        #expect(guest.machine.remoteCandidateBuffer.count == 50)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o", epoch: 1)) }
        let flushed = guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guard case .addRemoteCandidates(let list)? = flushed.first else {
            Issue.record("no flush")
            return
        }
        #expect(list.count == 50)
        #expect(list.first??.candidate == "c10")

        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        host.send { $0.handle(.remoteCandidate(IceCandidate(candidate: "early", sdpMid: "0", sdpMLineIndex: 0), epoch: 1)) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: "a", epoch: 1)) }
        #expect(
            host.send { $0.handle(.remoteDescriptionApplied(.answer)) } == [
                .addRemoteCandidates([IceCandidate(candidate: "early", sdpMid: "0", sdpMLineIndex: 0)])
            ])
        #expect(host.send { $0.handle(.remoteCandidate(nil, epoch: 1)) } == [.addRemoteCandidates([nil])], "after: passed straight through")
    }

    @Test("negotiation from an older peer session is dropped") func staleEpoch() {
        var guest = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 5)) }
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: "old", epoch: 4)) }.isEmpty)
        #expect(!guest.send { $0.handle(.remoteDescription(.offer, sdp: "new", epoch: 6)) }.isEmpty)
    }

    /// A description as Chromium writes it: `o=- <session id> <version> …`.
    func described(_ name: String, session: String = "4611731400430051336", version: Int) -> String {
        "v=0\r\no=- \(session) \(version) IN IP4 127.0.0.1\r\ns=-\r\na=ice-ufrag:\(name)\r\n"
    }

    /// The guest's own answers, in a session of its own.
    func guestAnswer(_ index: Int) -> String { described("g\(index)", session: "G", version: 2 + index) }

    /// A guest in a call whose peer's renegotiation offer is still being applied when an offer from the peer's new
    /// connection renews ours: the result of that apply is the old connection's.
    func guestRenewedWhileApplyingAnOffer() -> Driver {
        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "S1", version: 2), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(1))) }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h2", session: "S1", version: 4), epoch: 1)) }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h3", session: "S2", version: 2), epoch: 1)) }
        return guest
    }

    /// A guest that answered the host's offers v3 and then v5 (an ICE restart), and is stable.
    func guestAfterTwoOffers() -> (Driver, older: String) {
        var guest = side(host: false)
        let older = described("u1", version: 3)
        for (index, offer) in [older, described("u2", version: 5)].enumerated() {
            guest.send { $0.handle(.remoteDescription(.offer, sdp: offer, epoch: 1)) }
            guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
            guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(index))) }
        }
        return (guest, older)
    }

    @Test("an offer older than one already applied (duplicated, reordered) never reaches WebRTC") func overtakenOffer() {
        var (guest, older) = guestAfterTwoOffers()
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: older, epoch: 1)) }.isEmpty)
        // Without an origin nothing can be judged: fail open, as before.
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: "v=0\r\ns=-\r\na=ice-ufrag:u0\r\n", epoch: 1)) }.contains(
                .setRemoteDescription(.offer, sdp: "v=0\r\ns=-\r\na=ice-ufrag:u0\r\n")))
    }

    @Test("a newer offer, another peer connection's, and the same offer again are all still taken") func notOvertaken() {
        var (guest, _) = guestAfterTwoOffers()
        let resent = described("u2", version: 5)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: resent, epoch: 1)) } == [
                .sendAnswer(sdp: guestAnswer(1), answers: SDPOrigin.offerName(of: resent))
            ],
            "a resend gets the same answer, naming the offer it answers")
        let reloaded = described("u9", session: "77", version: 2)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: reloaded, epoch: 1)) }.contains(
                .setRemoteDescription(.offer, sdp: reloaded)))
    }

    @Test("an answer older than the peer's newest description is not applied to our next offer") func overtakenAnswer() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o1")) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("u2", version: 4), epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.send { $0.handle(.iceStateChanged(.failed)) }  // restart: a new offer is out
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o2")) }
        #expect(host.send { $0.handle(.remoteDescription(.answer, sdp: described("u1", version: 2), epoch: 1)) }.isEmpty)
        #expect(
            host.send { $0.handle(.remoteDescription(.answer, sdp: described("u3", version: 6), epoch: 1)) }.contains(
                .setRemoteDescription(.answer, sdp: described("u3", version: 6))))
    }

    @Test("after the peer leaves, the next peer's descriptions start a fresh order") func originForgottenWhenAlone() {
        var (guest, older) = guestAfterTwoOffers()
        guest.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 2)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 3)) }
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: older, epoch: 3)) }.contains(.setRemoteDescription(.offer, sdp: older)))
    }

    @Test("webrtcbin's numbering (answers copy our o=, its offers reuse that id from 0) is never judged stale") func webrtcbinOrigins() {
        var guest = side(host: false)
        let first = described("w1", session: "W", version: 0)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: first, epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: described("c1", session: "G", version: 2))) }
        guest.send { $0.handle(.networkOnline) }  // our restart offer, answered by a copy of its own o= line
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: described("c2", session: "G", version: 3))) }
        let echo = described("w1", session: "G", version: 3)
        #expect(
            guest.send { $0.handle(.remoteDescription(.answer, sdp: echo, epoch: 1)) }.contains(.setRemoteDescription(.answer, sdp: echo)))
        guest.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        // webrtcbin's next offer takes the copied id with its own offer count.
        let next = described("w2", session: "G", version: 1)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: next, epoch: 1)) }.contains(.setRemoteDescription(.offer, sdp: next)))
    }

    @Test("on webrtcbin's side, answers that copy the peer's o= do not make the peer's id ours: its overtaken offers still drop")
    func copiedOriginsStayThePeers() {
        var guest = side(host: false)
        for version in [3, 5] {
            let offer = described("h\(version)", session: "H", version: version)
            #expect(
                guest.send { $0.handle(.remoteDescription(.offer, sdp: offer, epoch: 1)) }.contains(
                    .setRemoteDescription(.offer, sdp: offer)))
            guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
            guest.send { $0.handle(.localDescriptionReady(.answer, sdp: described("w", session: "H", version: version))) }  // a copy
        }
        let overtaken = described("h4", session: "H", version: 4)
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: overtaken, epoch: 1)) }.isEmpty)
    }

    @Test("SDPOrigin reads the o= line and nothing else") func originParsing() {
        #expect(
            SDPOrigin(sdp: "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\n")
                == SDPOrigin(sessionId: "4611731400430051336", version: 2))
        #expect(SDPOrigin(sdp: "v=0\no=mozilla...THIS_IS_SDPARTA-99.0 8133 18446744073709551615 IN IP4 0.0.0.0\n")?.version == UInt64.max)
        #expect(SDPOrigin(sdp: "v=0\r\no=- 1 18446744073709551616 IN IP4 0.0.0.0\r\n") == nil, "too big for a version")
        #expect(SDPOrigin(sdp: "v=0\r\no=- 1 -3 IN IP4 0.0.0.0\r\n") == nil)
        #expect(SDPOrigin(sdp: "v=0\r\no=- 1\r\n") == nil)
        #expect(SDPOrigin(sdp: "v=0\r\ns=o=- 1 2\r\n") == nil, "only a line that starts with o=")
        #expect(SDPOrigin(sdp: "v=0\r\no=- 1 +5 IN IP4 0.0.0.0\r\n") == nil, "digits only")
        #expect(SDPOrigin(sdp: "v=0\u{2028}o=- 1 5 IN IP4 0.0.0.0") == nil, "lines end with CR or LF only")
        #expect(SDPOrigin(sdp: "v=0\ro=- 1 5 IN IP4 0.0.0.0\r") == SDPOrigin(sessionId: "1", version: 5))
        #expect(SDPOrigin(sessionId: "1", version: 2).isOlder(than: SDPOrigin(sessionId: "1", version: 3)))
        #expect(!SDPOrigin(sessionId: "1", version: 3).isOlder(than: SDPOrigin(sessionId: "1", version: 3)))
        #expect(!SDPOrigin(sessionId: "1", version: 2).isOlder(than: SDPOrigin(sessionId: "2", version: 3)))
    }

    @Test("offer resend (escalation) re-sends an unanswered offer") func offerResend() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        #expect(host.send { $0.handle(.requestOfferResend) }.first == .sendOffer(sdp: "o"))
    }

    @Test("peer leaves: timers stop, next peer starts fresh") func peerLeaves() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 2)) }
        #expect(!host.isScheduled(.offerTimeout))
        #expect(host.advance(by: 60_000).isEmpty)
    }

    @Test("alone in the room: no ICE restarts, and an unanswered offer is rolled back for the next peer") func aloneNoRestarts() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "o")) }
        #expect(host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 2)) }.first == .rollback)
        #expect(host.send { $0.handle(.iceStateChanged(.failed)) }.filter { if case .createOffer = $0 { true } else { false } }.isEmpty)
        #expect(host.send { $0.handle(.networkOnline) }.isEmpty)
        #expect(host.send { $0.handle(.peer(present: true, isHost: true, peerEpoch: 3)) }.contains(.createOffer(iceRestart: true)))
    }

    // Found by the simulator (duet-sim): WebRTC runs commands later than the machine decides them.

    @Test("a burst of remote offers gets one answer, and no offer of ours starts before it is out") func offerBurst() {
        var guest = side(host: false)
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }.contains(.setRemoteDescription(.offer, sdp: "o1")))
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: "o2", epoch: 1)) }.contains(.setRemoteDescription(.offer, sdp: "o2")))
        #expect(guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }.contains(.createAnswer))
        #expect(!guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }.contains(.createAnswer))
        #expect(guest.send { $0.handle(.requestIceRestart) }.isEmpty, "no restart offer while answering")
        #expect(guest.machine.pendingRestart == .escalation)
        #expect(guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a2")) } == [.sendAnswer(sdp: "a2")])
    }

    @Test("the same offer again is answered with the same answer, not renegotiated") func repeatedOffer() {
        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }.isEmpty, "the answer is on its way")
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) } == [.sendAnswer(sdp: "a1")])
        #expect(
            guest.send { $0.handle(.remoteDescription(.offer, sdp: "o2", epoch: 1)) }.contains(.setRemoteDescription(.offer, sdp: "o2")))
    }

    @Test("an answer arriving while the previous one is being applied is a duplicate; an offer then is no glare") func answerBeingApplied()
    {
        var guest = side(host: false)
        guest.advance(by: ResilienceConstants.NON_HOST_FALLBACK_DELAY_MS)
        guest.send { $0.handle(.localDescriptionReady(.offer, sdp: "g1")) }
        #expect(
            guest.send { $0.handle(.remoteDescription(.answer, sdp: "a1", epoch: 1)) }.contains(.setRemoteDescription(.answer, sdp: "a1")))
        #expect(guest.send { $0.handle(.remoteDescription(.answer, sdp: "a1", epoch: 1)) }.isEmpty)
        let offer = guest.send { $0.handle(.remoteDescription(.offer, sdp: "o2", epoch: 1)) }
        #expect(!offer.contains(.rollback), "our offer is answered: nothing to roll back")
        #expect(offer.contains(.setRemoteDescription(.offer, sdp: "o2")))
    }

    @Test(
        "an offer of ours that timed out while signaling was down is restarted after the reconnect though media flows: the peer may have taken and answered it (issue 51, seed 509)"
    )
    func aTimedOutOfferIsRestartedThoughMediaFlows() {
        var host = connectedHost()
        #expect(host.send { $0.handle(.networkOnline) }.contains(.iceRestartStarted(.networkOnline)))
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        host.send { $0.handle(.signaling(up: false)) }  // the peer's answer to r1 is lost with the link
        #expect(host.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS).contains(.rollback))
        #expect(host.machine.pendingRestart == .offerTimeout, "signaling down: nobody to send it to")
        // Media still flows over the pair both sides had before r1; the peer, though, may hold r1 and its answer.
        host.send { $0.handle(.mediaFlowing) }
        host.send { $0.handle(.iceStateChanged(.connected)) }
        host.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
        #expect(host.machine.pendingRestart == .offerTimeout, "media flowing does not make it unneeded")
        host.send { $0.handle(.signaling(up: true)) }
        #expect(host.send { $0.handle(.roomStateAfterReconnect) }.contains(.iceRestartStarted(.signalingReconnect)))
        #expect(host.machine.pendingRestart == nil)
    }

    @Test(
        "a restart owed for a timed-out offer is not displaced by a later reason that media flowing would drop, nor turned into one by a reconnect that cannot make it yet"
    )
    func anOwedTimedOutOfferKeepsItsReason() {
        // Signaling down: ICE's own restart, wanted later in the same outage, does not displace it.
        var down = connectedHost()
        down.send { $0.handle(.networkOnline) }
        down.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        down.send { $0.handle(.signaling(up: false)) }
        down.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        down.send { $0.handle(.iceStateChanged(.disconnected)) }
        down.advance(by: ResilienceConstants.ICE_DISCONNECTED_RESTART_DELAY_MS)
        #expect(down.machine.pendingRestart == .offerTimeout)
        down.send { $0.handle(.iceStateChanged(.connected)) }
        down.send { $0.handle(.signaling(up: true)) }
        #expect(down.send { $0.handle(.roomStateAfterReconnect) }.contains(.createOffer(iceRestart: true)))

        // Our reconnect while the peer is away cannot make it: still owed as a timed-out offer when the peer is back.
        var away = connectedHost()
        away.send { $0.handle(.networkOnline) }
        away.send { $0.handle(.localDescriptionReady(.offer, sdp: "r1")) }
        away.send { $0.handle(.peerSuspended(true)) }
        away.advance(by: ResilienceConstants.OFFER_TIMEOUT_MS)
        away.send { $0.handle(.signaling(up: false)) }
        away.send { $0.handle(.signaling(up: true)) }
        #expect(away.send { $0.handle(.roomStateAfterReconnect) } == [])
        #expect(away.machine.pendingRestart == .offerTimeout)
        #expect(away.send { $0.handle(.peerSuspended(false)) }.contains(.iceRestartStarted(.offerTimeout)))
    }

    @Test("a restart wanted while only signaling was down is dropped when media is still connected (B3)") func signalingOnlyOutage() {
        var host = connectedHost()
        host.send { $0.handle(.signaling(up: false)) }
        host.send { $0.handle(.requestIceRestart) }
        #expect(host.machine.pendingRestart == .escalation)
        host.send { $0.handle(.signaling(up: true)) }
        #expect(host.send { $0.handle(.roomStateAfterReconnect) }.isEmpty)
        #expect(host.machine.pendingRestart == nil)
    }

    // MARK: - A new peer connection on the other side renews ours (issue 19: a stable DTLS identity)

    @Test("an offer from another peer connection renews ours first, then is taken and answered by the new one")
    func offerFromANewPeerConnectionRenewsOurs() {
        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "S1", version: 2), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(1))) }
        #expect(guest.machine.appliedRemoteSession == "S1")
        // A later offer of the same connection (an ICE restart) is not a new connection.
        let restart = guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h2", session: "S1", version: 4), epoch: 1)) }
        #expect(!restart.contains(.renewPeerConnection))
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(2))) }
        // The host reloaded: its new connection offers with a session of its own.
        let fresh = described("h3", session: "S2", version: 2)
        let actions = guest.send { $0.handle(.remoteDescription(.offer, sdp: fresh, epoch: 1)) }
        #expect(actions.first == .renewPeerConnection)
        #expect(actions.last == .setRemoteDescription(.offer, sdp: fresh))
        #expect(guest.machine.appliedRemoteSession == "S2")
    }

    @Test("an answer from another peer connection renews ours, which offers afresh; a copy of that answer is never applied")
    func answerFromANewPeerConnectionRenewsOursAndOffersAgain() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o1", session: "H", version: 2))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("a1", session: "G1", version: 2), epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        // The guest reloaded; the host's ICE-restart offer is answered by the guest's new connection.
        host.send { $0.handle(.requestIceRestart) }
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o2", session: "H", version: 3))) }
        let newAnswer = described("a2", session: "G2", version: 2)
        let actions = host.send { $0.handle(.remoteDescription(.answer, sdp: newAnswer, epoch: 1)) }
        #expect(actions.first == .renewPeerConnection)
        #expect(actions.last == .createOffer(iceRestart: false), "the new connection offers; the old one's answer is not applied")
        #expect(!actions.contains(.setRemoteDescription(.answer, sdp: newAnswer)))
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o3", session: "H2", version: 2))) }
        #expect(host.send { $0.handle(.remoteDescription(.answer, sdp: newAnswer, epoch: 1)) }.isEmpty, "a copy of the old answer")
        let answer = described("a3", session: "G2", version: 3)
        #expect(
            host.send { $0.handle(.remoteDescription(.answer, sdp: answer, epoch: 1)) }.contains(
                .setRemoteDescription(.answer, sdp: answer)))
    }

    @Test("an answer echoing our own session id (webrtcbin) never renews; a peer that left and came back with a new connection does")
    func echoesNeverRenewButAReturningPeerDoes() {
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o1", session: "H", version: 2))) }
        let echo = described("a1", session: "H", version: 2)
        #expect(!host.send { $0.handle(.remoteDescription(.answer, sdp: echo, epoch: 1)) }.contains(.renewPeerConnection))
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        #expect(host.machine.appliedRemoteSession == nil, "an echo says nothing about the peer's connection")

        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "S1", version: 2), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
        guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(1))) }
        guest.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }
        guest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 3)) }
        let back = guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h2", session: "S2", version: 2), epoch: 3)) }
        #expect(back.first == .renewPeerConnection, "our connection did DTLS with the peer's old one")
    }

    @Test("results of the renewed connection's work still in flight are dropped; a restart offer among them still paces restarts")
    func resultsOfTheOldConnectionAreDropped() {
        var guest = side(host: false)
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h1", session: "S1", version: 2), epoch: 1)) }
        guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }  // createAnswer is now in flight on the old one
        let fresh = described("h2", session: "S2", version: 2)
        #expect(guest.send { $0.handle(.remoteDescription(.offer, sdp: fresh, epoch: 1)) }.first == .renewPeerConnection)
        #expect(guest.machine.staleLocalResults == 1 && guest.machine.staleRemoteResults == 0)
        #expect(
            guest.send { $0.handle(.localDescriptionReady(.answer, sdp: guestAnswer(1))) }.isEmpty, "the old one's answer never goes out")
        #expect(guest.send { $0.handle(.remoteDescriptionApplied(.offer)) } == [.createAnswer], "the new one answers")
        // An offer still being applied when the renewal comes: its result is the old connection's.
        var applying = guestRenewedWhileApplyingAnOffer()
        #expect(applying.machine.staleRemoteResults == 1)
        #expect(applying.send { $0.handle(.remoteDescriptionApplied(.offer)) }.isEmpty, "the old one's offer, applied")
        #expect(applying.send { $0.handle(.remoteDescriptionApplied(.offer)) } == [.createAnswer])
        // A restart offer of the old connection, made after the renewal: it still counts for the cooldown.
        var host = side(host: true)
        host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o1", session: "H", version: 2))) }
        host.send { $0.handle(.remoteDescription(.answer, sdp: described("a1", session: "G1", version: 2), epoch: 1)) }
        host.send { $0.handle(.remoteDescriptionApplied(.answer)) }
        host.advance(by: 10_000)
        host.send { $0.handle(.requestIceRestart) }  // createOffer(iceRestart: true) in flight
        host.send { $0.handle(.remoteDescription(.offer, sdp: described("g2", session: "G2", version: 2), epoch: 1)) }
        let made = host.send { $0.handle(.localDescriptionReady(.offer, sdp: described("o2", session: "H", version: 3))) }
        #expect(made == [.timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS))])
    }

    @Test(
        "a refusal the renewed connection owed is its own: the new one's results still count, and every description still in flight counts as the old one's"
    )
    func aRefusalOfTheRenewedConnectionIsStale() {
        var applying = guestRenewedWhileApplyingAnOffer()
        #expect(applying.machine.staleRemoteResults == 1)
        #expect(applying.send { $0.handle(.remoteDescriptionFailed(.offer)) }.isEmpty, "the old one's refusal")
        #expect(applying.machine.staleRemoteResults == 0)
        #expect(applying.send { $0.handle(.remoteDescriptionApplied(.offer)) } == [.createAnswer], "the new one's offer, answered")
        // A burst of offers (after a suspension): each is being applied when a new session renews the connection.
        var guest = side(host: false)
        for version in [2, 3, 4] {
            guest.send { $0.handle(.remoteDescription(.offer, sdp: described("h\(version)", session: "S1", version: version), epoch: 1)) }
        }
        guest.send { $0.handle(.remoteDescription(.offer, sdp: described("n1", session: "S2", version: 2), epoch: 1)) }
        #expect(guest.machine.staleRemoteResults == 3)
    }

    /// A server that lost the room: the same peer (`returning`) comes back to a connection that is up, or not.
    @Test func theSamePeerReturningToMediaThatFlowedGetsAPlainOffer() {
        func back(_ prepare: (inout Driver) -> Void) -> Driver {
            var host = connectedHost()
            prepare(&host)
            host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }
            host.send { $0.handle(.peer(present: false, isHost: true, peerEpoch: 1)) }  // every view while alone says so again
            return host
        }
        func arrive(_ host: Driver, returning: Bool) -> [Machine.Action] {
            var host = host
            return host.send { $0.handle(.peer(present: true, isHost: true, peerEpoch: 2, returning: returning)) }
        }
        let plain: [Machine.Action] = [.timer(.cancel(.nonHostFallback)), .createOffer(iceRestart: false)]
        let restart: [Machine.Action] = [
            .timer(.cancel(.nonHostFallback)), .iceRestartStarted(.signalingReconnect), .createOffer(iceRestart: true),
        ]
        #expect(arrive(back { _ in }, returning: true) == plain)
        #expect(arrive(back { _ in }, returning: false) == restart)
        #expect(
            arrive(back { $0.send { $0.handle(.mediaStalled) } }, returning: true) == restart,
            "media stalled before the peer went missing is still down when it returns")
        let flowingAgain = back { host in
            host.send { $0.handle(.mediaStalled) }
            host.send { $0.handle(.mediaFlowing) }
        }
        #expect(arrive(flowingAgain, returning: true) == plain)
        // A guest back first does not offer for a returning host (its fallback after the delay, a plain offer)...
        func guestAlone(_ prepare: (inout Driver) -> Void) -> Driver {
            var guest = side(host: false)
            guest.send { $0.handle(.remoteDescription(.offer, sdp: "o1", epoch: 1)) }
            guest.send { $0.handle(.remoteDescriptionApplied(.offer)) }
            guest.send { $0.handle(.localDescriptionReady(.answer, sdp: "a1")) }
            guest.send { $0.handle(.iceStateChanged(.connected)) }
            prepare(&guest)
            guest.advance(by: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)
            guest.send { $0.handle(.peer(present: false, isHost: false, peerEpoch: 1)) }
            return guest
        }
        func offersAndRestarts(_ actions: [Machine.Action]) -> [Machine.Action] {
            actions.filter { if case .createOffer = $0 { true } else if case .iceRestartStarted = $0 { true } else { false } }
        }
        var calm = guestAlone { _ in }
        #expect(offersAndRestarts(calm.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 2, returning: true)) }).isEmpty)
        // ...unless its media had stalled: the returning host offers nothing (it never saw it leave), so it restarts.
        var stalledGuest = guestAlone { $0.send { $0.handle(.mediaStalled) } }
        let restartedGuest = stalledGuest.send { $0.handle(.peer(present: true, isHost: false, peerEpoch: 2, returning: true)) }
        #expect(offersAndRestarts(restartedGuest) == [.iceRestartStarted(.mediaStall), .createOffer(iceRestart: true)])
    }
}
