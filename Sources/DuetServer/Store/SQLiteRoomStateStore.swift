import DuetLock
import DuetRooms
import Foundation
import Logging
import SQLiteNIO

/// The store of a single node: `rooms.sqlite` in the data directory (SQLite bundled by sqlite-nio, nothing to install).
///
/// WAL mode, so a write never waits for a reader and a crash loses at most the batch being written. One connection,
/// and one operation on it at a time (`SerialGate`): a batch is `BEGIN IMMEDIATE … COMMIT` on that connection, and
/// nothing else may slip in between. No other node writes here, so `changes()` never yields and `maintain` only
/// prunes expired rows.
public final class SQLiteRoomStateStore: RoomStateStore {
    public let path: String
    private let logger: Logger
    private let gate = SerialGate()
    private let state = Mutex<State>(State())
    /// One node: nobody else writes, so nothing is ever published; the streams end on `close`.
    private let subscribers = ChangeSubscribers()

    private struct State {
        var connection: SQLiteConnection?
        var closed = false
        var lastPruneMs: Int64?
    }

    /// - Parameter path: the database file, `<dataDirectory>/rooms.sqlite`; created (with its directory) if missing.
    public init(path: String, logger: Logger = Logger(label: "duet.store")) {
        self.path = path
        self.logger = logger
    }

    public func prepare() async throws {
        try await gate.run {
            if self.state.withLock({ $0.connection }) != nil { return }
            let directory = URL(fileURLWithPath: self.path).deletingLastPathComponent().path
            try? FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let connection: SQLiteConnection
            do {
                connection = try await SQLiteConnection.open(storage: .file(path: self.path), logger: self.logger)
            } catch {
                throw RoomStateStoreError("SQLite at \(self.path): cannot open: \(error)")
            }
            do {
                // Before anything creates the file's first table (a new store takes it; an old one is converted below).
                _ = try await connection.query("PRAGMA auto_vacuum = INCREMENTAL")
                _ = try await connection.query("PRAGMA journal_mode = WAL")
                // The WAL file keeps the size of the largest batch since the store opened unless told otherwise (a
                // minute's prune is the largest): cut back to 4 MiB, about one checkpoint's worth (1,000 pages),
                // whenever it restarts. The soak of 6e449e2 measured it at 4.2 MiB, then 7.3, then 8.1.
                _ = try await connection.query("PRAGMA journal_size_limit = 4194304")
                // FULL: every commit is fsync'd before `write` returns, so what a client is told once written (issue 34:
                // `DurableGate`) survives a power cut too, not only a crash of the process. One fsync per batch (group
                // commit: the writer takes everything queued as one transaction).
                _ = try await connection.query("PRAGMA synchronous = FULL")
                _ = try await connection.query("PRAGMA busy_timeout = 5000")
                try await Self.migrate(connection)
                await Self.convertToIncrementalVacuum(connection, path: self.path, logger: self.logger)
            } catch {
                await Task { try? await connection.close() }.value  // even when cancelled: see close()
                throw RoomStateStoreError("SQLite at \(self.path): cannot prepare the schema: \(error)")
            }
            // A close() that came first (it takes the connection inside the gate too) must not find nothing and leave
            // this one open: a store closed meanwhile closes what it just opened.
            let closedMeanwhile = self.state.withLock { state -> Bool in
                if state.closed { return true }
                state.connection = connection
                return false
            }
            if closedMeanwhile {
                await Task { try? await connection.close() }.value
                throw RoomStateStoreError("SQLite at \(self.path): the store was closed while it was opening")
            }
        }
    }

    /// Versioned like the PostgreSQL schema: each migration runs once, in a transaction with the version bump.
    private static let migrations: [[String]] = [
        [
            """
            CREATE TABLE duet_ended_rooms (rid TEXT PRIMARY KEY, ended_by TEXT NOT NULL, reason TEXT NOT NULL,
                tombstone_until INTEGER NOT NULL, seats TEXT NOT NULL, seats_until INTEGER NOT NULL)
            """,
            "CREATE TABLE duet_revoked_seats (rid TEXT NOT NULL, cid TEXT NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (rid, cid))",
            """
            CREATE TABLE duet_live_rooms (rid TEXT PRIMARY KEY, host_cid TEXT NOT NULL, epoch INTEGER NOT NULL,
                occupancy INTEGER NOT NULL, updated_at INTEGER NOT NULL)
            """,
        ],
        // Issue 31: the devices to ring (PushSubscriptionStore).
        [
            """
            CREATE TABLE duet_push_subscriptions (rid TEXT NOT NULL, endpoint TEXT NOT NULL, p256dh TEXT NOT NULL,
                auth TEXT NOT NULL, created_at INTEGER NOT NULL, device_id TEXT, PRIMARY KEY (rid, endpoint))
            """,
            "CREATE INDEX duet_push_subscriptions_endpoint ON duet_push_subscriptions (endpoint)",
        ],
        // Issue 31: a device's snapshot key (Serenada's encPublicKey).
        [
            "ALTER TABLE duet_push_subscriptions ADD COLUMN enc_public_key TEXT",
            "ALTER TABLE duet_push_subscriptions ADD COLUMN enc_key_auth TEXT",
        ],
    ]

