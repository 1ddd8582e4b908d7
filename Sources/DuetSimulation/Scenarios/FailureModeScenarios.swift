import DuetClient

/// `resilience-checklists.md` part B: the sixteen failure modes of Serenada's audit, each provoked here.
extension NamedScenarios {
    static let failureModes: [NamedScenario] = [
        NamedScenario(
            "epoch-stale-negotiation-dropped",
            "B leaves and rejoins; A's first offer (an older peer session) is replayed to B: it never reaches B's WebRTC.",
            options: {
                $0.actions = [.init(at: 5_000, .b, .leave), .init(at: 5_100, .b, .rejoin)]
                $0.faults = [fault(15_000, .replayFirstOffer(.b))]
            },
            expect: { outcome in
                // The replay really reached B's engine; that it never reached WebRTC is `staleEpochApplied`.
                check(!outcome.trace(.b, "replaying the first offer").isEmpty, "the old offer was never replayed to B")
            }),
        NamedScenario(
            "B01-relay-to-suspended-peer",
            "Nothing is offered to a suspended peer, so nothing is lost: its media dies while it is away, and A neither restarts ICE towards it nor leaves `connected` (the trouble is B's); when B is back with media still down, A restarts and the call comes back. (The server's `relay_failed` for a relay that does reach a suspended seat: ReconnectTests.)",
            options: { $0.faults = [fault(5_000, 45_000, .partition(.b, .signaling)), fault(40_000, 20_000, .partition(.b, .media))] },
            expect: { outcome in
                let mediaDiesAt = outcome.establishedAt + 40_000
                let seen = outcome.events(.a).compactMap { step -> (at: Int64, away: Bool)? in
                    guard case .participants(let list, _, _) = step.event, list.count == 2 else { return nil }
                    return (step.at, list.contains { $0.connectionStatus == .suspended })
                }
                guard let away = seen.first(where: \.away)?.at, let back = seen.first(where: { !$0.away && $0.at > away })?.at else {
                    return ["A never saw B suspended and back: \(seen)"]
                }
                let restarts = outcome.events(.a).filter { if case .iceRestart = $0.event { true } else { false } }
                let statuses = outcome.events(.a).filter { if case .connectionStatus = $0.event { true } else { false } }
                return check(
                    away < mediaDiesAt,
                    "B was suspended at \(away) ms, after its media died at \(mediaDiesAt) ms: the scenario proves nothing")
                    + check(!restarts.contains { $0.at >= away && $0.at < back }, "A restarted ICE towards the suspended B: \(restarts)")
                    + check(!statuses.contains { $0.at >= away && $0.at < back }, "A's status changed while B was away: \(statuses)")
                    + check(restarts.contains { $0.at >= back }, "A did not restart when B came back with media down: \(restarts)")
                    + check(outcome.trace(.a, "⇐ relay_failed").isEmpty, "a relay of A's reached a suspended seat")
            }),
        NamedScenario(
            "B02-reconnect-keeps-participant-id", "A reconnect keeps the participant id.",
            options: { $0.faults = [fault(5_000, .dropConnection(.b)), fault(20_000, 30_000, .partition(.b, .signaling))] },
            expect: { outcome in
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                return check(ids.count == 1, "B had the ids \(ids.sorted())")
            }),
        NamedScenario(
            "B03-suspension-is-not-media-death", "The peer's signaling is suspended but media flows: no ICE restart, no alarm.",
            options: { $0.faults = [fault(5_000, 45_000, .partition(.b, .signaling))] },
            expect: { outcome in
                check(outcome.restarts(.a).isEmpty, "A restarted ICE: \(outcome.restarts(.a))")
                    + check(outcome.statuses(.a).isEmpty, "A's status changed: \(outcome.statuses(.a))")
            }),
        NamedScenario(
            "media-only-failure-keeps-signaling",
            "Media dead for 2 minutes (a TURN server or UDP path gone) while signaling works: the escalation cycles, but never closes a working transport, so neither side flips WS↔SSE or shows the other reconnecting.",
            options: { $0.faults = [fault(5_000, 120_000, .partition(.b, .media))] },
            expect: { outcome in
                let escalations = outcome.events(.b).filter { if case .escalation = $0.event { true } else { false } }.count
                // Until the call is left at the end of the run (which closes signaling on purpose).
                func transports(_ side: Side) -> [SignalingTransport?] {
                    let ending = outcome.events(side).first { $0.event == .phase(.ending) }?.at ?? .max
                    return outcome.events(side).compactMap { if case .transport(let kind) = $0.event, $0.at < ending { kind } else { nil } }
                }
                return check(escalations >= 5, "B escalated only \(escalations) times: the cycle never reached its fallback turn")
                    + check(
                        transports(.a) == [.ws] && transports(.b) == [.ws], "signaling changed: A \(transports(.a)), B \(transports(.b))")
            }),
        NamedScenario(
            "B04-restart-after-fresh-view", "A restart wanted while signaling was down waits for the room state after the reconnect.",
            options: { $0.faults = [fault(5_000, 40_000, .partition(.a, .signaling)), fault(5_000, 60_000, .partition(.b, .media))] },
            expect: { outcome in
                check(outcome.restarts(.a).contains(.signalingReconnect), "no restart after the reconnect: \(outcome.restarts(.a))")
            }),
        NamedScenario(
            "B05-process-death", "The app's process dies: relaunched with its kept seat it reclaims the same participant id.",
            options: { $0.faults = [fault(5_000, .processRestart(.b))] },
            expect: { outcome in
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                return check(ids.count == 1, "B had the ids \(ids.sorted())")
                    + check(outcome.trace(.b, "ROOM_FULL").isEmpty, "B found the room full")
            }),
        NamedScenario(
            "B06-told-it-was-suspended",
            "The server suspended B without B knowing (dead downstream): B finds out by its pings and rejoins.",
            options: { $0.faults = [fault(5_000, 60_000, .halfOpen(.b, upstreamDead: false))] },
            expect: { outcome in
                check(!outcome.trace(nil, "server: suspended").isEmpty, "the server never suspended B")
                    + check(!outcome.trace(.b, "joined e").filter { $0.contains("reattached") }.isEmpty, "B's rejoin was not `reattached`")
            }),
        NamedScenario(
            "B07-sse-sid-hijack", "Someone reuses B's SSE session id: they get no seat, B renews its sid and stays in the call.",
            options: {
                $0.sseOnly = [.a: false, .b: true]
                $0.faults = [fault(5_000, .sidHijack(.b))]
            },
            expect: { outcome in
                check(outcome.trace(nil, "intruder got joined").isEmpty, "the intruder was seated")
                    + check(!outcome.trace(.b, "new SSE session id").isEmpty, "B did not renew its SSE session id")
                    + check(
                        Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } }).count
                            == 1,
                        "B lost its seat")
            }),
        NamedScenario(
            "B08-no-stale-connected-after-background", "After a long background the app does not claim `connected` on a dead link.",
            options: { $0.faults = [fault(5_000, 60_000, .freeze(.a))] },
            expect: { outcome in
                check(
                    outcome.statuses(.a).contains(.recovering) || outcome.statuses(.a).contains(.retrying),
                    "A never left `connected`: \(outcome.statuses(.a))")
            }),
        NamedScenario(
            "B09-turn-expiry-while-signaling-down", "TURN credentials come due while signaling is down: refreshed once it is back.",
            options: { $0.faults = [fault(470_000, 40_000, .partition(.a, .signaling))] },
            expect: { outcome in
                let healed = outcome.establishedAt + 510_000
                return check(
                    outcome.trace(.a, "turnCredentialsFetched").compactMap(Self.time).contains { $0 >= healed },
                    "no TURN credentials fetched once signaling was back")
            }),
        NamedScenario(
            "B10-rejoin-races-cleanup", "Leave and join again at once: the new join does not race the old teardown.",
            options: { $0.actions = [.init(at: 5_000, .b, .leave), .init(at: 5_001, .b, .rejoin)] },
            expect: { outcome in
                check(outcome.failures(.b).isEmpty, "B failed: \(outcome.failures(.b))")
            }),
        NamedScenario(
            "B11-end-room-reaches-suspended-peer", "`end_room` while the peer is suspended: it learns the room ended when it returns.",
            options: {
                $0.faults = [fault(5_000, 60_000, .partition(.b, .signaling))]
                $0.actions = [.init(at: 40_000, .a, .end)]
                $0.expectsRecovery = false
            },
            expect: { outcome in
                check(outcome.phases(.b).last == .idle, "B ended in \(outcome.phases(.b))")
                    + check(
                        !outcome.trace(.b, "ROOM_ENDED").isEmpty || !outcome.trace(.b, "room_ended").isEmpty,
                        "B was not told the room ended")
            }),
        NamedScenario(
            "B12-ws-to-sse-keeps-the-session", "WebSocket refused after a drop: B falls back to SSE and keeps its seat.",
            options: { $0.faults = [fault(5_000, 60_000, .webSocketRefused), fault(5_100, .dropConnection(.b))] },
            expect: { outcome in
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                return check(outcome.transports(.b).contains(.sse), "B never used SSE: \(outcome.transports(.b))")
                    + check(ids.count == 1, "B had the ids \(ids.sorted())")
            }),
        NamedScenario(
            "B13-buffered-sdp-not-stale", "Negotiation written while signaling is down is not replayed stale after the reconnect.",
            options: {
                // A's network changes (its socket and ICE pair die) while B, back from its own outage, renegotiates
                // and the WebSocket is refused: A's restart offer and candidates are written while A is still
                // rejoining, so they wait in the outbox. (Not while B is suspended: nothing is offered to a peer
                // that is away, B01.)
                $0.faults = [
                    fault(5_000, 20_000, .partition(.b, .signaling)), fault(20_000, 13_000, .partition(.b, .both)),
                    fault(44_000, 12_000, .webSocketRefused), fault(46_000, .networkChange(.a, offlineMs: 2_000)),
                ]
            },
            expect: { outcome in
                // Something really was buffered while A was down (else the scenario proves nothing); that no stale
                // description reached WebRTC is the invariant `staleEpochApplied`, checked on every one applied
                // (older peer session, or older ICE credentials of the same peer connection).
                check(
                    !outcome.trace(.a, "queued for after the rejoin: offer").isEmpty,
                    "A's restart offer was not buffered while its signaling was down")
                    + check(outcome.restarts(.a).count + outcome.restarts(.b).count > 0, "no ICE restart renegotiated after the outage")
            }),
        NamedScenario(
            "B14-keepalive-drift", "The app is suspended for 20 s (timers late, then all at once): the call comes back.",
            options: { $0.faults = [fault(5_000, 20_000, .freeze(.b))] },
            expect: { outcome in
                // While B was frozen its pings stopped: A's side of the call noticed (its peer went quiet on
                // signaling or media) and B caught up when it thawed, with one participant id throughout.
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                return check(ids.count == 1, "B had the ids \(ids.sorted())")
                    + check(outcome.events(.b).contains { $0.at > outcome.establishedAt + 25_000 }, "B did nothing after it thawed")
            }),
        NamedScenario(
            "B15-replayed-token",
            "Someone replays B's reconnect token: B is displaced (close 4001), stops and says so without fighting for the seat; its user takes the call back.",
            options: { $0.faults = [fault(5_000, .tokenReplay(.b))] },
            expect: { outcome in
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                let replaced = outcome.events(.b).filter { if case .replaced = $0.event { true } else { false } }
                // Stopped, not reconnected: no rejoin between the 4001 and the user's "use here".
                let stopped = outcome.phases(.b).split(separator: .idle).count >= 2
                return check(replaced.count == 1, "B was told it was replaced \(replaced.count) times")
                    + check(stopped, "B never stopped: \(outcome.phases(.b))")
                    + check(!outcome.trace(.b, "the user takes the call back").isEmpty, "B's user never took the call back")
                    + check(ids.count == 1, "B had the ids \(ids.sorted())")
            }),
        NamedScenario(
            "B15-replayed-token-sse",
            "The same over SSE: B's stream ends with `: close 4001 replaced`; B stops and says so, and its user takes the call back.",
            options: {
                $0.faults = [fault(5_000, .tokenReplay(.b))]
                $0.sseOnly = [.a: false, .b: true]
            },
            expect: { outcome in
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                let replaced = outcome.events(.b).filter { if case .replaced = $0.event { true } else { false } }
                // Stopped, not reconnected: no rejoin between the 4001 and the user's "use here".
                let stopped = outcome.phases(.b).split(separator: .idle).count >= 2
                return check(replaced.count == 1, "B was told it was replaced \(replaced.count) times")
                    + check(stopped, "B never stopped: \(outcome.phases(.b))")
                    + check(!outcome.trace(.b, "the user takes the call back").isEmpty, "B's user never took the call back")
                    + check(ids.count == 1, "B had the ids \(ids.sorted())")
            }),
        NamedScenario(
            "B16-state-kept-while-suspended", "While B is suspended A's network changes; all of it is caught up when B is back.",
            options: {
                $0.faults = [fault(5_000, 40_000, .partition(.b, .signaling)), fault(15_000, .networkChange(.a, offlineMs: 2_000))]
            },
            expect: { outcome in
                // A's network change kills the media path while B cannot be told: the restart waits for B's
                // return, and B's seat and id survive the suspension.
                let ids = Set(outcome.events(.b).compactMap { if case .participants(_, _, let me) = $0.event { me } else { nil } })
                return check(!outcome.trace(nil, "server: suspended").isEmpty, "B was never suspended")
                    + check(ids.count == 1, "B had the ids \(ids.sorted())")
                    + check(!outcome.restarts(.a).isEmpty || !outcome.restarts(.b).isEmpty, "no ICE restart after A's network change")
            }),
    ]
}
