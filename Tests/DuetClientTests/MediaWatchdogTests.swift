import DuetProtocol
import Testing

@testable import DuetClient

/// The media watchdog (issue 32 point 2): inbound packets that stop while ICE says connected are a stall, on its own
/// and in the engine (status, restart), and only growth ends it. Mirrored in Tests/web/media-watchdog.test.mjs.
@Suite struct MediaWatchdogMachineTests {
    /// One timer firing and one reading per entry; the actions of the readings.
    func feed(_ machine: inout MediaWatchdogMachine, _ samples: [Int64?]) -> [MediaWatchdogMachine.Action] {
        var actions: [MediaWatchdogMachine.Action] = []
        for packets in samples {
            let fired = machine.handle(.timerFired(.mediaSample))
            #expect(fired.first == .sample, "each firing asks for a reading")
            actions += machine.handle(.sampled(packets: packets))
        }
        return actions
    }

    func connected() -> MediaWatchdogMachine {
        var machine = MediaWatchdogMachine()
        #expect(
            machine.handle(.ice(connected: true)) == [
                .timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))
            ])
        return machine
    }

    /// Connected, media arrived, then stalled.
    func stalled() -> MediaWatchdogMachine {
        var machine = connected()
        #expect(feed(&machine, [10, 20] + Array(repeating: 20, count: MediaWatchdogMachine.stallSamples)) == [.stalled])
        return machine
    }

    @Test func packetsThatStopForTheStallTimeoutAreAStallAndGrowthIsRecovery() {
        var machine = connected()
        #expect(feed(&machine, [50, 100]).isEmpty)
        #expect(feed(&machine, Array(repeating: 100, count: MediaWatchdogMachine.stallSamples - 1)).isEmpty, "one reading short")
        #expect(feed(&machine, [100]) == [.stalled])
        #expect(feed(&machine, [100]).isEmpty, "said once")
        #expect(feed(&machine, [150]) == [.flowing])
    }

    @Test func theStallTimeoutIsTheConstantRoundedUpToReadings() {
        #expect(MediaWatchdogMachine.stallSamples == 5)
        #expect(
            Int64(MediaWatchdogMachine.stallSamples) * ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS
                >= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS)
    }

    @Test func aPeerThatNeverSentAnythingIsNoStallUnlessItSaysItSends() {
        var machine = connected()
        #expect(feed(&machine, Array(repeating: 0, count: 12)).isEmpty, "no device, nothing said")
        // Found by the sweep (seed 4660): a black hole from a new connection's first moment.
        _ = machine.handle(.peerSends(true))
        #expect(feed(&machine, Array(repeating: 0, count: MediaWatchdogMachine.stallSamples)) == [.stalled])
    }

    @Test func onlyGrowthEndsAStall() {
        // ICE reconnects after the restart the stall caused, over a path that still carries nothing.
        var machine = stalled()
        #expect(machine.handle(.ice(connected: false)) == [.timer(.cancel(.mediaSample))])
        #expect(machine.handle(.timerFired(.mediaSample)).isEmpty)
        #expect(machine.handle(.sampled(packets: 99)).isEmpty)
        _ = machine.handle(.ice(connected: true))
        #expect(feed(&machine, [20, 20, 20]).isEmpty, "a new baseline and flat readings are no growth")
        _ = machine.handle(.renegotiated)
        #expect(feed(&machine, [20, 20]).isEmpty)
        #expect(feed(&machine, [3, 3]).isEmpty, "a new connection's counters are no growth")
        #expect(machine.stalled)
        #expect(feed(&machine, [4]) == [.flowing])
    }

    @Test func aRenegotiationStartsTheCountAgain() {
        var machine = connected()
        #expect(feed(&machine, [5, 9] + Array(repeating: 9, count: MediaWatchdogMachine.stallSamples - 1)).isEmpty)
        #expect(machine.handle(.renegotiated).isEmpty)
        #expect(
            feed(&machine, Array(repeating: 9, count: MediaWatchdogMachine.stallSamples)).isEmpty, "counted afresh: the first is a baseline"
        )
        #expect(feed(&machine, [9]) == [.stalled])
    }

    @Test func aNewConnectionMustCarrySomethingBeforeItCanStall() {
        var machine = connected()
        _ = feed(&machine, [500, 600])
        // The counters drop: a new connection, which has carried nothing yet.
        #expect(feed(&machine, Array(repeating: 0, count: MediaWatchdogMachine.stallSamples + 2)).isEmpty)
        #expect(feed(&machine, [7] + Array(repeating: 7, count: MediaWatchdogMachine.stallSamples)) == [.stalled])
    }

    /// Found by the sweep (seed 711): a server restart rebuilt the room, the peer came back on the same connection,
    /// and a watchdog that had also forgotten what the connection carried never saw the black hole that remained.
    @Test func aResetForgetsTheStallButNotWhatTheConnectionCarried() {
        var machine = stalled()
        #expect(machine.handle(.reset).isEmpty)
        #expect(!machine.stalled)
        #expect(feed(&machine, Array(repeating: 20, count: MediaWatchdogMachine.stallSamples + 1)) == [.stalled])
    }

    @Test func noReportIsNoEvidence() {
        var machine = connected()
        _ = feed(&machine, [1, 2])
        #expect(feed(&machine, Array(repeating: nil, count: 10)).isEmpty)
    }
}

