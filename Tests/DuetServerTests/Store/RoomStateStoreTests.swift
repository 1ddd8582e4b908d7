import DuetLock
import DuetTestSupport
import Foundation
import Logging
import Testing

@testable import DuetServer

/// Both stores against the protocol's promises: what is written is loaded back by a new instance (a restart),
/// expired rows are left out, facts with one key replace each other, and a node's own live rooms come back empty.
@Suite(.serialized) struct RoomStateStoreTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Where one test's stores live: a SQLite file, or a PostgreSQL server of the test's own.
    struct Place: Sendable {
        let kind: Kind
        let directory: String
        let postgres: PostgresServer?

        /// A new, prepared store on the same data: a node after a restart, or (other `nodeId`) another node.
        func store(nodeId: String = "node-a") async throws -> any RoomStateStore {
            let store: any RoomStateStore
            switch kind {
            case .sqlite: store = SQLiteRoomStateStore(path: directory + "/rooms.sqlite")
            case .postgres: store = try PostgresRoomStateStore(url: postgres!.url, nodeId: nodeId, logger: quiet)
            }
            try await store.prepare()
            return store
        }
    }

    static func with(_ kind: Kind, _ body: (Place) async throws -> Void) async throws {
        switch kind {
        case .sqlite:
            let directory = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            try await body(Place(kind: kind, directory: directory, postgres: nil))
        case .postgres:
            try await PostgresServer.with { server in try await body(Place(kind: kind, directory: server.directory, postgres: server)) }
        }
    }

    static let now: Int64 = 1_800_000_000_000

    @Test(arguments: Kind.allCases) func whatIsWrittenIsLoadedBackAfterARestart(kind: Kind) async throws {
        try await Self.with(kind) { place in
            let first = try await place.store()
            let facts: [DurableFact] = [
                .roomEnded(
                    rid: "r-ended", endedBy: "c-host", reason: "host_ended", tombstoneUntilMs: Self.now + 300_000,
                    seats: ["c-host", "c-guest"], seatsUntilMs: Self.now + 600_000),
                .seatRevoked(rid: "r-live", cid: "c-left", untilMs: Self.now + 900_000),
                .roomLive(rid: "r-live", hostCid: "c-host2", epoch: 7, occupancy: 2),
            ]
            try await first.write(facts, nowMs: Self.now)
            await first.close()

            let second = try await place.store()
            let loaded = try await second.load(nowMs: Self.now + 1)
            #expect(loaded == [facts[0], facts[1], .roomLive(rid: "r-live", hostCid: "c-host2", epoch: 7, occupancy: 0)])
            await second.close()
        }
    }

    @Test(arguments: Kind.allCases) func expiredRowsAreLeftOutAndTheRestComeByExpiry(kind: Kind) async throws {
        try await Self.with(kind) { place in
            let store = try await place.store()
            try await store.write(
                [
                    // Wholly expired.
                    .roomEnded(
                        rid: "r-old", endedBy: "c1", reason: "host_ended", tombstoneUntilMs: Self.now - 10, seats: ["c1"],
                        seatsUntilMs: Self.now - 1),
                    .seatRevoked(rid: "r-a", cid: "c-old", untilMs: Self.now),
                    // The tombstone expired but its seats are still barred: still in force.
                    .roomEnded(
                        rid: "r-seats", endedBy: "c2", reason: "host_ended", tombstoneUntilMs: Self.now - 10, seats: ["c2"],
                        seatsUntilMs: Self.now + 50),
                    .roomEnded(
                        rid: "r-new", endedBy: "c3", reason: "host_ended", tombstoneUntilMs: Self.now + 20, seats: [],
                        seatsUntilMs: Self.now + 20),
                    .seatRevoked(rid: "r-a", cid: "c-late", untilMs: Self.now + 300),
                    .seatRevoked(rid: "r-b", cid: "c-soon", untilMs: Self.now + 200),
                ], nowMs: Self.now - 100)
            let loaded = try await store.load(nowMs: Self.now)
            #expect(
                loaded == [
                    .roomEnded(
                        rid: "r-seats", endedBy: "c2", reason: "host_ended", tombstoneUntilMs: Self.now - 10, seats: ["c2"],
                        seatsUntilMs: Self.now + 50),
                    .roomEnded(
                        rid: "r-new", endedBy: "c3", reason: "host_ended", tombstoneUntilMs: Self.now + 20, seats: [],
                        seatsUntilMs: Self.now + 20),
                    .seatRevoked(rid: "r-b", cid: "c-soon", untilMs: Self.now + 200),
                    .seatRevoked(rid: "r-a", cid: "c-late", untilMs: Self.now + 300),
                ])
            // Upkeep deletes them for good; what is in force stays.
            _ = try await store.maintain(nowMs: Self.now)
            #expect(try await store.load(nowMs: Self.now) == loaded)
            await store.close()
        }
    }

    @Test(arguments: Kind.allCases) func factsWithOneKeyReplaceEachOther(kind: Kind) async throws {
        try await Self.with(kind) { place in
            let store = try await place.store()
            // Live then gone, in one batch and across two: nothing live.
            try await store.write([.roomLive(rid: "r1", hostCid: "h", epoch: 1, occupancy: 1), .roomGone(rid: "r1")], nowMs: Self.now)
            try await store.write([.roomLive(rid: "r2", hostCid: "h", epoch: 1, occupancy: 1)], nowMs: Self.now)
            try await store.write([.roomGone(rid: "r2")], nowMs: Self.now + 1)
            // Live twice: the newest host and epoch.
            try await store.write([.roomLive(rid: "r3", hostCid: "h", epoch: 1, occupancy: 1)], nowMs: Self.now)
            try await store.write([.roomLive(rid: "r3", hostCid: "g", epoch: 2, occupancy: 2)], nowMs: Self.now + 1)
            // Revoked twice: the newest expiry.
            try await store.write([.seatRevoked(rid: "r4", cid: "c", untilMs: Self.now + 100)], nowMs: Self.now)
            try await store.write([.seatRevoked(rid: "r4", cid: "c", untilMs: Self.now + 500)], nowMs: Self.now + 1)
            // Ended takes the room out of the live ones.
            try await store.write([.roomLive(rid: "r5", hostCid: "h", epoch: 3, occupancy: 2)], nowMs: Self.now)
            let ended = DurableFact.roomEnded(
                rid: "r5", endedBy: "h", reason: "host_ended", tombstoneUntilMs: Self.now + 1000, seats: ["h"],
                seatsUntilMs: Self.now + 1000)
            try await store.write([ended], nowMs: Self.now + 2)
            #expect(
                try await store.load(nowMs: Self.now + 3) == [
                    ended,
                    .seatRevoked(rid: "r4", cid: "c", untilMs: Self.now + 500),
                    .roomLive(rid: "r3", hostCid: "g", epoch: 2, occupancy: 0),
                ])
            await store.close()
        }
    }

    @Test(arguments: Kind.allCases) func ownLiveRoomsLoadWithNoSeats(kind: Kind) async throws {
        try await Self.with(kind) { place in
            let a = try await place.store(nodeId: "node-a")
            try await a.write([.roomLive(rid: "r1", hostCid: "h", epoch: 4, occupancy: 2)], nowMs: Self.now)
            await a.close()
            let restarted = try await place.store(nodeId: "node-a")
            #expect(try await restarted.load(nowMs: Self.now) == [.roomLive(rid: "r1", hostCid: "h", epoch: 4, occupancy: 0)])
            await restarted.close()
            if kind == .postgres {
                // Another node sees the room as its restarted node left it: remembered (host, epoch), with no seat —
                // watchers elsewhere must not show the count from before the restart forever.
                let b = try await place.store(nodeId: "node-b")
                #expect(try await b.load(nowMs: Self.now) == [.roomLive(rid: "r1", hostCid: "h", epoch: 4, occupancy: 0)])
                await b.close()
            }
        }
    }

    /// Push subscriptions (issue 31), the same contract in both stores and in memory: replace by (room, endpoint),
    /// bounded per room (the oldest go), removal of one room's or of an endpoint everywhere, kept across a restart.
    @Test(arguments: Kind.allCases) func pushSubscriptionsFollowOneContract(kind: Kind) async throws {
        try await Self.with(kind) { place in
            let first = try await place.store()
            let store = try #require(first as? any PushSubscriptionStore)
            func record(_ rid: String, _ endpoint: String, _ at: Int64, _ auth: String = "a") -> PushSubscriptionRecord {
                PushSubscriptionRecord(rid: rid, endpoint: "https://push.example/" + endpoint, p256dh: "p", auth: auth, createdAtMs: at)
            }
            try await store.savePushSubscription(record("r1", "one", 1))
            try await store.savePushSubscription(record("r1", "one", 2, "b"))
            try await store.savePushSubscription(record("r2", "one", 3))
            #expect(try await store.pushSubscriptions(rid: "r1") == [record("r1", "one", 2, "b")])
            for index in 0..<(PushSubscriptionLimits.perRoom + 3) {
                try await store.savePushSubscription(record("r3", "d\(index)", Int64(10 + index)))
            }
            let bounded = try await store.pushSubscriptions(rid: "r3")
            #expect(bounded.count == PushSubscriptionLimits.perRoom)
            #expect(bounded.first?.endpoint == "https://push.example/d3")
            #expect(try await store.removePushSubscription(rid: "r3", endpoint: "https://push.example/d3"))
            #expect(try await !store.removePushSubscription(rid: "r3", endpoint: "https://push.example/d3"))
            try await store.removePushEndpoint("https://push.example/one")
            #expect(try await store.pushSubscriptions(rid: "r1").isEmpty)
            #expect(try await store.pushSubscriptions(rid: "r2").isEmpty)
            await first.close()
            let second = try #require(try await place.store() as? any PushSubscriptionStore)
            #expect(try await second.pushSubscriptions(rid: "r3").count == PushSubscriptionLimits.perRoom - 1)
            await (second as? any RoomStateStore)?.close()
        }
    }

    @Test func sqliteChangesNeverYieldAndEndOnClose() async throws {
        try await Self.with(.sqlite) { place in
            let store = try await place.store()
            let changes = store.changes()
            try await store.write([.roomLive(rid: "r1", hostCid: "h", epoch: 1, occupancy: 1)], nowMs: Self.now)
            // WAL mode: the write went to the log beside the database file.
            #expect(FileManager.default.fileExists(atPath: place.directory + "/rooms.sqlite-wal"))
            #expect(try await store.maintain(nowMs: Self.now + 60_000) == [])
            await store.close()
            var yielded: [DurableFact] = []
            for await fact in changes { yielded.append(fact) }
            #expect(yielded.isEmpty)
        }
    }

    /// A server shutting down closes its store from a task that is already cancelled. The clean-clone CI crashed on
    /// it: sqlite-nio's thread pool dropped the close, so the handle stayed open (SQLiteConnection's deinit asserts).
    /// A closed last connection checkpoints and removes the WAL file: that is what shows the close happened.
    @Test func closingFromACancelledTaskStillClosesTheDatabase() async throws {
        try await Self.with(.sqlite) { place in
            let store = try await place.store()
            try await store.write([.roomLive(rid: "r1", hostCid: "h", epoch: 1, occupancy: 1)], nowMs: Self.now)
            let wal = place.directory + "/rooms.sqlite-wal"
            #expect(FileManager.default.fileExists(atPath: wal))
            let closing = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                #expect(Task.isCancelled)
                await store.close()
            }
            await closing.value
            #expect(!FileManager.default.fileExists(atPath: wal), "the database is still open: the close was dropped")
        }
    }
}

