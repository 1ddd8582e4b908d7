import DuetProtocol
@testable import DuetClient
import Testing

/// The media watchdog (issue 32 point 2): media that stops while ICE says connected is a stall, on its own and in
/// the engine (status, restart), and growth again is recovery. Mirrored in Tests/web/media-watchdog.test.mjs.
@Suite struct MediaWatchdogMachineTests {
    typealias Sample = MediaWatchdogMachine.Sample

    /// Connected, then `samples` fed one per timer firing; returns the actions of every step after connecting.
    func feed(_ machine: inout MediaWatchdogMachine, _ samples: [Sample?]) -> [MediaWatchdogMachine.Action] {
        var actions: [MediaWatchdogMachine.Action] = []
        for sample in samples {
            let fired = machine.handle(.timerFired(.mediaSample))
            #expect(fired.first == .sample, "each firing asks for a sample")
            actions += machine.handle(.sampled(sample))
        }
        return actions
    }

    func connected() -> MediaWatchdogMachine {
        var machine = MediaWatchdogMachine()
        #expect(machine.handle(.ice(connected: true)) == [.timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))])
        return machine
    }

    @Test func packetsThatStopForTheStallTimeoutAreAStallAndGrowthIsRecovery() {
        var machine = connected()
        let quiet = Array(repeating: Sample(packets: 100, videoFrames: 10), count: MediaWatchdogMachine.stallSamples)
        #expect(feed(&machine, [Sample(packets: 50, videoFrames: 5), Sample(packets: 100, videoFrames: 10)]).isEmpty)
        #expect(feed(&machine, Array(quiet.dropLast())).isEmpty, "one sample short of the timeout")
        #expect(feed(&machine, [quiet.last]) == [.stalled])
        #expect(feed(&machine, [Sample(packets: 100, videoFrames: 10)]).isEmpty, "said once")
        #expect(feed(&machine, [Sample(packets: 150, videoFrames: 20)]) == [.flowing])
    }

    @Test func theStallTimeoutIsTheConstant() {
        #expect(Int64(MediaWatchdogMachine.stallSamples) * ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS == ResilienceConstants.MEDIA_STALL_TIMEOUT_MS)
    }

    @Test func videoFramesThatStopAreAStallOnlyWhenThePeerSaysItsCameraIsOnAndFramesCameBefore() {
        var camera = connected()
        _ = camera.handle(.peerMedia(MediaState(audio: true, video: true, screen: false)))
        // Packets grow (audio), frames stop after having grown once.
        var samples = [Sample(packets: 0, videoFrames: 0), Sample(packets: 10, videoFrames: 5)]
        samples += (1...MediaWatchdogMachine.stallSamples).map { Sample(packets: 10 + Int64($0) * 10, videoFrames: 5) }
        #expect(feed(&camera, samples) == [.stalled])

        var cameraOff = connected()
        _ = cameraOff.handle(.peerMedia(MediaState(audio: true, video: false, screen: false)))
        #expect(feed(&cameraOff, samples).isEmpty, "a camera turned off sends no frames to expect")

        var neverVideo = connected()
        _ = neverVideo.handle(.peerMedia(MediaState(audio: true, video: true, screen: false)))
        let audioOnly = (0...6).map { Sample(packets: Int64($0) * 10, videoFrames: 0) }
        #expect(feed(&neverVideo, audioOnly).isEmpty, "a receiver that never decoded video (audio-only) is not stalled")
    }

    @Test func aPeerThatSendsNothingIsNoStall() {
        var machine = connected()
        _ = machine.handle(.peerMedia(MediaState(audio: false, video: false, screen: false)))
        #expect(feed(&machine, Array(repeating: Sample(packets: 7, videoFrames: 0), count: 8)).isEmpty)
    }

    @Test func countersThatGoBackAreANewBaselineNotGrowth() {
        var machine = connected()
        _ = feed(&machine, [Sample(packets: 500, videoFrames: 50)])
        // A new peer connection counts from zero: the drop is no growth, and neither is the stall it ends.
        let quiet = Array(repeating: Sample(packets: 3, videoFrames: 0), count: MediaWatchdogMachine.stallSamples + 1)
        #expect(feed(&machine, quiet) == [.stalled])
    }

    @Test func leavingConnectedStopsSamplingButOnlyGrowthEndsTheStall() {
        var machine = connected()
        _ = feed(&machine, Array(repeating: Sample(packets: 1, videoFrames: 0), count: MediaWatchdogMachine.stallSamples + 1))
        #expect(machine.stalled)
        // The restart the stall caused: ICE checking, then connected again over a path that may still carry nothing.
        #expect(machine.handle(.ice(connected: false)) == [.timer(.cancel(.mediaSample))])
        #expect(machine.handle(.timerFired(.mediaSample)).isEmpty)
        #expect(machine.handle(.sampled(Sample(packets: 9, videoFrames: 9))).isEmpty)
        _ = machine.handle(.ice(connected: true))
        #expect(machine.stalled, "ICE connected again proves nothing")
        #expect(feed(&machine, [Sample(packets: 1, videoFrames: 0)]).isEmpty, "a new baseline, not growth")
        #expect(feed(&machine, [Sample(packets: 2, videoFrames: 0)]) == [.flowing])
    }

    @Test func aResetForgetsTheStall() {
        var machine = connected()
        _ = feed(&machine, Array(repeating: Sample(packets: 1, videoFrames: 0), count: MediaWatchdogMachine.stallSamples + 1))
        #expect(machine.handle(.reset).isEmpty)
        #expect(!machine.stalled)
    }

    @Test func aRenegotiationStartsTheCountAgainButKeepsAStallAlreadySaid() {
        var machine = connected()
        let quiet = Array(repeating: Sample(packets: 5, videoFrames: 0), count: MediaWatchdogMachine.stallSamples)
        #expect(feed(&machine, Array(quiet.dropLast())).isEmpty)
        #expect(machine.handle(.renegotiated).isEmpty)
        #expect(feed(&machine, Array(quiet.dropLast())).isEmpty, "counted afresh from the renegotiation")
        #expect(feed(&machine, [quiet[0], quiet[0]]) == [.stalled])
        _ = machine.handle(.renegotiated)
        #expect(machine.stalled, "our own restart's answer does not take the stall back")
        #expect(feed(&machine, [Sample(packets: 9, videoFrames: 0)]) == [.flowing])
    }

    @Test func noReportIsNoEvidence() {
        var machine = connected()
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
        return engine.handle(.mediaSampled(.init(packets: packets, videoFrames: 0)))
    }

    @Test(arguments: [true, false])
    func aStallLeavesConnectedAndRestartsICEFromTheSideThatSeesIt(asHost: Bool) throws {
        var engine = try hostInCall(asHost: asHost)
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
        // Media again: connected.
        #expect(sampleRound(&engine, packets: 60).contains(.emit(.connectionStatus(.connected))))
    }

    @Test func aGuestThatCannotRestartShowsTheStallAndLeavesTheRestartToTheHost() throws {
        var engine = try hostInCall(restartsOnlyAsHost: true, asHost: false)
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
