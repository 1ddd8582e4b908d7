import DuetClient

/// Issue 32 point 3: a peer connection that refuses every description and rollback (Chromium after Firefox answered
/// its restart with the DTLS role flipped) is replaced, not negotiated on forever. The wedge bites at the next
/// negotiation: the host's restart after a media outage of B, whose answer the host's wedged connection refuses (host)
/// or whose offer the guest's refuses (guest); or the guest's own restart after its network changed, whose rollback
/// its wedged connection refuses once signaling is gone too (network change).
extension NamedScenarios {
    static let wedgedConnections: [NamedScenario] = [
        wedged(
            .a, "host", "B's media is cut for 20 s (its ICE fails): A restarts ICE and its wedged connection refuses B's answer",
            then: fault(6_000, 20_000, .partition(.b, .media))),
        wedged(
            .b, "guest", "B's media is cut for 20 s (its ICE fails): A restarts ICE and B's wedged connection refuses A's offer",
            then: fault(6_000, 20_000, .partition(.b, .media))),
        wedged(
            .b, "network-change",
            "B's network changes: B's restart offer is lost with its socket, and at its timeout the wedged connection refuses the rollback",
            then: fault(6_000, .networkChange(.b, offlineMs: 1_000))),
        // Issue 51: what a replacement leaves behind must not break the next recovery. Firefox hosting Chromium, whose
        // restart after a network change is refused and replaces its connection; then 12 s without media between the two.
        wedged(
            .b, "then-outage",
            "B's network changes and its wedged connection is replaced; once media flows again, the media path between the two is cut for 12 s",
            then: fault(6_000, .networkChange(.b, offlineMs: 1_000)), fault(30_000, 12_000, .partition(.b, .media))),
    ]

    private static func wedged(_ side: Side, _ name: String, _ story: String, then triggers: ScheduledFault...) -> NamedScenario {
        NamedScenario(
            "wedged-connection-\(name)",
            "\(side)'s peer connection refuses every remote description and rollback; then \(story). \(side) replaces its connection and offers afresh from the new one, the peer renews for it, and media flows again.",
            options: { $0.faults = [fault(5_000, .peerConnectionWedged(side))] + triggers },
            expect: { outcome in
                let wedgedAt = outcome.establishedAt + 5_000
                let replacements = outcome.events(side).filter { $0.at >= wedgedAt && isRestart(.peerConnectionWedged)($0.event) }
                return check(
                    replacements.count == 1,
                    "\(side) replaced its wedged connection \(replacements.count) times (once expected): \(outcome.restarts(side))")
                    + check(
                        !outcome.trace(side, "Failed to set SSL role").isEmpty,
                        "\(side)'s wedged connection never refused anything: the scenario did not test the wedge")
                    + check(
                        !outcome.restarts(side.other).contains(.peerConnectionWedged),
                        "\(side.other), whose connection was fine, replaced it")
            })
    }
}
