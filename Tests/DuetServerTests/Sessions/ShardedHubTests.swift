import DuetLock
import DuetProtocol
import Foundation
import Logging
import Synchronization
import Testing

@testable import DuetRooms
@testable import DuetServer

/// Issue 33, point 5: the hub sharded by room behaves as one hub, and a room never waits on another shard's.
@Suite struct ShardedHubTests {
    /// The same calls, played on a hub of one shard and on one of four: every client hears the same, message for
    /// message (its own ids and tokens aside). The scripts mix clients that name their room in the URL with clients that
    /// do not (a join moves them), clients that switch rooms, reconnects with tokens, leaves, ends, relays, pages
    /// that watch rooms of every shard, and pages that listen for rings of rooms of every shard, rung, answering and
    /// cancelled while they move.
    @Test func fourShardsAnswerEveryClientAsOneDoes() {
        let authorities = LimitsTests.authorities()
        var generator = SplitMix64(seed: 33)
        // Two rooms in each of the four shards (which rooms share a shard changes with each run's keys).
        let four = HubDriver.hub(authorities: authorities, shards: 4)
        var byShard: [Int: [String]] = [:]
        while byShard.values.map(\.count).reduce(0, +) < 8 {
            let rid = authorities.roomIds.issue(using: &generator)
            if byShard[four.shard(of: rid), default: []].count < 2 { byShard[four.shard(of: rid), default: []].append(rid) }
        }
        let rooms = (0..<4).flatMap { byShard[$0]! }
        var heard: [String: Int] = [:]
        for seed in 0..<150 {
            let script = HubScript(seed: UInt64(seed), clients: 10, rooms: rooms.count, steps: 120)
            let one = HubDriver(authorities: authorities, rooms: rooms, shards: 1).play(script)
            let sharded = HubDriver(authorities: authorities, rooms: rooms, shards: 4).play(script)
            for message in sharded.joined() {
                for kind in [
                    #""type":"incoming_call""#, #""reason":"accepted""#, #""reason":"declined""#, #""reason":"cancelled""#,
                    #""reason":"answered_elsewhere""#, #""type":"room_status_update""#, #""type":"offer""#,
                ] where message.contains(kind) {
                    heard[kind, default: 0] += 1
                }
            }
            for client in one.indices where one[client] != sharded[client] {
                let common = min(one[client].count, sharded[client].count)
                let index = (0..<common).first { one[client][$0] != sharded[client][$0] } ?? common
                Issue.record(
                    """
                    seed \(seed), client \(client), message \(index): one shard said \
                    \(index < one[client].count ? one[client][index] : "nothing"), four said \
                    \(index < sharded[client].count ? sharded[client][index] : "nothing")
                    """)
                return
            }
        }
        // The scripts did what they are for: pages rung, answered both ways and cancelled, counts, relays. (The same
        // counts every run: the scripts are seeded, and which rooms are drawn changes only their names.)
        for (kind, count) in heard.sorted(by: { $0.key < $1.key }) { #expect(count >= 5, "only \(count) of \(kind) in all scripts") }
        #expect(heard.count == 7, "never heard: \(heard.keys.sorted())")
    }

    /// A room whose shard is busy (here: a connection's sink that does not return) does not hold up a room of another
    /// shard. With one lock for everything, the second room's relay would wait for the first.
    @Test func aRoomDoesNotWaitForAnotherShardsRoom() throws {
        let authorities = LimitsTests.authorities()
        let hub = HubDriver.hub(authorities: authorities, shards: 2)
        var generator = SplitMix64(seed: 7)
        var byShard: [Int: String] = [:]
        while byShard.count < 2 {
            let rid = authorities.roomIds.issue(using: &generator)
            byShard[hub.shard(of: rid)] = byShard[hub.shard(of: rid)] ?? rid
        }
        let blocked = byShard[0]!
        let free = byShard[1]!
        let release = DispatchSemaphore(value: 0)
        let stuck = Atomic<Bool>(false)
        // The first room's second participant has a sink that blocks on the room_state its partner's join sends.
        let first = hub.open(.ws, sink: OutboundSink(yield: { _ in true }, finish: {}, abort: {}), rid: blocked)
        hub.receive(HubDriver.join(blocked), from: first)
        let blocking = hub.open(
            .ws,
            sink: OutboundSink(
                yield: { item in
                    if case .text(let text) = item, text.contains(#""type":"joined""#) {
                        stuck.store(true, ordering: .sequentiallyConsistent)
                        release.wait()
                    }
                    return true
                }, finish: {}, abort: {}), rid: blocked)
        let heard = Recorder()
        let other = hub.open(.ws, sink: heard.sink, rid: free)
        hub.receive(HubDriver.join(free), from: other)
        let blockedJoin = Thread { hub.receive(HubDriver.join(blocked), from: blocking) }
        blockedJoin.start()
        defer { release.signal() }
        let deadline = Date().addingTimeInterval(10)
        while !stuck.load(ordering: .sequentiallyConsistent), Date() < deadline { usleep(1_000) }
        let wasStuck = stuck.load(ordering: .sequentiallyConsistent)
        try #require(wasStuck, "the blocking sink was never called")
        // The first room's shard is now held by the blocked sink; the other room pings and is answered at once.
        let answered = Thread {
            hub.receive(Array(#"{"v":1,"type":"ping","payload":{"ts":1}}"#.utf8), from: other)
        }
        answered.start()
        while !heard.texts.contains(where: { $0.contains(#""type":"pong""#) }), Date() < deadline { usleep(1_000) }
        #expect(heard.texts.contains { $0.contains(#""type":"pong""#) }, "a room of another shard waited for the busy one")
    }

    /// A stream that reuses a seated sid must prove the seat, whichever shard the seat went to: here the owner's stream
    /// named no room and its join moved it to the room's shard; a second stream of the sid, naming no room either, is
    /// refused until it proves the seat, and does not take the owner's seat or its POSTs.
    @Test func aReusedSidMustProveItsSeatWhereverTheSeatWent() throws {
        let authorities = LimitsTests.authorities()
        let hub = HubDriver.hub(authorities: authorities, shards: 4)
        var generator = SplitMix64(seed: 5)
        let sid = "S-00000000000000aa"
        var rid = authorities.roomIds.issue(using: &generator)
        while hub.shard(of: rid) == hub.shard(of: sid) { rid = authorities.roomIds.issue(using: &generator) }
        let owner = Recorder()
        let intruder = Recorder()
        _ = hub.openSSE(sid: sid, postToken: "owner-token", sink: owner.sink)
        #expect(hub.receive(HubDriver.join(rid), sid: sid, postToken: "owner-token") == .accepted)
        #expect(owner.texts.contains { $0.contains(#""type":"joined""#) })
        _ = hub.openSSE(sid: sid, postToken: "intruder-token", sink: intruder.sink)
        let ping = Array(#"{"v":1,"type":"ping"}"#.utf8)
        #expect(hub.receive(ping, sid: sid, postToken: "intruder-token") == .unauthorized, "a reused sid was not asked to prove its seat")
        #expect(hub.receive(HubDriver.join(rid), sid: sid, postToken: "intruder-token") == .unauthorized)
        #expect(hub.receive(ping, sid: sid, postToken: "owner-token") == .accepted, "the owner lost its stream")
        #expect(hub.snapshot().connected == 1)
    }

    /// A connection that did not name its room, joining a room of another shard, moves there: its partner, who named
    /// the room, shares the call with it, and a page that watches the room from a third connection sees both seats.
    @Test func aJoinMovesItsConnectionToTheRoomsShard() throws {
        let authorities = LimitsTests.authorities()
        let hub = HubDriver.hub(authorities: authorities, shards: 4)
        var generator = SplitMix64(seed: 11)
        let rid = authorities.roomIds.issue(using: &generator)
        let watcher = Recorder()
        let named = Recorder()
        let page = hub.open(.ws, sink: watcher.sink)
        hub.receive(Array(#"{"v":1,"type":"watch_rooms","payload":{"rids":["\#(rid)"]}}"#.utf8), from: page)
        let a = hub.open(.ws, sink: named.sink, rid: rid)
        hub.receive(HubDriver.join(rid), from: a)
        // Ids go round the shards: of four connections opened without a room, one is not in the room's.
        let strays = (0..<4).map { _ in Recorder() }
        let ids = strays.map { hub.open(.ws, sink: $0.sink) }
        let stray = try #require(ids.indices.first { Int(ids[$0].raw % 4) != hub.shard(of: rid) })
        hub.receive(HubDriver.join(rid), from: ids[stray])
        #expect(strays[stray].texts.contains { $0.contains(#""type":"joined""#) }, "the moved connection was not seated")
        #expect(
            named.texts.last { $0.contains(#""type":"room_state""#) }?.components(separatedBy: #""connectionStatus""#).count == 3,
            "the named partner does not see two seats")
        #expect(watcher.texts.last { $0.contains("room_status") }?.contains(#""count":2"#) == true, "the watching page did not see 2")
        #expect(hub.snapshot().rooms == 1, "the room was split between shards")
        // And it is there: it relays to its partner.
        hub.receive(Array(#"{"v":1,"type":"offer","rid":"\#(rid)","payload":{"sdp":"v=0"}}"#.utf8), from: ids[stray])
        #expect(named.texts.contains { $0.contains(#""type":"offer""#) }, "the moved connection's offer did not reach its partner")
    }
}

/// What one connection was sent.
final class Recorder: Sendable {
    private let items = DuetLock.Mutex<[Outbound]>([])
    var sink: OutboundSink {
        OutboundSink(
            yield: { item in
                self.items.withLock { $0.append(item) }
                return true
            }, finish: {}, abort: {})
    }
    var all: [Outbound] { items.withLock { $0 } }
    var texts: [String] { all.compactMap { if case .text(let text) = $0 { text } else { nil } } }
}

/// Steps of a call script, drawn from a seed, independent of any hub: the driver resolves what depends on what a
/// client was told (its seat and token) as it plays them.
struct HubScript {
    enum Step {
        case open(client: Int, hint: Int?)
        case join(client: Int, room: Int, withToken: Bool)
        case relay(client: Int)
        case leave(client: Int)
        case end(client: Int)
        case close(client: Int)
        case watch(client: Int, rooms: [Int])
        case ping(client: Int)
        case advance(ms: Int64)
        /// `watch_rooms` that listens for the rings of these rooms, as the client's device.
        case listen(client: Int, rooms: [Int])
        case ring(client: Int)
        /// One of the clients ringing now answers its ring.
        case answer(client: Int, accept: Bool)
        case cancel(client: Int)
    }

    var steps: [Step] = []

    init(seed: UInt64, clients: Int, rooms: Int, steps count: Int) {
        var random = SplitMix64(seed: seed)
        func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
        // Each client comes for one room; some say so in their URL.
        let home = (0..<clients).map { _ in pick(rooms) }
        for _ in 0..<count {
            let client = pick(clients)
            switch pick(30) {
            case 0...2: steps.append(.open(client: client, hint: pick(3) == 0 ? nil : home[client]))
            case 3...6: steps.append(.join(client: client, room: pick(8) == 0 ? pick(rooms) : home[client], withToken: pick(2) == 0))
            case 7...10: steps.append(.relay(client: client))
            case 11: steps.append(.leave(client: client))
            case 12: steps.append(.end(client: client))
            case 13...14: steps.append(.close(client: client))
            case 15: steps.append(.watch(client: client, rooms: (0..<1 + pick(4)).map { _ in pick(rooms) }))
            case 16...17: steps.append(.ping(client: client))
            case 18...19: steps.append(.advance(ms: [100, 1_000, 30_000, 700_000][pick(4)]))
            // Pages listen for the rooms the others come for, so that rings find them.
            case 20...22: steps.append(.listen(client: client, rooms: (0..<2 + pick(4)).map { _ in home[pick(clients)] }))
            case 23...25:
                // Rung pages answer while the ring is on (or after it ended: a late answer changes nothing).
                steps.append(.ring(client: client))
                if pick(4) == 0 { steps.append(.cancel(client: client)) }
                for _ in 0..<pick(4) { steps.append(.answer(client: pick(clients), accept: pick(2) == 0)) }
            case 26...28: steps.append(.answer(client: client, accept: pick(2) == 0))
            default: steps.append(.cancel(client: client))
            }
        }
    }
}

/// Plays a script on a hub of `shards` shards and says what each client was sent, ids and tokens named by order of
/// appearance.
final class HubDriver {
    private let hub: SessionHub
    private let rooms: [String]
    private let clock: Clock
    private let authorities: SignalingCore.Authorities
    private var rings = 0

    private final class Clock: Sendable {
        let ms = Atomic<Int64>(1_000_000)
    }

    private struct Client {
        var id: ConnectionID?
        let recorder = Recorder()
        var seen = 0
        var seats: [String: (cid: String, token: String)] = [:]
        var room: String?
        /// The last ring it was rung for (rid, callId) and the last it started.
        var rungFor: (rid: String, callId: String)?
        var calling: String?
        /// How many items it had been sent after each step.
        var steps: [Int] = []
    }

    private var clients: [Client] = []

    init(authorities: SignalingCore.Authorities, rooms: [String], shards: Int) {
        clock = Clock()
        let clock = clock
        hub = Self.hub(authorities: authorities, shards: shards, now: { clock.ms.load(ordering: .relaxed) })
        self.rooms = rooms
        self.authorities = authorities
    }

    static func hub(authorities: SignalingCore.Authorities, shards: Int, now: (@Sendable () -> Int64)? = nil) -> SessionHub {
        SessionHub(
            core: SignalingCore(settings: .init(), authorities: authorities, ids: .system), metrics: ServerMetrics(),
            logger: Self.quiet, messageRate: nil, now: now ?? { Int64(Date().timeIntervalSince1970 * 1000) }, shards: shards)
    }

    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return logger
    }()

    static func join(_ rid: String, cid: String? = nil, token: String? = nil) -> [UInt8] {
        let proof = cid.map { cid in token.map { #","reconnectCid":"\#(cid)","reconnectToken":"\#($0)""# } ?? "" } ?? ""
        return Array(#"{"v":1,"type":"join","rid":"\#(rid)","payload":{"alert":false\#(proof)}}"#.utf8)
    }

    func play(_ script: HubScript) -> [[String]] {
        clients = (0..<10).map { _ in Client() }
        for step in script.steps {
            perform(step)
            // What a transport does when the hub asks it to close: it closes, and says so.
            for index in clients.indices { absorb(index) }
            for index in clients.indices { clients[index].steps.append(clients[index].recorder.all.count) }
        }
        for index in clients.indices { if let id = clients[index].id { hub.closed(id, reason: "end") } }
        return normalized()
    }

    private func send(_ client: Int, _ json: String) {
        guard let id = clients[client].id else { return }
        hub.receive(Array(json.utf8), from: id)
    }

    private func perform(_ step: HubScript.Step) {
        switch step {
        case .open(let client, let hint):
            guard clients[client].id == nil else { return }
            clients[client].id = hub.open(.ws, sink: clients[client].recorder.sink, rid: hint.map { rooms[$0] })
        case .join(let client, let room, let withToken):
            guard let id = clients[client].id else { return }
            let rid = rooms[room]
            let seat = withToken ? clients[client].seats[rid] : nil
            hub.receive(Self.join(rid, cid: seat?.cid, token: seat?.token), from: id)
        case .relay(let client):
            guard let rid = clients[client].room else { return }
            send(client, #"{"v":1,"type":"offer","rid":"\#(rid)","payload":{"sdp":"v=0 \#(client)"}}"#)
        case .leave(let client):
            send(client, #"{"v":1,"type":"leave","payload":{}}"#)
        case .end(let client):
            send(client, #"{"v":1,"type":"end_room","payload":{}}"#)
        case .close(let client):
            guard let id = clients[client].id else { return }
            hub.closed(id, reason: "client_closed")
            clients[client].id = nil
        case .watch(let client, let watched):
            let rids = watched.map { #""\#(rooms[$0])""# }.joined(separator: ",")
            send(client, #"{"v":1,"type":"watch_rooms","payload":{"rids":[\#(rids)]}}"#)
        case .ping(let client):
            send(client, #"{"v":1,"type":"ping","payload":{"ts":5}}"#)
        case .advance(let ms):
            _ = clock.ms.wrappingAdd(ms, ordering: .relaxed)
            hub.tick()
        case .listen(let client, let listened):
            let device = "device-of-client-\(client)"
            let nowMs = clock.ms.load(ordering: .relaxed)
            let rids = listened.map { #""\#(rooms[$0])""# }.joined(separator: ",")
            let members = Set(listened).sorted().map {
                #""\#(rooms[$0])":"\#(authorities.memberTokens.issue(rid: rooms[$0], deviceId: device, nowMs: nowMs))""#
            }
            .joined(separator: ",")
            send(
                client,
                #"{"v":1,"type":"watch_rooms","payload":{"rids":[\#(rids)],"listen":{"deviceId":"\#(device)","members":{\#(members)}}}}"#)
        case .ring(let client):
            guard let rid = clients[client].room else { return }
            rings += 1
            clients[client].calling = "call-\(rings)"
            send(client, #"{"v":1,"type":"ring","rid":"\#(rid)","payload":{"callId":"call-\#(rings)"}}"#)
        case .answer(let pick, let accept):
            // One of the clients that are ringing now (as each was told), so that answers meet live rings.
            let ringing = clients.indices.filter { clients[$0].rungFor != nil && clients[$0].id != nil }
            guard !ringing.isEmpty else { return }
            let client = ringing[pick % ringing.count]
            guard let (rid, callId) = clients[client].rungFor else { return }
            send(
                client,
                #"{"v":1,"type":"ring_answer","rid":"\#(rid)","payload":{"rid":"\#(rid)","callId":"\#(callId)","answer":"\#(accept ? "accept" : "decline")"}}"#
            )
        case .cancel(let client):
            guard let rid = clients[client].room, let callId = clients[client].calling else { return }
            send(client, #"{"v":1,"type":"ring_cancel","rid":"\#(rid)","payload":{"callId":"\#(callId)"}}"#)
        }
    }

    /// Learns the client's seats from what it was sent, and closes it if it was told to.
    private func absorb(_ index: Int) {
        let items = clients[index].recorder.all
        for item in items[clients[index].seen...] {
            switch item {
            case .close:
                if let id = clients[index].id { hub.closed(id, reason: "asked") }
                clients[index].id = nil
            case .text(let text):
                if let object = Self.object(text), object["type"] as? String == "incoming_call",
                    let payload = object["payload"] as? [String: Any],
                    let rid = payload["rid"] as? String, let callId = payload["callId"] as? String
                {
                    clients[index].rungFor = (rid, callId)
                }
                if let object = Self.object(text), object["type"] as? String == "ring_ended" { clients[index].rungFor = nil }
                guard let object = Self.object(text), object["type"] as? String == "joined", let rid = object["rid"] as? String,
                    let cid = object["cid"] as? String, let payload = object["payload"] as? [String: Any],
                    let token = payload["reconnectToken"] as? String
                else { continue }
                clients[index].seats[rid] = (cid, token)
                clients[index].room = rid
            }
        }
        clients[index].seen = items.count
    }

    private static func object(_ text: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
    }

    /// Ids by order of appearance, to each client; tokens as one word (they are signatures over ids and times); a room's status said
    /// again with the same count left out (one hub says it again on a reconnect, the other only when it changes: a page
    /// is told what changed).
    private func normalized() -> [[String]] {
        return clients.map { normalized(Self.roomOrder($0.recorder.all, steps: $0.steps)) }
    }

    /// Within one step, messages of different rooms in the order of their rooms: rooms of different shards are told
    /// what happened to them independently (a tick that ends two rooms), so only the order within a room is the same.
    /// And within a room, its counts for a watching page after its other messages: a page watches from its own shard,
    /// which learns a count from the room's shard once that shard's lock is released (as a page learns counts of a
    /// room on another cluster node), while a ring it listens for reaches it from the room's shard at once. The counts
    /// themselves, and everything else, keep their order.
    private static func roomOrder(_ items: [Outbound], steps: [Int]) -> [Outbound] {
        var ordered: [Outbound] = []
        var start = 0
        for end in steps + [items.count] where end > start {
            let chunk = items[start..<end].enumerated().map { offset, item -> (String, Int, Int, Outbound) in
                guard case .text(let text) = item, let object = object(text), let rid = object["rid"] as? String else {
                    return ("", 0, offset, item)
                }
                return (rid, object["type"] as? String == "room_status_update" ? 1 : 0, offset, item)
            }
            ordered += chunk.sorted { ($0.0, $0.1, $0.2) < ($1.0, $1.1, $1.2) }.map(\.3)
            start = end
        }
        return ordered
    }

    private func normalized(_ items: [Outbound]) -> [String] {
        var names: [String: String] = [:]
        func rename(_ value: Any, key: String?) -> Any {
            switch value {
            case let string as String:
                if let key, key.hasSuffix("Token") { return "<token>" }
                if string.count == 18, string.hasPrefix("C-") {
                    if let name = names[string] { return name }
                    names[string] = "cid\(names.count)"
                    return names[string]!
                }
                return string
            case let object as [String: Any]:
                // In key order: the names must not depend on a dictionary's order.
                var renamed: [String: Any] = [:]
                for key in object.keys.sorted() { renamed[key] = rename(object[key]!, key: key) }
                return renamed
            case let array as [Any]:
                return array.map { rename($0, key: key) }
            default:
                return value
            }
        }
        var counts: [String: Int] = [:]
        return items.compactMap { item -> String? in
            switch item {
            case .close(let code, _):
                return "close \(code.rawValue)"
            case .text(let text):
                guard let object = Self.object(text) else { return text }
                let type = object["type"] as? String
                let payload = object["payload"] as? [String: Any] ?? [:]
                if type == "room_status_update", let rid = payload["rid"] as? String, let count = payload["count"] as? Int {
                    if counts[rid] == count { return nil }
                    counts[rid] = count
                }
                if type == "room_statuses" { for (rid, count) in payload { counts[rid] = count as? Int } }
                let renamed = rename(object, key: nil)
                let data = try? JSONSerialization.data(withJSONObject: renamed, options: [.sortedKeys])
                return data.map { String(decoding: $0, as: UTF8.self) } ?? text
            }
        }
    }
}
