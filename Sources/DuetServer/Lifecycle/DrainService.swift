import Logging
import ServiceLifecycle

/// Graceful shutdown: on SIGTERM/SIGINT the service group shuts services down last-first, so this
/// runs before the HTTP server stops: broadcast `draining`, `/healthz` turns 503, new sessions are
/// refused, and after the grace period every connection is closed.
struct DrainService: Service {
    let hub: SessionHub
    let grace: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        hub.drain()
        try? await Task.sleep(for: grace)
        logger.info("grace period over: closing all connections")
        hub.closeAll()
    }
}
