import Crypto
import DuetProtocol
import DuetTestBasics
import Testing

@testable import DuetRooms

/// What the core writes to the store and what it does with what the store says: a restarted node (a new core fed
/// the ledger's `load`) and a second node of a cluster (a core fed the other's facts) keep the rules of one process.
@Suite struct DurableStateTests {
    let authorities = SignalingCore.Authorities.forTests()

    func makeCore(seed: UInt64 = 42) -> SignalingCore {
        SignalingCore(settings: SignalingCore.Settings(), authorities: authorities, seed: seed)
    }

    /// Joins on a new connection; returns the joined payload and the outputs.
    @discardableResult
    func join(_ core: inout SignalingCore, _ connection: ConnectionID, rid: String, now: Int64, payload: JoinPayload = JoinPayload()) -> (
        joined: JoinedPayload?, error: String?, outputs: [SignalingCore.Output]
    ) {
        _ = core.handle(.opened(connection, .ws, sid: nil), nowMs: now)
        let outputs = core.handle(
            .message(connection, Envelope(.join, rid: rid, payload: (try? JSONValue(encoding: payload)) ?? [:])), nowMs: now)
        var joined: JoinedPayload?
        var error: String?
        for case .send(let target, let envelope) in outputs where target == connection {
            if envelope.messageType == .joined { joined = try? envelope.payload.decode(JoinedPayload.self) }
            if envelope.messageType == .error, case .string(let code)? = envelope.payload["code"] { error = code }
        }
        return (joined, error, outputs)
    }

    func persisted(_ outputs: [SignalingCore.Output]) -> [DurableFact] {
        outputs.compactMap { if case .persist(let fact) = $0 { fact } else { nil } }
    }

    func restarted(from ledger: DurableLedger, now: Int64, seed: UInt64 = 7) -> SignalingCore {
        var core = makeCore(seed: seed)
        for fact in ledger.load(nowMs: now) { _ = core.handle(.learned(fact), nowMs: now) }
        return core
    }