    private static func migrate(_ connection: SQLiteConnection) async throws {
        _ = try await connection.query(
            "CREATE TABLE IF NOT EXISTS duet_schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)")
        let version =
            try await connection.query("SELECT version FROM duet_schema_version WHERE id = 1").first?.column("version")?.integer ?? 0
        guard version < migrations.count else { return }
        for (index, statements) in migrations.enumerated() where index >= version {
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                for statement in statements { _ = try await connection.query(statement) }
                _ = try await connection.query(
                    "INSERT INTO duet_schema_version (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version",
                    [.integer(SQLiteInt64(index + 1))])
                _ = try await connection.query("COMMIT")
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        }
    }

    /// A store made before issue 53 has no free-page map: `auto_vacuum` is set when a file is created, and an old one
    /// changes only with a `VACUUM` (a copy of the whole file, once; its rows are at most a lifetime of churn). A
    /// conversion that fails (a full disk: it needs about twice the file) is said and left for the next start: the
    /// store works as it did before, its file only keeping its largest size.
    private static func convertToIncrementalVacuum(_ connection: SQLiteConnection, path: String, logger: Logger) async {
        do {
            let mode = try await connection.query("PRAGMA auto_vacuum").first?.column("auto_vacuum")?.integer ?? 0
            guard mode != 2 else { return }
            _ = try await connection.query("PRAGMA auto_vacuum = INCREMENTAL")
            _ = try await connection.query("VACUUM")
        } catch {
            logger.warning(
                "SQLite at \(path): could not convert the store to give freed pages back (tried again at the next start): \(error)")
        }
    }

    public func load(nowMs: Int64) async throws -> [DurableFact] {
        try await withConnection("load") { connection in
            var facts: [DurableFact] = []
            // Ended rooms first, then revoked seats, then live rooms: a room id that came back to life after its
            // tombstone expired (its seats still barred) ends up live.
            for row in try await connection.query(
                """
                SELECT rid, ended_by, reason, tombstone_until, seats, seats_until FROM duet_ended_rooms
                WHERE tombstone_until > ?1 OR seats_until > ?1 ORDER BY tombstone_until, rid
                """, [.integer(SQLiteInt64(nowMs))])
            {
                facts.append(
                    .roomEnded(
                        rid: row.text("rid"), endedBy: row.text("ended_by"), reason: row.text("reason"),
                        tombstoneUntilMs: row.int64("tombstone_until"), seats: Self.decodeSeats(row.text("seats")),
                        seatsUntilMs: row.int64("seats_until")))
            }
            for row in try await connection.query(
                "SELECT rid, cid, until FROM duet_revoked_seats WHERE until > ? ORDER BY until, rid, cid", [.integer(SQLiteInt64(nowMs))])
            {
                facts.append(.seatRevoked(rid: row.text("rid"), cid: row.text("cid"), untilMs: row.int64("until")))
            }
            // Every live row is this node's, from before the restart: its seats come back only with their clients.
            for row in try await connection.query("SELECT rid, host_cid, epoch FROM duet_live_rooms ORDER BY updated_at, rid") {
                facts.append(.roomLive(rid: row.text("rid"), hostCid: row.text("host_cid"), epoch: row.int64("epoch"), occupancy: 0))
            }
            // Remembered from now on (a row nobody claims again within the hour is pruned, as in PostgreSQL).
            _ = try await connection.query(
                "UPDATE duet_live_rooms SET occupancy = 0, updated_at = ? WHERE occupancy <> 0", [.integer(SQLiteInt64(nowMs))])
            return facts
        }
    }

    public func write(_ facts: [DurableFact], nowMs: Int64) async throws {
        guard !facts.isEmpty else { return }
        try await withConnection("write") { connection in
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                for fact in facts { try await Self.apply(fact, nowMs: nowMs, on: connection) }
                _ = try await connection.query("COMMIT")
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        }
    }

