import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// One request context for HTTP routes and the WebSocket upgrade: both need the peer address
/// (per-IP limits) and the body limit of the protocol.
public struct DuetRequestContext: RequestContext, WebSocketRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.remoteAddress = source.channel.remoteAddress
    }

    public var maxUploadSize: Int { 64 * 1024 }

    var clientAddress: String { remoteAddress?.ipAddress ?? "unknown" }
}
