import DuetLock
import DuetRooms

/// The facts the core asked to persist and the store has not taken yet. The hub adds to it under its own lock
/// and never waits: the relay path does not know whether the store is up. Facts with the same key replace each
/// other (only the newest state of a room or seat matters), so while the store is down the queue holds at most one
/// fact per room and remembered seat — bounded by what the core itself holds.
///
/// Each fact added gets a ticket (1, 2, 3, …); `durableThrough` is the highest ticket whose fact, and every fact
/// before it, is in the store. What a client is told of a final fact waits for its ticket (`DurableGate`, issue 34):
/// group commit, since the writer takes everything queued as one transaction and one ticket covers the whole batch.
public final class StoreQueue: Sendable {
    struct Entry {
        /// Where it sorts: the ticket of the newest fact merged into it (a room's `roomEnded` after the `roomLive` it
        /// follows).
        var order: UInt64
        /// The oldest ticket it stands for: a fact replaced by a newer one of its key is in the store only once the
        /// newer one is.
        var since: UInt64
        var fact: DurableFact
    }

    private struct Pending {
        var facts: [String: Entry] = [:]
        var next: UInt64 = 1
        /// The oldest ticket of the batch being written (nil: none is).
        var writing: UInt64?
        var durable: UInt64 = 0
        var waiters: [(id: UInt64, ticket: UInt64, continuation: CheckedContinuation<Bool, Never>)] = []
        var nextWaiter: UInt64 = 0
        var finished = false
        var waiter: AsyncStream<Void>.Continuation?
        /// The rooms this node claims in the batch being written (`ClaimLedger`).
        var writingClaims: Set<String> = []
        /// Claims written so far; per room, the count at which its latest claim was written (bounded: `claimedHere`).
        var claimsWritten: UInt64 = 0
        var claimWrittenAt: [String: UInt64] = [:]
        /// Marks at or below this may have lost entries of `claimWrittenAt` to its bound.
        var forgottenThrough: UInt64 = 0

        /// Every ticket below the oldest one still pending or being written.
        var durableNow: UInt64 {
            let oldest = facts.values.lazy.map(\.since).min().map { min($0, writing ?? $0) } ?? writing ?? next
            return oldest - 1
        }
    }

    private let pending = Mutex(Pending())
    /// Wakes the writer; at most one wake-up is kept (it takes everything there is).
    let wakeups: AsyncStream<Void>

    public init() {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wakeups = stream
        pending.withLock { $0.waiter = continuation }
    }

    /// Queues `fact`; its ticket: it is in the store once `durableThrough` reaches it.
    @discardableResult
    public func add(_ fact: DurableFact) -> UInt64 {
        let (ticket, waiter) = pending.withLock { state in
            let ticket = state.next
            state.next += 1
            if let older = state.facts[fact.key] {
                state.facts[fact.key] = Entry(order: ticket, since: older.since, fact: older.fact.merged(with: fact))
            } else {
                state.facts[fact.key] = Entry(order: ticket, since: ticket, fact: fact)
            }
            return (ticket, state.waiter)
        }
        waiter?.yield()
        return ticket
    }

    /// The `limit` facts queued longest (oldest `since`), in the order they were last changed. A batch is one
    /// transaction with a time limit: after a long outage the backlog is written in batches that each fit. It is
    /// being written until `written` or `putBack`.
    ///
    /// Chosen by `since`, not by `order`: a key changed again and again (a busy room) keeps a late `order` but stands
    /// for an early ticket, and taken by `order` it could stay behind the batch limit while new facts keep coming —
    /// `durableThrough` would stall behind it and every final fact's news with it. A room's `roomEnded` still never
    /// goes before its live record: that record was queued first, so its `since` is older.
    func take(limit: Int = StoreQueue.batchLimit) -> [Entry] {
        pending.withLock { state in
            let oldest =
                state.facts.count <= limit
                ? Array(state.facts.values) : Array(state.facts.values.sorted { $0.since < $1.since }.prefix(limit))
            let batch = oldest.sorted { $0.order < $1.order }
            for entry in batch { state.facts[entry.fact.key] = nil }
            state.writing = batch.lazy.map(\.since).min()
            state.writingClaims = Set(batch.compactMap { $0.fact.claimedRid })
            return batch
        }
    }

    /// Facts per write: a few round trips each, well inside the store's 5 s limit per operation.
    static let batchLimit = 200

