import DuetLock
import DuetProtocol
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

/// `duet serve`'s STUN server (`--stun-port`): answers Binding requests on UDP so that a browser behind a NAT learns
/// its server-reflexive address without any third-party STUN server. The socket is bound by `bind()` before the
/// HTTP listener starts (a port in use is a start-up error that names the flag), and closed on graceful shutdown.
final class STUNService: Service, Sendable {
    private let host: String
    private let port: Int
    private let required: Bool
    private let limiter: IPRateLimiter
    private let metrics: ServerMetrics
    private let logger: Logger
    private let channel = Mutex<(any Channel)?>(nil)

    init(host: String, port: Int, required: Bool, rateLimits: Bool, metrics: ServerMetrics, logger: Logger) {
        self.host = host
        self.port = port
        self.required = required
        // A browser sends a handful of Binding requests per gathering; 50/s with a burst of 100 per address is far
        // above that and keeps the server from being a cheap reflector.
        self.limiter = IPRateLimiter(rule: .init(capacity: 100, refillPerSecond: 50), enabled: rateLimits)
        self.metrics = metrics
        self.logger = logger
    }

    /// The bound UDP port (the configured one, or the one picked for port 0); nil before `bind()`.
    var boundPort: Int? { channel.withLock { $0?.localAddress?.port } }

    /// No SO_REUSEADDR: with it, Linux lets a second UDP socket (coturn's, say) share the port, and each datagram goes
    /// to one of the two — TURN allocations would vanish into the STUN server. A port in use must be an error.
    func bind() async throws {
        let handler = STUNDatagramHandler(limiter: limiter, metrics: metrics)
        do {
            let bound = try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
                }
                .bind(host: host, port: port).get()
            channel.withLock { $0 = bound }
            logger.info("STUN listening", metadata: ["udp": "\(host):\(bound.localAddress?.port ?? port)"])
        } catch {
            // Usually another STUN/TURN server (coturn) already has the port: the operator's to settle — or, for the
            // default port, a server that runs on without its own STUN (clients still get --stun-uri and TURN).
            guard required else {
                logger.warning(
                    "the built-in STUN server is off: udp \(host):\(port) is taken (\(error)); pass --stun-port to choose another port, or --stun-uri to hand out the server that has it"
                )
                return
            }
            throw ConfigurationError(
                "cannot listen for STUN on udp \(host):\(port) (\(error)); pass --stun-port 0 to turn the built-in STUN server off, or choose another port"
            )
        }
    }

    func run() async throws {
        // Runs until the server shuts down; the channel lives as long as the service.
        try? await gracefulShutdown()
        try? await channel.withLock { $0 }?.close()
    }
}

/// One datagram in, at most one out: the pure `STUNBinding.reply` decides; this only moves bytes.
final class STUNDatagramHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let limiter: IPRateLimiter
    private let metrics: ServerMetrics

    init(limiter: IPRateLimiter, metrics: ServerMetrics) {
        self.limiter = limiter
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes <= 1_500, let source = Self.endpoint(envelope.remoteAddress) else { return }
        let key = envelope.remoteAddress.ipAddress ?? ""
        guard limiter.allow(key, nowMs: Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000)) else {
            metrics.stunRequest(answered: false)
            return
        }
        guard let reply = STUNBinding.reply(to: Array(envelope.data.readableBytesView), from: source) else {
            metrics.stunRequest(answered: false)
            return
        }
        metrics.stunRequest(answered: true)
        let buffer = context.channel.allocator.buffer(bytes: reply)
        context.writeAndFlush(wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: buffer)), promise: nil)
    }

    /// Errors on a UDP socket (an ICMP port-unreachable for a reply, say) concern one datagram, not the socket.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {}

    static func endpoint(_ address: SocketAddress) -> STUNBinding.Endpoint? {
        guard let port = address.port else { return nil }
        switch address {
        case .v4(let v4):
            let raw = v4.address.sin_addr.s_addr.bigEndian
            return .init(
                address: [UInt8(raw >> 24), UInt8(raw >> 16 & 0xFF), UInt8(raw >> 8 & 0xFF), UInt8(raw & 0xFF)], port: UInt16(port))
        case .v6(let v6):
            var addr = v6.address.sin6_addr
            let bytes = withUnsafeBytes(of: &addr) { Array($0) }
            // An IPv4 client of a dual-stack socket (`--host ::`) arrives as ::ffff:a.b.c.d; it must be told its IPv4
            // address, or its server-reflexive candidate is an IPv6 address it cannot use.
            if bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] {
                return .init(address: Array(bytes.suffix(4)), port: UInt16(port))
            }
            return .init(address: bytes, port: UInt16(port))
        default:
            return nil
        }
    }
}
