import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// One request context for HTTP routes and the WebSocket upgrade: both need the peer address (per-address limits),
/// the body limit of the protocol, and the channel (to cut off a client that stopped reading).
public struct DuetRequestContext: RequestContext, WebSocketRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    public let remoteAddress: SocketAddress?
    /// Weak: Hummingbird keeps an upgraded connection's context in a box the context itself points to, so anything
    /// held strongly here would live as long as the process.
    let channel: WeakChannel

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.remoteAddress = source.channel.remoteAddress
        self.channel = WeakChannel(source.channel)
    }

    public var maxUploadSize: Int { 64 * 1024 }
}

/// A channel that is closed on demand if it still exists.
final class WeakChannel: Sendable {
    weak let channel: (any Channel)?

    init(_ channel: any Channel) { self.channel = channel }

    /// Closes the connection at once (nothing more is written).
    func close() { channel?.close(mode: .all, promise: nil) }

    /// Closes the connection and returns once it is closed: whatever the caller answers next is never written.
    func closeNow() async { try? await channel?.close(mode: .all).get() }
}
