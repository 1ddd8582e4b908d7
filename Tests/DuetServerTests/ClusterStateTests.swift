import DuetLock
import DuetProtocol
import DuetServer
import DuetTestSupport
import DuetTransport
import Foundation
import Testing

/// Nodes of a cluster on one real PostgreSQL (started by the test): shared secrets, recovery on another node with
/// the same cids, occupancy across nodes, ended rooms and left seats everywhere, a room handed over when nginx's
/// ring moves it, and a database that goes away and comes back. The nodes run in process here; nginx, `kill -9`
/// and Chromium are in ClusterTests (Browser/).
@Suite(.serialized) struct ClusterStateTests {
    /// A fresh PostgreSQL for `body`; every node started through `nodes` is stopped (and waited for) before the
    /// database goes, whether `body` threw or not — a node left running would flush into a database that is gone.
    static func withCluster(_ body: (PostgresServer, Nodes) async throws -> Void) async throws {
        try await PostgresServer.with { database in
            let nodes = Nodes(database)
            do {
                try await body(database, nodes)
            } catch {
                await nodes.stopAll()
                throw error
            }
            await nodes.stopAll()
        }
    }

    final class Nodes: Sendable {
        let database: PostgresServer
        private let started = Mutex<[TestServer]>([])
        init(_ database: PostgresServer) { self.database = database }

        /// `operationTimeout`: the store's bound on one database operation. Not what most of these tests are about: a
        /// node started while the suite's other tests load both cores must not fail its schema's preparation at the
        /// production bound (5 s; seen in a loaded run). The outage test keeps the production bound, which is what
        /// reports the database down.
        func start(_ name: String, operationTimeout: Duration = .seconds(30)) async throws -> TestServer {
            let url = database.url
            let node = try await TestServer.start { configuration in
                configuration.databaseURL = url
                configuration.nodeId = name
                configuration.databaseOperationTimeout = operationTimeout
            }
            started.withLock { $0.append(node) }
            return node
        }

        /// Stopped and started again with the same configuration (its id, port, data directory).
        func restart(_ node: TestServer) async throws -> TestServer {
            let again = try await node.restarted()
            started.withLock { $0.append(again) }
            return again
        }

        func stopAll() async {
            for node in started.withLock({ $0 }) { await node.stop() }
        }
    }

    /// Issue 31: the callee's page listens on another node than the room's (its watcher watches many rooms, so nginx
    /// cannot route it by one): it rings, the caller counts it, and its decline reaches the caller, through NOTIFY.
    @Test func aPageListeningOnAnotherNodeRingsAndItsDeclineReachesTheCaller() async throws {
        try await Self.withCluster { _, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            let rid = try await a.roomId()
            let callee = "callee-browser-0000000001"
            let seat = try await TestClient.connect(.ws, to: a)
            let token = try #require(try await seat.join(rid, JoinPayload(deviceId: callee)).payload.memberToken)
            try await seat.send(.leave, rid: rid)
            await seat.close()
            let caller = try await TestClient.connect(.ws, to: a)
            _ = try await caller.join(rid, JoinPayload(deviceId: "caller-browser-0000000002"))
            let page = try await TestClient.connect(.ws, to: b)
            try await page.send(.watchRooms, WatchRoomsPayload(rids: [rid], listen: ListenPayload(deviceId: callee, members: [rid: token])))
            _ = try await page.expect(.roomStatuses)

            try await caller.send(.ring, rid: rid, RingPayload(callId: "call-x", caller: ["sealed": "name"]))
            let incoming = try await page.expect(.incomingCall).payload.decode(IncomingCallPayload.self)
            #expect(incoming.rid == rid && incoming.callId == "call-x" && incoming.caller == ["sealed": "name"])
            _ = try await caller.expect(.ringState) {
                guard let state = try? $0.payload.decode(RingStatePayload.self) else { return false }
                return state.state == "ringing" && state.devices == 1
            }
            try await page.send(.ringAnswer, rid: rid, RingAnswerPayload(rid: rid, callId: "call-x", answer: .decline))
            _ = try await caller.expect(.ringState) { (try? $0.payload.decode(RingStatePayload.self).state) == "declined" }
            #expect(try await page.expect(.ringEnded).payload.decode(RingEndedPayload.self).reason == "declined")
            await page.close()
            await caller.close()
        }
    }

