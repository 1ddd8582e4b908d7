@testable import DuetClient

/// Actions that may carry a timer command.
protocol TimerCarrying: Equatable {
    var timerCommand: TimerCommand? { get }
}

extension CallPhaseMachine.Action: TimerCarrying { var timerCommand: TimerCommand? { nil } }
extension ConnectionStatusMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}
extension SignalingLinkMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}
extension JoinMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}

/// A machine on a virtual clock: timer commands are recorded as deadlines, and advancing time
/// fires them, in deadline order, back into the machine. A 15 s timeout is tested in microseconds.
struct Driven<Machine, Action: TimerCarrying> {
    var machine: Machine
    private(set) var nowMs: Int64 = 0
    private(set) var deadlines: [TimerID: Int64] = [:]
    private let fire: (inout Machine, TimerID) -> [Action]

    init(_ machine: Machine, fire: @escaping (inout Machine, TimerID) -> [Action]) {
        self.machine = machine
        self.fire = fire
    }

    /// Delivers an event now.
    @discardableResult
    mutating func send(_ deliver: (inout Machine) -> [Action]) -> [Action] {
        let actions = deliver(&machine)
        apply(actions)
        return actions
    }

    /// Moves the clock forward; returns every action produced by timers that fired on the way.
    @discardableResult
    mutating func advance(by ms: Int64) -> [Action] {
        let target = nowMs + ms
        var produced: [Action] = []
        while let (timer, deadline) = deadlines.filter({ $0.value <= target }).min(by: { ($0.value, "\($0.key)") < ($1.value, "\($1.key)") }
        ) {
            nowMs = deadline
            deadlines[timer] = nil
            let actions = fire(&machine, timer)
            apply(actions)
            produced += actions
        }
        nowMs = target
        return produced
    }

    func isScheduled(_ timer: TimerID) -> Bool { deadlines[timer] != nil }
    func remaining(_ timer: TimerID) -> Int64? { deadlines[timer].map { $0 - nowMs } }

    private mutating func apply(_ actions: [Action]) {
        for case let command? in actions.map(\.timerCommand) {
            switch command {
            case .schedule(let timer, let after): deadlines[timer] = nowMs + after
            case .cancel(let timer): deadlines[timer] = nil
            }
        }
    }
}

extension NegotiationMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}
extension TrickleIceMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}
extension TurnMachine.Action: TimerCarrying {
    var timerCommand: TimerCommand? { if case .timer(let command) = self { command } else { nil } }
}
