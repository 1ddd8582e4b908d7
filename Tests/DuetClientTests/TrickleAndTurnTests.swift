import DuetProtocol
import Testing

@testable import DuetClient

@Suite struct TrickleIceMachineTests {
    typealias Machine = TrickleIceMachine
    let candidate = IceCandidate(
        candidate:
            "candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.2 rport 46154 generation 0 ufrag EEtu network-id 3 network-cost 10",
        sdpMid: "0", sdpMLineIndex: 0)

    func driver() -> Driven<Machine, Machine.Action> { Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) } }

    @Test func cleaningDropsWebRTCExtensions() {
        #expect(
            Machine.clean(candidate.candidate)
                == "candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.2 rport 46154")
        #expect(
            Machine.clean("candidate:1 1 tcp 1 10.0.0.1 9 typ host tcptype active")
                == "candidate:1 1 tcp 1 10.0.0.1 9 typ host tcptype active")
    }

    @Test("the offering side sends candidates at once") func offererSendsImmediately() {
        var driven = driver()
        driven.send { $0.handle(.offerSent) }
        let actions = driven.send { $0.handle(.localCandidate(candidate)) }
        guard case .sendCandidate(let sent)? = actions.first else {
            Issue.record("not sent")
            return
        }
        #expect(!sent.candidate.contains("ufrag"))
    }

    @Test("the answering side queues candidates until its answer is sent") func answererQueues() {
        var driven = driver()
        driven.send { $0.handle(.answering) }
        #expect(driven.send { $0.handle(.localCandidate(candidate)) }.isEmpty)
        #expect(driven.send { $0.handle(.gatheringComplete) }.isEmpty)
        let flushed = driven.send { $0.handle(.answerSent) }
        #expect(flushed.filter { if case .sendCandidate = $0 { true } else { false } }.count == 1)
        #expect(flushed.last == .sendEndOfCandidates, "gathering already complete: end follows the flush")
    }

    @Test("the offering side holds candidates found before its offer is sent, then sends them with it")
    func offererHoldsUntilOfferSent() {
        var driven = driver()
        driven.send { $0.handle(.offering) }
        #expect(driven.send { $0.handle(.localCandidate(candidate)) }.isEmpty, "held while the offer is being made")
        let flushed = driven.send { $0.handle(.offerSent) }
        #expect(flushed.filter { if case .sendCandidate = $0 { true } else { false } }.count == 1)
        guard case .sendCandidate? = driven.send({ $0.handle(.localCandidate(candidate)) }).first else {
            Issue.record("not sent at once after the offer")
            return
        }
    }

    @Test("gathering that completes while the offer is made ends the generation when the offer is sent")
    func gatheringCompleteWhileOffering() {
        var driven = driver()
        driven.send { $0.handle(.offering) }
        driven.send { $0.handle(.localCandidate(candidate)) }
        #expect(driven.send { $0.handle(.gatheringComplete) }.isEmpty)
        let sent = driven.send { $0.handle(.offerSent) }
        #expect(sent.filter { if case .sendCandidate = $0 { true } else { false } }.count == 1)
        #expect(sent.last == .sendEndOfCandidates, "end-of-candidates at once, not 3 s later")
    }

    @Test("a renewed connection drops what the old one gathered, held or not") func renewalDropsTheOldCandidates() {
        var driven = driver()
        driven.send { $0.handle(.offering) }
        driven.send { $0.handle(.localCandidate(candidate)) }
        driven.send { $0.handle(.connectionRenewed) }
        driven.send { $0.handle(.offering) }
        #expect(driven.send { $0.handle(.offerSent) }.isEmpty, "nothing of the old connection")
        #expect(driven.advance(by: 10_000).isEmpty, "and no end-of-candidates for it")
    }

    @Test("a description that could not be made releases what waited for it") func failedDescriptionReleases() {
        var driven = driver()
        driven.send { $0.handle(.offering) }
        driven.send { $0.handle(.localCandidate(candidate)) }
        driven.send { $0.handle(.gatheringComplete) }
        let released = driven.send { $0.handle(.descriptionFailed) }
        #expect(released.filter { if case .sendCandidate = $0 { true } else { false } }.count == 1)
        #expect(released.last == .sendEndOfCandidates)
        guard case .sendCandidate? = driven.send({ $0.handle(.localCandidate(candidate)) }).first else {
            Issue.record("still holding")
            return
        }
    }

    @Test("end-of-candidates when gathering completes") func endOnGatheringComplete() {
        var driven = driver()
        driven.send { $0.handle(.offerSent) }
        driven.send { $0.handle(.localCandidate(candidate)) }
        #expect(driven.send { $0.handle(.gatheringComplete) }.contains(.sendEndOfCandidates))
        #expect(!driven.send { $0.handle(.gatheringComplete) }.contains(.sendEndOfCandidates), "once")
    }

    @Test("end-of-candidates 3 s after the last candidate, not at 2.999 s; each candidate restarts the wait")
    func endAfterQuiet() {
        var driven = driver()
        driven.send { $0.handle(.offerSent) }
        driven.send { $0.handle(.localCandidate(candidate)) }
        driven.advance(by: 2_000)
        driven.send { $0.handle(.localCandidate(candidate)) }
        #expect(driven.advance(by: 2_999).isEmpty)
        #expect(driven.advance(by: 1).contains(.sendEndOfCandidates))
    }
}