    /// The batch taken last is in the store: how far the store now has everything, and the waiters that reach it are
    /// resumed.
    @discardableResult
    func written() -> UInt64 {
        let (durable, ready) = pending.withLock { state in
            state.writing = nil
            for rid in state.writingClaims.sorted() {
                state.claimsWritten += 1
                state.claimWrittenAt[rid] = state.claimsWritten
            }
            state.writingClaims = []
            if state.claimWrittenAt.count > Self.writtenClaimsKept {
                // The older half goes; a mark from before what is kept can no longer be judged (`claimedHere`).
                let cut = state.claimWrittenAt.values.sorted()[state.claimWrittenAt.count / 2]
                state.claimWrittenAt = state.claimWrittenAt.filter { $0.value > cut }
                state.forgottenThrough = max(state.forgottenThrough, cut)
            }
            state.durable = state.durableNow
            let ready = state.waiters.filter { $0.ticket <= state.durable }.map(\.continuation)
            state.waiters.removeAll { $0.ticket <= state.durable }
            return (state.durable, ready)
        }
        for continuation in ready { continuation.resume(returning: true) }
        return durable
    }

    /// A batch the store refused goes back, under any newer fact with the same key that arrived meanwhile (a
    /// claim that did not reach the store stays a claim, and the newer fact still stands for the older tickets).
    func putBack(_ batch: [Entry]) {
        pending.withLock { state in
            state.writing = nil
            state.writingClaims = []
            for entry in batch {
                if let newer = state.facts[entry.fact.key] {
                    state.facts[entry.fact.key] = Entry(order: newer.order, since: entry.since, fact: entry.fact.merged(with: newer.fact))
                } else {
                    state.facts[entry.fact.key] = entry
                }
            }
        }
    }

    public var count: Int { pending.withLock { $0.facts.count } }

    // MARK: Claims a snapshot of the store may not show yet

    /// How many rooms' written claims `claimedHere` remembers: far more than a node writes while one snapshot of the
    /// store is read (seconds), and a few MiB at most.
    static let writtenClaimsKept = 50_000

    /// A mark to pass to `claimedHere(_:since:)`, taken before a snapshot of the store is read.
    public var claimMark: UInt64 { pending.withLock { $0.claimsWritten } }

    /// Whether this node's claim of `rid` is queued, being written, or was written after `mark`: then a snapshot read
    /// after `mark` may show another node's older row for the room, which this claim replaces (or has replaced).
    /// A mark older than what the bound kept counts as claimed here: the row is kept from moving the room, and the
    /// node's claim, written since, still decides.
    public func claimedHere(_ rid: String, since mark: UInt64) -> Bool {
        pending.withLock { state in
            if state.writingClaims.contains(rid) || state.facts[DurableFact.roomGone(rid: rid).key]?.fact.claimedRid != nil { return true }
            if let written = state.claimWrittenAt[rid] { return written > mark }
            return mark < state.forgottenThrough
        }
    }

    /// Whether this node's claim of `rid` is queued or being written: the database does not show it yet.
    public func isClaiming(_ rid: String) -> Bool {
        pending.withLock { state in
            state.writingClaims.contains(rid) || state.facts[DurableFact.roomGone(rid: rid).key]?.fact.claimedRid != nil
        }
    }

    /// Nothing queued and no batch being written (`take` moves a batch out of the queue while it is written).
    var isIdle: Bool { pending.withLock { $0.facts.isEmpty && $0.writing == nil } }

    /// The ticket of the fact queued last: `durable(lastTicket)` waits for everything queued so far, not for what
    /// comes after.
    public var lastTicket: UInt64 { pending.withLock { $0.next - 1 } }

    /// Every fact up to this ticket is in the store.
    public var durableThrough: UInt64 { pending.withLock { $0.durable } }

    /// Returns once the fact of `ticket` is in the store (true), or when the queue is finished without it (false: the
    /// server is stopping and the store did not take it), or when the waiting task is cancelled (false: the caller's
    /// bound ran out, and its waiter is gone from the queue).
    public func durable(_ ticket: UInt64) async -> Bool {
        let id = pending.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: Bool? = pending.withLock { state in
                    if state.durable >= ticket { return true }
                    if state.finished || Task.isCancelled { return false }
                    state.waiters.append((id, ticket, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let cancelled = pending.withLock { state in
                state.waiters.firstIndex { $0.id == id }.map { state.waiters.remove(at: $0).continuation }
            }
            cancelled?.resume(returning: false)
        }
    }

    /// `durable(ticket)`, waiting at most `bound`: false when the store did not take the fact in time (it stays
    /// queued and is written when the store is back; only the answer gives up).
    public func durable(_ ticket: UInt64, within bound: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.durable(ticket) }
            group.addTask {
                try? await Task.sleep(for: bound)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    func finish() {
        let waiters = pending.withLock { state in
            state.finished = true
            state.waiter?.finish()
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for continuation in waiters { continuation.resume(returning: false) }
    }
}
