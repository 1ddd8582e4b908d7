import Hummingbird
import NIOCore

/// The HTTP routes' request context: the peer address (per-address limits), the body limit of the protocol, and the
/// channel (to cut off an SSE client that stopped reading). `/ws` never reaches the router (`DuetHTTPChannel`).
public struct DuetRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// Weak: an SSE stream's abort closure holds this; the channel's lifetime is NIO's to decide.
    let channel: WeakChannel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.remoteAddress = source.channel.remoteAddress
        self.channel = WeakChannel(source.channel)
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// A channel that is closed on demand if it still exists.
final class WeakChannel: Sendable {
    weak let channel: (any Channel)?

    init(_ channel: any Channel) { self.channel = channel }

    /// Closes the connection (nothing more is written), from its event loop and later: the hub calls this under its
    /// lock, and a close run in place would run the channel's handlers inside it.
    func close() {
        guard let channel else { return }
        channel.eventLoop.execute { channel.close(mode: .all, promise: nil) }
    }

    /// Closes the connection and returns once it is closed: whatever the caller answers next is never written.
    func closeNow() async { try? await channel?.close(mode: .all).get() }
}
