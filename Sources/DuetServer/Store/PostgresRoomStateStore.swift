import DuetLock
import DuetRooms
import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The store a cluster shares: every node writes its facts to one PostgreSQL database (`--database-url`) and learns
/// the others' from it.
///
/// - Queries go through a `PostgresClient` (a pool), run by a task this store owns; `close()` cancels it.
/// - Each batch is one transaction that ends with `pg_notify('duet_rooms', '<node> <kind> <rid>')` per fact. A
///   notification is only a wake-up: the receiving node reads that room's rows and yields what they say, so a
///   coalesced or reordered notification cannot leave it with stale data.
/// - A dedicated connection LISTENs. When it drops, it reconnects with backoff and then reads everything again
///   (`resync`): a notification sent while it was away is never delivered, and must not leave the node stale.
/// - Nodes heartbeat in `maintain`; a node whose heartbeat is older than `deadNodeAfterMs` (killed with -9, say) has
///   its live rooms deleted by whichever node notices first, and every node learns `roomGone` for them.
/// - The schema is created and migrated by the nodes themselves, one at a time under an advisory lock.
/// - Every operation is bounded (`timeout`): the pool waits for a server that is down rather than failing, and the
///   caller must hear "PostgreSQL at host:port: connection refused" in seconds, not a minute later.
public final class PostgresRoomStateStore: RoomStateStore {
    public let nodeId: String
    /// `host:port`, for messages.
    public let endpoint: String
    /// A node whose heartbeat is older than this is taken for dead, and its live rooms for gone.
    public static let deadNodeAfterMs: Int64 = 10_000
    /// `changes()`: what other nodes wrote, as this node learns it.
    private let subscribers = ChangeSubscribers()
    /// `ringMessages()`: what other nodes said of their rings.
    private let ringSubscribers = BroadcastSubscribers<RingBroadcast>()
    static let channel = "duet_rooms"
    /// Any constant the cluster agrees on: the key of the advisory lock that serializes migrations.
    static let migrationLockKey: Int64 = 0x6475_6574_5F73_6368  // "duet_sch"

    private let clientConfiguration: PostgresClient.Configuration
    private let connectionConfiguration: PostgresConnection.Configuration
    private let client: PostgresClient
    private let logger: Logger
    private let timeout: Duration
    private let state = Mutex<State>(State())

    private struct State {
        var runTask: Task<Void, Never>?
        var listener: Task<Void, Never>?
        var closed = false
        /// Rooms of other nodes this store said were live: after a resync, those no longer there are said gone.
        var remoteLive: Set<String> = []
        var lastPruneMs: Int64?
        /// Since when `maintain` has reached the database without a failure: only a node that has itself been
        /// heartbeating for `deadNodeAfterMs` judges others dead (after an outage every heartbeat is old, its own too).
        var reachableSinceMs: Int64?
        /// Sends ring messages one after the other (`broadcast`), started with the first.
        var ringSender: Task<Void, Never>?
        /// This node's writes (`attach(claims:)`): a claim's row is read after taking its `claimMark`.
        var claims: StoreQueue?
        /// The claims a resync or a notification published, by room, in the order they were published: the mark
        /// taken before each one's rows were read (`snapshotMark(taking:)` takes the first). Two reads of one room
        /// before the hub took the first claim keep a mark each, so neither claim goes unjudged.
        var snapshotMarks: [String: [UInt64]] = [:]

        mutating func keepMark(_ mark: UInt64, for rid: String) { snapshotMarks[rid, default: []].append(mark) }
    }

    /// The queue of this node's writes: every claim read from a row (a notification's, a resync's, a `reread`'s) is
    /// marked with the queue's `claimMark` from before the read, so that a claim of a room this node has claimed since
    /// is judged against this node's own (set at start).
    func attach(claims queue: StoreQueue) { state.withLock { $0.claims = queue } }

    public func snapshotMark(taking fact: DurableFact) -> UInt64? {
        guard let rid = fact.claimedRid else { return nil }
        return state.withLock { state in
            guard var marks = state.snapshotMarks[rid], !marks.isEmpty else { return nil }
            let first = marks.removeFirst()
            state.snapshotMarks[rid] = marks.isEmpty ? nil : marks
            return first
        }
    }