@Suite struct MediaWatchdogEngineTests {
    let rid = "R" + String(repeating: "a", count: 26)

    /// A host in a call with its guest, ICE connected, media flowing.
    func hostInCall(restartsOnlyAsHost: Bool = false, asHost: Bool = true) throws -> CallEngine {
        var options = CallEngine.Options()
        options.restartsOnlyAsHost = restartsOnlyAsHost
        var engine = CallEngine(options: options)
        _ = engine.handle(.joinRoom(rid))
        _ = engine.handle(.transportOpened(.ws))
        let me = asHost ? "C-h" : "C-g"
        let payload = JoinedPayload(
            hostCid: "C-h", participants: ["C-h", "C-g"].map { ParticipantInfo(cid: $0, joinedAt: 0, connectionStatus: .connected) },
            maxParticipants: 2, reconnect: .fresh, epoch: 2, reconnectToken: "t", reconnectTokenTTLMs: 1_200_000,
            turnToken: "turn", turnTokenExpiresAt: 0, turnTokenTTLMs: 900_000)
        _ = engine.handle(.message(Envelope(.joined, rid: rid, cid: me, epoch: 2, payload: try JSONValue(encoding: payload))))
        if asHost {
            _ = engine.handle(.localDescriptionReady(.offer, sdp: "o1"))
            _ = engine.handle(.message(Envelope(.answer, rid: rid, epoch: 2, payload: ["sdp": "a1", "from": "C-g"])))
            _ = engine.handle(.remoteDescriptionApplied(.answer))
        } else {
            _ = engine.handle(.message(Envelope(.offer, rid: rid, epoch: 2, payload: ["sdp": "o1", "from": "C-h"])))
            _ = engine.handle(.remoteDescriptionApplied(.offer))
            _ = engine.handle(.localDescriptionReady(.answer, sdp: "a1"))
        }
        let connected = engine.handle(.iceStateChanged(.connected))
        #expect(connected.contains(.timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))))
        #expect(engine.status.status == .connected)
        return engine
    }

    func sampleRound(_ engine: inout CallEngine, packets: Int64) -> [CallEngine.Output] {
        let fired = engine.handle(.timerFired(.mediaSample))
        #expect(fired.contains(.sampleMedia))
        return engine.handle(.mediaSampled(packets: packets))
    }

