import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded

/// Sets up the HTTP/WebSocket-upgrade pipeline once, on an in-memory channel, before the listener accepts anything.
///
/// Why: the Swift runtime on Linux can crash when two threads make the first use of the same generic metadata at
/// once (a null metadata in `swift_checkMetadataState` under `swift_conformsToProtocol`; the same open race as
/// swiftlang/swift-build#528). `duet serve` crashed that way once: its first WebSocket upgrades arrived on two NIO
/// threads together, both in `configureUpgradableHTTPServerPipeline`. After this has run on one thread, every type
/// and conformance that function needs is already instantiated, so real connections only read them.
enum UpgradePipelineWarmUp {
    /// Builds the server's own channel setup (a responder that is never called) on an `EmbeddedChannel`. Returns
    /// whether the pipeline was built — false only if NIO refused, which the caller logs: the server works either way.
    @discardableResult
    static func run(_ setup: DuetHTTPChannel, logger: Logger) -> Bool {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        // EmbeddedEventLoop runs everything inline: the future is complete when `setup` returns.
        let built = NIOLockedValueBox(false)
        setup.setup(channel: channel, logger: logger).whenSuccess { _ in built.withLockedValue { $0 = true } }
        return built.withLockedValue { $0 }
    }
}
