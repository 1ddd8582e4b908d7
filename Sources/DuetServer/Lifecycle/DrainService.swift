import Foundation
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// Graceful shutdown: on SIGTERM/SIGINT the service group shuts services down last-first, so this
/// runs before the HTTP server stops: broadcast `draining`, `/healthz` turns 503, new sessions are
/// refused, and after the grace period every connection is closed.
///
/// In a cluster the `draining` of each room names the node it moves to (`DrainRoute`, over the other nodes alive in
/// the store), so that both of its clients reach that node. The store is asked for at most `successorsLimit`: a
/// database that does not answer must not hold the drain up (the clients then go by the proxy's choice, as before).
/// Meanwhile what this node still has to write goes to the store first (`flushed`).
struct DrainService: Service {
    let hub: SessionHub
    let grace: Duration
    let store: (any RoomStateStore)?
    let queue: StoreQueue?
    let logger: Logger

    static let successorsLimit: Duration = .milliseconds(500)
    /// How long the drain waits for what this node still has to write (`flushed`) before its clients move.
    static let flushLimit: Duration = .seconds(1)

    func run() async throws {
        try? await gracefulShutdown()
        hub.refuseNewSessions()
        async let nodes = successors()
        await flushed()
        hub.drain(successors: await nodes)
        try? await Task.sleep(for: grace)
        logger.info("grace period over: closing all connections")
        hub.closeAll()
    }

    /// This node's queued writes in the database before its clients are sent away: a claim of a room joined just
    /// before the SIGTERM, written after the room's next node had recovered it, was newer than that node's claim and
    /// made it give the room up again — the room moved twice (issue 53; rolling.py under the suite's load, 4 clients).
    /// Bounded (`flushLimit`): a database that does not answer must not hold the drain up.
    private func flushed() async {
        guard let queue else { return }
        // What was queued up to now, not what the other connections keep adding meanwhile.
        if !(await queue.durable(queue.lastTicket, within: Self.flushLimit)) {
            logger.warning("draining with writes still queued: the store did not take them within \(Self.flushLimit)")
        }
    }

    private func successors() async -> [String] {
        guard let store else { return [] }
        let logger = self.logger
        // Not a task group: it would wait for the store's query to end, and a query to a database that is away ends
        // only at the store's own timeout (5 s). The loser of this race is left to finish on its own.
        let answer = NIOLockedValueBox<CheckedContinuation<[String]?, Never>?>(nil)
        let first = await withCheckedContinuation { (continuation: CheckedContinuation<[String]?, Never>) in
            answer.withLockedValue { $0 = continuation }
            Task {
                let nodes: [String]?
                do {
                    nodes = try await store.otherLiveNodes(nowMs: Int64(Date().timeIntervalSince1970 * 1000))
                } catch {
                    logger.warning("draining without successors: \(error)")
                    nodes = []
                }
                answer.withLockedValue { $0.take() }?.resume(returning: nodes)
            }
            Task {
                try? await Task.sleep(for: Self.successorsLimit)
                answer.withLockedValue { $0.take() }?.resume(returning: nil)
            }
        }
        if first == nil { logger.warning("draining without successors: the store did not answer within \(Self.successorsLimit)") }
        return first ?? []
    }
}
