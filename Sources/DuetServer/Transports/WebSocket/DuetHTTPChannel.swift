import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// The server's child channel: HTTP/1 for Hummingbird's router, `/ws` upgraded to plain NIO handlers and `/sse`
/// answered by one (`SSEConnectionHandler`) in front of the router, on the same port (`--tls-cert` wraps it as it wraps Hummingbird's own channels).
///
/// Why not HummingbirdWebSocket: it keeps a Swift task, an actor, an async stream and a ping task per connection,
/// ≈30 KiB each, and leaks a little per upgrade (docs/benchmarks.md, ../shared/notes/nio-websocket.md). Here
/// `handle(value:)` returns as soon as a connection is upgraded: the socket lives on in NIO, with one handler.
struct DuetHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    enum Negotiated: Sendable {
        case webSocket
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// The upgrade was refused: the request head is gone (NIO's upgrader does not replay it), so the refusal is
        /// answered here, with its own status, and the connection closed.
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, Gatekeeper.Refusal)
    }

    /// What `shouldUpgrade` decided, for `notUpgradingCompletionHandler`.
    private enum Gate {
        case none
        case refused(Gatekeeper.Refusal)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let webSocket: WebSocketTransport
    /// `GET`/`POST /sse`, answered in front of the router (`SSEConnectionHandler`); nil: no SSE endpoint (warm-up).
    let sse: SSEEndpoint?
    let http1: HTTP1Channel.Configuration

    init(
        responder: @escaping HTTPChannelHandler.Responder, webSocket: WebSocketTransport, sse: SSEEndpoint? = nil,
        http1: HTTP1Channel.Configuration = .init()
    ) {
        self.responder = Self.laterUpgradesRedirected(responder)
        self.webSocket = webSocket
        self.sse = sse
        self.http1 = http1
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // A connection keeps its largest read buffer (NIO's pooled allocator only grows it): start small (256
            // bytes: most of an idle WebSocket's memory) and grow for large messages. Below 512 bytes the allocator
            // grows in 64-byte steps, so a 2 KB offer takes six reads: up to four per wake-up keeps it within one
            // (one per wake-up doubled the call-shaped join p99, docs/benchmarks.md).
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65_536))
            try channel.syncOptions?.setOption(ChannelOptions.maxMessagesPerRead, value: 4)
            let gate = NIOLoopBoundBox(Gate.none, eventLoop: channel.eventLoop)
            let webSocket = self.webSocket
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: WebSocketTransport.socketMessageCap,
                // The connection handler answers protocol errors itself, with the code that names them.
                enableAutomaticErrorHandling: false,
                shouldUpgrade: { channel, head in
                    switch webSocket.decide(head, peer: channel.remoteAddress) {
                    case .upgrade:
                        return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
                    case .refuse(let why):
                        gate.value = .refused(why)
                        return channel.eventLoop.makeSucceededFuture(nil)
                    }
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(webSocket.handler(head, peer: channel.remoteAddress))
                        return .webSocket
                    }
                })
            let http1 = self.http1
            let sse = self.sse
            let upgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration<Negotiated>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandlers(http1.additionalChannelHandlers())
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        if let sse { try channel.pipeline.syncOperations.addHandler(SSEConnectionHandler(endpoint: sse)) }
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        if case .refused(let why) = gate.value { return .refused(asyncChannel, why) }
                        return .http(asyncChannel)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Negotiated>(upgradeConfiguration: upgradeConfiguration)
            configuration.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
            configuration.enableErrorHandling = false  // Hummingbird handles these
            configuration.enableResponseHeaderValidation = false  // Swift HTTP Types validate already
            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let upgradeHandler = try channel.pipeline.syncOperations.handler(type: NIOTypedHTTPServerUpgradeHandler<Negotiated>.self)
            try channel.pipeline.syncOperations.addHandler(UpgradeRequestCheck(), position: .before(upgradeHandler))
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .webSocket:
                return
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .refused(let http, let refusal):
                try await http.executeThenClose { _, outbound in
                    var fields: HTTPFields = [.connection: "close", .contentType: "text/plain; charset=utf-8"]
                    if let seconds = refusal.retryAfterSeconds { fields[.retryAfter] = "\(seconds)" }
                    let body = ByteBuffer(string: refusal.message + "\n")
                    fields[.contentLength] = "\(body.readableBytes)"
                    try await outbound.write(contentsOf: [
                        .head(HTTPResponse(status: refusal.status, headerFields: fields)), .body(body), .end(nil),
                    ])
                }
            }
        } catch {
            logger.debug("connection ended during negotiation", metadata: ["error": "\(error)"])
        }
    }

    /// Only a connection's first request can upgrade (NIO removes its upgrader after it). A later `Upgrade:
    /// websocket` on a kept-alive connection is sent to the same URI on a new connection.
    static func laterUpgradesRedirected(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        struct RedirectedToANewConnection: Error {}
        return { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                try await responder(request, writer, channel)
                return
            }
            let location = request.uri.path + (request.uri.query.map { "?\($0)" } ?? "")
            try await writer.writeResponse(
                HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: location]))
            throw RedirectedToANewConnection()
        }
    }
}
