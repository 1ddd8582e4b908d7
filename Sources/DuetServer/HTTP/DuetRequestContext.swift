import Hummingbird
import HummingbirdWebSocket
import NIOCore

/// One request context for HTTP routes and the WebSocket upgrade: both need the peer address (per-address limits),
/// the body limit of the protocol, and the channel (to cut off a client that stopped reading).
public struct DuetRequestContext: RequestContext, WebSocketRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    public let remoteAddress: SocketAddress?
    let channel: any Channel
    /// The connection-cap ticket a WebSocket upgrade took, handed from the upgrade check to the connection.
    let admission = AdmissionSlot()

    public init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.webSocket = .init()
        self.remoteAddress = source.channel.remoteAddress
        self.channel = source.channel
    }

    public var maxUploadSize: Int { 64 * 1024 }
}
