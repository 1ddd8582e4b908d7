import DuetProtocol
import Foundation
import Testing

@testable import DuetRooms
@testable import DuetServer

/// Issue 33, point 5: rings across shards. A page listens for rings in the shard of each room it listens for, wherever
/// its connection is, so a ring counts it, rings it, takes its answer and ends for it as in one shard.
@Suite struct ShardedRingTests {
    static let callee = "callee-device-00000001"
    static let caller = "caller-device-00000002"

    /// A hub of four shards and a room in each; the ringing room is `rooms[0]`.
    struct Setup {
        let authorities = LimitsTests.authorities()
        let hub: SessionHub
        var rooms: [Int: String] = [:]

        init() {
            hub = HubDriver.hub(authorities: authorities, shards: 4)
            var generator = SplitMix64(seed: 31)
            while rooms.count < 4 {
                let rid = authorities.roomIds.issue(using: &generator)
                rooms[hub.shard(of: rid)] = rooms[hub.shard(of: rid)] ?? rid
            }
        }

        var ringing: String { rooms[0]! }

        /// A connection held by `shard` (its URL names a room of that shard) that has joined nothing.
        func connection(in shard: Int, _ recorder: Recorder) -> ConnectionID {
            hub.open(.ws, sink: recorder.sink, rid: rooms[shard]!)
        }

