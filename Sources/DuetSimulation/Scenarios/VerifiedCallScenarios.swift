import DuetClient

/// Issue 19 in the simulator: keyed links through faults stay verified; a server that starts rewriting fingerprints
/// mid-call is caught at the next renegotiation, on both sides, and nothing retries. The differential replay takes
/// these engines' traces too, so the browser engine must answer `descriptionRejected` and `verify_failed` alike.
extension NamedScenarios {
    static let verifiedCalls: [NamedScenario] = [
        NamedScenario(
            "verified-call-through-faults",
            "A keyed link through a server restart and a network change: every description is signed and checked, both sides stay verified and recover.",
            options: {
                $0.keyedLink = true
                $0.faults = [fault(5_000, 3_000, .serverRestart), fault(20_000, .networkChange(.a, offlineMs: 2_000))]
            },
            expect: { outcome in
                Side.allCases.flatMap { side in
                    let verdicts = outcome.events(side).compactMap { if case .verification(let v) = $0.event { v } else { nil } }
                    return check(
                        verdicts.contains(.verified) && !verdicts.contains(.intercepted),
                        "\(side) was never verified, or was intercepted: \(verdicts)")
                }
            }),
        NamedScenario(
            "server-rewrites-fingerprints-mid-call",
            "On a keyed link the server starts rewriting fingerprints; A's network changes, so A restarts ICE: B refuses the rewritten offer, tells A (verify_failed), both end as intercepted and neither rejoins.",
            options: {
                $0.keyedLink = true
                $0.expectsRecovery = false
                $0.faults = [fault(5_000, 200_000, .tamperFingerprints), fault(6_000, .networkChange(.a, offlineMs: 1_000))]
            },
            expect: { outcome in
                var problems = check(!outcome.trace(.b, "the server rewrote the fingerprints").isEmpty, "no description was ever rewritten")
                for side in Side.allCases {
                    let events = outcome.events(side)
                    guard let caught = events.firstIndex(where: { if case .verification(.intercepted) = $0.event { true } else { false } })
                    else {
                        problems.append("\(side) never said intercepted")
                        continue
                    }
                    let after = events[caught...].compactMap { if case .phase(let p) = $0.event { p } else { nil } }
                    problems += check(after == [.ending, .idle], "\(side) after the interception: \(after) (no rejoin, no retry)")
                }
                problems += check(!outcome.trace(.a, "⇐ verify_failed").isEmpty, "A never heard B's verify_failed")
                return problems
            }),
    ]
}