    @Test func aRoomMovesToAnotherNodeWithItsCidsItsHostAndItsEpoch() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            // Secrets are the database's: a room id made by A is authentic on B.
            let rid = try await a.roomId()
            let host = try await TestClient.connect(.ws, to: a, roomId: rid)
            let hostJoined = try await host.join(rid)
            let guest = try await TestClient.connect(.sse, to: a, roomId: rid)
            let guestJoined = try await guest.join(rid)
            _ = try await host.roomState { $0.participants.count == 2 }
            // B learns A's rooms from the database within milliseconds; the test waits for it rather than race it.
            try await waitUntil("B knows the room on A") { try await Self.occupancy(of: rid, on: b) == 2 }
            await a.stop()  // drained: both are told, then closed
            // A named B, the only other node alive in the database, to both: a proxy routes their `&via=b` there.
            for client in [host, guest] {
                let draining = try await client.expect(.draining, timeout: .seconds(5))
                #expect(try draining.payload.decode(DrainingPayload.self).via == "b")
            }

            // The guest reaches B first; the host after it, and hosts again.
            let guestOnB = try await TestClient.connect(.sse, to: b, roomId: rid)
            let guestBack = try await guestOnB.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
            #expect(guestBack.payload.reconnect == .recovered)
            #expect(guestBack.cid == guestJoined.cid)
            #expect(guestBack.payload.epoch > guestJoined.payload.epoch, "the epoch continues from A's")
            let hostOnB = try await TestClient.connect(.ws, to: b, roomId: rid)
            let hostBack = try await hostOnB.join(rid, JoinPayload(reconnectCid: hostJoined.cid, reconnectToken: hostJoined.token))
            #expect(hostBack.cid == hostJoined.cid)
            #expect(hostBack.payload.hostCid == hostJoined.cid, "B knows who hosted the room on A")
            _ = try await guestOnB.roomState { $0.participants.count == 2 && $0.hostCid == hostJoined.cid }
            for client in [host, guest, guestOnB, hostOnB] { await client.close() }
        }
    }

    @Test func aWatcherOnOneNodeSeesARoomOnAnother() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            let rid = try await a.roomId()
            let watcher = try await TestClient.connect(.ws, to: b)
            try await watcher.send(.watchRooms, WatchRoomsPayload(rids: [rid]))
            _ = try await watcher.expect(.roomStatuses)
            let first = try await TestClient.connect(.ws, to: a, roomId: rid)
            _ = try await first.join(rid)
            let one = try await watcher.expect(.roomStatusUpdate, timeout: .seconds(5)) { $0.payload["count"] == 1 }
            #expect(one.rid == rid)
            let second = try await TestClient.connect(.ws, to: a, roomId: rid)
            _ = try await second.join(rid)
            _ = try await watcher.expect(.roomStatusUpdate, timeout: .seconds(5)) { $0.payload["count"] == 2 }
            try await first.send(.leave, rid: rid)
            try await second.send(.leave, rid: rid)
            _ = try await watcher.expect(.roomStatusUpdate, timeout: .seconds(5)) { $0.payload["count"] == 0 }
            // A new watcher on B is answered from what B learnt.
            let late = try await TestClient.connect(.ws, to: b)
            let third = try await TestClient.connect(.ws, to: a, roomId: rid)
            _ = try await third.join(rid)
            try await waitUntil("a new watcher on B is answered 1") {
                try await late.send(.watchRooms, WatchRoomsPayload(rids: [rid]))
                return try await late.expect(.roomStatuses).payload[rid] == 1
            }
            for client in [watcher, first, second, late, third] { await client.close() }
        }
    }

    /// Ended on A, then every node restarted: still ended everywhere; a seat left on A cannot come back on B.
    @Test func endedRoomsAndLeftSeatsHoldOnEveryNodeAcrossRestarts() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            let ended = try await a.roomId()
            let left = try await a.roomId()
            let host = try await TestClient.connect(.ws, to: a, roomId: ended)
            _ = try await host.join(ended)
            let guest = try await TestClient.connect(.ws, to: a, roomId: ended)
            let guestJoined = try await guest.join(ended)
            try await host.send(.endRoom, rid: ended)
            _ = try await guest.expect(.roomEnded)
            let stays = try await TestClient.connect(.ws, to: a, roomId: left)
            let staysJoined = try await stays.join(left)
            let leaver = try await TestClient.connect(.ws, to: a, roomId: left)
            let leaverJoined = try await leaver.join(left)
            try await stays.settledRoomState { $0.participants.count == 2 }
            try await leaver.send(.leave, rid: left)
            _ = try await stays.roomState { $0.participants.count == 1 }
            // B hears of both without a restart (within milliseconds). A recovery that beats the news is seated, and
            // then moved off B or told room_ended, its connection closed: so each attempt has a connection of its own,
            // and the test waits for the news rather than race it.
            try await waitUntil("B answers ROOM_ENDED to the guest's token") {
                let probe = try await TestClient.connect(.ws, to: b, roomId: ended)
                defer { Task { await probe.close() } }
                try await probe.send(.join, rid: ended, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
                return try await probe.expect(.error, timeout: .milliseconds(500)).payload["code"] == "ROOM_ENDED"
            }
            try await waitUntil("B refuses the seat that left") {
                let probe = try await TestClient.connect(.ws, to: b, roomId: left)
                defer { Task { await probe.close() } }
                try await probe.send(.join, rid: left, JoinPayload(reconnectCid: leaverJoined.cid, reconnectToken: leaverJoined.token))
                return try await probe.expect(.error, timeout: .milliseconds(500)).payload["code"] == "INVALID_RECONNECT_TOKEN"
            }

            let a2 = try await nodes.restart(a)
            let b2 = try await nodes.restart(b)
            for node in [a2, b2] {
                let again = try await TestClient.connect(.ws, to: node, roomId: ended)
                try await again.send(.join, rid: ended, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token))
                #expect(try await again.expectError(.roomEnded).code == .roomEnded)
                let fresh = try await TestClient.connect(.ws, to: node, roomId: ended)
                try await fresh.send(.join, rid: ended, JoinPayload())
                #expect(try await fresh.expectError(.roomEnded).code == .roomEnded)
                let leaverBack = try await TestClient.connect(.ws, to: node, roomId: left)
                try await leaverBack.send(.join, rid: left, JoinPayload(reconnectCid: leaverJoined.cid, reconnectToken: leaverJoined.token))
                #expect(try await leaverBack.expectError(.invalidReconnectToken).code == .invalidReconnectToken)
                for client in [again, fresh, leaverBack] { await client.close() }
            }
            // The one who stayed recovers its seat (on B).
            let staysBack = try await TestClient.connect(.ws, to: b2, roomId: left)
            #expect(
                try await staysBack.join(left, JoinPayload(reconnectCid: staysJoined.cid, reconnectToken: staysJoined.token)).payload
                    .reconnect == .recovered)
            for client in [host, guest, stays, leaver, staysBack] { await client.close() }
        }
    }

    /// nginx's ring moved the room (a node came back): one participant reaches B while the other is still on A.
    /// A hands the room over — its client is told to reconnect and closed — so the call is never split.
    @Test func aNodeHandsARoomOverWhenAnotherClaimsIt() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            let rid = try await a.roomId()
            let host = try await TestClient.connect(.ws, to: a, roomId: rid)
            let hostJoined = try await host.join(rid)
            let guest = try await TestClient.connect(.ws, to: a, roomId: rid)
            let guestJoined = try await guest.join(rid)
            try await waitUntil("B knows the room on A") { try await Self.occupancy(of: rid, on: b) == 2 }
            await guest.close()
            let guestOnB = try await TestClient.connect(.ws, to: b, roomId: rid)
            #expect(
                try await guestOnB.join(rid, JoinPayload(reconnectCid: guestJoined.cid, reconnectToken: guestJoined.token)).payload
                    .reconnect == .recovered)
            let released = try await host.expect(.draining, timeout: .seconds(5))
            #expect(try released.payload.decode(DrainingPayload.self).via == nil, "no via: the client goes by the room, to B")
            _ = try await host.expectClosed()
            let hostOnB = try await TestClient.connect(.ws, to: b, roomId: rid)
            let back = try await hostOnB.join(rid, JoinPayload(reconnectCid: hostJoined.cid, reconnectToken: hostJoined.token))
            #expect(back.payload.participants.map(\.cid).sorted() == [hostJoined.cid, guestJoined.cid].sorted())
            #expect(back.payload.hostCid == hostJoined.cid)
            #expect(a.server.hub.snapshot().rooms == 0, "A keeps no copy")
            for client in [host, guestOnB, hostOnB] { await client.close() }
        }
    }

    /// Issue 53: two nodes recover one room at the same moment (its two clients reached different nodes): whichever claim
    /// the database took last wins and the other node gives the room up — never do both keep it. A node that hears the
    /// other's claim while its own is being written sets it aside and reads the room's row again once its own is
    /// written (`StoreService.recheck`); before, both could set the other's claim aside and keep one client each.
    @Test func twoNodesClaimingOneRoomAtOnceEndWithOneHolder() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a")
            let b = try await nodes.start("b")
            let c = try await nodes.start("c")
            var rooms: [(rid: String, host: TestClient.Joined, guest: TestClient.Joined)] = []
            var first: [TestClient] = []
            for _ in 0..<8 {
                let rid = try await a.roomId()
                let host = try await TestClient.connect(.ws, to: a, roomId: rid)
                let guest = try await TestClient.connect(.ws, to: a, roomId: rid)
                rooms.append((rid, try await host.join(rid), try await guest.join(rid)))
                first += [host, guest]
            }
            await a.stop()
            for client in first { await client.close() }
            var second: [TestClient] = []
            for room in rooms {
                // Both joins sent before either answer: the two claims are written within milliseconds of each other.
                let hostOnB = try await TestClient.connect(.ws, to: b, roomId: room.rid)
                let guestOnC = try await TestClient.connect(.ws, to: c, roomId: room.rid)
                try await hostOnB.send(.join, rid: room.rid, JoinPayload(reconnectCid: room.host.cid, reconnectToken: room.host.token))
                try await guestOnC.send(.join, rid: room.rid, JoinPayload(reconnectCid: room.guest.cid, reconnectToken: room.guest.token))
                second += [hostOnB, guestOnC]
            }
            func holders(_ rid: String, _ cids: [String]) -> [String] {
                [("b", b), ("c", c)].filter { _, node in cids.contains { node.server.hub.hasSeat(rid: rid, cid: $0) } }.map(\.0)
            }
            try await waitUntil("every room held by one node") {
                rooms.allSatisfy { holders($0.rid, [$0.host.cid, $0.guest.cid]).count == 1 }
            }
            // And it stays so (a claim set aside is not taken up later by both).
            try await Task.sleep(for: .seconds(1))
            let split = rooms.filter { holders($0.rid, [$0.host.cid, $0.guest.cid]).count != 1 }.map(\.rid)
            #expect(split.isEmpty, "rooms held by both nodes, or by none: \(split)")
            for client in second { await client.close() }
        }
    }

    /// The database goes away: signaling goes on from memory, /healthz and /metrics say so, a leave is answered 503
    /// (not stored, so not acknowledged); when it comes back the node writes what it queued, the partner is told of
    /// the leave, and the other node learns the room (one seat left).
    @Test func aDatabaseThatGoesAwayIsReportedAndCaughtUpWith() async throws {
        try await Self.withCluster { database, nodes in
            let a = try await nodes.start("a", operationTimeout: .seconds(5))
            let b = try await nodes.start("b", operationTimeout: .seconds(5))
            let rid = try await a.roomId()
            await database.stop()

            let first = try await TestClient.connect(.ws, to: a, roomId: rid)
            let joined = try await first.join(rid)
            let second = try await TestClient.connect(.ws, to: a, roomId: rid)
            let secondJoined = try await second.join(rid)
            try await first.send(.offer, rid: rid, to: nil, payload: ["sdp": "v=0"])
            _ = try await second.expect(.offer)
            try await waitUntil("A's /healthz reports the database down") {
                try await a.http(.GET, "healthz").body.contains("store postgresql: DOWN")
            }
            #expect(try await a.http(.GET, "healthz").status == 200, "signaling works: the node stays in the load balancer")
            #expect(try await a.http(.GET, "metrics").body.contains("duet_store_up 0"))

            // A leave while the database is away is not acknowledged: 503 within the bound, never a 204 a crash could
            // undo, and the partner is not told yet either. It stays queued, and is written when the database is back.
            try await first.settledRoomState { $0.participants.count == 2 }
            let leave = String(
                decoding: try JSONEncoder().encode(LeaveRequest(rid: rid, cid: secondJoined.cid, reconnectToken: secondJoined.token)),
                as: UTF8.self)
            let refused = try await a.http(.POST, "api/leave", body: leave)
            #expect(refused.status == 503, "\(refused.status) \(refused.body)")
            #expect(refused.headers["retry-after"] == "1")
            try await first.expectNo(.roomState)

            try await database.restart()
            try await waitUntil("A writes again") { try await a.http(.GET, "healthz").body.contains("store postgresql: up") }
            #expect(
                try await first.roomState(timeout: .seconds(20)) { $0.participants.count == 1 }.participants.map(\.cid) == [joined.cid],
                "the partner is told once the leave is stored")
            #expect(try await a.http(.POST, "api/leave", body: leave).status == 204, "sent again: acknowledged now")
            // B learns the room A queued while the database was away (a watcher on B sees it).
            let watcher = try await TestClient.connect(.ws, to: b)
            try await waitUntil("B knows the room's occupancy") {
                try await watcher.send(.watchRooms, WatchRoomsPayload(rids: [rid]))
                return try await watcher.expect(.roomStatuses).payload[rid] == 1
            }
            for client in [first, second, watcher] { await client.close() }
        }
    }

    /// What a new watcher on `node` is told about `rid`.
    static func occupancy(of rid: String, on node: TestServer) async throws -> Int64? {
        let watcher = try await TestClient.connect(.ws, to: node)
        defer { Task { await watcher.close() } }
        try await watcher.send(.watchRooms, WatchRoomsPayload(rids: [rid]))
        if case .int(let count)? = try await watcher.expect(.roomStatuses).payload[rid] { return count }
        return nil
    }

    func waitUntil(_ what: String, within limit: Duration = .seconds(20), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if (try? await condition()) == true { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw TestFailure("\(what): not within \(limit)")
    }
}