        /// The caller, seated alone in the ringing room.
        func caller(_ recorder: Recorder) -> ConnectionID {
            let id = connection(in: 0, recorder)
            hub.receive(
                Array(
                    #"{"v":1,"type":"join","rid":"\#(ringing)","payload":{"alert":false,"deviceId":"\#(ShardedRingTests.caller)"}}"#.utf8),
                from: id)
            return id
        }

        func listen(_ id: ConnectionID, device: String = ShardedRingTests.callee, watching: [String]? = nil) {
            let token = authorities.memberTokens.issue(rid: ringing, deviceId: device, nowMs: Int64(Date().timeIntervalSince1970 * 1000))
            let rids = (watching ?? [ringing]).map { #""\#($0)""# }.joined(separator: ",")
            hub.receive(
                Array(
                    #"{"v":1,"type":"watch_rooms","payload":{"rids":[\#(rids)],"listen":{"deviceId":"\#(device)","members":{"\#(ringing)":"\#(token)"}}}}"#
                        .utf8), from: id)
        }

        func ring(_ id: ConnectionID, _ callId: String) {
            hub.receive(Array(#"{"v":1,"type":"ring","rid":"\#(ringing)","payload":{"callId":"\#(callId)"}}"#.utf8), from: id)
        }

        func answer(_ id: ConnectionID, _ callId: String, _ answer: String) {
            hub.receive(
                Array(
                    #"{"v":1,"type":"ring_answer","rid":"\#(ringing)","payload":{"rid":"\#(ringing)","callId":"\#(callId)","answer":"\#(answer)"}}"#
                        .utf8), from: id)
        }
    }

    static func payloads(_ recorder: Recorder, _ type: String) -> [[String: Any]] {
        recorder.texts.compactMap { text in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                object["type"] as? String == type
            else { return nil }
            return object["payload"] as? [String: Any] ?? [:]
        }
    }

    /// The page's connection is in another shard than the room: the caller's first `ring_state` counts it, it rings,
    /// and its decline over its own connection ends the ring for both.
    @Test func aPageInAnotherShardIsCountedAtOnceAndItsAnswerCounts() throws {
        let setup = Setup()
        let a = Recorder()
        let page = Recorder()
        let caller = setup.caller(a)
        let listener = setup.connection(in: 1, page)
        setup.listen(listener)
        setup.ring(caller, "call-1")
        let first = try #require(Self.payloads(a, "ring_state").first, "the caller heard nothing of its ring")
        #expect(first["state"] as? String == "ringing" && first["devices"] as? Int == 1, "the first ring_state was \(first)")
        #expect(Self.payloads(page, "incoming_call").count == 1, "the page did not ring")
        setup.answer(listener, "call-1", "decline")
        #expect(Self.payloads(a, "ring_state").last?["state"] as? String == "declined")
        #expect(Self.payloads(page, "ring_ended").map { $0["reason"] as? String } == ["declined"])
    }

    /// Two pages of one device, in two shards other than the room's: the one that accepts hears `accepted`, the other
    /// `answered_elsewhere`, whichever shard each is in.
    @Test func theAcceptingPageHearsAcceptedWhereverItIs() {
        for (answering, other) in [(1, 2), (2, 1), (0, 3), (3, 0)] {
            let setup = Setup()
            let a = Recorder()
            let pages = [answering: Recorder(), other: Recorder()]
            let caller = setup.caller(a)
            let listeners = pages.map { shard, recorder in (shard, setup.connection(in: shard, recorder)) }
            for (_, id) in listeners { setup.listen(id) }
            let callId = "call-\(answering)-\(other)"
            setup.ring(caller, callId)
            #expect(Self.payloads(a, "ring_state").first?["devices"] as? Int == 1, "one device, two pages")
            setup.answer(listeners.first { $0.0 == answering }!.1, callId, "accept")
            #expect(
                Self.payloads(pages[answering]!, "ring_ended").map { $0["reason"] as? String } == ["accepted"],
                "the page in shard \(answering) that accepted heard \(Self.payloads(pages[answering]!, "ring_ended"))")
            #expect(Self.payloads(pages[other]!, "ring_ended").map { $0["reason"] as? String } == ["answered_elsewhere"])
            #expect(Self.payloads(a, "ring_state").last?["state"] as? String == "accepted")
        }
    }

    /// A page rung that then joins a room of another shard (it moves) still hears how the ring ends, and still
    /// listens; once it closes, the ring's shard no longer counts it. From the ring's own shard (the page leaves the
    /// shard that rang it) and from another (its listening never was where the page was).
    @Test(arguments: [0, 1]) func aPageThatMovesWhileRungHearsTheEndAndIsForgottenOnceClosed(from shard: Int) throws {
        let setup = Setup()
        let a = Recorder()
        let page = Recorder()
        let caller = setup.caller(a)
        let listener = setup.connection(in: shard, page)
        setup.listen(listener)
        setup.ring(caller, "call-1")
        #expect(Self.payloads(page, "incoming_call").count == 1)
        setup.hub.receive(HubDriver.join(setup.rooms[2]!), from: listener)
        #expect(page.texts.contains { $0.contains(#""type":"joined""#) }, "the page did not join")
        setup.hub.receive(
            Array(#"{"v":1,"type":"ring_cancel","rid":"\#(setup.ringing)","payload":{"callId":"call-1"}}"#.utf8), from: caller)
        #expect(
            Self.payloads(page, "ring_ended").map { $0["reason"] as? String } == ["cancelled"], "the moved page was not told the ring ended"
        )
        // Still listening from its new shard: the next ring rings it; closed, it is forgotten.
        setup.ring(caller, "call-2")
        #expect(Self.payloads(page, "incoming_call").count == 2, "the moved page stopped listening")
        setup.hub.receive(
            Array(#"{"v":1,"type":"ring_cancel","rid":"\#(setup.ringing)","payload":{"callId":"call-2"}}"#.utf8), from: caller)
        setup.hub.closed(listener, reason: "end")
        setup.ring(caller, "call-3")
        #expect(Self.payloads(a, "ring_state").last?["devices"] as? Int == 0, "a closed page in another shard was still counted")
    }

    /// A page that stops listening (a new `watch_rooms` without `listen`) is no longer rung from the room's shard.
    @Test func aPageThatStopsListeningIsNotRung() {
        let setup = Setup()
        let a = Recorder()
        let page = Recorder()
        let caller = setup.caller(a)
        let listener = setup.connection(in: 3, page)
        setup.listen(listener)
        setup.hub.receive(Array(#"{"v":1,"type":"watch_rooms","payload":{"rids":["\#(setup.ringing)"]}}"#.utf8), from: listener)
        setup.ring(caller, "call-1")
        #expect(Self.payloads(page, "incoming_call").isEmpty, "a page that stopped listening rang")
        #expect(Self.payloads(a, "ring_state").first?["devices"] as? Int == 0)
    }
}