    /// Ring messages waiting to be sent, in order: a ring's end must never overtake its start (another node would ring
    /// for an ended ring). Bounded: while the database is away, the oldest make way.
    private let ringOutbox = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1_000))

    /// - Parameters:
    ///   - url: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require|verify-ca|verify-full]`
    ///     (`postgresql://` too; port 5432 and sslmode `prefer` by default, as libpq).
    ///   - nodeId: this node's name in the cluster (no whitespace); its live rows and heartbeat carry it.
    ///   - timeout: how long one operation may take before it fails with a clear error.
    public init(url: String, nodeId: String, logger: Logger, timeout: Duration = .seconds(5)) throws {
        guard !nodeId.isEmpty, !nodeId.contains(where: \.isWhitespace) else {
            throw RoomStateStoreError("node id \"\(nodeId)\" must be non-empty and contain no whitespace")
        }
        let parsed = try Self.parse(url: url)
        self.nodeId = nodeId
        self.endpoint = parsed.endpoint
        self.clientConfiguration = parsed.client
        self.connectionConfiguration = parsed.connection
        self.logger = logger
        self.timeout = timeout
        let client = PostgresClient(configuration: parsed.client, backgroundLogger: logger)
        self.client = client
        let runTask = Task { await client.run() }
        state.withLock { $0.runTask = runTask }
    }

    deinit {
        let tasks = state.withLock { [$0.runTask, $0.listener] }
        for task in tasks { task?.cancel() }
    }

    // MARK: Schema

    /// Each entry is one schema version; `prepare` applies the missing ones in order, each in the one transaction that
    /// holds the migration lock. Append, never edit.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE duet_secrets (id int PRIMARY KEY CHECK (id = 1), room_id_secret text NOT NULL,
                reconnect_secret text NOT NULL, turn_token_secret text NOT NULL)
            """,
            """
            CREATE TABLE duet_ended_rooms (rid text PRIMARY KEY, ended_by text NOT NULL, reason text NOT NULL,
                tombstone_until bigint NOT NULL, seats text[] NOT NULL, seats_until bigint NOT NULL)
            """,
            "CREATE TABLE duet_revoked_seats (rid text NOT NULL, cid text NOT NULL, until bigint NOT NULL, PRIMARY KEY (rid, cid))",
            """
            CREATE TABLE duet_live_rooms (rid text PRIMARY KEY, node_id text NOT NULL, host_cid text NOT NULL,
                epoch bigint NOT NULL, occupancy int NOT NULL, updated_at bigint NOT NULL)
            """,
            "CREATE INDEX duet_live_rooms_node ON duet_live_rooms (node_id)",
            "CREATE TABLE duet_nodes (node_id text PRIMARY KEY, heartbeat_at bigint NOT NULL)",
        ],
        // Issue 31: the cluster's VAPID key and the devices to ring (PushSubscriptionStore).
        [
            "CREATE TABLE duet_vapid (id int PRIMARY KEY CHECK (id = 1), private_key text NOT NULL)",
            """
            CREATE TABLE duet_push_subscriptions (rid text NOT NULL, endpoint text NOT NULL, p256dh text NOT NULL,
                auth text NOT NULL, created_at bigint NOT NULL, device_id text, PRIMARY KEY (rid, endpoint))
            """,
            "CREATE INDEX duet_push_subscriptions_endpoint ON duet_push_subscriptions (endpoint)",
        ],
        // Issue 31: a device's snapshot key (Serenada's encPublicKey).
        [
            "ALTER TABLE duet_push_subscriptions ADD COLUMN enc_public_key text",
            "ALTER TABLE duet_push_subscriptions ADD COLUMN enc_key_auth text",
        ],
    ]

    /// Creates or migrates the schema, then starts listening; returns once LISTEN is in place, so that a `load` after
    /// it misses nothing.
    public func prepare() async throws {
        try await perform("prepare the schema") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                // The lock first, before any CREATE: three nodes starting at once take turns, and the later ones find
                // the schema done.
                _ = try await connection.query("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", logger: logger)
                _ = try await connection.query(
                    "CREATE TABLE IF NOT EXISTS duet_schema_version (id int PRIMARY KEY CHECK (id = 1), version int NOT NULL)",
                    logger: logger)
                var version = 0
                for try await (value) in try await connection.query("SELECT version FROM duet_schema_version WHERE id = 1", logger: logger)
                    .decode(Int.self)
                {
                    version = value
                }
                guard version < Self.migrations.count else { return }
                for statements in Self.migrations[version...] {
                    for statement in statements { _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger) }
                }
                let newest = Self.migrations.count
                _ = try await connection.query(
                    """
                    INSERT INTO duet_schema_version (id, version) VALUES (1, \(newest))
                    ON CONFLICT (id) DO UPDATE SET version = EXCLUDED.version
                    """, logger: logger)
            }
        }
        try await startListening()
    }

    // MARK: Reads

    private struct LiveRow: Sendable {
        var rid: String, nodeId: String, hostCid: String, epoch: Int64, occupancy: Int
    }

    private struct Snapshot: Sendable {
        var ended: [DurableFact] = []
        var revoked: [DurableFact] = []
        var live: [LiveRow] = []
    }

    private func snapshot(nowMs: Int64) async throws -> Snapshot {
        try await perform("load") { client, logger in
            var snapshot = Snapshot()
            for try await (rid, endedBy, reason, tombstoneUntil, seats, seatsUntil) in try await client.query(
                """
                SELECT rid, ended_by, reason, tombstone_until, seats, seats_until FROM duet_ended_rooms
                WHERE tombstone_until > \(nowMs) OR seats_until > \(nowMs) ORDER BY tombstone_until, rid
                """, logger: logger
            ).decode((String, String, String, Int64, [String], Int64).self) {
                snapshot.ended.append(
                    .roomEnded(
                        rid: rid, endedBy: endedBy, reason: reason, tombstoneUntilMs: tombstoneUntil, seats: seats, seatsUntilMs: seatsUntil
                    ))
            }
            for try await (rid, cid, until) in try await client.query(
                "SELECT rid, cid, until FROM duet_revoked_seats WHERE until > \(nowMs) ORDER BY until, rid, cid", logger: logger
            ).decode((String, String, Int64).self) {
                snapshot.revoked.append(.seatRevoked(rid: rid, cid: cid, untilMs: until))
            }
            for try await (rid, node, host, epoch, occupancy) in try await client.query(
                "SELECT rid, node_id, host_cid, epoch, occupancy FROM duet_live_rooms ORDER BY updated_at, rid", logger: logger
            ).decode((String, String, String, Int64, Int).self) {
                snapshot.live.append(LiveRow(rid: rid, nodeId: node, hostCid: host, epoch: epoch, occupancy: occupancy))
            }
            return snapshot
        }
    }

    /// Ended rooms, then revoked seats (each by expiry), then live rooms: a room id that lives again after its
    /// tombstone expired ends up live. This node's own live rows are from before its restart: occupancy 0.
    public func load(nowMs: Int64) async throws -> [DurableFact] {
        let snapshot = try await snapshot(nowMs: nowMs)
        let live = snapshot.live.map { row in
            DurableFact.roomLive(rid: row.rid, hostCid: row.hostCid, epoch: row.epoch, occupancy: row.nodeId == nodeId ? 0 : row.occupancy)
        }
        let remote = Set(snapshot.live.filter { $0.nodeId != nodeId }.map(\.rid))
        state.withLock { $0.remoteLive.formUnion(remote) }
        // Its own rows are stale now: no seat is here until its client comes back. The other nodes are told (their
        // watchers would show the old count forever), and a row nobody claims again is pruned after an hour.
        let own = snapshot.live.filter { $0.nodeId == nodeId && $0.occupancy != 0 }.map(\.rid)
        if !own.isEmpty {
            let nodeId = self.nodeId
            try await perform("load") { client, logger in
                try await client.withTransaction(logger: logger) { connection in
                    _ = try await connection.query(
                        "UPDATE duet_live_rooms SET occupancy = 0, updated_at = \(nowMs) WHERE node_id = \(nodeId) AND occupancy <> 0",
                        logger: logger)
                    for rid in own {
                        let payload = "\(nodeId) live \(rid)"
                        _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                    }
                }
            }
        }
        return snapshot.ended + snapshot.revoked + live
    }

    /// What the rows of one room say now, after a notification of `kind` for it from another node.
    ///
    /// A claim read here is judged as a resync's is (`snapshotMark(taking:)`): the row is read at some moment after the
    /// notification, and if this node recovered the room meanwhile (its claim queued, or written after the read
    /// began), the row still shows the other node's claim, which is older than this node's. Taken for news, it made
    /// the room's new node give it up again: a drained node's claim of a room joined just before its SIGTERM, written
    /// after the successor's recovery had begun, moved that room twice (issue 53, rolling.py).
    private func facts(kind: Substring, rid: String, nowMs: Int64) async throws -> (facts: [DurableFact], mark: UInt64?) {
        let nodeId = self.nodeId
        let mark = kind == "claim" ? state.withLock { $0.claims?.claimMark } : nil
        let facts = try await perform("read room \(rid)") { client, logger in
            var facts: [DurableFact] = []
            switch kind {
            case "ended":
                for try await (endedBy, reason, tombstoneUntil, seats, seatsUntil) in try await client.query(
                    """
                    SELECT ended_by, reason, tombstone_until, seats, seats_until FROM duet_ended_rooms
                    WHERE rid = \(rid) AND (tombstone_until > \(nowMs) OR seats_until > \(nowMs))
                    """, logger: logger
                ).decode((String, String, Int64, [String], Int64).self) {
                    facts.append(
                        .roomEnded(
                            rid: rid, endedBy: endedBy, reason: reason, tombstoneUntilMs: tombstoneUntil, seats: seats,
                            seatsUntilMs: seatsUntil))
                }
            case "revoked":
                for try await (cid, until) in try await client.query(
                    "SELECT cid, until FROM duet_revoked_seats WHERE rid = \(rid) AND until > \(nowMs) ORDER BY until, cid", logger: logger
                ).decode((String, Int64).self) {
                    facts.append(.seatRevoked(rid: rid, cid: cid, untilMs: until))
                }
            default:  // "claim", "live", "gone"
                var row: LiveRow?
                for try await (node, host, epoch, occupancy) in try await client.query(
                    "SELECT node_id, host_cid, epoch, occupancy FROM duet_live_rooms WHERE rid = \(rid)", logger: logger
                ).decode((String, String, Int64, Int).self) {
                    row = LiveRow(rid: rid, nodeId: node, hostCid: host, epoch: epoch, occupancy: occupancy)
                }
                if let row {
                    // Our own row: we know our rooms better than the table does. Another node's: a claim if that is
                    // what woke us (the row may be newer than the notification; it is still that node's).
                    if row.nodeId != nodeId {
                        facts.append(
                            kind == "claim"
                                ? .roomClaimed(rid: rid, hostCid: row.hostCid, epoch: row.epoch, occupancy: row.occupancy)
                                : .roomLive(rid: rid, hostCid: row.hostCid, epoch: row.epoch, occupancy: row.occupancy))
                    }
                } else {
                    facts.append(.roomGone(rid: rid))
                }
            }
            return facts
        }
        return (facts, mark)
    }

    // MARK: Writes

    public func write(_ facts: [DurableFact], nowMs: Int64) async throws {
        guard !facts.isEmpty else { return }
        let nodeId = self.nodeId
        // Every node writes its rows in the same order, by room (a room's own facts keep theirs: its end after its
        // live record). In the order they were queued, two nodes writing the same rooms at once (a drain: the new node
        // claims what the old one gives up) locked the rows in opposite orders, and PostgreSQL broke the deadlock by
        // failing one write (40P01, seen in rolling.py's drain): its claims waited a retry, and rooms moved twice.
        let ordered = facts.enumerated().sorted { ($0.element.rid, $0.offset) < ($1.element.rid, $1.offset) }.map(\.element)
        try await perform("write") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                for fact in ordered {
                    let kind: String
                    switch fact {
                    case .roomEnded(let rid, let endedBy, let reason, let tombstoneUntilMs, let seats, let seatsUntilMs):
                        kind = "ended"
                        _ = try await connection.query(
                            """
                            INSERT INTO duet_ended_rooms (rid, ended_by, reason, tombstone_until, seats, seats_until)
                            VALUES (\(rid), \(endedBy), \(reason), \(tombstoneUntilMs), \(seats), \(seatsUntilMs))
                            ON CONFLICT (rid) DO UPDATE SET ended_by = EXCLUDED.ended_by, reason = EXCLUDED.reason,
                                tombstone_until = EXCLUDED.tombstone_until, seats = EXCLUDED.seats, seats_until = EXCLUDED.seats_until
                            """, logger: logger)
                        // Ended is ended, on whichever node the room lived.
                        _ = try await connection.query("DELETE FROM duet_live_rooms WHERE rid = \(rid)", logger: logger)
                    case .seatRevoked(let rid, let cid, let untilMs):
                        kind = "revoked"
                        _ = try await connection.query(
                            """
                            INSERT INTO duet_revoked_seats (rid, cid, until) VALUES (\(rid), \(cid), \(untilMs))
                            ON CONFLICT (rid, cid) DO UPDATE SET until = EXCLUDED.until
                            """, logger: logger)
                    case .roomClaimed(let rid, let hostCid, let epoch, let occupancy):
                        // A claim takes the record whoever held it: this node holds the room now.
                        kind = "claim"
                        _ = try await connection.query(
                            """
                            INSERT INTO duet_live_rooms (rid, node_id, host_cid, epoch, occupancy, updated_at)
                            VALUES (\(rid), \(nodeId), \(hostCid), \(epoch), \(occupancy), \(nowMs))
                            ON CONFLICT (rid) DO UPDATE SET node_id = EXCLUDED.node_id, host_cid = EXCLUDED.host_cid,
                                epoch = EXCLUDED.epoch, occupancy = EXCLUDED.occupancy, updated_at = EXCLUDED.updated_at
                            """, logger: logger)
                    case .roomLive(let rid, let hostCid, let epoch, let occupancy):
                        // An update changes only our own record (or makes one that a sweep removed): a node that lost
                        // the room to a claim and has not heard of it yet cannot take it back.
                        kind = "live"
                        _ = try await connection.query(
                            """
                            INSERT INTO duet_live_rooms (rid, node_id, host_cid, epoch, occupancy, updated_at)
                            VALUES (\(rid), \(nodeId), \(hostCid), \(epoch), \(occupancy), \(nowMs))
                            ON CONFLICT (rid) DO UPDATE SET host_cid = EXCLUDED.host_cid,
                                epoch = EXCLUDED.epoch, occupancy = EXCLUDED.occupancy, updated_at = EXCLUDED.updated_at
                            WHERE duet_live_rooms.node_id = EXCLUDED.node_id
                            """, logger: logger)
                    case .roomGone(let rid):
                        kind = "gone"
                        // Only our own: a room another node took over since is that node's to end.
                        _ = try await connection.query(
                            "DELETE FROM duet_live_rooms WHERE rid = \(rid) AND node_id = \(nodeId)", logger: logger)
                    }
                    let payload = "\(nodeId) \(kind) \(fact.rid)"
                    _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                }
                if facts.contains(where: {
                    switch $0 {
                    case .roomLive, .roomClaimed: true
                    default: false
                    }
                }) {
                    // A node that writes live rooms is alive: no other node may reap them before its first `maintain`.
                    _ = try await connection.query(Self.heartbeat(nodeId: nodeId, nowMs: nowMs), logger: logger)
                }
            }
        }
    }

    private static func heartbeat(nodeId: String, nowMs: Int64) -> PostgresQuery {
        """
        INSERT INTO duet_nodes (node_id, heartbeat_at) VALUES (\(nodeId), \(nowMs))
        ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = GREATEST(duet_nodes.heartbeat_at, EXCLUDED.heartbeat_at)
        """
    }

    /// This node's heartbeat; the live rooms of nodes whose heartbeat stopped (or never came), deleted and returned as
    /// `roomGone` (and notified, so every node learns it); expired rows pruned once a minute.
    public func maintain(nowMs: Int64) async throws -> [DurableFact] {
        let prune = state.withLock { state in
            if let last = state.lastPruneMs, nowMs >= last, nowMs - last < 60_000 { return false }
            state.lastPruneMs = nowMs
            return true
        }
        let reachableSince = state.withLock { state in
            if state.reachableSinceMs == nil { state.reachableSinceMs = nowMs }
            return state.reachableSinceMs!
        }
        let sweep = nowMs - reachableSince >= Self.deadNodeAfterMs
        let gone: [String]
        do {
            gone = try await maintenance(nowMs: nowMs, sweep: sweep, prune: prune)
        } catch {
            state.withLock { $0.reachableSinceMs = nil }
            throw error
        }
        return gone.map { DurableFact.roomGone(rid: $0) }
    }

    private func maintenance(nowMs: Int64, sweep: Bool, prune: Bool) async throws -> [String] {
        let nodeId = self.nodeId
        let gone = try await perform("maintain") { client, logger in
            try await client.withTransaction(logger: logger) { connection -> [String] in
                _ = try await connection.query(Self.heartbeat(nodeId: nodeId, nowMs: nowMs), logger: logger)
                let deadline = nowMs - Self.deadNodeAfterMs
                var gone: [String] = []
                if sweep {
                    for try await rid in try await connection.query(
                        """
                        DELETE FROM duet_live_rooms l WHERE l.node_id <> \(nodeId) AND NOT EXISTS (
                            SELECT 1 FROM duet_nodes n WHERE n.node_id = l.node_id AND n.heartbeat_at >= \(deadline))
                        RETURNING l.rid
                        """, logger: logger
                    ).decode(String.self) {
                        gone.append(rid)
                    }
                }
                for rid in gone {
                    let payload = "\(nodeId) gone \(rid)"
                    _ = try await connection.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                }
                if prune {
                    _ = try await connection.query(
                        "DELETE FROM duet_ended_rooms WHERE tombstone_until <= \(nowMs) AND seats_until <= \(nowMs)", logger: logger)
                    _ = try await connection.query("DELETE FROM duet_revoked_seats WHERE until <= \(nowMs)", logger: logger)
                    // Remembered rooms (no seat) nobody came back to within an hour: their tokens have expired.
                    _ = try await connection.query(
                        "DELETE FROM duet_live_rooms WHERE occupancy = 0 AND updated_at < \(nowMs - RoomStateRetention.rememberedRoomMs)",
                        logger: logger)
                }
                return gone.sorted()
            }
        }
        state.withLock { $0.remoteLive.subtract(gone) }
        return gone
    }

    /// The cluster's VAPID key, agreed like the secrets: every node signs pushes with the key the browsers subscribed
    /// with, whichever node they subscribed through.
    public func sharedVAPIDKey(proposing proposal: VAPIDKey) async throws -> VAPIDKey {
        let text = try await perform("agree on the VAPID key") { client, logger -> String in
            _ = try await client.query(
                "INSERT INTO duet_vapid (id, private_key) VALUES (1, \(proposal.privateKeyBase64URL)) ON CONFLICT (id) DO NOTHING",
                logger: logger)
            for try await key in try await client.query("SELECT private_key FROM duet_vapid WHERE id = 1", logger: logger).decode(
                String.self)
            {
                return key
            }
            throw RoomStateStoreError("PostgreSQL: duet_vapid has no row after inserting one")
        }
        return try VAPIDKey(privateKeyBase64URL: text)
    }

    /// The other nodes whose heartbeat is younger than `deadNodeAfterMs`, in name order.
    public func otherLiveNodes(nowMs: Int64) async throws -> [String] {
        let nodeId = self.nodeId
        let since = nowMs - Self.deadNodeAfterMs
        return try await perform("read the live nodes") { client, logger in
            var nodes: [String] = []
            for try await node in try await client.query(
                "SELECT node_id FROM duet_nodes WHERE node_id <> \(nodeId) AND heartbeat_at >= \(since) ORDER BY node_id",
                logger: logger
            ).decode(String.self) {
                nodes.append(node)
            }
            return nodes
        }
    }

    /// The cluster's HMAC secrets: the first proposal any node made wins, and every node gets that one, so a token
    /// issued by one node is valid on all of them.
    public func sharedSecrets(proposing proposal: ServerSecrets) async throws -> ServerSecrets {
        try await perform("agree on the secrets") { client, logger in
            _ = try await client.query(
                """
                INSERT INTO duet_secrets (id, room_id_secret, reconnect_secret, turn_token_secret)
                VALUES (1, \(proposal.roomIdSecret), \(proposal.reconnectSecret), \(proposal.turnTokenSecret))
                ON CONFLICT (id) DO NOTHING
                """, logger: logger)
            for try await (roomId, reconnect, turn) in try await client.query(
                "SELECT room_id_secret, reconnect_secret, turn_token_secret FROM duet_secrets WHERE id = 1", logger: logger
            ).decode((String, String, String).self) {
                return ServerSecrets(roomIdSecret: roomId, reconnectSecret: reconnect, turnTokenSecret: turn)
            }
            throw RoomStateStoreError("PostgreSQL: duet_secrets has no row after inserting one")
        }
    }

    // MARK: Changes

    public func changes() -> AsyncStream<DurableFact> { subscribers.subscribe() }

    /// `mark`: the queue's `claimMark` from before the rows of `facts` were read, kept for each claim among them
    /// (`snapshotMark(taking:)`) — only if the claims reach a subscriber, so that a mark is never left for a claim nobody
    /// took (the next claim of the room would take it).
    private func publish(_ facts: [DurableFact], mark: UInt64? = nil) {
        guard !facts.isEmpty else { return }
        state.withLock { state in
            for fact in facts {
                switch fact {
                case .roomLive(let rid, _, _, _), .roomClaimed(let rid, _, _, _): state.remoteLive.insert(rid)
                case .roomGone(let rid), .roomEnded(let rid, _, _, _, _, _): state.remoteLive.remove(rid)
                case .seatRevoked: break
                }
            }
        }
        // Under the lock: a claim taken by the hub before its mark is kept would find none.
        state.withLock { state in
            guard subscribers.publish(facts), let mark else { return }
            for fact in facts { if let rid = fact.claimedRid { state.keepMark(mark, for: rid) } }
        }
    }

    private func startListening() async throws {
        let (ready, readyContinuation) = AsyncStream.makeStream(of: RoomStateStoreError?.self)
        let started = state.withLock { state -> Bool in
            guard state.listener == nil, !state.closed else { return false }
            state.listener = Task { [self] in await self.listen(ready: readyContinuation) }
            return true
        }
        guard started else { return }
        var iterator = ready.makeAsyncIterator()
        if let outcome = await iterator.next(), let error = outcome {
            let listener = state.withLock { state in
                defer { state.listener = nil }
                return state.listener
            }
            listener?.cancel()
            await listener?.value
            throw error
        }
    }

    /// The LISTEN connection's life: connect, LISTEN, hand each notification over; when it drops, back off (0.1 s
    /// doubling to 5 s), reconnect, and resync. The first outcome goes to `ready` (prepare waits for it).
    private func listen(ready: AsyncStream<RoomStateStoreError?>.Continuation) async {
        var ready: AsyncStream<RoomStateStoreError?>.Continuation? = ready
        var failures = 0
        while !Task.isCancelled {
            var connection: PostgresConnection?
            do {
                let opened = try await PostgresConnection.connect(configuration: connectionConfiguration, id: 1, logger: logger)
                connection = opened
                let resync = ready == nil
                try await opened.listen(on: Self.channel) { notifications in
                    // LISTEN is in place from here on: nothing written after this point is missed.
                    if let announce = ready {
                        announce.yield(nil)
                        announce.finish()
                        ready = nil
                    }
                    if resync { try await self.resync() }
                    failures = 0
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        // A connection that dies silently (no FIN: a cable, a NAT) is noticed by a query failing.
                        group.addTask {
                            while true {
                                try await Task.sleep(for: .seconds(15))
                                _ = try await opened.query("SELECT 1", logger: self.logger)
                            }
                        }
                        group.addTask {
                            for try await notification in notifications { try await self.handle(notification.payload) }
                        }
                        try await group.next()
                        group.cancelAll()
                    }
                }
            } catch  where !Task.isCancelled {
                let message = "PostgreSQL at \(endpoint): \(Self.describe(error))"
                if let announce = ready {
                    announce.yield(RoomStateStoreError("\(message) (LISTEN)"))
                    announce.finish()
                    try? await connection?.close()
                    return
                }
                logger.warning("room-state LISTEN connection lost; reconnecting", metadata: ["error": "\(message)"])
            } catch {
                // Cancelled: close() is under way; the connection is closed below and the loop ends.
            }
            try? await connection?.close()
            failures += 1
            let delay = min(0.1 * pow(2, Double(min(failures, 10) - 1)), 5)
            try? await Task.sleep(for: .seconds(delay))
        }
        ready?.yield(RoomStateStoreError("PostgreSQL at \(endpoint): closed before LISTEN"))
        ready?.finish()
    }

    private func handle(_ payload: String) async throws {
        let parts = payload.split(separator: " ", maxSplits: 2)
        guard parts.count == 3 else { return }
        guard parts[0] != nodeId else { return }  // our own write, echoed
        if parts[1] == Self.ringKind {
            // Not a row to read: the message itself (a ring is not stored).
            if let message = try? JSONDecoder().decode(RingBroadcast.self, from: Data(parts[2].utf8)) { ringSubscribers.publish([message]) }
            return
        }
        let (facts, mark) = try await facts(kind: parts[1], rid: String(parts[2]), nowMs: Self.nowMs())
        publish(facts, mark: mark)
    }

    /// The room's row read again, as a claim if another node holds it (marked as a notified claim is), for a claim
    /// the hub set aside while this node's own claim of the room was being written (`StoreService`): only the
    /// database's order says which of two claims written at once is the newer, and once this node's write is done,
    /// the row shows it.
    public func reread(claimOf rid: String) async throws {
        let (facts, mark) = try await facts(kind: "claim", rid: rid, nowMs: Self.nowMs())
        publish(facts, mark: mark)
    }

    /// After a reconnect: everything the tables hold (but our own live rooms), and `roomGone` for the rooms of other
    /// nodes we said were live and that are gone now.
    private func resync() async throws {
        // Before the snapshot: a room this node claims from here on (or claimed but had not written: the database
        // away) may still show its old owner's row, which is older than this node's claim. Taken for a claim, it made
        // the node give up every room it had recovered during an outage, and each moved a second time (issue 53,
        // postgres_outage.py); the hub now judges each such claim against the queue (`SessionHub.learn(snapshotClaim:)`).
        let mark = state.withLock { $0.claims?.claimMark }
        let snapshot = try await snapshot(nowMs: Self.nowMs())
        let remote = snapshot.live.filter { $0.nodeId != nodeId }
        let stillLive = Set(remote.map(\.rid))
        let vanished = state.withLock { $0.remoteLive.subtracting(stillLive) }
        let facts =
            snapshot.ended + snapshot.revoked
            + vanished.sorted().map { DurableFact.roomGone(rid: $0) }
            // As claims: a row owned by another node changed owner by a claim, perhaps one this node missed while it
            // was not listening — a room still held here must be given up, not kept beside the other node's.
            + remote.map { .roomClaimed(rid: $0.rid, hostCid: $0.hostCid, epoch: $0.epoch, occupancy: $0.occupancy) }
        publish(facts, mark: mark)
        // What an operator (and postgres_outage.py) reads to know this node has caught up after its LISTEN came back.
        logger.notice("room-state LISTEN is back: re-read the store", metadata: ["facts": "\(facts.count)"])
    }

    // MARK: Rings

    static let ringKind = "ring"

    public func ringMessages() -> AsyncStream<RingBroadcast> { ringSubscribers.subscribe() }

    /// On the rooms' channel, as `<node> ring <json>` (under NOTIFY's 8,000 bytes: a ring's caller is at most 2 KiB).
    /// Queued and sent in order by one task; a failure is logged and the message lost (pushes still reach the devices).
    public func broadcast(_ message: RingBroadcast) {
        guard let json = try? JSONEncoder().encode(message) else { return }
        let payload = "\(nodeId) \(Self.ringKind) \(String(decoding: json, as: UTF8.self))"
        guard payload.utf8.count < 8_000 else { return }
        state.withLock { state in
            if !state.closed, state.ringSender == nil { state.ringSender = Task { [self] in await self.sendRings() } }
        }
        ringOutbox.continuation.yield(payload)
    }

    private func sendRings() async {
        for await payload in ringOutbox.stream {
            do {
                try await perform("tell the other nodes of a ring") { client, logger in
                    _ = try await client.query("SELECT pg_notify(\(Self.channel), \(payload))", logger: logger)
                }
            } catch {
                logger.warning("a ring could not be told to the other nodes", metadata: ["error": "\(error)"])
            }
        }
    }

    public func close() async {
        let (runTask, listener) = state.withLock { state in
            state.closed = true
            defer {
                state.listener = nil
                state.runTask = nil
            }
            return (state.runTask, state.listener)
        }
        listener?.cancel()
        await listener?.value
        runTask?.cancel()
        await runTask?.value
        subscribers.finishAll()
        ringSubscribers.finishAll()
        ringOutbox.continuation.finish()
        let sender = state.withLock { state in
            defer { state.ringSender = nil }
            return state.ringSender
        }
        sender?.cancel()
        await sender?.value
    }

    // MARK: Bounded operations, clear errors

    private struct TimedOut: Error {}

    /// Runs `body` with the pool, failing after `timeout` with what is wrong with the server (found by connecting to it
    /// directly: the pool itself would keep waiting for a connection it cannot make).
    private func perform<T: Sendable>(
        _ what: String, _ body: @escaping @Sendable (PostgresClient, Logger) async throws -> T
    ) async throws -> T {
        if state.withLock({ $0.closed }) { throw RoomStateStoreError("PostgreSQL at \(endpoint): \(what) after close()") }
        let client = self.client
        let logger = self.logger
        do {
            return try await Self.withTimeout(timeout) { try await body(client, logger) }
        } catch let error as RoomStateStoreError {
            throw error
        } catch let error as PSQLError where error.serverInfo != nil {
            // The server answered, with an error of its own: that is the whole story.
            throw RoomStateStoreError("PostgreSQL at \(endpoint): \(what) failed: \(Self.describe(error))")
        } catch {
            throw RoomStateStoreError(await diagnose(what, error))
        }
    }

    /// Why `what` timed out or lost its connection, found by connecting to the server directly: the pool keeps
    /// waiting for a connection it cannot make, and a pooled connection the server just closed says only that.
    private func diagnose(_ what: String, _ error: any Error) async -> String {
        var probeConfiguration = connectionConfiguration
        probeConfiguration.options.connectTimeout = .seconds(2)
        let configuration = probeConfiguration
        let logger = self.logger
        do {
            let probe = try await Self.withTimeout(.seconds(3)) {
                try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            }
            try? await probe.close()
        } catch is TimedOut {
            return "PostgreSQL at \(endpoint): no answer within 3 s (\(what))"
        } catch {
            return "PostgreSQL at \(endpoint): \(Self.describe(error)) (\(what))"
        }
        if error is TimedOut { return "PostgreSQL at \(endpoint): no answer to \(what) within \(timeout)" }
        return "PostgreSQL at \(endpoint): \(what) failed: \(Self.describe(error))"
    }

    /// The first of `body` and the timer; returns at the deadline even if `body` ignores cancellation.
    private static func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let race = Race<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                race.start(
                    continuation,
                    work: Task {
                        do { race.finish(.success(try await body())) } catch { race.finish(.failure(error)) }
                    },
                    timer: Task {
                        try? await Task.sleep(for: limit)
                        race.finish(.failure(TimedOut()))
                    })
            }
        } onCancel: {
            race.finish(.failure(CancellationError()))
        }
    }

    /// One continuation resumed once, by whichever of the work and the timer ends first; the other is cancelled.
    private final class Race<T: Sendable>: Sendable {
        private let state = Mutex<
            (continuation: CheckedContinuation<T, any Error>?, tasks: [Task<Void, Never>], result: Result<T, any Error>?)
        >((nil, [], nil))

        func start(_ continuation: CheckedContinuation<T, any Error>, work: Task<Void, Never>, timer: Task<Void, Never>) {
            let early = state.withLock { state -> Result<T, any Error>? in
                state.tasks = [work, timer]
                if let result = state.result { return result }
                state.continuation = continuation
                return nil
            }
            if let early {
                work.cancel()
                timer.cancel()
                continuation.resume(with: early)
            }
        }

        func finish(_ result: Result<T, any Error>) {
            let (continuation, tasks) = state.withLock { state -> (CheckedContinuation<T, any Error>?, [Task<Void, Never>]) in
                guard state.result == nil else { return (nil, []) }
                state.result = result
                defer { state.continuation = nil }
                return (state.continuation, state.tasks)
            }
            for task in tasks { task.cancel() }
            continuation?.resume(with: result)
        }
    }

    /// An error in a few words: the server's own message, or the socket's ("connection refused").
    static func describe(_ error: any Error) -> String {
        switch error {
        case let error as PSQLError:
            if let message = error.serverInfo?[.message] {
                let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return message + state
            }
            if let underlying = error.underlying { return describe(underlying) }
            switch error.code {
            case .serverClosedConnection: return "the server closed the connection"
            case .clientClosedConnection: return "the connection was closed"
            case .poolClosed: return "the store is closed"
            case .queryCancelled: return "the query was cancelled"
            default: return "\(error.code)"
            }
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.first { return describe(failure.error) }
            if let dns = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve \(error.host): \(dns)" }
            return "cannot connect to \(error.host):\(error.port)"
        case let error as IOError:
            return error.errnoCode == ECONNREFUSED ? "connection refused" : String(cString: strerror(error.errnoCode))
        case let error as ChannelError:
            if case .connectTimeout(let amount) = error { return "connect timed out after \(amount.nanoseconds / 1_000_000) ms" }
            return "\(error)"
        case let error as RoomStateStoreError:
            return error.description
        default:
            return "\(error)"
        }
    }

    static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    // MARK: URL

    struct ParsedURL {
        var client: PostgresClient.Configuration
        var connection: PostgresConnection.Configuration
        var endpoint: String
    }

    static func parse(url text: String) throws -> ParsedURL {
        let redacted = redactedDatabaseURL(text)
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw RoomStateStoreError("database URL \(redacted) is not postgres://user[:password]@host[:port]/database")
        }
        guard let host = components.host, !host.isEmpty else { throw RoomStateStoreError("database URL \(redacted) has no host") }
        guard let user = components.user, !user.isEmpty else { throw RoomStateStoreError("database URL \(redacted) has no user") }
        let port = components.port ?? 5432
        let database = String(components.path.drop(while: { $0 == "/" }))
        let password = components.password?.removingPercentEncoding
        let sslmode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "prefer"

        var tls = TLSConfiguration.makeClientConfiguration()
        let clientTLS: PostgresClient.Configuration.TLS
        let connectionTLS: PostgresConnection.Configuration.TLS
        switch sslmode {
        case "disable":
            clientTLS = .disable
            connectionTLS = .disable
        case "allow", "prefer", "require", "verify-ca", "verify-full":
            // As libpq: only verify-ca checks the certificate, only verify-full the host name too.
            tls.certificateVerification =
                sslmode == "verify-full" ? .fullVerification : sslmode == "verify-ca" ? .noHostnameVerification : .none
            let context: NIOSSLContext
            do { context = try NIOSSLContext(configuration: tls) } catch {
                throw RoomStateStoreError("database URL \(redacted): cannot set up TLS: \(error)")
            }
            let required = sslmode != "allow" && sslmode != "prefer"
            clientTLS = required ? .require(tls) : .prefer(tls)
            connectionTLS = required ? .require(context) : .prefer(context)
        default:
            throw RoomStateStoreError(
                "database URL \(redacted): sslmode \(sslmode) is not one of disable, prefer, require, verify-ca, verify-full")
        }
        let username = user.removingPercentEncoding ?? user
        let databaseName = database.isEmpty ? username : (database.removingPercentEncoding ?? database)
        var client = PostgresClient.Configuration(
            host: host, port: port, username: username, password: password, database: databaseName, tls: clientTLS)
        client.options.connectTimeout = .seconds(5)
        client.options.maximumConnections = 8
        var connection = PostgresConnection.Configuration(
            host: host, port: port, username: username, password: password, database: databaseName, tls: connectionTLS)
        connection.options.connectTimeout = .seconds(5)
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return ParsedURL(client: client, connection: connection, endpoint: "\(shownHost):\(port)")
    }
}

// MARK: - Push subscriptions

extension PostgresRoomStateStore: PushSubscriptionStore {
    public func savePushSubscription(_ subscription: PushSubscriptionRecord) async throws {
        try await perform("save a push subscription") { client, logger in
            try await client.withTransaction(logger: logger) { connection in
                _ = try await connection.query(
                    """
                    INSERT INTO duet_push_subscriptions (rid, endpoint, p256dh, auth, created_at, device_id, enc_public_key, enc_key_auth)
                    VALUES (\(subscription.rid), \(subscription.endpoint), \(subscription.p256dh), \(subscription.auth), \(subscription.createdAtMs),
                        \(subscription.deviceId), \(subscription.encPublicKey), \(subscription.encKeyAuth))
                    ON CONFLICT (rid, endpoint) DO UPDATE SET p256dh = EXCLUDED.p256dh, auth = EXCLUDED.auth, created_at = EXCLUDED.created_at,
                        device_id = EXCLUDED.device_id, enc_public_key = EXCLUDED.enc_public_key, enc_key_auth = EXCLUDED.enc_key_auth
                    """, logger: logger)
                // Bounded per room: the oldest devices make way for the newest.
                _ = try await connection.query(
                    """
                    DELETE FROM duet_push_subscriptions WHERE rid = \(subscription.rid) AND endpoint NOT IN (
                        SELECT endpoint FROM duet_push_subscriptions WHERE rid = \(subscription.rid)
                        ORDER BY created_at DESC, endpoint LIMIT \(PushSubscriptionLimits.perRoom))
                    """, logger: logger)
            }
        }
    }

    @discardableResult
    public func removePushSubscription(rid: String, endpoint: String) async throws -> Bool {
        try await perform("remove a push subscription") { client, logger in
            var removed = false
            for try await _ in try await client.query(
                "DELETE FROM duet_push_subscriptions WHERE rid = \(rid) AND endpoint = \(endpoint) RETURNING rid", logger: logger
            ).decode(String.self) {
                removed = true
            }
            return removed
        }
    }

    public func removePushEndpoint(_ endpoint: String) async throws {
        try await perform("remove a push endpoint") { client, logger in
            _ = try await client.query("DELETE FROM duet_push_subscriptions WHERE endpoint = \(endpoint)", logger: logger)
        }
    }

    public func pushSubscriptions(rid: String) async throws -> [PushSubscriptionRecord] {
        try await perform("read push subscriptions") { client, logger in
            var rows: [PushSubscriptionRecord] = []
            for try await (rid, endpoint, p256dh, auth, createdAt, deviceId, encPublicKey, encKeyAuth) in try await client.query(
                """
                SELECT rid, endpoint, p256dh, auth, created_at, device_id, enc_public_key, enc_key_auth FROM duet_push_subscriptions
                WHERE rid = \(rid) ORDER BY created_at, endpoint
                """,
                logger: logger
            ).decode((String, String, String, String, Int64, String?, String?, String?).self) {
                rows.append(
                    PushSubscriptionRecord(
                        rid: rid, endpoint: endpoint, p256dh: p256dh, auth: auth, createdAtMs: createdAt, deviceId: deviceId,
                        encPublicKey: encPublicKey, encKeyAuth: encKeyAuth))
            }
            return rows
        }
    }
}
