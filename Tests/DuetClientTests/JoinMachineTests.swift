import Testing

@testable import DuetClient

/// Join timers: snapshot 2 s, push endpoint 250 ms, kickstart 1.2 s, recovery 4 s, hard timeout 15 s.
@Suite struct JoinMachineTests {
    typealias Machine = JoinMachine

    func join(_ options: Machine.Options = .init(), open: Bool = false) -> Driven<Machine, Machine.Action> {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        if open { driven.send { $0.handle(.signalingOpened) } }
        driven.send { $0.handle(.start(options)) }
        return driven
    }

    @Test("join sent at once when signaling is open") func sendsWhenOpen() {
        var driven = Driven(Machine()) { machine, timer in machine.handle(.timerFired(timer)) }
        driven.send { $0.handle(.signalingOpened) }
        let actions = driven.send { $0.handle(.start(.init())) }
        #expect(actions.contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
        #expect(driven.remaining(.joinRecovery) == 4_000)
    }

    @Test("snapshot prepare waits at most 2 s") func snapshotTimeout() {
        var driven = join(.init(prepareSnapshot: true), open: true)
        #expect(!driven.advance(by: 1_999).contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
        #expect(driven.advance(by: 1).contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
    }

    @Test("a ready snapshot is sent with the join") func snapshotReady() {
        var driven = join(.init(prepareSnapshot: true), open: true)
        #expect(driven.send { $0.handle(.snapshotReady("snap-1")) }.contains(.sendJoin(snapshotId: "snap-1", pushEndpoint: nil)))
    }

    @Test("push endpoint waits at most 250 ms") func pushEndpointWait() {
        var driven = join(.init(pushSupported: true), open: true)
        #expect(driven.advance(by: 249).isEmpty)
        #expect(driven.advance(by: 1).contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
        var fast = join(.init(pushSupported: true), open: true)
        #expect(
            fast.send { $0.handle(.pushEndpointReady("https://push/1")) }.contains(
                .sendJoin(snapshotId: nil, pushEndpoint: "https://push/1")))
    }

    @Test("Join kickstart: signaling not started after 1.2 s → ensureSignalingConnection, once")
    func kickstart() {
        // A snapshot that never comes keeps the join from asking for signaling itself.
        var driven = join(.init(prepareSnapshot: true))
        #expect(!driven.advance(by: 1_199).contains(.ensureSignalingConnection))
        #expect(driven.advance(by: 1).contains(.ensureSignalingConnection))
        #expect(!driven.advance(by: 500).contains(.ensureSignalingConnection))
    }

    @Test("kickstart does nothing when signaling is already open") func kickstartNotNeeded() {
        var driven = join(.init(prepareSnapshot: true), open: true)
        #expect(!driven.advance(by: 1_200).contains(.ensureSignalingConnection))
    }

    @Test("Join recovery: no joined ack 4 s after sending → re-send join") func recoveryResends() {
        var driven = join(open: true)
        #expect(driven.advance(by: 3_999).isEmpty)
        #expect(driven.advance(by: 1).contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
    }

    @Test("Join recovery with signaling down → ensureSignalingConnection, join sent when it opens")
    func recoveryReconnects() {
        var driven = join(open: true)
        driven.send { $0.handle(.signalingClosed) }
        #expect(driven.advance(by: 4_000).contains(.ensureSignalingConnection))
        #expect(driven.send { $0.handle(.signalingOpened) }.contains(.sendJoin(snapshotId: nil, pushEndpoint: nil)))
    }

    @Test("Join recovery after an ack that did not move the phase → promote") func recoveryPromotes() {
        var machine = Machine()
        _ = machine.handle(.signalingOpened)
        _ = machine.handle(.start(.init()))
        _ = machine.handle(.acknowledged)
        #expect(machine.handle(.timerFired(.joinRecovery)) == [.promote])
    }

    @Test("Join hard timeout: still joining at 15 s → fail; not at 14.999 s") func hardTimeout() {
        var driven = join(.init(prepareSnapshot: true))
        #expect(!driven.advance(by: 14_999).contains(.fail))
        #expect(driven.advance(by: 1).contains(.fail))
        #expect(driven.deadlines.isEmpty)
    }

    @Test("an ack clears every join timer") func ackClearsTimers() {
        var driven = join(open: true)
        driven.send { $0.handle(.acknowledged) }
        #expect(driven.deadlines.isEmpty)
        #expect(driven.advance(by: 60_000).isEmpty)
    }
}
