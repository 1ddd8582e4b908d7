import DuetClient

/// Seed 000's recovery scenarios 1–8. The web, iOS and Android diagrams describe the same mechanisms
/// (scenario 8, join recovery, is drawn for iOS and Android only); Duet has one engine for all of them, so
/// each scenario runs once, on that engine.
extension NamedScenarios {
    static let seed000: [NamedScenario] = [
        NamedScenario(
            "000-1-signaling-disconnection", "The WebSocket drops: reconnect with backoff, rejoin the same seat; media untouched.",
            options: { $0.faults = [fault(5_000, .dropConnection(.a))] },
            expect: { outcome in
                check(outcome.transports(.a).count >= 2, "A did not reconnect: \(outcome.transports(.a))")
                    + check(!outcome.trace(.a, "joined e").filter { $0.contains("reattached") }.isEmpty, "A's rejoin was not `reattached`")
                    + check(
                        outcome.restarts(.a).isEmpty && outcome.restarts(.b).isEmpty,
                        "ICE restarted: A \(outcome.restarts(.a)), B \(outcome.restarts(.b))")
                    + check(
                        outcome.trace(.a, "iceStateChanged").filter { (Self.time($0) ?? 0) < outcome.establishedAt + 30_000 }.allSatisfy {
                            !$0.contains("disconnected")
                        },
                        "A's media dropped")
            }),
        NamedScenario(
            "000-2-ice-disconnected-transient", "ICE disconnected for less than the 2 s window: no ICE restart.",
            options: { $0.faults = [fault(5_000, 3_500, .partition(.a, .media))] },
            expect: { outcome in
                check(
                    outcome.restarts(.a).isEmpty && outcome.restarts(.b).isEmpty,
                    "ICE restarted: A \(outcome.restarts(.a)), B \(outcome.restarts(.b))")
                    + check(outcome.statuses(.a) == [.recovering, .connected], "A went through \(outcome.statuses(.a))")
            }),
        NamedScenario(
            "000-2-ice-disconnected-host", "ICE disconnected for longer: the host restarts ICE after 2 s.",
            options: { $0.faults = [fault(5_000, 8_000, .partition(.a, .media))] },
            expect: { outcome in
                let disconnectedAt = outcome.trace(.a, "iceStateChanged(DuetClient.NegotiationMachine.IceState.disconnected)").first
                let restartAt = outcome.firstTime(.a, after: outcome.establishedAt, isRestart(.iceDisconnected))
                return check(restartAt != nil, "the host did not restart ICE on disconnected: \(outcome.restarts(.a))")
                    + check(
                        disconnectedAt.flatMap(Self.time).map { (restartAt ?? 0) - $0 }
                            == ResilienceConstants.ICE_DISCONNECTED_RESTART_DELAY_MS,
                        "restart not 2 s after disconnected")
                    + check(outcome.restarts(.b).isEmpty, "the non-host restarted: \(outcome.restarts(.b))")
            }),
        NamedScenario(
            "000-3-ice-failed", "ICE fails (media cut 40 s): the host restarts on failed — at once, or when the cooldown ends.",
            options: { $0.faults = [fault(5_000, 40_000, .partition(.b, .media))] },
            expect: { outcome in
                let failedAt = outcome.trace(.a, "IceState.failed").first.flatMap(Self.time)
                let next = failedAt.flatMap { at in outcome.firstTime(.a, after: at, isRestart()) }
                return check(failedAt != nil, "A's ICE never failed")
                    + check(
                        next.map { $0 - failedAt! <= ResilienceConstants.ICE_RESTART_COOLDOWN_MS } ?? false,
                        "no restart within the cooldown after failed")
            }),
        NamedScenario(
            "000-4-network-recovery", "Wi-Fi → cellular with 3 s offline: online on the new path → ICE restart.",
            options: { $0.faults = [fault(5_000, .networkChange(.a, offlineMs: 3_000))] },
            expect: { outcome in
                check(outcome.restarts(.a).contains(.networkOnline), "no restart on network online: \(outcome.restarts(.a))")
            }),
        NamedScenario(
            "000-5-offer-timeout", "The host's restart offer is lost: after 8 s it is rolled back and ICE restarts again.",
            options: {
                $0.faults = [fault(5_000, 60_000, .halfOpen(.b, upstreamDead: false)), fault(5_000, 10_000, .partition(.a, .media))]
            },
            expect: { outcome in
                let first = outcome.firstTime(.a, after: outcome.establishedAt, isRestart())
                let timedOut = outcome.firstTime(.a, after: outcome.establishedAt, isRestart(.offerTimeout))
                return check(timedOut != nil, "no restart after an offer timeout: \(outcome.restarts(.a))")
                    + check(
                        first.map { abs((timedOut ?? 0) - $0 - ResilienceConstants.OFFER_TIMEOUT_MS) <= 5 } ?? false,
                        "the timeout was not 8 s after the lost offer")
            }),
        NamedScenario(
            "000-6-non-host-fallback", "The host's offer is late (6 s): the non-host offers itself after 4 s; the glare resolves.",
            options: {
                $0.faultsFromStart = true
                $0.faults = [fault(500, 15_000, .latency(.a, .signaling, ms: 6_000, jitterMs: 0))]
            },
            expect: { outcome in
                check(!outcome.trace(.b, "→ offer").isEmpty, "the non-host never offered")
            }),
        NamedScenario(
            "000-7-ping-pong-timeout", "The socket goes silent one way: two missed pongs close it, then the reconnect flow.",
            options: { $0.faults = [fault(5_000, 60_000, .halfOpen(.a, upstreamDead: true))] },
            expect: { outcome in
                let downAt = outcome.firstTime(.a, after: outcome.establishedAt + 5_000) { $0 == .transport(nil) }
                let limit = ResilienceConstants.PING_INTERVAL_MS * Int64(ResilienceConstants.PONG_MISS_THRESHOLD + 1)
                return check(
                    downAt.map { $0 - outcome.establishedAt - 5_000 <= limit } ?? false, "the dead socket was not closed within \(limit) ms"
                )
                    + check(!outcome.trace(.a, "joined e").filter { $0.contains("reattached") }.isEmpty, "A's rejoin was not `reattached`")
            }),
        NamedScenario(
            "000-8-join-recovery", "The first join is lost: sent again after 4 s, and the call starts.",
            options: {
                $0.faultsFromStart = true
                $0.faults = [fault(0, .loseNextJoin(.b))]
            },
            expect: { outcome in
                let joins = outcome.trace(.b, "→ join").compactMap(Self.time)
                return check(joins.count >= 2, "B sent \(joins.count) join(s)")
                    + check(
                        joins.count < 2 || joins[1] - joins[0] == ResilienceConstants.JOIN_RECOVERY_MS,
                        "the join was not re-sent after 4 s: \(joins)")
                    + check(outcome.failures(.b).isEmpty, "B failed: \(outcome.failures(.b))")
            }),
    ]

    /// The time at the start of a trace line ("12.345s …"), in ms.
    static func time(_ line: String) -> Int64? {
        guard let end = line.firstIndex(of: "s"), let seconds = Double(line[..<end]) else { return nil }
        return Int64((seconds * 1_000).rounded())
    }
}
