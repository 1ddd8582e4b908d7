import DuetClient

/// Seed 001 "Verification" (the connection-status plan). Item 7 (same thresholds on every platform) is the
/// constants parity test between Swift and the browser client.
extension NamedScenarios {
    static let seed001: [NamedScenario] = [
        NamedScenario(
            "001-1-happy-path", "Join a call: the status stays connected.",
            options: { _ in },
            expect: { outcome in
                check(
                    outcome.statuses(.a).isEmpty && outcome.statuses(.b).isEmpty,
                    "status changed: A \(outcome.statuses(.a)), B \(outcome.statuses(.b))")
            }),
        NamedScenario(
            "001-2-recovering", "A brief outage (5 s): recovering, then connected again, never retrying.",
            options: { $0.faults = [fault(5_000, 5_000, .partition(.a, .both))] },
            expect: { outcome in
                check(outcome.statuses(.a) == [.recovering, .connected], "A went through \(outcome.statuses(.a))")
                    + check(!outcome.statuses(.b).contains(.retrying), "B went retrying")
            }),
        NamedScenario(
            "001-3-retrying", "Network blocked for 25 s: retrying exactly 10 s after recovering began, then back.",
            options: { $0.faults = [fault(5_000, 25_000, .partition(.a, .both))] },
            expect: { outcome in
                let gap = gap(outcome, .a, from: isStatus(.recovering), to: isStatus(.retrying))
                return check(
                    gap == ResilienceConstants.CONNECTION_RETRYING_THRESHOLD_MS,
                    "recovering → retrying took \(gap.map { "\($0) ms" } ?? "never")")
                    + check(outcome.statuses(.a).last == .connected, "A ended \(outcome.statuses(.a))")
            }),
        NamedScenario(
            "001-4-long-outage", "Network blocked for 2½ minutes: the call resumes by itself when it comes back.",
            options: { $0.faults = [fault(5_000, 150_000, .partition(.a, .both))] },
            expect: { outcome in
                check(
                    outcome.statuses(.a).contains(.retrying) && outcome.statuses(.a).last == .connected,
                    "A went through \(outcome.statuses(.a))")
                    + check(outcome.failures(.a).isEmpty, "A failed: \(outcome.failures(.a))")
            }),
        NamedScenario(
            "001-5-leave-from-retrying", "Leave while retrying: home at once, nothing left behind.",
            options: {
                $0.faults = [fault(5_000, 60_000, .partition(.a, .both))]
                $0.actions = [.init(at: 25_000, .a, .leave)]
                $0.expectsRecovery = false
            },
            expect: { outcome in
                let leftAt = outcome.establishedAt + 25_000
                let idleAt = outcome.firstTime(.a, after: leftAt) { $0 == .phase(.idle) }
                return check(outcome.statuses(.a).contains(.retrying), "A was not retrying: \(outcome.statuses(.a))")
                    + check(
                        idleAt.map { $0 - leftAt < 100 } ?? false,
                        "A not home promptly after leaving (\(idleAt.map { "\($0 - leftAt) ms" } ?? "never"))")
            }),
        NamedScenario(
            "001-6-room-gone", "The host ends the room during B's outage: B finds out on its next reconnect and goes home.",
            options: {
                $0.faults = [fault(5_000, 40_000, .partition(.b, .both))]
                $0.actions = [.init(at: 15_000, .a, .end)]
                $0.expectsRecovery = false
            },
            expect: { outcome in
                check(Array(outcome.phases(.b).suffix(2)) == [.ending, .idle], "B ended in \(outcome.phases(.b))")
                    + check(outcome.failures(.b).isEmpty, "B was shown a failure: \(outcome.failures(.b))")
                    + check(
                        (outcome.firstTime(.b, after: outcome.establishedAt) { $0 == .phase(.ending) } ?? 0) >= outcome.establishedAt
                            + 45_000,
                        "B left before its network came back")
            }),
        NamedScenario(
            "001-6b-peer-left", "The other person leaves during B's outage: B comes back to a room where it waits.",
            options: {
                $0.faults = [fault(5_000, 40_000, .partition(.b, .both))]
                $0.actions = [.init(at: 15_000, .a, .leave)]
                $0.expectsRecovery = false
            },
            expect: { outcome in
                check(outcome.phases(.b).last == .waiting, "B ended in \(outcome.phases(.b))")
                    + check(outcome.failures(.b).isEmpty, "B was shown a failure: \(outcome.failures(.b))")
            }),
    ]
}
