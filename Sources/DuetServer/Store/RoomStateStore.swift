import DuetRooms

/// Where a node keeps what must survive it (`DurableFact`): SQLite in the data directory by default
/// (`SQLiteRoomStateStore`), PostgreSQL shared by every node of a cluster (`PostgresRoomStateStore`, `--database-url`).
///
/// The server never waits for it on the relay path: `StoreQueue` holds the core's facts, coalesces them by key, and
/// `StoreService` writes batches; when the store is down signaling carries on from memory and the queue is written when
/// it returns. Only the news of a final fact waits for its batch (`DurableGate`).
public protocol RoomStateStore: Sendable {
    /// Opens the connection and creates or migrates the schema (idempotent; several nodes may race to do it).
    func prepare() async throws
    /// Every fact still in force at `nowMs` (expired rows are left out and may be deleted), ordered so that
    /// applying them in order gives the newest state. A node's own `roomLive` rows from before a restart are
    /// returned with occupancy 0: their seats are not here until their clients come back.
    func load(nowMs: Int64) async throws -> [DurableFact]
    /// Writes a batch in one transaction; in a cluster, wakes the other nodes (LISTEN/NOTIFY) for each room touched.
    func write(_ facts: [DurableFact], nowMs: Int64) async throws
    /// What other nodes wrote, as they write it (PostgreSQL: LISTEN/NOTIFY as the wake-up, the rows as the data).
    /// A single-node store never yields. Ends when the store is closed.
    func changes() -> AsyncStream<DurableFact>
    /// Cluster upkeep, every few seconds: this node's heartbeat, and `roomGone` for the rooms of nodes whose
    /// heartbeat stopped (a node killed with -9 never says its rooms are gone). Single node: nothing.
    func maintain(nowMs: Int64) async throws -> [DurableFact]
    func close() async
    /// Tells the other nodes of a cluster about a ring (`RingBroadcast`): at most once, never waited for.
    func broadcast(_ message: RingBroadcast)
    /// What the other nodes said of their rings. Ends when the store is closed.
    func ringMessages() -> AsyncStream<RingBroadcast>
    /// For a `roomClaimed` that `changes()` yielded: the `StoreQueue.claimMark` taken before its row was read (a
    /// notification's, a resync's or a `reread`'s), once per claim yielded (nil otherwise). A room this node claimed
    /// after the mark may show an older owner's row there (`SessionHub.learn(snapshotClaim:…)`).
    func snapshotMark(taking fact: DurableFact) -> UInt64?
    /// The cluster's other nodes alive at `nowMs` (a heartbeat within `deadNodeAfterMs`): where a drain hands its
    /// rooms (`DrainRoute`). A single node: none.
    func otherLiveNodes(nowMs: Int64) async throws -> [String]
    /// Reads the room's record again and yields it on `changes()` (a claim, if another node holds it): for a claim the
    /// hub set aside while this node's own claim of the room was being written. A single node: nothing.
    func reread(claimOf rid: String) async throws
}

extension RoomStateStore {
    /// A single node has nobody to tell.
    public func broadcast(_ message: RingBroadcast) {}
    public func ringMessages() -> AsyncStream<RingBroadcast> { AsyncStream { $0.finish() } }
    /// A single node never re-reads the store.
    public func snapshotMark(taking fact: DurableFact) -> UInt64? { nil }
    /// A single node is alone.
    public func otherLiveNodes(nowMs: Int64) async throws -> [String] { [] }
    public func reread(claimOf rid: String) async throws {}
}

/// How long the stores keep what no longer lives.
enum RoomStateRetention {
    /// A remembered room (no seat: its node restarted, and nobody came back yet) is pruned after this: longer than a
    /// reconnect token lives (20 min by default), so a row is not pruned while a token could still recover the room.
    static let rememberedRoomMs: Int64 = 3_600_000
}