@Suite struct TurnMachineTests {
    typealias Machine = TurnMachine

    func driver() -> Driven<Machine, Machine.Action> { Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) } }

    @Test("fetch is given 2 s, then the fallback servers are used") func fetchTimeout() {
        var driven = driver()
        #expect(driven.send { $0.handle(.token("t1", ttlMs: 900_000)) }.first == .fetchCredentials(token: "t1"))
        #expect(driven.advance(by: 1_999).isEmpty)
        #expect(driven.advance(by: 1).contains(.applyFallbackServers))
    }

    @Test("fetched credentials are applied and refreshed at 0.8 × TTL, not before") func refreshAtEightyPercent() {
        var driven = driver()
        driven.send { $0.handle(.token("t1", ttlMs: 900_000)) }
        #expect(driven.send { $0.handle(.fetched(ttlSeconds: 3_600)) }.contains(.applyFetchedServers))
        #expect(driven.advance(by: 719_999).isEmpty)
        #expect(driven.advance(by: 1).contains(.sendTurnRefresh))
        // The refreshed token is fetched and applied to the live connection.
        #expect(driven.send { $0.handle(.token("t2", ttlMs: 900_000)) }.first == .fetchCredentials(token: "t2"))
        #expect(driven.send { $0.handle(.fetched(ttlSeconds: 3_600)) }.contains(.applyFetchedServers))
    }

    @Test("credentials shorter-lived than the token are refreshed at 0.8 × their own TTL") func shortCredentials() {
        var driven = driver()
        driven.send { $0.handle(.token("t1", ttlMs: 900_000)) }
        driven.send { $0.handle(.fetched(ttlSeconds: 100)) }
        #expect(driven.remaining(.turnRefresh) == 80_000)
    }

    @Test("the refresh timer runs while signaling is down and renews the credentials over HTTP") func refreshWhileSignalingDown() {
        var driven = driver()
        driven.send { $0.handle(.token("t1", ttlMs: 900_000)) }
        driven.send { $0.handle(.fetched(ttlSeconds: 3_600)) }
        driven.send { $0.handle(.signaling(up: false)) }
        let actions = driven.advance(by: 720_000)
        #expect(actions.contains(.fetchCredentials(token: "t1")))
        #expect(!actions.contains(.sendTurnRefresh))
    }

    @Test("a failed refresh keeps the working credentials") func failedRefreshKeepsCredentials() {
        var driven = driver()
        driven.send { $0.handle(.token("t1", ttlMs: 900_000)) }
        driven.send { $0.handle(.fetched(ttlSeconds: 3_600)) }
        driven.send { $0.handle(.token("t2", ttlMs: 900_000)) }
        #expect(!driven.send { $0.handle(.fetchFailed) }.contains(.applyFallbackServers))
    }
}
