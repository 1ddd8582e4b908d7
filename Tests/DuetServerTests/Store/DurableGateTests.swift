@testable import DuetServer
import DuetProtocol
@testable import DuetRooms
import Foundation
import Logging
import Testing

/// Issue 34, point 1, as pure logic: the store's tickets (`StoreQueue`), and the hub holding the news of a final fact
/// until the store has it (`DurableGate`) while everything else flows. KillAfterAckTests proves it with `kill -9`.
@Suite struct DurableGateTests {
    // MARK: - StoreQueue's tickets

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
        #expect(batch.map(\.fact) == [.seatRevoked(rid: "r2", cid: "b", untilMs: 1)], "oldest by order: the room's entry moved behind")
        #expect(queue.written() == live - 1, "r1's first ticket is still waiting, inside its replacement")
        #expect(other > live)
        _ = queue.take()
        #expect(queue.written() == 3)
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

    @Test(arguments: [1, 4])
    func roomEndedWaitsForTheStoreAndPongsDoNot(shards: Int) throws {
        let queue = StoreQueue()
        let hub = Self.hub(queue, shards: shards)
        let rid = Self.roomId()
        let a = Recorder(), b = Recorder()
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
        let a = Recorder(), b = Recorder()
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
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any], object["type"] as? String == "room_state"
            else { return nil }
            return ((object["payload"] as? [String: Any])?["participants"] as? [Any])?.count
        }
        #expect(states == [1, 2], "the host hears the guest leave, then the newcomer, in that order")
        _ = host
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
}
