import Crypto
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import HummingbirdCore
import HummingbirdTLS
import NIOCore
import NIOSSL
import ServiceLifecycle

/// `duet serve`: assembles the session hub, the transports and the HTTP API, and runs them under
/// swift-service-lifecycle.
public final class DuetServer: Sendable {
    public let configuration: ServerConfiguration
    public let hub: SessionHub
    public let metrics: ServerMetrics
    private let group: ServiceGroup
    private let stun: STUNService?
    private let listening: AsyncStream<Int>
    private let listeningContinuation: AsyncStream<Int>.Continuation

    public init(configuration: ServerConfiguration, logger: Logger, handleSignals: Bool = true) throws {
        self.configuration = configuration
        let secrets = try ServerSecrets.loadOrCreate(in: configuration.dataDirectory)
        let authorities = SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: secrets.key(secrets.roomIdSecret)),
            reconnectTokens: ReconnectTokenAuthority(key: secrets.key(secrets.reconnectSecret), ttlMs: configuration.reconnectTokenTTL.milliseconds),
            turnTokens: TurnTokenAuthority(key: secrets.key(secrets.turnTokenSecret), ttlMs: configuration.turnTokenTTL.milliseconds))
        var settings = SignalingCore.Settings()
        settings.evictionTimeoutMs = configuration.evictionTimeout.milliseconds
        settings.tombstoneMs = configuration.tombstoneDuration.milliseconds
        settings.drainReconnectAfterMs = configuration.drainReconnectAfter.milliseconds
        let metrics = ServerMetrics()
        let hub = SessionHub(
            core: SignalingCore(settings: settings, authorities: authorities, ids: .system),
            metrics: metrics, logger: logger,
            messageRate: configuration.rateLimits
                ? (capacity: configuration.rateRules.messages.capacity, perSecond: configuration.rateRules.messages.refillPerSecond) : nil)
        self.hub = hub
        self.metrics = metrics

        let limits = configuration.rateLimits
        let addresses = ClientAddressResolver(trusted: configuration.trustedProxies, header: configuration.forwardedHeader)
        let gate = Gatekeeper(
            origins: OriginPolicy(allowed: configuration.allowedOrigins),
            addresses: addresses,
            upgrades: IPRateLimiter(rule: configuration.rateRules.upgrades, enabled: limits),
            sse: IPRateLimiter(rule: configuration.rateRules.sse, enabled: limits),
            api: IPRateLimiter(rule: configuration.rateRules.api, enabled: limits),
            connections: ConnectionLimiter(limits: .init(perAddress: configuration.maxConnectionsPerAddress, total: configuration.maxConnections)),
            metrics: metrics)

        let router = Router(context: DuetRequestContext.self)
        let assets = WebAssets.bundled()
        // First: middleware wraps only the routes added after it.
        router.add(middleware: SecurityHeadersMiddleware(inlineScripts: assets.inlineScripts))
        let webSocketRouter = Router(context: DuetRequestContext.self)
        let blockWebSocket = configuration.blockWebSocket
        let webSocket = WebSocketTransport(hub: hub, gate: gate, blocked: { blockWebSocket })
        webSocket.register(on: webSocketRouter)
        webSocket.registerRefusals(on: router)
        SSETransport(hub: hub, gate: gate, pingInterval: configuration.pingInterval).register(on: router)
        let stun = configuration.stunPort.map {
            STUNService(host: configuration.host, port: $0, required: configuration.stunPortRequired, rateLimits: limits, metrics: metrics, logger: logger)
        }
        self.stun = stun
        let iceServers = IceServerList(
            ownStunPort: { stun?.boundPort }, stunURIs: configuration.stunURIs,
            turn: TurnCredentialIssuer(secret: configuration.turnSecret, uris: configuration.turnURIs, ttlSeconds: configuration.turnCredentialTTLSeconds),
            ttlSeconds: configuration.turnCredentialTTLSeconds, listenHost: configuration.host)
        APIRoutes(
            hub: hub, gate: gate, roomIds: authorities.roomIds, turnTokens: authorities.turnTokens,
            iceServers: iceServers,
            turnPerSeat: IPRateLimiter(rule: configuration.rateRules.turnCredentials, enabled: limits)
        ).register(on: router)
        OperationsRoutes(hub: hub, metrics: metrics, token: configuration.metricsToken, addresses: addresses).register(on: router)
        WebClientRoutes(assets: assets).register(on: router)

        let (listening, listeningContinuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.listening = listening
        self.listeningContinuation = listeningContinuation
        let http: HTTPServerBuilder = .http1WebSocketUpgrade(
            webSocketRouter: webSocketRouter,
            configuration: .init(
                http1: .init(),
                ws: WebSocketServerConfiguration(
                    maxFrameSize: WebSocketTransport.socketMessageCap,
                    autoPing: .enabled(timePeriod: configuration.pingInterval),
                    // A text frame that is not UTF-8 is a protocol error (RFC 6455): close 1007.
                    validateUTF8: true)))
        let app = Application(
            router: router,
            server: try configuration.tls.map { try .tls(http, tlsConfiguration: Self.tlsConfiguration($0)) } ?? http,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: "duet"),
            onServerRunning: { channel in
                listeningContinuation.yield(channel.localAddress?.port ?? 0)
                listeningContinuation.finish()
            },
            logger: logger)
        self.group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: (stun.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? []) + [
                    .init(service: app),
                    .init(service: HousekeepingService(hub: hub)),
                    .init(service: DrainService(hub: hub, grace: configuration.drainGrace, logger: logger)),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger))
    }

    /// Runs until shut down (signal or `shutdown()`). The STUN socket is bound first: a port in use fails here, before
    /// the HTTP listener announces itself.
    public func run() async throws {
        defer { listeningContinuation.finish() }
        try await stun?.bind()
        try await group.run()
    }

    /// The built-in STUN server's UDP port once bound; nil when it is off.
    public var stunPort: Int? { stun?.boundPort }

    /// A certificate or key that cannot be read is the operator's to fix (exit 78 from `duet serve`), said plainly.
    static func tlsConfiguration(_ files: ServerConfiguration.TLSFiles) throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw ConfigurationError("cannot read the TLS certificate chain \(files.certificateChain) (\(error)); it must be a PEM file readable by this user")
        }
        guard !chain.isEmpty else { throw ConfigurationError("\(files.certificateChain) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw ConfigurationError("cannot read the TLS private key \(files.privateKey) (\(error)); it must be an unencrypted PEM key readable by this user")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        // TLS 1.0 and 1.1 are deprecated (RFC 8996); every browser that can make a WebRTC call speaks 1.2.
        configuration.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: configuration)  // a key that does not match the certificate fails here, at start
        } catch {
            throw ConfigurationError("the TLS key \(files.privateKey) does not fit the certificate \(files.certificateChain) (\(error))")
        }
        return configuration
    }

    /// The bound port, once the server listens (useful with port 0). Nil if it never did.
    public func boundPort() async -> Int? {
        for await port in listening { return port }
        return nil
    }

    public func shutdown() async { await group.triggerGracefulShutdown() }
}
