import DuetLock
import DuetRooms
import Foundation
import Logging
import ServiceLifecycle

/// Runs the store beside the server: writes what the core queued (`StoreQueue`) and lets out what clients may hear
/// only once it is stored (`SessionHub.durable`), hands the core what other nodes wrote (`changes`), and keeps the
/// cluster's heartbeats (`maintain`). Every failure is reported (`StoreHealth`, metrics, one log line per outage) and
/// retried with backoff. No join, relay or ping waits for it; only the news of a final fact does (`DurableGate`).
///
/// Listed before the HTTP server in the service group, so it is shut down after it: what the last connections'
/// ends wrote is flushed before the store closes.
struct StoreService: Service {
    let store: any RoomStateStore
    /// Subscribed when the server was made, before the start-up load: a write of another node between the load's
    /// snapshot and this service's start is buffered here, not lost.
    let changes: AsyncStream<DurableFact>
    /// What other nodes said of their rings (nothing on a single node).
    let rings: AsyncStream<RingBroadcast>
    let queue: StoreQueue
    let hub: SessionHub
    let health: StoreHealth
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }

    static let maintainInterval: Duration = .seconds(3)
    /// How long a starting node waits for the store before it serves from memory.
    static let startLoadLimit: Duration = .seconds(5)
    static let maxBackoff: Duration = .seconds(5)
    /// How long a shutdown waits for the last writes of a store that does not answer.
    static let finalFlushLimit: Duration = .seconds(3)

    func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await writeLoop() }
            group.addTask { await changesLoop() }
            group.addTask { for await message in rings { hub.heard(message) } }
            group.addTask { await maintainLoop() }
            // Loaded before the server listened (`DuetServer.run`) unless the store did not answer then.
            if !health.isLoaded { group.addTask { await loadUntilDone() } }
            try? await gracefulShutdown()
            group.cancelAll()
        }
        await flushBeforeClosing()
        // A request still waiting for a fact the store did not take hears so (`StoreQueue.durable`).
        queue.finish()
        await store.close()
    }

    // MARK: - Loops

    private func writeLoop() async {
        var wakeups = queue.wakeups.makeAsyncIterator()
        var backoff = Duration.milliseconds(250)
        while !Task.isCancelled {
            if await writeBatch() {
                backoff = .milliseconds(250)
                if queue.count == 0, await wakeups.next() == nil { return }
            } else {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, Self.maxBackoff)
            }
        }
    }

    /// One batch: true when it was written (or there was nothing to write).
    private func writeBatch() async -> Bool {
        let batch = queue.take()
        guard !batch.isEmpty else { return true }
        do {
            try await store.write(batch.map(\.fact), nowMs: now())
            // Group commit: whatever a client must hear only once it is stored goes out now (`DurableGate`).
            hub.durable(through: queue.written())
            metrics.storeWrite(facts: batch.count, ok: true)
            markUp()
            return true
        } catch {
            queue.putBack(batch)
            metrics.storeWrite(facts: batch.count, ok: false)
            markDown(error)
            return false
        }
    }

    private func changesLoop() async {
        await withDiscardingTaskGroup { rechecks in
            let pending = Mutex(Set<String>())
            for await fact in changes {
                metrics.storeLearned(1)
                guard let mark = store.snapshotMark(taking: fact) else {
                    hub.learn([fact])
                    continue
                }
                guard !hub.learn(snapshotClaim: fact, unlessClaimedHereSince: mark), let rid = fact.claimedRid,
                    pending.withLock({ $0.insert(rid).inserted })
                else { continue }
                // Set aside while this node's own claim of the room was in the works: read the row again once the
                // claim is in the database, and judge that (two nodes claiming a room at once must not both keep it).
                rechecks.addTask {
                    defer { _ = pending.withLock { $0.remove(rid) } }
                    await recheck(claimOf: rid)
                }
            }
        }
    }

    /// Waits (≤ `recheckLimit`) until this node's claim of `rid` is written, then has the store read the room's row
    /// again: it comes back through `changes` as another node's claim if that node's is the newer, with a fresh mark.
    private func recheck(claimOf rid: String) async {
        let deadline = ContinuousClock.now + Self.recheckLimit
        while queue.isClaiming(rid), ContinuousClock.now < deadline, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(20))
        }
        do {
            try await store.reread(claimOf: rid)
        } catch {
            logger.warning("could not read room \(rid) again after a claim set aside: \(error)")
        }
    }

    /// How long a claim set aside waits for this node's own claim of the room to be written (the store may be away).
    static let recheckLimit: Duration = .seconds(10)

    private func maintainLoop() async {
        while !Task.isCancelled {
            // Not before the store is prepared and loaded (`loadUntilDone` owns that and reports its outcome): a prune
            // on a store still opening failed with "before prepare()" and marked a healthy store down (seen in a
            // loaded test run, where opening took longer than `startLoadLimit`).
            guard health.isLoaded else {
                try? await Task.sleep(for: .milliseconds(200))
                continue
            }
            do {
                let facts = try await store.maintain(nowMs: now())
                if !facts.isEmpty {
                    metrics.storeLearned(facts.count)
                    hub.learn(facts)
                }
                // The store answers again: a node with nothing to write hears it here (/healthz and `duet_store_up`
                // said DOWN after an outage until the node's next write, which a node holding steady calls never
                // makes). With facts waiting or a batch being written, the writer's outcome says so: a store that
                // answers a heartbeat but refuses a write is not up (and must not flap between the two).
                if queue.isIdle { markUp() }
            } catch {
                markDown(error)
            }
            try? await Task.sleep(for: Self.maintainInterval)
        }
    }

    private func loadUntilDone() async {
        var backoff = Duration.milliseconds(500)
        while !Task.isCancelled {
            do {
                try await store.prepare()
                let facts = try await store.load(nowMs: now())
                hub.learn(facts)
                health.markLoaded()
                logger.notice("store loaded after it came back", metadata: ["facts": "\(facts.count)", "store": "\(health.engine)"])
                markUp()
                return
            } catch {
                markDown(error)
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, Self.maxBackoff)
            }
        }
    }

    private func flushBeforeClosing() async {
        let deadline = ContinuousClock.now + Self.finalFlushLimit
        while queue.count > 0, ContinuousClock.now < deadline {
            if !(await writeBatch()) { try? await Task.sleep(for: .milliseconds(200)) }
        }
        if queue.count > 0 {
            logger.error(
                "store did not take the last facts before shutdown", metadata: ["pending": "\(queue.count)", "store": "\(health.engine)"])
        }
    }

    // MARK: - Health

    private func markUp() {
        metrics.storeState(up: true, pending: queue.count)
        if case .down = health.set(.up) {
            logger.notice("store is back: signaling state is being written again", metadata: ["store": "\(health.engine)"])
        }
    }

    private func markDown(_ error: any Error) {
        let reason = String(describing: error)
        metrics.storeState(up: false, pending: queue.count)
        if case .down = health.set(.down(reason)) { return }
        logger.error(
            "store unavailable: signaling continues from memory and writes when it returns",
            metadata: ["store": "\(health.engine)", "error": "\(reason)", "pending": "\(queue.count)"])
    }
}
