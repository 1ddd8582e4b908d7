import DuetClient

/// Issue 32 point 2: media that stops while ICE says connected is noticed by the side it stopped for, which leaves
/// `connected` and restarts ICE itself (the host or the guest), and the call comes back with media both ways. A guest
/// that cannot restart in place (`duet call`) asks the host to (`restart_request`).
extension NamedScenarios {
    static let mediaStalls: [NamedScenario] = browserMediaStalls + [duetCallGuestMediaStall] + silentSenders

    /// Issue 51: a peer connection whose sender went silent for good (Firefox after a restart's failed ICE stream): the
    /// receiving side's restarts connect and bring nothing, so after MEDIA_STALL_RESTARTS_BEFORE_RENEWAL of them it
    /// replaces its connection, the silent side renews for the new session, and media flows both ways again.
    static let silentSenders: [NamedScenario] = [Side.a, .b].map { silent in
        let receiver = silent.other
        return NamedScenario(
            "silent-sender-\(silent == .a ? "host" : "guest")",
            "\(silent)'s peer connection stops sending media for good while ICE stays connected and it goes on receiving: \(receiver)'s watchdog sees the stall and restarts ICE \(ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL) times to no avail, then replaces its connection; \(silent) renews for the new session and media flows both ways.",
            options: { $0.faults = [fault(5_000, .silentSender(silent))] },
            expect: { outcome in
                let silencedAt = outcome.establishedAt + 5_000
                let restarts = outcome.events(receiver).filter { $0.at >= silencedAt }.compactMap {
                    event -> NegotiationMachine.RestartReason? in
                    if case .iceRestart(let reason) = event.event { reason } else { nil }
                }
                let inPlace = restarts.prefix { $0 != .peerConnectionWedged }
                return check(
                    inPlace.count == ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL,
                    "\(receiver) restarted in place \(inPlace.count) times before replacing its connection: \(restarts)")
                    + check(restarts.contains(.peerConnectionWedged), "\(receiver) never replaced its connection: \(restarts)")
                    + check(
                        !outcome.restarts(silent).contains(.peerConnectionWedged),
                        "\(silent), whose media arrived all along, replaced its connection: \(outcome.restarts(silent))")
            })
    }

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
