import DuetProtocol
import Testing

@testable import DuetClient

/// One test per transition of the call-phase diagram (seed 000 §2).
@Suite struct CallPhaseMachineTests {
    func machine(at phase: CallPhase) -> CallPhaseMachine {
        var machine = CallPhaseMachine()
        switch phase {
        case .idle: break
        case .creatingRoom: _ = machine.handle(.startNewCall)
        case .joining: _ = machine.handle(.joinRoom("R"))
        case .waiting:
            _ = machine.handle(.joinRoom("R"))
            _ = machine.handle(.joined(participants: 1))
        case .inCall:
            _ = machine.handle(.joinRoom("R"))
            _ = machine.handle(.joined(participants: 2))
        case .ending:
            _ = machine.handle(.joinRoom("R"))
            _ = machine.handle(.joined(participants: 2))
            _ = machine.handle(.leaveCall)
        case .error:
            _ = machine.handle(.joinRoom("R"))
            _ = machine.handle(.joinHardTimeout)
        }
        #expect(machine.phase == phase)
        return machine
    }

    @Test("Idle → CreatingRoom : startNewCall()") func idleToCreatingRoom() {
        var m = machine(at: .idle)
        #expect(m.handle(.startNewCall) == [.requestRoomId, .phaseChanged(.creatingRoom)])
    }

    @Test("Idle → Joining : joinRoom(roomId)") func idleToJoining() {
        var m = machine(at: .idle)
        #expect(m.handle(.joinRoom("abc")) == [.startJoin(roomId: "abc"), .phaseChanged(.joining)])
        #expect(m.roomId == "abc")
    }

    @Test("CreatingRoom → Joining : Room ID received") func creatingRoomToJoining() {
        var m = machine(at: .creatingRoom)
        #expect(m.handle(.roomIdReceived("new")) == [.startJoin(roomId: "new"), .phaseChanged(.joining)])
    }

    @Test("CreatingRoom → Error : API failure") func creatingRoomToError() {
        var m = machine(at: .creatingRoom)
        #expect(m.handle(.roomIdFailed("503")) == [.failed(.roomCreationFailed("503")), .phaseChanged(.error)])
    }

    @Test("Joining → Waiting : joined (1 participant)") func joiningToWaiting() {
        var m = machine(at: .joining)
        #expect(m.handle(.joined(participants: 1)) == [.phaseChanged(.waiting)])
    }

    @Test("Joining → InCall : joined (2 participants)") func joiningToInCall() {
        var m = machine(at: .joining)
        #expect(m.handle(.joined(participants: 2)) == [.phaseChanged(.inCall)])
    }

    @Test("Joining → Error : Hard timeout (15s)") func joiningToErrorOnTimeout() {
        var m = machine(at: .joining)
        #expect(m.handle(.joinHardTimeout) == [.failed(.joinTimedOut), .phaseChanged(.error)])
    }

    @Test("Joining → Error : server refuses the join") func joiningToErrorOnRefusal() {
        var m = machine(at: .joining)
        #expect(m.handle(.joinRefused(.roomFull, "full")) == [.failed(.joinRefused(.roomFull, "full")), .phaseChanged(.error)])
    }

    @Test("Waiting → InCall : room_state (2 participants)") func waitingToInCall() {
        var m = machine(at: .waiting)
        #expect(m.handle(.roomState(participants: 1)) == [])
        #expect(m.handle(.roomState(participants: 2)) == [.phaseChanged(.inCall)])
    }

    @Test("Waiting → Ending : leaveCall()") func waitingToEnding() {
        var m = machine(at: .waiting)
        #expect(m.handle(.leaveCall) == [.teardown(.leave), .phaseChanged(.ending)])
    }

    @Test("InCall → Waiting : room_state (1 participant)") func inCallToWaiting() {
        var m = machine(at: .inCall)
        #expect(m.handle(.roomState(participants: 2)) == [])
        #expect(m.handle(.roomState(participants: 1)) == [.phaseChanged(.waiting)])
    }

    @Test("InCall → Ending : leaveCall() / endCall()") func inCallToEndingByUser() {
        var leaving = machine(at: .inCall)
        #expect(leaving.handle(.leaveCall) == [.teardown(.leave), .phaseChanged(.ending)])
        var ending = machine(at: .inCall)
        #expect(ending.handle(.endCall) == [.teardown(.endRoom), .phaseChanged(.ending)])
    }

    @Test("InCall → Ending : room_ended") func inCallToEndingOnRoomEnded() {
        var m = machine(at: .inCall)
        #expect(m.handle(.roomEnded) == [.teardown(.roomGone), .phaseChanged(.ending)])
    }

    @Test("Ending → Idle : cleanup complete") func endingToIdle() {
        var m = machine(at: .ending)
        #expect(m.handle(.cleanupComplete) == [.phaseChanged(.idle)])
        #expect(m.roomId == nil)
    }

    @Test("Error → Idle : dismissError()") func errorToIdle() {
        var m = machine(at: .error)
        #expect(m.failure == .joinTimedOut)
        #expect(m.handle(.dismissError) == [.phaseChanged(.idle)])
        #expect(m.failure == nil)
    }

    @Test("a call in progress never goes to Error") func noErrorFromACall() {
        for phase in [CallPhase.waiting, .inCall] {
            var m = machine(at: phase)
            #expect(m.handle(.joinHardTimeout) == [])
            #expect(m.handle(.joinRefused(.roomFull, "x")) == [])
            #expect(m.phase == phase)
        }
    }

    @Test("events that do not apply change nothing") func irrelevantEvents() {
        for phase in CallPhase.allCases {
            var m = machine(at: phase)
            let before = m
            #expect(m.handle(.cleanupComplete) == (phase == .ending ? [.phaseChanged(.idle)] : []))
            if phase != .ending { #expect(m == before) }
        }
    }

    @Test("Ending → Idle → Joining : a join asked for during cleanup starts right after it (B10)") func joinDuringCleanup() {
        var m = machine(at: .ending)
        #expect(m.handle(.joinRoom("next")).isEmpty)
        #expect(m.handle(.cleanupComplete) == [.phaseChanged(.idle), .startJoin(roomId: "next"), .phaseChanged(.joining)])
        #expect(m.roomId == "next")
    }
}
