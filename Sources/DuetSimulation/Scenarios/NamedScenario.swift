import DuetClient

/// A scripted run with expectations beyond the invariants (which recovery path was taken, what the user saw).
public struct NamedScenario: Sendable {
    public let name: String
    public let summary: String
    let options: @Sendable (inout Simulation.Options) -> Void
    let expect: @Sendable (Outcome) -> [String]

    init(
        _ name: String, _ summary: String, options: @escaping @Sendable (inout Simulation.Options) -> Void,
        expect: @escaping @Sendable (Outcome) -> [String] = { _ in [] }
    ) {
        self.name = name
        self.summary = summary
        self.options = options
        self.expect = expect
    }

    public struct Outcome: Sendable {
        public let result: Simulation.Result
        public var problems: [String] = []

        func events(_ side: Side) -> [(at: Int64, event: CallEvent)] { result.events[side] ?? [] }
        func statuses(_ side: Side) -> [ConnectionStatus] {
            events(side).compactMap { if case .connectionStatus(let status) = $0.event { status } else { nil } }
        }
        func phases(_ side: Side) -> [CallPhase] {
            events(side).compactMap { if case .phase(let phase) = $0.event { phase } else { nil } }
        }
        func restarts(_ side: Side) -> [NegotiationMachine.RestartReason] {
            events(side).compactMap { if case .iceRestart(let reason) = $0.event { reason } else { nil } }
        }
        func transports(_ side: Side) -> [SignalingTransport] {
            events(side).compactMap { if case .transport(let transport?) = $0.event { transport } else { nil } }
        }
        func failures(_ side: Side) -> [CallFailure] {
            events(side).compactMap { if case .failure(let failure) = $0.event { failure } else { nil } }
        }
        /// Trace lines of one side (or of the world, `nil`) that contain `text`.
        func trace(_ side: Side?, _ text: String) -> [String] {
            let tag = " \(side.map { "\($0)" } ?? "·") "
            return result.trace.filter { $0.contains(tag) && $0.contains(text) }
        }
        var establishedAt: Int64 { result.establishedAt ?? 0 }
        /// Time of the first event matching `match` on `side` after the call was established.
        func firstTime(_ side: Side, after: Int64 = 0, _ match: (CallEvent) -> Bool) -> Int64? {
            events(side).first { $0.at >= after && match($0.event) }?.at
        }
    }

    public func run(mutation: Mutation = .none, seed: UInt64 = 1, recordEngineTraces: Bool = false) -> Outcome {
        var options = Simulation.Options(seed: seed)
        options.mutation = mutation
        options.recordEngineTraces = recordEngineTraces
        options.fullTrace = true
        options.ending = .guestLeavesFirst
        options.sseOnly = [.a: false, .b: false]
        options.faults = []
        self.options(&options)
        var outcome = Outcome(result: Simulation.run(options))
        outcome.problems = outcome.result.violations.map(\.description) + expect(outcome)
        return outcome
    }
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) -> [String] { condition ? [] : [message()] }
