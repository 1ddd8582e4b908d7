import DuetLock
import DuetProtocol
import Foundation
import Logging
import Testing

@testable import DuetRooms
@testable import DuetServer

/// Issue 34, point 1, as pure logic: the store's tickets (`StoreQueue`), and the hub holding the news of a final fact
/// until the store has it (`DurableGate`) while everything else flows. KillAfterAckTests proves it with `kill -9`.
@Suite struct DurableGateTests {
    // MARK: - StoreQueue's tickets

    /// What a re-read of the store must not take for another node's claim (`SessionHub.learn(snapshotClaim:…)`):
    /// this node's claims queued, being written, or written after the mark taken before the read.
    @Test func theClaimsASnapshotMayNotShowYet() {
        let queue = StoreQueue()
        queue.add(.roomClaimed(rid: "written-before", hostCid: "h", epoch: 1, occupancy: 1))
        _ = queue.take()
        queue.written()
        let mark = queue.claimMark
        queue.add(.roomClaimed(rid: "in-flight", hostCid: "h", epoch: 1, occupancy: 1))
        queue.add(.roomLive(rid: "updated-only", hostCid: "h", epoch: 1, occupancy: 2))
        _ = queue.take()
        queue.add(.roomClaimed(rid: "queued", hostCid: "h", epoch: 1, occupancy: 1))
        queue.add(.roomLive(rid: "queued", hostCid: "h", epoch: 1, occupancy: 2))  // still a claim (merged)
        queue.add(.roomClaimed(rid: "given-up", hostCid: "h", epoch: 1, occupancy: 1))
        queue.add(.roomGone(rid: "given-up"))  // released before it was written: not held here
        func claimed(since mark: UInt64) -> Set<String> {
            Set(
                ["written-before", "in-flight", "updated-only", "queued", "given-up", "never"].filter { queue.claimedHere($0, since: mark) }
            )
        }
        #expect(claimed(since: mark) == ["in-flight", "queued"])
        queue.written()
        #expect(claimed(since: mark) == ["in-flight", "queued"], "written after the mark: the snapshot may predate it")
        #expect(claimed(since: queue.claimMark) == ["queued"], "written before a later mark")
        // A refused batch's claims are queued again, not lost; under a newer roomGone the room is not held here.
        let batch = queue.take()
        queue.add(.roomGone(rid: "queued"))
        queue.putBack(batch)
        #expect(claimed(since: queue.claimMark) == [])
    }

    /// Past its bound the queue forgets the oldest written claims: a mark from before what it kept counts as claimed
    /// here (the row is not taken for a claim), one after it is judged exactly.
    @Test func forgottenClaimsCountAsClaimedHere() {
        let queue = StoreQueue()
        let mark = queue.claimMark
        for index in 0...StoreQueue.writtenClaimsKept {
            queue.add(.roomClaimed(rid: "r\(index)", hostCid: "h", epoch: 1, occupancy: 1))
            if index.isMultiple(of: 1_000) {
                _ = queue.take(limit: 2_000)
                queue.written()
            }
        }
        _ = queue.take(limit: 2_000)
        queue.written()
        #expect(queue.claimedHere("r0", since: mark), "forgotten, and the mark is older than what was kept")
        #expect(queue.claimedHere("never-claimed", since: mark), "the same: the queue cannot tell")
        #expect(!queue.claimedHere("never-claimed", since: queue.claimMark))
        #expect(queue.claimedHere("r\(StoreQueue.writtenClaimsKept)", since: queue.claimMark - 1))
    }

    @Test func aTicketIsDurableOnlyOnceItsBatchAndEveryOlderOneIsWritten() {
        let queue = StoreQueue()
        let first = queue.add(.seatRevoked(rid: "r1", cid: "a", untilMs: 1))
        let batch = queue.take()
        let second = queue.add(.seatRevoked(rid: "r2", cid: "b", untilMs: 1))
        #expect(queue.durableThrough == 0)
        #expect(queue.written() == first, "the batch with the first ticket is in; the second came after it was taken")
        _ = queue.take()
        #expect(queue.written() == second)
        #expect(batch.count == 1)
    }