    @Test func everyMembershipChangeWritesTheRoomAndTheLastLeaveWritesItGone() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let host = join(&core, ConnectionID(1), rid: rid, now: 0)
        #expect(
            persisted(host.outputs) == [
                .roomClaimed(rid: rid, hostCid: try #require(host.joined?.participants.first?.cid), epoch: 1, occupancy: 1)
            ], "the first seat here claims the room")
        let guest = join(&core, ConnectionID(2), rid: rid, now: 10)
        #expect(persisted(guest.outputs).last.map { if case .roomLive(_, _, 2, 2) = $0 { true } else { false } } == true)
        let suspended = core.handle(.closed(ConnectionID(2)), nowMs: 20)
        #expect(persisted(suspended).count == 1, "a suspension changes the epoch: written")
        _ = core.handle(.message(ConnectionID(1), Envelope(.leave)), nowMs: 30)
        let evicted = core.handle(.tick, nowMs: 30 + SignalingCore.Settings().evictionTimeoutMs + 1_000)
        #expect(persisted(evicted).contains(.roomGone(rid: rid)))
        #expect(
            persisted(evicted).contains { if case .seatRevoked(rid, _, _) = $0 { true } else { false } },
            "the evicted seat is revoked in the store too")
    }

    /// The bug this closes: after a restart an ended room could be recreated by a fresh join, and its seats by
    /// recovery with unexpired tokens.
    @Test func anEndedRoomStaysEndedAfterARestart() throws {
        var ledger = DurableLedger()
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let host = try #require(join(&core, ConnectionID(1), rid: rid, now: 0).joined)
        let guest = try #require(join(&core, ConnectionID(2), rid: rid, now: 0).joined)
        for fact in persisted(core.handle(.message(ConnectionID(1), Envelope(.endRoom)), nowMs: 1_000)) { ledger.write(fact) }

        var after = restarted(from: ledger, now: 60_000)
        let guestCid = try #require(guest.participants.last?.cid)
        let recover = join(
            &after, ConnectionID(9), rid: rid, now: 60_000,
            payload: JoinPayload(reconnectCid: guestCid, reconnectToken: guest.reconnectToken))
        #expect(recover.error == "ROOM_ENDED")
        #expect(join(&after, ConnectionID(10), rid: rid, now: 60_000).error == "ROOM_ENDED", "a fresh join meets the tombstone")
        // Past the tombstone the seats still answer ROOM_ENDED; a fresh join opens a new room under the old link.
        var later = restarted(from: ledger, now: 400_000)
        let hostCid = try #require(host.participants.first?.cid)
        #expect(
            join(
                &later, ConnectionID(11), rid: rid, now: 400_000,
                payload: JoinPayload(reconnectCid: hostCid, reconnectToken: host.reconnectToken)
            ).error == "ROOM_ENDED")
        #expect(join(&later, ConnectionID(12), rid: rid, now: 400_000).joined?.reconnect == .fresh)
    }

    @Test func aSeatThatLeftCannotBeRecoveredAfterARestart() throws {
        var ledger = DurableLedger()
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        _ = join(&core, ConnectionID(1), rid: rid, now: 0)
        let guest = try #require(join(&core, ConnectionID(2), rid: rid, now: 0).joined)
        let guestCid = try #require(guest.participants.last?.cid)
        for fact in persisted(core.handle(.message(ConnectionID(2), Envelope(.leave)), nowMs: 1_000)) { ledger.write(fact) }

        var after = restarted(from: ledger, now: 5_000)
        let recover = join(
            &after, ConnectionID(9), rid: rid, now: 5_000,
            payload: JoinPayload(reconnectCid: guestCid, reconnectToken: guest.reconnectToken))
        #expect(recover.error == "INVALID_RECONNECT_TOKEN")
    }

    /// A room recovered after a restart (or on another node) continues: its epoch goes on from the last one
    /// written, and the host is the host again once it is back, whoever returns first.
    @Test func aRecoveredRoomKeepsItsHostAndContinuesItsEpoch() throws {
        var ledger = DurableLedger()
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let h = join(&core, ConnectionID(1), rid: rid, now: 0)
        for fact in persisted(h.outputs) { ledger.write(fact) }
        let g = join(&core, ConnectionID(2), rid: rid, now: 10)
        for fact in persisted(g.outputs) { ledger.write(fact) }
        let hostJoined = try #require(h.joined)
        let guestJoined = try #require(g.joined)
        let hostCid = try #require(hostJoined.participants.first?.cid)
        let guestCid = try #require(guestJoined.participants.last?.cid)
        #expect(guestJoined.epoch == 2)

        var after = restarted(from: ledger, now: 30_000)
        // The guest comes back first: it holds the room, but the host is the host again when it returns.
        let guestBack = try #require(
            join(
                &after, ConnectionID(5), rid: rid, now: 30_000,
                payload: JoinPayload(reconnectCid: guestCid, reconnectToken: guestJoined.reconnectToken)
            ).joined)
        #expect(guestBack.reconnect == .recovered)
        #expect(guestBack.epoch == 3, "the epoch goes on from the last one written (2)")
        let hostBack = try #require(
            join(
                &after, ConnectionID(6), rid: rid, now: 30_100,
                payload: JoinPayload(reconnectCid: hostCid, reconnectToken: hostJoined.reconnectToken)
            ).joined)
        #expect(hostBack.reconnect == .recovered)
        #expect(hostBack.hostCid == hostCid)
        #expect(hostBack.epoch == 4)
        #expect(after.roomView(rid)?.cids == [guestCid, hostCid])
    }

    /// Issue 34, drain that nobody notices: a stopping node's rooms reconnect spread over `drainSpreadMs` after
    /// `drainReconnectAfterMs`, both clients of a room alike (they arrive together, the room whole on its next node); a
    /// connection without a seat reconnects after the base delay.
    @Test func aDrainSpreadsItsRoomsAndKeepsEachRoomTogether() throws {
        var core = makeCore()
        let rids = (0..<4).map { _ in authorities.roomIds.issue() }
        for (index, rid) in rids.enumerated() {
            join(&core, ConnectionID(UInt64(2 * index + 1)), rid: rid, now: 0)
            join(&core, ConnectionID(UInt64(2 * index + 2)), rid: rid, now: 0)
        }
        _ = core.handle(.opened(ConnectionID(99), .ws, sid: nil), nowMs: 0)
        var delays: [ConnectionID: Int64] = [:]
        for case .send(let target, let envelope) in core.handle(.drain(successors: []), nowMs: 1_000)
        where envelope.messageType == .draining {
            delays[target] = try envelope.payload.decode(DrainingPayload.self).reconnectAfterMs
        }
        #expect(delays.count == 9, "every connection is told")
        #expect(delays[ConnectionID(99)] == 0)
        for index in 0..<4 {
            #expect(delays[ConnectionID(UInt64(2 * index + 1))] == delays[ConnectionID(UInt64(2 * index + 2))], "room \(index) split")
        }
        let roomDelays = (0..<4).compactMap { delays[ConnectionID(UInt64(2 * $0 + 1))] }.sorted()
        #expect(roomDelays == [0, 250, 500, 750], "spread evenly over the second after the base delay (0)")
    }

    /// Issue 53, each room moved once: in a cluster the drain names one successor per room (`DrainRoute` over the other
    /// live nodes) to both of its clients in the same message, the rooms spread over the successors; a connection
    /// in no room, and every connection of a node alone, is named none (the proxy decides).
    @Test func aDrainNamesEachRoomsNextNodeToBothOfItsClients() throws {
        var core = makeCore()
        let rids = (0..<40).map { _ in authorities.roomIds.issue() }
        for (index, rid) in rids.enumerated() {
            join(&core, ConnectionID(UInt64(2 * index + 1)), rid: rid, now: 0)
            join(&core, ConnectionID(UInt64(2 * index + 2)), rid: rid, now: 0)
        }
        _ = core.handle(.opened(ConnectionID(999), .ws, sid: nil), nowMs: 0)
        var via: [ConnectionID: String?] = [:]
        for case .send(let target, let envelope) in core.handle(.drain(successors: ["node1", "node3"]), nowMs: 1_000)
        where envelope.messageType == .draining {
            via[target] = try envelope.payload.decode(DrainingPayload.self).via
        }
        #expect(via.count == 81, "every connection is told")
        #expect(via[ConnectionID(999)] == .some(nil), "a connection in no room is named no node")
        var perNode: [String: Int] = [:]
        for (index, rid) in rids.enumerated() {
            let first = via[ConnectionID(UInt64(2 * index + 1))] ?? nil
            #expect(first == via[ConnectionID(UInt64(2 * index + 2))] ?? nil, "room \(index) split")
            #expect(first == DrainRoute.successor(of: rid, among: ["node1", "node3"]))
            perNode[first ?? "none", default: 0] += 1
        }
        #expect(Set(perNode.keys) == ["node1", "node3"] && perNode.values.allSatisfy { $0 >= 8 }, "spread: \(perNode)")
        // A connection that arrives from a shard not drained yet is told its room's node too.
        #expect(
            try core.drainingNotice(for: ConnectionID(1), nowMs: 1_100).payload.decode(DrainingPayload.self).via
                == DrainRoute.successor(of: rids[0], among: ["node1", "node3"]))
        // A node alone names nobody.
        var alone = makeCore()
        join(&alone, ConnectionID(1), rid: rids[0], now: 0)
        for case .send(_, let envelope) in alone.handle(.drain(successors: []), nowMs: 1_000) where envelope.messageType == .draining {
            #expect(try envelope.payload.decode(DrainingPayload.self).via == nil)
        }
    }

    /// The choice is the same on every process and for every order of the nodes, and a node that goes away moves only
    /// its own rooms (rendezvous hashing).
    @Test func aRoomsNextNodeIsStableAndMovesOnlyWhenItsNodeGoes() {
        let rids = (0..<300).map { "room-\($0)" }
        for rid in rids {
            let three = DrainRoute.successor(of: rid, among: ["node1", "node2", "node3"])
            #expect(three == DrainRoute.successor(of: rid, among: ["node3", "node1", "node2"]))
            if three != "node2" { #expect(DrainRoute.successor(of: rid, among: ["node1", "node3"]) == three) }
        }
        // Fixed values, computed by a Python version written from the algorithm's definition (FNV-1a 64 of
        // node NUL rid, splitmix64's finaliser): the choice is a contract between nodes of different builds.
        #expect(DrainRoute.score(node: "node1", rid: "room-1") == 0x8c1b_ebe9_6404_cb62)
        #expect(DrainRoute.score(node: "node1", rid: "room-3") == 0x0703_fed6_3827_dd63)
        #expect(
            ["room-1", "room-2", "room-5", "AbCdEfGhIjKlMnOpQrStUvWx-_0"].map {
                DrainRoute.successor(of: $0, among: ["node1", "node2", "node3"])
            }
                == ["node2", "node3", "node2", "node1"])
        #expect(DrainRoute.successor(of: "x", among: []) == nil)
        let counts = Dictionary(grouping: rids) { DrainRoute.successor(of: $0, among: ["node1", "node2", "node3"])! }.mapValues(\.count)
        #expect(counts.count == 3 && counts.values.allSatisfy { $0 >= 70 }, "even: \(counts)")
    }

    /// Another node claims a room this one still holds (nginx routes the room there now): the clients here are
    /// told to reconnect and closed, nothing is revoked, and only this node's own record is dropped.
    @Test func aRoomClaimedByAnotherNodeIsReleasedHere() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = try #require(join(&core, ConnectionID(1), rid: rid, now: 0).joined)
        _ = join(&core, ConnectionID(2), rid: rid, now: 0)
        // An update from another node (which may have lost the room and not heard of it yet) moves nothing…
        let update = core.handle(
            .learned(.roomLive(rid: rid, hostCid: try #require(a.participants.first?.cid), epoch: 8, occupancy: 2)), nowMs: 900)
        #expect(update.isEmpty && core.roomCount == 1)
        // …a claim does.
        let outputs = core.handle(
            .learned(.roomClaimed(rid: rid, hostCid: try #require(a.participants.first?.cid), epoch: 9, occupancy: 1)), nowMs: 1_000)
        for connection in [ConnectionID(1), ConnectionID(2)] {
            #expect(
                outputs.contains {
                    guard case .send(connection, let e) = $0, e.messageType == .draining else { return false }
                    // Paced: the clients take the delay exactly, and two nodes claiming a room must not bounce them.
                    // No via: the clients forget one an earlier drain named, and go by the room to its claimant.
                    let payload = try? e.payload.decode(DrainingPayload.self)
                    return payload?.reconnectAfterMs == SignalingCore.releaseReconnectAfterMs && payload?.via == nil
                })
            #expect(outputs.contains(.close(connection, .moved)))
        }
        #expect(persisted(outputs) == [.roomGone(rid: rid)], "only this node's own record goes (a queued claim of ours with it)")
        #expect(core.roomCount == 0 && core.participantCount(.connected) == 0 && core.participantCountByWalk(.connected) == 0)
        #expect(core.occupancy(of: rid) == 1, "watchers here now see the other node's count")
        // The seat was not revoked: its token still recovers it (on whichever node the client reaches).
        let back = join(
            &core, ConnectionID(3), rid: rid, now: 2_000,
            payload: JoinPayload(reconnectCid: a.participants.first?.cid, reconnectToken: a.reconnectToken))
        #expect(back.joined?.reconnect == .recovered)
        #expect(back.joined?.epoch == 10)
    }

    /// A restarted node's own rows come back with occupancy 0: remembered, not claimed — a room it holds is kept.
    @Test func aRememberedRoomDoesNotReleaseARoomHeldHere() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = try #require(join(&core, ConnectionID(1), rid: rid, now: 0).joined)
        let outputs = core.handle(
            .learned(.roomLive(rid: rid, hostCid: try #require(a.participants.first?.cid), epoch: 1, occupancy: 0)), nowMs: 1_000)
        #expect(!outputs.contains(.close(ConnectionID(1), .moved)))
        #expect(core.occupancy(of: rid) == 1)
    }

    @Test func watchersSeeRoomsOfOtherNodes() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let watcher = ConnectionID(1)
        _ = core.handle(.opened(watcher, .ws, sid: nil), nowMs: 0)
        _ = core.handle(
            .message(watcher, Envelope(.watchRooms, payload: try JSONValue(encoding: WatchRoomsPayload(rids: [rid])))), nowMs: 0)
        func update(_ outputs: [SignalingCore.Output]) -> Int? {
            for case .send(watcher, let e) in outputs where e.messageType == .roomStatusUpdate {
                return (try? e.payload.decode(RoomStatusUpdatePayload.self))?.count
            }
            return nil
        }
        #expect(update(core.handle(.learned(.roomLive(rid: rid, hostCid: "C-1", epoch: 1, occupancy: 1)), nowMs: 10)) == 1)
        #expect(update(core.handle(.learned(.roomLive(rid: rid, hostCid: "C-1", epoch: 2, occupancy: 2)), nowMs: 20)) == 2)
        #expect(
            update(core.handle(.learned(.roomLive(rid: rid, hostCid: "C-1", epoch: 3, occupancy: 2)), nowMs: 30)) == nil,
            "same count: no update")
        #expect(update(core.handle(.learned(.roomGone(rid: rid)), nowMs: 40)) == 0)
    }

    /// The host ends the room on another node while a stale copy of it is here: it ends here too, and its seats
    /// are over.
    @Test func aRoomEndedOnAnotherNodeEndsHere() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        let a = try #require(join(&core, ConnectionID(1), rid: rid, now: 0).joined)
        let cid = try #require(a.participants.first?.cid)
        let outputs = core.handle(
            .learned(
                .roomEnded(
                    rid: rid, endedBy: "C-other", reason: "host_ended", tombstoneUntilMs: 300_000, seats: ["C-other"],
                    seatsUntilMs: 3_600_000)), nowMs: 1_000)
        #expect(outputs.contains { if case .send(ConnectionID(1), let e) = $0 { e.messageType == .roomEnded } else { false } })
        #expect(core.roomCount == 0 && core.participantCount(.connected) == 0)
        #expect(persisted(outputs) == [.roomGone(rid: rid)], "the copy's own record goes too")
        // A claim that reaches this node after the end (a node that had not heard yet) neither moves nor counts.
        #expect(core.handle(.learned(.roomClaimed(rid: rid, hostCid: "C-late", epoch: 1, occupancy: 1)), nowMs: 1_500).isEmpty)
        #expect(core.occupancy(of: rid) == 0)
        let back = join(
            &core, ConnectionID(2), rid: rid, now: 400_000, payload: JoinPayload(reconnectCid: cid, reconnectToken: a.reconnectToken))
        #expect(back.error == "ROOM_ENDED", "its seat here is over too, past the tombstone")
    }

    @Test func aSeatLeftOnAnotherNodeIsRemovedHere() throws {
        var core = makeCore()
        let rid = authorities.roomIds.issue()
        _ = join(&core, ConnectionID(1), rid: rid, now: 0)
        let b = try #require(join(&core, ConnectionID(2), rid: rid, now: 0).joined)
        let cid = try #require(b.participants.last?.cid)
        _ = core.handle(.learned(.seatRevoked(rid: rid, cid: cid, untilMs: 2_000_000)), nowMs: 1_000)
        #expect(core.roomView(rid)?.cids.contains(cid) == false)
        #expect(
            join(&core, ConnectionID(3), rid: rid, now: 2_000, payload: JoinPayload(reconnectCid: cid, reconnectToken: b.reconnectToken))
                .error == "INVALID_RECONNECT_TOKEN")
    }

    @Test func knownRoomsAreBounded() {
        var settings = SignalingCore.Settings()
        settings.maxKnownRooms = 3
        var core = SignalingCore(settings: settings, authorities: authorities, seed: 1)
        for index in 0..<10 {
            _ = core.handle(.learned(.roomLive(rid: "r\(index)", hostCid: "C", epoch: 1, occupancy: 1)), nowMs: 0)
        }
        #expect(core.knownRooms.count == 3)
    }

    @Test func aClaimFollowedByAnUpdateIsStillAClaimInAQueue() {
        let claim = DurableFact.roomClaimed(rid: "r", hostCid: "C-1", epoch: 1, occupancy: 1)
        #expect(
            claim.merged(with: .roomLive(rid: "r", hostCid: "C-1", epoch: 2, occupancy: 2))
                == .roomClaimed(rid: "r", hostCid: "C-1", epoch: 2, occupancy: 2))
        #expect(claim.merged(with: .roomGone(rid: "r")) == .roomGone(rid: "r"))
        #expect(DurableFact.roomLive(rid: "r", hostCid: "C-1", epoch: 1, occupancy: 1).merged(with: claim) == claim)
    }

    @Test func theLedgerLoadsWhatIsInForceInExpiryOrder() {
        var ledger = DurableLedger()
        ledger.write(.roomClaimed(rid: "a", hostCid: "C-1", epoch: 3, occupancy: 1))
        ledger.write(.roomLive(rid: "a", hostCid: "C-1", epoch: 4, occupancy: 2))
        ledger.write(.seatRevoked(rid: "b", cid: "C-2", untilMs: 500))
        ledger.write(.seatRevoked(rid: "b", cid: "C-3", untilMs: 200))
        ledger.write(.roomLive(rid: "c", hostCid: "C-4", epoch: 1, occupancy: 1))
        ledger.write(.roomGone(rid: "c"))
        ledger.write(.roomLive(rid: "d", hostCid: "C-5", epoch: 1, occupancy: 1))
        ledger.write(.roomEnded(rid: "d", endedBy: "C-5", reason: "host_ended", tombstoneUntilMs: 300, seats: ["C-5"], seatsUntilMs: 900))
        #expect(
            ledger.load(nowMs: 250) == [
                .roomEnded(rid: "d", endedBy: "C-5", reason: "host_ended", tombstoneUntilMs: 300, seats: ["C-5"], seatsUntilMs: 900),
                .seatRevoked(rid: "b", cid: "C-2", untilMs: 500),
                .roomLive(rid: "a", hostCid: "C-1", epoch: 4, occupancy: 0),
            ])
        #expect(ledger.load(nowMs: 1_000) == [.roomLive(rid: "a", hostCid: "C-1", epoch: 4, occupancy: 0)])
    }
}
