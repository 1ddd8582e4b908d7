import DuetClient

/// Issue 32 point 2: media that stops while ICE says connected is noticed by the side it stopped for, which leaves
/// `connected` and restarts ICE itself (the host or the guest), and the call comes back with media both ways. A guest
/// that cannot restart in place (`duet call`) asks the host to (`restart_request`).
extension NamedScenarios {
    static let mediaStalls: [NamedScenario] = browserMediaStalls + [duetCallGuestMediaStall]

    static let duetCallGuestMediaStall = NamedScenario(
        "media-stall-duet-call-guest",
        "B is duet call (webrtcbin, no restart in place) and the guest; media to B stops while both ICE agents stay connected: B's watchdog sees no inbound media for \(ResilienceConstants.MEDIA_STALL_TIMEOUT_MS) ms, leaves connected and asks A to restart (restart_request); A restarts ICE and media flows again.",
        options: {
            $0.duetCallSide = .b
            $0.faults = [fault(5_000, .mediaStall(.b))]
        },
        expect: { outcome in
            let stalledAt = outcome.establishedAt + 5_000
            let restart = outcome.firstTime(.a, after: stalledAt, isRestart(.peerRequest))
            let left = outcome.firstTime(.b, after: stalledAt, isStatus(.recovering))
            return check(restart != nil, "A never restarted ICE at B's request: \(outcome.restarts(.a))")
                // B noticed after the stall timeout and within one more sample, and the request reached A at once.
                + check(
                    restart.map {
                        $0 - stalledAt >= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS
                            && $0 - stalledAt <= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS + 2
                                * ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS + 1_000
                    } ?? false,
                    "A restarted \(restart.map { "\($0 - stalledAt) ms" } ?? "never") after the stall began")
                + check(!outcome.trace(.a, "⇐ restart_request").isEmpty, "A never heard B's restart_request")
                + check(left != nil, "B's status never left connected")
                + check(outcome.restarts(.a) == [.peerRequest], "A restarted for something else too: \(outcome.restarts(.a))")
        })

    static let browserMediaStalls: [NamedScenario] = [Side.a, .b].map { side in
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
                        restart.map {
                            $0 - stalledAt >= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS
                                && $0 - stalledAt <= ResilienceConstants.MEDIA_STALL_TIMEOUT_MS + 2
                                    * ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS
                        } ?? false,
                        "the stall was noticed \(restart.map { "\($0 - stalledAt) ms" } ?? "never") after it began")
                    + check(left != nil, "\(side)'s status never left connected")
                    + check(
                        outcome.restarts(side.other).isEmpty,
                        "\(side.other), whose media never stopped, restarted: \(outcome.restarts(side.other))")
            })
    }
}