    private static func apply(_ fact: DurableFact, nowMs: Int64, on connection: SQLiteConnection) async throws {
        switch fact {
        case .roomEnded(let rid, let endedBy, let reason, let tombstoneUntilMs, let seats, let seatsUntilMs):
            _ = try await connection.query(
                """
                INSERT INTO duet_ended_rooms (rid, ended_by, reason, tombstone_until, seats, seats_until) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (rid) DO UPDATE SET ended_by = excluded.ended_by, reason = excluded.reason,
                    tombstone_until = excluded.tombstone_until, seats = excluded.seats, seats_until = excluded.seats_until
                """,
                [
                    .text(rid), .text(endedBy), .text(reason), .integer(SQLiteInt64(tombstoneUntilMs)), .text(encodeSeats(seats)),
                    .integer(SQLiteInt64(seatsUntilMs)),
                ])
            _ = try await connection.query("DELETE FROM duet_live_rooms WHERE rid = ?", [.text(rid)])
        case .seatRevoked(let rid, let cid, let untilMs):
            _ = try await connection.query(
                "INSERT INTO duet_revoked_seats (rid, cid, until) VALUES (?, ?, ?) ON CONFLICT (rid, cid) DO UPDATE SET until = excluded.until",
                [.text(rid), .text(cid), .integer(SQLiteInt64(untilMs))])
        case .roomLive(let rid, let hostCid, let epoch, let occupancy), .roomClaimed(let rid, let hostCid, let epoch, let occupancy):
            // One node: a claim and an update are the same write.
            _ = try await connection.query(
                """
                INSERT INTO duet_live_rooms (rid, host_cid, epoch, occupancy, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (rid) DO UPDATE SET host_cid = excluded.host_cid, epoch = excluded.epoch,
                    occupancy = excluded.occupancy, updated_at = excluded.updated_at
                """,
                [.text(rid), .text(hostCid), .integer(SQLiteInt64(epoch)), .integer(SQLiteInt64(occupancy)), .integer(SQLiteInt64(nowMs))])
        case .roomGone(let rid):
            _ = try await connection.query("DELETE FROM duet_live_rooms WHERE rid = ?", [.text(rid)])
        }
    }

    public func changes() -> AsyncStream<DurableFact> { subscribers.subscribe() }

    /// Nothing to keep up on one node but the table sizes: expired rows are deleted at most once a minute, and the
    /// file gives back the pages they held.
    public func maintain(nowMs: Int64) async throws -> [DurableFact] {
        let due = state.withLock { state in
            if let last = state.lastPruneMs, nowMs >= last, nowMs - last < 60_000 { return false }
            state.lastPruneMs = nowMs
            return true
        }
        guard due else { return [] }
        try await withConnection("prune") { connection in
            let now: [SQLiteData] = [.integer(SQLiteInt64(nowMs))]
            _ = try await connection.query("DELETE FROM duet_ended_rooms WHERE tombstone_until <= ?1 AND seats_until <= ?1", now)
            _ = try await connection.query("DELETE FROM duet_revoked_seats WHERE until <= ?", now)
            _ = try await connection.query(
                "DELETE FROM duet_live_rooms WHERE occupancy = 0 AND updated_at < ?",
                [.integer(SQLiteInt64(nowMs - RoomStateRetention.rememberedRoomMs))])
            // The pages the deleted rows held go back to the file system: without it the file keeps the largest size
            // its rows ever had (the soak of 6e449e2: +2.8 % over 20 minutes of steady churn, each new peak of rows
            // between two prunes a little more file). At most 2,000 pages (8 MiB) a minute, so that a prune after a
            // burst does not hold the store's one connection for long; a failure is said, never a store down (the
            // prune itself was done).
            do {
                _ = try await connection.query("PRAGMA incremental_vacuum(2000)")
            } catch {
                self.logger.warning("SQLite at \(self.path): giving freed pages back failed (tried again at the next prune): \(error)")
            }
        }
        return []
    }

    public func close() async {
        state.withLock { $0.closed = true }
        subscribers.finishAll()
        // Through the gate, and the connection taken there: a batch being written finishes (and commits) first, and a
        // prepare() still opening either stored its connection before (closed here) or sees `closed` after (and closes
        // it itself). In a task of its own, because close() usually runs as the server shuts down, in a task already
        // cancelled: sqlite-nio's thread pool drops work submitted from a cancelled task (CancellationError), and the
        // handle would be left open — a leaked file descriptor, and an assertion failure in SQLiteConnection.deinit in
        // debug builds (the clean-clone CI crashed on it).
        let gate = self.gate
        await Task {
            do {
                try await gate.run {
                    let connection = self.state.withLock { state in
                        defer { state.connection = nil }
                        return state.connection
                    }
                    try await connection?.close()
                }
            } catch {
                self.logger.warning("SQLite at \(self.path): close failed: \(error)")
            }
        }.value
    }