    /// A fact replaced by a newer one of its key before it was written is in the store only once the newer one is:
    /// its ticket must not count as durable because a later, unrelated batch was written.
    @Test func aReplacedFactWaitsForItsReplacement() {
        let queue = StoreQueue()
        let live = queue.add(.roomLive(rid: "r1", hostCid: "a", epoch: 1, occupancy: 2))
        let other = queue.add(.seatRevoked(rid: "r2", cid: "b", untilMs: 1))
        _ = queue.add(.roomGone(rid: "r1"))
        let batch = queue.take(limit: 1)
        #expect(batch.map(\.fact) == [.roomGone(rid: "r1")], "queued longest: the room's entry stands for ticket 1")
        #expect(queue.written() == live, "r1's tickets are in; r2's is still waiting")
        #expect(other > live)
        _ = queue.take()
        #expect(queue.written() == 3)
    }

    /// A room that changes again and again while the store works through a backlog must not hold the watermark
    /// back: taken by when it last changed, it stayed behind the batch limit as long as new facts kept coming.
    @Test func aBusyRoomDoesNotStallTheWatermark() {
        let queue = StoreQueue()
        let busy = queue.add(.roomLive(rid: "busy", hostCid: "a", epoch: 1, occupancy: 2))
        for index in 0..<10 { queue.add(.seatRevoked(rid: "r\(index)", cid: "c", untilMs: 1)) }
        var through: UInt64 = 0
        for round in 0..<5 {
            // Each round the busy room changes and more rooms queue than one batch takes.
            queue.add(.roomLive(rid: "busy", hostCid: "a", epoch: Int64(round + 2), occupancy: 2))
            for index in 0..<4 { queue.add(.seatRevoked(rid: "n\(round)-\(index)", cid: "c", untilMs: 1)) }
            _ = queue.take(limit: 3)
            through = queue.written()
        }
        #expect(through >= busy, "the busy room's first ticket was never written: durableThrough \(through)")
    }

    /// A bounded wait gives up without the fact (which stays queued), and a cancelled waiter is gone from the queue:
    /// a request that gave up leaves nothing behind, and writing the fact later resumes nobody twice.
    @Test func aBoundedWaitGivesUpAndLeavesNoWaiterBehind() async {
        let queue = StoreQueue()
        let ticket = queue.add(.seatRevoked(rid: "r1", cid: "a", untilMs: 1))
        #expect(await queue.durable(ticket, within: .milliseconds(50)) == false)
        let waiting = Task { await queue.durable(ticket) }
        waiting.cancel()
        #expect(await waiting.value == false)
        #expect(queue.count == 1, "the fact is still queued")
        _ = queue.take()
        #expect(queue.written() == ticket)
        #expect(await queue.durable(ticket, within: .seconds(5)), "written: at once")
    }

    @Test func aRefusedBatchKeepsItsTickets() {
        let queue = StoreQueue()
        let ended = queue.add(.roomEnded(rid: "r1", endedBy: "a", reason: "host_ended", tombstoneUntilMs: 1, seats: ["a"], seatsUntilMs: 1))
        let batch = queue.take()
        queue.putBack(batch)
        #expect(queue.written() == ended - 1, "nothing was written")
        _ = queue.take()
        #expect(queue.written() == ended)
    }

    @Test func aWaiterIsResumedWhenItsTicketIsWrittenAndToldWhenTheQueueFinishes() async {
        let queue = StoreQueue()
        let ticket = queue.add(.seatRevoked(rid: "r1", cid: "a", untilMs: 1))
        async let stored = queue.durable(ticket)
        _ = queue.take()
        while queue.durableThrough < ticket {
            await Task.yield()
            queue.written()
        }
        #expect(await stored)
        let later = queue.add(.seatRevoked(rid: "r2", cid: "b", untilMs: 1))
        async let lost = queue.durable(later)
        await Task.yield()
        queue.finish()
        #expect(await lost == false)
    }

    // MARK: - The hub

