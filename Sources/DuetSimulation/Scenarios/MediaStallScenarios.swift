import DuetClient

/// Issue 32 point 2: media that stops while ICE says connected is noticed by the side it stopped for, which leaves
/// `connected` and restarts ICE itself (the host or the guest), and the call comes back with media both ways.
extension NamedScenarios {
    static let mediaStalls: [NamedScenario] = [Side.a, .b].map { side in
        NamedScenario(
            "media-stall-\(side == .a ? "host" : "guest")",
            "Media to \(side) (the \(side == .a ? "host" : "guest")) stops while both ICE agents stay connected: \(side)'s watchdog sees no inbound media for \(ResilienceConstants.MEDIA_STALL_TIMEOUT_MS) ms, leaves connected and restarts ICE; media flows again.",
            options: { $0.faults = [fault(5_000, .mediaStall(side))] },
            expect: { outcome in
                let stalledAt = outcome.establishedAt + 5_000
                let restart = outcome.firstTime(side, after: stalledAt, isRestart(.mediaStall))
                let left = outcome.firstTime(side, after: stalledAt, isStatus(.recovering))
                return check(restart != nil, "\(side) never restarted ICE for the stall: \(outcome.restarts(side))")
                    // Noticed after the stall timeout, and within one more sample of it.
                    + check(
                        restart.map { $0 - stalledAt >= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS && $0 - stalledAt <= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS + 2 * ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS } ?? false,
                        "the stall was noticed \(restart.map { "\($0 - stalledAt) ms" } ?? "never") after it began")
                    + check(left != nil, "\(side)'s status never left connected")
                    + check(outcome.restarts(side.other).isEmpty, "\(side.other), whose media never stopped, restarted: \(outcome.restarts(side.other))")
            })
    }
}
