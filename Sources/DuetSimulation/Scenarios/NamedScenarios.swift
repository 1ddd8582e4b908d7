import DuetClient

/// Every scenario the seeds and the checklists name, as a simulation: seed 001's verification list, the
/// recovery scenarios of seed 000 (one engine serves every platform diagram), and the failure modes of
/// `resilience-checklists.md` part B.
public enum NamedScenarios {
    public static var all: [NamedScenario] { seed001 + seed000 + failureModes + verifiedCalls + mediaStalls + wedgedConnections }

    static func fault(_ at: Int64, _ duration: Int64, _ fault: Fault) -> ScheduledFault {
        ScheduledFault(at: at, durationMs: duration, fault)
    }

    static func fault(_ at: Int64, _ fault: Fault) -> ScheduledFault { ScheduledFault(at: at, fault) }

    static func gap(_ outcome: NamedScenario.Outcome, _ side: Side, from: (CallEvent) -> Bool, to: (CallEvent) -> Bool) -> Int64? {
        guard let start = outcome.firstTime(side, after: outcome.establishedAt, from),
            let end = outcome.firstTime(side, after: start, to)
        else { return nil }
        return end - start
    }

    static func isStatus(_ status: ConnectionStatus) -> (CallEvent) -> Bool {
        { if case .connectionStatus(let value) = $0 { value == status } else { false } }
    }

    static func isRestart(_ reason: NegotiationMachine.RestartReason? = nil) -> (CallEvent) -> Bool {
        { if case .iceRestart(let value) = $0 { reason == nil || value == reason } else { false } }
    }
}