    static func hub(_ queue: StoreQueue, shards: Int = 1) -> SessionHub {
        SessionHub(
            core: SignalingCore(settings: .init(), authorities: authorities, ids: .system), metrics: ServerMetrics(),
            logger: Logger(label: "test"), messageRate: nil, store: queue, shards: shards)
    }

    static func types(_ recorder: Recorder) -> [String] {
        recorder.texts.compactMap { text in
            ((try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any])?["type"] as? String
        }
    }

    /// One set for every hub here: a room id is valid where its authorities issued it.
    static let authorities = LimitsTests.authorities()

    static func roomId() -> String {
        var generator = SplitMix64(seed: UInt64.random(in: 1...UInt64.max))
        return authorities.roomIds.issue(using: &generator)
    }

    static func send(_ hub: SessionHub, _ id: ConnectionID, _ json: String) { hub.receive(Array(json.utf8), from: id) }

    /// Two seated in one room; returns their connections.
    static func room(_ hub: SessionHub, _ rid: String, _ a: Recorder, _ b: Recorder) -> (ConnectionID, ConnectionID) {
        let host = hub.open(.ws, sink: a.sink, rid: rid)
        send(hub, host, #"{"v":1,"type":"join","rid":"\#(rid)","payload":{}}"#)
        let guest = hub.open(.ws, sink: b.sink, rid: rid)
        send(hub, guest, #"{"v":1,"type":"join","rid":"\#(rid)","payload":{}}"#)
        return (host, guest)
    }

    /// Issue 53: the database was away while this node recovered a room (its claim queued); the room's old owner's
    /// row, read back when the LISTEN returns, must not make it give the room up — only a row newer than its claim.
    @Test(arguments: [1, 4])
    func aRowReadBackIsNoClaimOnARoomClaimedHereSince(shards: Int) throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue, shards: shards)
        let rid = Self.roomId()
        let a = Recorder()
        let b = Recorder()
        let mark = queue.claimMark  // the resync's, before it reads the store
        _ = Self.room(hub, rid, a, b)
        let oldRow = DurableFact.roomClaimed(rid: rid, hostCid: "C-old", epoch: 1, occupancy: 2)
        // Each is set aside (false): the caller reads the row again once this node's claim is written.
        #expect(!hub.learn(snapshotClaim: oldRow, unlessClaimedHereSince: mark))
        #expect(!Self.types(a).contains("draining"), "queued claim: the room was given up for an older row")
        #expect(queue.isClaiming(rid))
        _ = queue.take()
        #expect(!hub.learn(snapshotClaim: oldRow, unlessClaimedHereSince: mark))
        #expect(queue.isClaiming(rid), "in flight: not in the database yet")
        hub.durable(through: queue.written())
        #expect(!queue.isClaiming(rid))
        #expect(!hub.learn(snapshotClaim: oldRow, unlessClaimedHereSince: mark))
        #expect(!Self.types(a).contains("draining") && !Self.types(b).contains("draining"), "claim in flight, then written after the mark")
        // A row read after this node's claim was written is newer: another node claimed the room since.
        #expect(hub.learn(snapshotClaim: oldRow, unlessClaimedHereSince: queue.claimMark))
        #expect(Self.types(a).last == "draining" && Self.types(b).last == "draining", "a newer claim moves the room")
    }