/// The cluster: two or three nodes on one PostgreSQL database.
@Suite(.serialized) struct PostgresClusterStoreTests {
    static func store(_ server: PostgresServer, _ nodeId: String, timeout: Duration = .seconds(5)) async throws -> PostgresRoomStateStore {
        let store = try PostgresRoomStateStore(url: server.url, nodeId: nodeId, logger: quiet, timeout: timeout)
        try await store.prepare()
        return store
    }

    /// Wall-clock time: the receiving node reads rows "still in force" by its own clock.
    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    @Test func anotherNodeLearnsWhatOneWritesAndTheWriterHearsNoEcho() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let heardByA = Collector(a.changes())
            let heardByB = Collector(b.changes())
            let now = Self.now
            let live = DurableFact.roomLive(rid: "r1", hostCid: "h1", epoch: 3, occupancy: 2)
            let revoked = DurableFact.seatRevoked(rid: "r1", cid: "c-left", untilMs: now + 600_000)
            let ended = DurableFact.roomEnded(
                rid: "r2", endedBy: "h2", reason: "host_ended", tombstoneUntilMs: now + 300_000,
                seats: ["h2", "g2"], seatsUntilMs: now + 600_000)
            try await a.write([live], nowMs: now)
            try await heardByB.waitFor([live])
            try await a.write([revoked], nowMs: now)
            try await heardByB.waitFor([live, revoked])
            try await a.write([.roomLive(rid: "r2", hostCid: "h2", epoch: 1, occupancy: 2)], nowMs: now)
            // (B reads the rows when woken: had A ended r2 already, B would rightly see it ended, not live.)
            try await heardByB.waitFor([live, revoked, .roomLive(rid: "r2", hostCid: "h2", epoch: 1, occupancy: 2)])
            try await a.write([ended], nowMs: now)
            try await heardByB.waitFor([live, revoked, .roomLive(rid: "r2", hostCid: "h2", epoch: 1, occupancy: 2), ended])
            try await a.write([.roomGone(rid: "r1")], nowMs: now)
            try await heardByB.waitFor([
                live, revoked, .roomLive(rid: "r2", hostCid: "h2", epoch: 1, occupancy: 2), ended, .roomGone(rid: "r1"),
            ])

