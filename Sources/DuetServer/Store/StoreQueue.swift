import DuetRooms
import Synchronization

/// The facts the core asked to persist and the store has not taken yet. The hub adds to it under its own lock
/// and never waits: the relay path does not know whether the store is up. Facts with the same key replace each
/// other (only the newest state of a room or seat matters), so while the store is down the queue holds at most one
/// fact per room and remembered seat — bounded by what the core itself holds.
public final class StoreQueue: Sendable {
    private struct Pending {
        var facts: [String: (order: UInt64, fact: DurableFact)] = [:]
        var next: UInt64 = 0
        var waiter: AsyncStream<Void>.Continuation?
    }

    private let pending = Mutex(Pending())
    /// Wakes the writer; at most one wake-up is kept (it takes everything there is).
    let wakeups: AsyncStream<Void>

    public init() {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wakeups = stream
        pending.withLock { $0.waiter = continuation }
    }

    public func add(_ fact: DurableFact) {
        let waiter = pending.withLock { state in
            let kept = state.facts[fact.key].map { $0.fact.merged(with: fact) } ?? fact
            state.facts[fact.key] = (state.next, kept)
            state.next += 1
            return state.waiter
        }
        waiter?.yield()
    }

    /// The oldest `limit` facts queued, oldest first (a room's `roomEnded` after the `roomLive` it follows). A batch
    /// is one transaction with a time limit: after a long outage the backlog is written in batches that each fit.
    func take(limit: Int = StoreQueue.batchLimit) -> [(order: UInt64, fact: DurableFact)] {
        pending.withLock { state in
            let batch = state.facts.values.sorted { $0.order < $1.order }.prefix(limit)
            for entry in batch { state.facts[entry.fact.key] = nil }
            return Array(batch)
        }
    }

    /// Facts per write: a few round trips each, well inside the store's 5 s limit per operation.
    static let batchLimit = 200

    /// A batch the store refused goes back, under any newer fact with the same key that arrived meanwhile (a
    /// claim that did not reach the store stays a claim).
    func putBack(_ batch: [(order: UInt64, fact: DurableFact)]) {
        pending.withLock { state in
            for entry in batch {
                if let newer = state.facts[entry.fact.key] {
                    state.facts[entry.fact.key] = (newer.order, entry.fact.merged(with: newer.fact))
                } else {
                    state.facts[entry.fact.key] = entry
                }
            }
        }
    }

    public var count: Int { pending.withLock { $0.facts.count } }

    func finish() { pending.withLock { $0.waiter?.finish() } }
}
