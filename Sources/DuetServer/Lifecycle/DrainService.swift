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
struct DrainService: Service {
    let hub: SessionHub
    let grace: Duration
    let store: (any RoomStateStore)?
    let logger: Logger

    static let successorsLimit: Duration = .milliseconds(500)

    func run() async throws {
        try? await gracefulShutdown()
        hub.refuseNewSessions()
        hub.drain(successors: await successors())
        try? await Task.sleep(for: grace)
        logger.info("grace period over: closing all connections")
        hub.closeAll()
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