    @Test(arguments: [true, false])
    func aStallLeavesConnectedAndRestartsICEFromTheSideThatSeesIt(asHost: Bool) throws {
        var engine = try hostInCall(asHost: asHost)
        _ = sampleRound(&engine, packets: 5)
        _ = sampleRound(&engine, packets: 10)
        var out: [CallEngine.Output] = []
        for _ in 0..<MediaWatchdogMachine.stallSamples { out += sampleRound(&engine, packets: 10) }
        #expect(out.contains(.emit(.connectionStatus(.recovering))))
        #expect(out.contains(.emit(.iceRestart(.mediaStall))))
        #expect(out.contains(.engine(.createOffer(iceRestart: true))))
        // The restart's answer on an ICE that never left connected does not call the call healthy while media is out.
        _ = engine.handle(.localDescriptionReady(.offer, sdp: "o2"))
        _ = engine.handle(.message(Envelope(.answer, rid: rid, epoch: 2, payload: ["sdp": "a2", "from": asHost ? "C-g" : "C-h"])))
        #expect(!engine.handle(.remoteDescriptionApplied(.answer)).contains(.emit(.connectionStatus(.connected))))
        // The restart's ICE goes checking and back to connected (Firefox does): still nothing arrives, still not healthy.
        _ = engine.handle(.iceStateChanged(.checking))
        #expect(!engine.handle(.iceStateChanged(.connected)).contains(.emit(.connectionStatus(.connected))))
        #expect(engine.status.status != .connected)
        #expect(sampleRound(&engine, packets: 10).isEmpty, "a new baseline after ICE reconnected")
        #expect(sampleRound(&engine, packets: 10).isEmpty, "a flat reading is no growth")
        #expect(engine.status.status != .connected)
        // Media again: connected.
        #expect(sampleRound(&engine, packets: 60).contains(.emit(.connectionStatus(.connected))))
    }

    @Test func aGuestThatCannotRestartShowsTheStallAndLeavesTheRestartToTheHost() throws {
        var engine = try hostInCall(restartsOnlyAsHost: true, asHost: false)
        _ = sampleRound(&engine, packets: 5)
        _ = sampleRound(&engine, packets: 10)
        var out: [CallEngine.Output] = []
        for _ in 0..<MediaWatchdogMachine.stallSamples { out += sampleRound(&engine, packets: 10) }
        #expect(out.contains(.emit(.connectionStatus(.recovering))))
        #expect(!out.contains { if case .engine(.createOffer) = $0 { true } else { false } })
    }

    @Test func aCallThatEndsStopsTheWatchdog() throws {
        var engine = try hostInCall()
        let left = engine.handle(.leave)
        #expect(left.contains(.timer(.cancel(.mediaSample))))
        #expect(!engine.handle(.timerFired(.mediaSample)).contains(.sampleMedia))
    }
}

@Suite struct MediaStallRestartTests {
    /// A stall restart waiting for the cooldown is dropped when the peer's own offer (its restart) is applied: it
    /// would only cross it.
    @Test func aWaitingStallRestartGivesWayToThePeersRestart() {
        var machine = NegotiationMachine()
        _ = machine.handle(.peer(present: true, isHost: true, peerEpoch: 1))
        _ = machine.handle(.localDescriptionReady(.offer, sdp: "o1"))
        _ = machine.handle(.remoteDescription(.answer, sdp: "a1", epoch: 1))
        _ = machine.handle(.remoteDescriptionApplied(.answer))
        _ = machine.handle(.iceStateChanged(.connected))
        _ = machine.handle(.requestIceRestart)  // a restart: the cooldown runs from its offer
        _ = machine.handle(.localDescriptionReady(.offer, sdp: "o2"))
        _ = machine.handle(.remoteDescription(.answer, sdp: "a2", epoch: 1))
        _ = machine.handle(.remoteDescriptionApplied(.answer))
        #expect(machine.handle(.mediaStalled).isEmpty, "held back by the cooldown")
        #expect(machine.pendingRestart == .mediaStall)
        _ = machine.handle(.remoteDescription(.offer, sdp: "peer restart", epoch: 1))
        _ = machine.handle(.remoteDescriptionApplied(.offer))
        #expect(machine.pendingRestart == nil)
    }
}