    private func withConnection<T: Sendable>(_ what: String, _ body: @escaping @Sendable (SQLiteConnection) async throws -> T) async throws
        -> T
    {
        try await gate.run {
            guard let connection = self.state.withLock({ $0.connection }) else {
                throw RoomStateStoreError("SQLite at \(self.path): \(what) before prepare() or after close()")
            }
            do {
                return try await body(connection)
            } catch let error as RoomStateStoreError {
                throw error
            } catch {
                throw RoomStateStoreError("SQLite at \(self.path): \(what) failed: \(error)")
            }
        }
    }

    private static func encodeSeats(_ seats: [String]) -> String {
        (try? JSONEncoder().encode(seats)).map { String(decoding: $0, as: UTF8.self) } ?? "[]"
    }

    private static func decodeSeats(_ text: String) -> [String] {
        (try? JSONDecoder().decode([String].self, from: Data(text.utf8))) ?? []
    }
}

/// One operation at a time, in arrival order, across suspension points (an actor alone would interleave two batches
/// at their `await`s, and SQLite has one transaction per connection).
final class SerialGate: Sendable {
    private let state = Mutex<(busy: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let proceed = state.withLock { state -> Bool in
                if state.busy {
                    state.waiters.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if proceed { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

extension SQLiteRow {
    fileprivate func text(_ name: String) -> String { column(name)?.string ?? "" }
    fileprivate func int64(_ name: String) -> Int64 { Int64(column(name)?.integer ?? 0) }
}

// MARK: - Push subscriptions

extension SQLiteRoomStateStore: PushSubscriptionStore {
    public func savePushSubscription(_ subscription: PushSubscriptionRecord) async throws {
        try await withConnection("save a push subscription") { connection in
            _ = try await connection.query("BEGIN IMMEDIATE")
            do {
                _ = try await connection.query(
                    """
                    INSERT INTO duet_push_subscriptions (rid, endpoint, p256dh, auth, created_at, device_id, enc_public_key, enc_key_auth)
                    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                    ON CONFLICT (rid, endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
                        created_at = excluded.created_at, device_id = excluded.device_id, enc_public_key = excluded.enc_public_key,
                        enc_key_auth = excluded.enc_key_auth
                    """,
                    [
                        .text(subscription.rid), .text(subscription.endpoint), .text(subscription.p256dh), .text(subscription.auth),
                        .integer(SQLiteInt64(subscription.createdAtMs)), subscription.deviceId.map { .text($0) } ?? .null,
                        subscription.encPublicKey.map { .text($0) } ?? .null, subscription.encKeyAuth.map { .text($0) } ?? .null,
                    ])
                // Bounded per room: the oldest devices make way for the newest.
                _ = try await connection.query(
                    """
                    DELETE FROM duet_push_subscriptions WHERE rid = ?1 AND endpoint NOT IN (
                        SELECT endpoint FROM duet_push_subscriptions WHERE rid = ?1 ORDER BY created_at DESC, endpoint LIMIT ?2)
                    """, [.text(subscription.rid), .integer(SQLiteInt64(PushSubscriptionLimits.perRoom))])
                _ = try await connection.query("COMMIT")
            } catch {
                _ = try? await connection.query("ROLLBACK")
                throw error
            }
        }
    }

    @discardableResult
    public func removePushSubscription(rid: String, endpoint: String) async throws -> Bool {
        try await withConnection("remove a push subscription") { connection in
            let rows = try await connection.query(
                "DELETE FROM duet_push_subscriptions WHERE rid = ? AND endpoint = ? RETURNING rid", [.text(rid), .text(endpoint)])
            return !rows.isEmpty
        }
    }

    public func removePushEndpoint(_ endpoint: String) async throws {
        try await withConnection("remove a push endpoint") { connection in
            _ = try await connection.query("DELETE FROM duet_push_subscriptions WHERE endpoint = ?", [.text(endpoint)])
        }
    }

    public func pushSubscriptions(rid: String) async throws -> [PushSubscriptionRecord] {
        try await withConnection("read push subscriptions") { connection in
            try await connection.query(
                "SELECT rid, endpoint, p256dh, auth, created_at, device_id, enc_public_key, enc_key_auth FROM duet_push_subscriptions WHERE rid = ? ORDER BY created_at, endpoint",
                [.text(rid)]
            ).map { row in
                PushSubscriptionRecord(
                    rid: row.text("rid"), endpoint: row.text("endpoint"), p256dh: row.text("p256dh"), auth: row.text("auth"),
                    createdAtMs: row.int64("created_at"), deviceId: row.column("device_id")?.string,
                    encPublicKey: row.column("enc_public_key")?.string, encKeyAuth: row.column("enc_key_auth")?.string)
            }
        }
    }
}