            // A marker from B: once A has heard it, A has handled every notification before it, its own included.
            let marker = DurableFact.roomLive(rid: "marker", hostCid: "hb", epoch: 1, occupancy: 1)
            try await b.write([marker], nowMs: now)
            try await heardByA.waitFor([marker])
            #expect(heardByB.facts.contains(marker) == false)  // nor does B hear its own

            await a.close()
            await b.close()
        }
    }

    /// Only a claim moves a room's record: A's late update (A lost the room and has not heard yet) leaves B's
    /// record alone, and A hears B's claim as a claim.
    @Test func aClaimMovesARoomAndALateUpdateFromTheLoserDoesNot() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let c = try await Self.store(server, "node-c")
            let heardByA = Collector(a.changes())
            let now = Self.now
            try await a.write([.roomClaimed(rid: "r", hostCid: "h", epoch: 3, occupancy: 2)], nowMs: now)
            try await b.write([.roomClaimed(rid: "r", hostCid: "h", epoch: 4, occupancy: 1)], nowMs: now)
            try await heardByA.waitFor([.roomClaimed(rid: "r", hostCid: "h", epoch: 4, occupancy: 1)])
            try await a.write([.roomLive(rid: "r", hostCid: "h", epoch: 5, occupancy: 1)], nowMs: now)
            #expect(try await c.load(nowMs: now) == [.roomLive(rid: "r", hostCid: "h", epoch: 4, occupancy: 1)], "still B's record")
            // A's update of a room it still holds changes its own record.
            try await a.write(
                [.roomClaimed(rid: "s", hostCid: "h", epoch: 1, occupancy: 1), .roomLive(rid: "s", hostCid: "h", epoch: 2, occupancy: 2)],
                nowMs: now)
            #expect(try await c.load(nowMs: now).contains(.roomLive(rid: "s", hostCid: "h", epoch: 2, occupancy: 2)))
            for store in [a, b, c] { await store.close() }
        }
    }

    @Test func aNodeWhoseHeartbeatStoppedHasItsRoomsGone() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let t0 = Self.now
            try await a.write(
                [.roomLive(rid: "ra1", hostCid: "h", epoch: 1, occupancy: 2), .roomLive(rid: "ra2", hostCid: "h", epoch: 1, occupancy: 1)],
                nowMs: t0)
            #expect(try await a.maintain(nowMs: t0) == [])
            try await b.write([.roomLive(rid: "rb", hostCid: "h", epoch: 1, occupancy: 1)], nowMs: t0)
            #expect(try await b.maintain(nowMs: t0) == [])
            // A's heartbeat is fresh: nothing is gone.
            #expect(try await b.maintain(nowMs: t0 + 5_000) == [])
            // A node that has only just reached the database (it was cut off, or just started) judges nobody: after
            // an outage every heartbeat is old, its own too.
            let c = try await Self.store(server, "node-c")
            #expect(try await c.maintain(nowMs: t0 + 11_000) == [])
            await c.close()
            // A said nothing for 11 s (killed, say): B, reaching the database all along, reaps A's rooms, never its own.
            #expect(try await b.maintain(nowMs: t0 + 11_000) == [.roomGone(rid: "ra1"), .roomGone(rid: "ra2")])
            #expect(try await b.maintain(nowMs: t0 + 12_000) == [])
            #expect(try await b.load(nowMs: t0 + 12_000) == [.roomLive(rid: "rb", hostCid: "h", epoch: 1, occupancy: 0)])
            await a.close()
            await b.close()
        }
    }

    /// Where a drain hands its rooms (`DrainService`, issue 53): the other nodes with a heartbeat younger than
    /// `deadNodeAfterMs`, never itself; a node that stopped heartbeating drops out.
    @Test func aDrainingNodeSeesTheOtherLiveNodes() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let c = try await Self.store(server, "node-c")
            let t0 = Self.now
            _ = try await a.maintain(nowMs: t0)
            _ = try await b.maintain(nowMs: t0)
            _ = try await c.maintain(nowMs: t0 + 4_000)
            #expect(try await a.otherLiveNodes(nowMs: t0 + 1_000) == ["node-b", "node-c"])
            #expect(try await c.otherLiveNodes(nowMs: t0 + 5_000) == ["node-a", "node-b"])
            // B and A said nothing for 11 s: only C is alive to A (A's own heartbeat is never counted).
            #expect(try await a.otherLiveNodes(nowMs: t0 + 11_000) == ["node-c"])
            #expect(try await c.otherLiveNodes(nowMs: t0 + 11_000) == [])
            await a.close()
            await b.close()
            await c.close()
        }
    }

    @Test func theFirstProposedSecretsAreEveryNodes() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let first = ServerSecrets.generate()
            let second = ServerSecrets.generate()
            #expect(first != second)
            #expect(try await a.sharedSecrets(proposing: first) == first)
            #expect(try await b.sharedSecrets(proposing: second) == first)
            #expect(try await a.sharedSecrets(proposing: second) == first)
            await a.close()
            await b.close()
        }
    }

    @Test func theFirstProposedVAPIDKeyIsEveryNodes() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let first = VAPIDKey()
            #expect(try await a.sharedVAPIDKey(proposing: first).publicKeyBase64URL == first.publicKeyBase64URL)
            #expect(try await b.sharedVAPIDKey(proposing: VAPIDKey()).publicKeyBase64URL == first.publicKeyBase64URL)
            await a.close()
            await b.close()
        }
    }

    @Test func threeNodesPreparingAtOnceAllSucceed() async throws {
        try await PostgresServer.with { server in
            let stores = try await withThrowingTaskGroup(of: PostgresRoomStateStore.self) { group in
                for node in ["node-1", "node-2", "node-3"] {
                    group.addTask { try await Self.store(server, node) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(stores.count == 3)
            try await stores[0].write([.seatRevoked(rid: "r", cid: "c", untilMs: Self.now + 60_000)], nowMs: Self.now)
            #expect(try await stores[2].load(nowMs: Self.now).count == 1)
            // One schema version row, at the newest version.
            let result = try await runCommand([
                "/usr/lib/postgresql/15/bin/psql", server.url, "-tAc", "SELECT id, version FROM duet_schema_version",
            ])
            #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1|\(PostgresRoomStateStore.migrations.count)")
            for store in stores { await store.close() }
        }
    }

    /// Issue 53: two nodes writing the same rooms at once (a drain: one claims what the other gives up) must not
    /// deadlock. Batches queued in opposite orders were written in those orders, and PostgreSQL failed one of the two
    /// writes (40P01 deadlock detected); rows are now written in one order on every node.
    @Test func twoNodesWritingTheSameRoomsInOppositeOrdersDoNotDeadlock() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a", timeout: .seconds(10))
            let b = try await Self.store(server, "node-b", timeout: .seconds(10))
            for round in 0..<10 {
                let rids = (0..<12).map { "r-\(round)-\(String(format: "%02d", $0))" }
                let forward = rids.map { DurableFact.roomClaimed(rid: $0, hostCid: "h", epoch: 1, occupancy: 2) }
                let backward = Array(forward.reversed())
                async let byA: Void = a.write(forward, nowMs: Self.now)
                async let byB: Void = b.write(backward, nowMs: Self.now)
                do {
                    _ = try await (byA, byB)
                } catch {
                    Issue.record("round \(round): \(error)")
                    break
                }
            }
            await a.close()
            await b.close()
        }
    }

    /// Issue 53: when node B's LISTEN comes back, its re-read of the store yields node A's rows as claims, each
    /// marked with B's queue's `claimMark` from before the read (the hub judges them against B's claims since); a
    /// claim from A's write as it happens carries no mark.
    @Test func aResyncMarksTheClaimsItReadsBack() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a", timeout: .seconds(2))
            let b = try await Self.store(server, "node-b", timeout: .seconds(2))
            let queueOfB = StoreQueue()
            b.attach(claims: queueOfB)
            let heardByB = Collector(b.changes())
            let live = DurableFact.roomLive(rid: "r-of-a", hostCid: "h", epoch: 1, occupancy: 2)
            try await a.write([live], nowMs: Self.now)
            try await heardByB.waitFor([live])
            #expect(b.snapshotMark(taking: live) == nil)

            await server.stop()
            queueOfB.add(.roomClaimed(rid: "r-claimed-by-b", hostCid: "h", epoch: 2, occupancy: 2))
            _ = queueOfB.take()
            queueOfB.written()  // one claim written before the resync: its mark is 1
            try await server.restart()
            let readBack = DurableFact.roomClaimed(rid: "r-of-a", hostCid: "h", epoch: 1, occupancy: 2)
            try await heardByB.waitFor(until: { $0.contains(readBack) })
            #expect(b.snapshotMark(taking: readBack) == 1)
            #expect(b.snapshotMark(taking: readBack) == nil, "taken once")
            await a.close()
            await b.close()
        }
    }

    /// Issue 53: another node's claim heard live is read back from its row at some moment after the notification, so
    /// it is judged as a resync's claim is: marked with the queue's `claimMark` from before the read. Without it, a room
    /// this node had just recovered (its claim still queued) was given up to the older claim the row still showed —
    /// a drained node's, written late — and moved twice.
    @Test func aClaimHeardLiveIsMarkedAsAReadBackIs() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a")
            let b = try await Self.store(server, "node-b")
            let queueOfB = StoreQueue()
            b.attach(claims: queueOfB)
            let heardByB = Collector(b.changes())
            queueOfB.add(.roomClaimed(rid: "r-elsewhere", hostCid: "h", epoch: 1, occupancy: 1))
            _ = queueOfB.take()
            queueOfB.written()  // mark 1
            let claim = DurableFact.roomClaimed(rid: "r", hostCid: "h", epoch: 1, occupancy: 1)
            try await a.write([claim], nowMs: Self.now)
            try await heardByB.waitFor([claim])
            #expect(b.snapshotMark(taking: claim) == 1)
            #expect(b.snapshotMark(taking: claim) == nil, "taken once")
            // Two claims of the room heard before the hub took either (the queue wrote one more claim between the
            // two reads): a mark each, taken in the order they were heard.
            try await a.write([.roomGone(rid: "r")], nowMs: Self.now)
            try await a.write([claim], nowMs: Self.now)
            try await heardByB.waitFor(until: { $0.filter { $0 == claim }.count == 2 })
            queueOfB.add(.roomClaimed(rid: "r-elsewhere-2", hostCid: "h", epoch: 1, occupancy: 1))
            _ = queueOfB.take()
            queueOfB.written()  // mark 2
            try await a.write([.roomGone(rid: "r")], nowMs: Self.now)
            try await a.write([claim], nowMs: Self.now)
            try await heardByB.waitFor(until: { $0.filter { $0 == claim }.count == 3 })
            #expect(b.snapshotMark(taking: claim) == 1)
            #expect(b.snapshotMark(taking: claim) == 2)
            #expect(b.snapshotMark(taking: claim) == nil)
            await a.close()
            await b.close()
        }
    }

    @Test func aStoppedServerIsAClearErrorAndARestartedOneWorksAgain() async throws {
        try await PostgresServer.with { server in
            let a = try await Self.store(server, "node-a", timeout: .seconds(2))
            let b = try await Self.store(server, "node-b", timeout: .seconds(2))
            let heardByB = Collector(b.changes())
            let before = DurableFact.roomLive(rid: "r-before", hostCid: "h", epoch: 1, occupancy: 1)
            try await a.write([before], nowMs: Self.now)
            try await heardByB.waitFor([before])

            await server.stop()
            let port = server.url.split(separator: ":").last!.split(separator: "/").first!
            do {
                try await a.write([.roomGone(rid: "r-before")], nowMs: Self.now)
                Issue.record("a write to a stopped server succeeded")
            } catch let error as RoomStateStoreError {
                #expect(error.description.contains("PostgreSQL at 127.0.0.1:\(port)"), "\(error)")
                #expect(error.description.contains("connection refused"), "\(error)")
            }

            try await server.restart()
            // The pool reconnects on its own backoff: the write goes through within a bounded time.
            let after = DurableFact.roomLive(rid: "r-after", hostCid: "h", epoch: 2, occupancy: 2)
            let deadline = ContinuousClock.now + .seconds(20)
            while true {
                do {
                    try await a.write([after], nowMs: Self.now)
                    break
                } catch {
                    if ContinuousClock.now > deadline { throw error }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(try await b.load(nowMs: Self.now).contains(after))
            // B's LISTEN connection came back too, and it hears A again (its resync reports other nodes' rows as
            // claims: a claim it missed while not listening must still make it give a room up).
            try await heardByB.waitFor(until: { facts in
                facts.contains(after) || facts.contains(.roomClaimed(rid: "r-after", hostCid: "h", epoch: 2, occupancy: 2))
            })
            await a.close()
            await b.close()
        }
    }
}

private let quiet = Logger(label: "duet.test.store", factory: { _ in SwiftLogNoOpLogHandler() })

/// Everything a `changes()` stream yields, for bounded waits on what has arrived.
final class Collector: Sendable {
    private let box = Box()
    private let task: Task<Void, Never>

    private final class Box: Sendable {
        let facts = Mutex<[DurableFact]>([])
        func append(_ fact: DurableFact) { facts.withLock { $0.append(fact) } }
    }

    init(_ stream: AsyncStream<DurableFact>) {
        let box = self.box
        task = Task { for await fact in stream { box.append(fact) } }
    }

    var facts: [DurableFact] { box.facts.withLock { $0 } }

    /// Waits (10 s at most) until exactly `expected` has arrived, in that order.
    func waitFor(_ expected: [DurableFact], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await waitFor(until: { $0 == expected }, sourceLocation: sourceLocation)
    }

    func waitFor(until condition: ([DurableFact]) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(facts) {
            guard ContinuousClock.now < deadline else {
                throw TestFailure("changes() yielded \(facts) within 10 s (at \(sourceLocation))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    deinit { task.cancel() }
}