    @Test(arguments: [1, 4])
    func roomEndedWaitsForTheStoreAndPongsDoNot(shards: Int) throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue, shards: shards)
        let rid = Self.roomId()
        let a = Recorder()
        let b = Recorder()
        let (host, guest) = Self.room(hub, rid, a, b)
        let before = (a.texts.count, b.texts.count)
        Self.send(hub, host, #"{"v":1,"type":"end_room","rid":"\#(rid)","payload":{}}"#)
        Self.send(hub, guest, #"{"v":1,"type":"ping","payload":{"ts":5}}"#)
        #expect(!Self.types(a).contains("room_ended") && !Self.types(b).contains("room_ended"), "told before the store had it")
        #expect(Self.types(b).last == "pong", "a pong waits for nothing")
        #expect(a.texts.count == before.0 && b.texts.count == before.1 + 1)
        // The store takes everything queued and writes it: the news goes out.
        _ = queue.take()
        hub.durable(through: queue.written())
        #expect(Self.types(a).last == "room_ended" && Self.types(b).last == "room_ended")
    }

    /// What the partner hears after the leave waits behind the leave's news: nobody hears a later state first.
    @Test func aLeaveIsHeardOnceStoredAndWhatFollowsWaitsBehindIt() throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue)
        let rid = Self.roomId()
        let a = Recorder()
        let b = Recorder()
        let (host, guest) = Self.room(hub, rid, a, b)
        _ = queue.take()
        hub.durable(through: queue.written())
        let heard = a.texts.count
        Self.send(hub, guest, #"{"v":1,"type":"leave","rid":"\#(rid)","payload":{}}"#)
        let c = Recorder()
        let newcomer = hub.open(.ws, sink: c.sink, rid: rid)
        Self.send(hub, newcomer, #"{"v":1,"type":"join","rid":"\#(rid)","payload":{}}"#)
        #expect(a.texts.count == heard, "the host heard something before the leave was stored: \(Self.types(a).suffix(3))")
        #expect(Self.types(c).contains("joined"), "a join waits for nothing")
        _ = queue.take()
        hub.durable(through: queue.written())
        let states = a.texts.suffix(from: heard).compactMap { text -> Int? in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                object["type"] as? String == "room_state"
            else { return nil }
            return ((object["payload"] as? [String: Any])?["participants"] as? [Any])?.count
        }
        #expect(states == [1, 2], "the host hears the guest leave, then the newcomer, in that order")
        _ = host
    }

    /// One tick evicts a seat in each of two rooms: each room's news waits for its own room's write, not for the
    /// whole tick's (the store may write the first room's facts in one batch and the second's in the next).
    @Test func eachRoomsNewsWaitsForItsOwnRoomsWrite() throws {
        let clock = Mutex<Int64>(1_000_000)
        let queue = StoreQueue()
        let hub = SessionHub(
            core: SignalingCore(settings: .init(), authorities: Self.authorities, ids: .system), metrics: ServerMetrics(),
            logger: Logger(label: "test"), messageRate: nil, now: { clock.withLock { $0 } }, store: queue)
        let rids = [Self.roomId(), Self.roomId()].sorted()
        let guests = [Recorder(), Recorder()]
        var hosts: [ConnectionID] = []
        for (rid, guest) in zip(rids, guests) { hosts.append(Self.room(hub, rid, Recorder(), guest).0) }
        for host in hosts { hub.closed(host, reason: "gone") }
        _ = queue.take()
        hub.durable(through: queue.written())
        let heard = guests.map(\.texts.count)
        clock.withLock { $0 += SignalingCore.Settings().evictionTimeoutMs + 1 }
        hub.tick()
        #expect(guests.map(\.texts.count) == heard, "told of an eviction before the store had it")
        // The first room (the tick goes in rid order) is two facts: its record and the revoked seat.
        _ = queue.take(limit: 2)
        hub.durable(through: queue.written())
        #expect(Self.types(guests[0]).suffix(from: heard[0]).contains("room_state"), "the first room's write is in: its guest is told")
        #expect(guests[1].texts.count == heard[1], "the second room's write is not: its guest waits")
        _ = queue.take()
        hub.durable(through: queue.written())
        #expect(Self.types(guests[1]).suffix(from: heard[1]).contains("room_state"))
    }

    /// A watcher whose connection is in another shard hears a room's end once the store has it, like the room's own
    /// participants (it learns through the hub's cross-shard delivery, not through the room's shard).
    @Test func aWatcherInAnotherShardHearsOfAnEndOnceStored() throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue, shards: 4)
        let rid = Self.roomId()
        var elsewhere = Self.roomId()
        while hub.shard(of: elsewhere) == hub.shard(of: rid) { elsewhere = Self.roomId() }
        let a = Recorder()
        let b = Recorder()
        let page = Recorder()
        let (host, _) = Self.room(hub, rid, a, b)
        let watcher = hub.open(.ws, sink: page.sink, rid: elsewhere)
        Self.send(hub, watcher, #"{"v":1,"type":"watch_rooms","payload":{"rids":["\#(rid)"]}}"#)
        _ = queue.take()
        hub.durable(through: queue.written())
        let heard = page.texts.count
        #expect(Self.types(page).contains("room_statuses"))
        Self.send(hub, host, #"{"v":1,"type":"end_room","rid":"\#(rid)","payload":{}}"#)
        #expect(page.texts.count == heard, "the watcher heard of the end before the store had it: \(Self.types(page).suffix(2))")
        _ = queue.take()
        hub.durable(through: queue.written())
        #expect(Self.types(page).suffix(from: heard) == ["room_status_update"])
    }

    /// A connection that moves to another shard brings what waits for it; what the store wrote while it moved goes
    /// out on arrival, in order, and not only when the store next writes (which may be long on a quiet node).
    @Test func whatWaitsMovesWithItsConnectionAndGoesOutOnceWritten() throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue, shards: 4)
        let rid = Self.roomId()
        var other = Self.roomId()
        while hub.shard(of: other) == hub.shard(of: rid) { other = Self.roomId() }
        let a = Recorder()
        let b = Recorder()
        let (host, guest) = Self.room(hub, rid, a, b)
        _ = queue.take()
        hub.durable(through: queue.written())
        let heard = b.texts.count
        Self.send(hub, host, #"{"v":1,"type":"leave","rid":"\#(rid)","payload":{}}"#)
        #expect(b.texts.count == heard)
        // Written, and the hub not told yet: the guest joins a room of another shard meanwhile.
        _ = queue.take()
        _ = queue.written()
        Self.send(hub, guest, #"{"v":1,"type":"join","rid":"\#(other)","payload":{}}"#)
        let types = Self.types(b).suffix(from: heard)
        #expect(types.first == "room_state", "the leave's news first: \(Array(types))")
        #expect(types.contains("joined"))
    }

    /// While the store is away, what waits is bounded like a connection's queue: past it the connection is cut off.
    @Test func whatWaitsIsBounded() {
        var gate = DurableGate()
        let id = ConnectionID(1)
        #expect(gate.admit(.close(.goingAway, reason: "x"), for: id, ticket: 7) == .held)
        for _ in 1..<OutboundBound.messages { #expect(gate.admit(.close(.goingAway, reason: "x"), for: id, ticket: nil) == .held) }
        #expect(gate.admit(.close(.goingAway, reason: "x"), for: id, ticket: nil) == .full)
        #expect(gate.release(through: 6).isEmpty)
        #expect(gate.release(through: 7).count == OutboundBound.messages)
        #expect(gate.isEmpty)
        #expect(gate.admit(.close(.goingAway, reason: "x"), for: id, ticket: nil) == .now)
    }

    /// Bounded in bytes too: a few large messages (an offer's SDP) fill it long before the message count does.
    @Test func whatWaitsIsBoundedInBytes() throws {
        var gate = DurableGate()
        let id = ConnectionID(1)
        let big = Envelope(type: "offer", payload: ["sdp": .string(String(repeating: "a", count: 60_000))])
        let fits = OutboundBound.bytes / DurableGate.cost(.send(big))
        #expect(gate.admit(.send(big), for: id, ticket: 7) == .held)
        for _ in 1..<fits { #expect(gate.admit(.send(big), for: id, ticket: nil) == .held) }
        #expect(fits < OutboundBound.messages)
        #expect(gate.admit(.send(big), for: id, ticket: nil) == .full)
        #expect(gate.release(through: 7).count == fits)
        // Released, the bytes are free again.
        #expect(gate.admit(.send(big), for: id, ticket: 8) == .held)
        for _ in 1..<fits { #expect(gate.admit(.send(big), for: id, ticket: nil) == .held) }
        #expect(gate.admit(.send(big), for: id, ticket: nil) == .full)
    }
}
