import DuetProtocol

/// The phase of a call, as the seeds' diagram (000 §2): it drives what the user sees and which
/// recovery mechanisms run.
public enum CallPhase: String, Sendable, CaseIterable {
    case idle, creatingRoom, joining, waiting, inCall, ending, error
}

/// Why a call is in `error`. Only joining can fail; a call in progress never does.
public enum CallFailure: Equatable, Sendable {
    case roomCreationFailed(String)
    case joinTimedOut
    case joinRefused(ErrorCode, String)
}

/// `Idle → CreatingRoom → Joining → Waiting ↔ InCall → Ending → Idle`, and `Error`.
public struct CallPhaseMachine: Sendable, Equatable {
    public enum Event: Sendable, Equatable {
        case startNewCall
        case joinRoom(String)
        case roomIdReceived(String)
        case roomIdFailed(String)
        case joined(participants: Int)
        case joinRefused(ErrorCode, String)
        case joinHardTimeout
        case roomState(participants: Int)
        case leaveCall
        case endCall
        /// `room_ended`, or the server says the room is gone (`ROOM_ENDED` on a rejoin).
        case roomEnded
        case cleanupComplete
        case dismissError
        /// Another connection proved this seat with its token (close 4001: another tab, window or device took
        /// the call over). The seat is theirs now: stop, without a goodbye that would remove it from under them.
        case replaced
        /// A verified call's description failed its check (`tellPeer`: we found it, so the peer must hear), or the
        /// peer said it found one (`verify_failed`). Someone may be in the middle: end the call and do not retry.
        case intercepted(tellPeer: Bool)
    }

    public enum Teardown: Sendable, Equatable {
        /// Send `leave`.
        case leave
        /// Send `end_room` (host).
        case endRoom
        /// The room is already gone: just clean up.
        case roomGone
        /// The seat was taken over (`Event.replaced`): clean up, say nothing to the server.
        case replaced
        /// `Event.intercepted`: say `verify_failed` first when `tellPeer`, then leave.
        case intercepted(tellPeer: Bool)
    }

    public enum Action: Sendable, Equatable {
        case requestRoomId
        case startJoin(roomId: String)
        case phaseChanged(CallPhase)
        case teardown(Teardown)
        case failed(CallFailure)
    }

    public private(set) var phase: CallPhase = .idle
    public private(set) var roomId: String?
    public private(set) var failure: CallFailure?
    /// A join asked for while the previous call is still being cleaned up: started right after (B10, "rejoin
    /// races local cleanup" — never dropped).
    public private(set) var joinAfterCleanup: String?

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.idle, .startNewCall):
            return move(to: .creatingRoom, [.requestRoomId])
        case (.idle, .joinRoom(let id)):
            roomId = id
            return move(to: .joining, [.startJoin(roomId: id)])
        case (.creatingRoom, .roomIdReceived(let id)):
            roomId = id
            return move(to: .joining, [.startJoin(roomId: id)])
        case (.creatingRoom, .roomIdFailed(let reason)):
            return fail(.roomCreationFailed(reason))
        case (.joining, .joined(let count)):
            return move(to: count >= 2 ? .inCall : .waiting)
        case (.joining, .joinHardTimeout):
            return fail(.joinTimedOut)
        case (.joining, .joinRefused(let code, let message)):
            return fail(.joinRefused(code, message))
        case (.waiting, .roomState(let count)) where count >= 2:
            return move(to: .inCall)
        case (.inCall, .roomState(let count)) where count < 2:
            return move(to: .waiting)
        case (.joining, .leaveCall), (.waiting, .leaveCall), (.inCall, .leaveCall):
            return move(to: .ending, [.teardown(.leave)])
        case (.waiting, .endCall), (.inCall, .endCall):
            return move(to: .ending, [.teardown(.endRoom)])
        case (.waiting, .roomEnded), (.inCall, .roomEnded), (.joining, .roomEnded):
            return move(to: .ending, [.teardown(.roomGone)])
        case (.joining, .replaced), (.waiting, .replaced), (.inCall, .replaced):
            return move(to: .ending, [.teardown(.replaced)])
        case (.joining, .intercepted(let tell)), (.waiting, .intercepted(let tell)), (.inCall, .intercepted(let tell)):
            return move(to: .ending, [.teardown(.intercepted(tellPeer: tell))])
        case (.ending, .joinRoom(let id)):
            joinAfterCleanup = id
            return []
        case (.ending, .cleanupComplete):
            roomId = nil
            let idle = move(to: .idle)
            guard let next = joinAfterCleanup else { return idle }
            joinAfterCleanup = nil
            return idle + handle(.joinRoom(next))
        case (.error, .dismissError):
            failure = nil
            roomId = nil
            return move(to: .idle)
        default:
            return []
        }
    }

    private mutating func move(to next: CallPhase, _ actions: [Action] = []) -> [Action] {
        phase = next
        return actions + [.phaseChanged(next)]
    }

    private mutating func fail(_ failure: CallFailure) -> [Action] {
        self.failure = failure
        return move(to: .error, [.failed(failure)])
    }
}
