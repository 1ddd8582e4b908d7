import Crypto
import DuetProtocol
import DuetRooms
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle

/// `duet serve`: assembles the session hub, the transports and the HTTP API, and runs them under
/// swift-service-lifecycle.
public final class DuetServer: Sendable {
    /// The `Server` header of every response.
    static let serverName = "duet"
    /// Connections the kernel may hold before they are accepted. Hummingbird's default (256) overflowed when the clients
    /// of a stopped cluster node all came to this one at once (docs/benchmarks.md, Cluster: 450 SYNs dropped a phase,
    /// each retried after 1 s, which was exactly nginx's connect timeout). Linux caps it at `net.core.somaxconn` (4096).
    static let listenBacklog = 4096
    public let configuration: ServerConfiguration
    public let hub: SessionHub
    public let metrics: ServerMetrics
    private let group: ServiceGroup
    private let stun: STUNService?
    private let listening: AsyncStream<Int>
    private let listeningContinuation: AsyncStream<Int>.Continuation
    private let store: (any RoomStateStore)?
    /// Whether the store answers (`/healthz`, `/metrics`); nil without a store.
    public let storeHealth: StoreHealth?
    private let logger: Logger
    /// The VAPID identity pushes are signed with (`/api/push/vapid-public-key`).
    public let vapid: VAPIDKey
    /// Where the devices to push to are kept: the room-state store, or memory without one.
    public let pushStore: any PushSubscriptionStore
    /// Join and ring snapshots (ciphertext only), held in memory for minutes.
    public let snapshots: SnapshotStore

    /// One node with its state in SQLite in the data directory (`duet serve` without `--database-url`).
    public convenience init(configuration: ServerConfiguration, logger: Logger, handleSignals: Bool = true) throws {
        guard configuration.databaseURL == nil else {
            throw ConfigurationError("--database-url needs DuetServer.make (the secrets are read from the database)")
        }
        let secrets = try ServerSecrets.loadOrCreate(in: configuration.dataDirectory)
        let vapid = try VAPIDKey.loadOrCreate(in: configuration.dataDirectory)
        let store: SQLiteRoomStateStore? =
            configuration.persistsRoomState
            ? SQLiteRoomStateStore(path: URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("rooms.sqlite").path)
            : nil
        try self.init(
            configuration: configuration, logger: logger, handleSignals: handleSignals, secrets: secrets, vapid: vapid, store: store,
            pushStore: store ?? InMemoryPushSubscriptions(), engine: "sqlite")
    }

    /// Any configuration: with `--database-url` the node connects to PostgreSQL first, creates or migrates the
    /// schema, and takes the cluster's secrets from it (the first node's), so every node accepts every room id and
    /// token. A database that cannot be reached at start is an error: without the secrets no node can serve.
    public static func make(configuration: ServerConfiguration, logger: Logger, handleSignals: Bool = true) async throws -> DuetServer {
        guard let url = configuration.databaseURL else {
            return try DuetServer(configuration: configuration, logger: logger, handleSignals: handleSignals)
        }
        let store = try PostgresRoomStateStore(
            url: url, nodeId: configuration.resolvedNodeId, logger: logger, timeout: configuration.databaseOperationTimeout)
        let secrets: ServerSecrets
        let vapid: VAPIDKey
        do {
            try await store.prepare()
            secrets = try await store.sharedSecrets(proposing: ServerSecrets.generate())
            vapid = try await store.sharedVAPIDKey(proposing: VAPIDKey())
        } catch {
            await store.close()
            throw StoreUnavailable("cannot use the database at \(redactedDatabaseURL(url)): \(error)")
        }
        return try DuetServer(
            configuration: configuration, logger: logger, handleSignals: handleSignals, secrets: secrets, vapid: vapid, store: store,
            pushStore: store, engine: "postgresql")
    }

    init(
        configuration: ServerConfiguration, logger: Logger, handleSignals: Bool, secrets: ServerSecrets, vapid: VAPIDKey,
        store: (any RoomStateStore)?, pushStore: any PushSubscriptionStore, engine: String
    ) throws {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "node"] = "\(configuration.resolvedNodeId)"
        self.logger = logger
        self.store = store
        let storeHealth = store.map { _ in StoreHealth(engine: engine) }
        self.storeHealth = storeHealth
        let storeQueue = store.map { _ in StoreQueue() }
        if let storeQueue, let postgres = store as? PostgresRoomStateStore { postgres.attach(claims: storeQueue) }
        let authorities = SignalingCore.Authorities(
            roomIds: RoomIdAuthority(key: secrets.key(secrets.roomIdSecret)),
            reconnectTokens: ReconnectTokenAuthority(
                key: secrets.key(secrets.reconnectSecret), ttlMs: configuration.reconnectTokenTTL.milliseconds),
            turnTokens: TurnTokenAuthority(key: secrets.key(secrets.turnTokenSecret), ttlMs: configuration.turnTokenTTL.milliseconds),
            memberTokens: MemberTokenAuthority(key: secrets.derivedKey("member tokens v1")))
        var settings = SignalingCore.Settings()
        settings.evictionTimeoutMs = configuration.evictionTimeout.milliseconds
        settings.tombstoneMs = configuration.tombstoneDuration.milliseconds
        settings.endedSeatMemoryMs = configuration.endedSeatMemory.milliseconds
        settings.drainReconnectAfterMs = configuration.drainReconnectAfter.milliseconds
        settings.ringTimeoutMs = configuration.ringTimeout.milliseconds
        // In a cluster another node may ring the callee's open page: a ring waits a moment for it to say so.
        if configuration.databaseURL != nil { settings.remoteListenerGraceMs = RingLimits.clusterUnreachableGraceMs }
        let metrics = ServerMetrics()
        metrics.nodeInfo(configuration.resolvedNodeId)
        var pushSettings = WebPushSender.Settings()
        pushSettings.destinations = PushDestinationPolicy(allowPrivate: configuration.pushAllowPrivateEndpoints)
        pushSettings.additionalTrustRootsFile = configuration.pushTrustRootsFile
        pushSettings.contact = configuration.pushContact
        pushSettings.retry = configuration.pushRetry
        let pushSender = WebPushSender(vapid: vapid, settings: pushSettings, store: pushStore, metrics: metrics, logger: logger)
        let snapshots = SnapshotStore()
        self.snapshots = snapshots
        let pushDispatcher = PushDispatcher(sender: pushSender, subscriptions: pushStore, snapshots: snapshots, logger: logger)
        self.vapid = vapid
        self.pushStore = pushStore
        let ringBus: (@Sendable (RingBroadcast) -> Void)? = store.map { store in { @Sendable message in store.broadcast(message) } }
        let hub = SessionHub(
            core: SignalingCore(settings: settings, authorities: authorities, ids: .system),
            metrics: metrics, logger: logger,
            messageRate: configuration.rateLimits
                ? (capacity: configuration.rateRules.messages.capacity, perSecond: configuration.rateRules.messages.refillPerSecond) : nil,
            store: storeQueue,
            pushAlerts: { pushDispatcher.alert($0) },
            ringBus: ringBus, shards: configuration.resolvedHubShards)
        self.hub = hub
        self.metrics = metrics
        pushDispatcher.reportRings { hub.ringPushed($0) }

        let limits = configuration.rateLimits
        let addresses = ClientAddressResolver(trusted: configuration.trustedProxies, header: configuration.forwardedHeader)
        let gate = Gatekeeper(
            origins: OriginPolicy(allowed: configuration.allowedOrigins),
            addresses: addresses,
            upgrades: IPRateLimiter(rule: configuration.rateRules.upgrades, enabled: limits),
            sse: IPRateLimiter(rule: configuration.rateRules.sse, enabled: limits),
            api: IPRateLimiter(rule: configuration.rateRules.api, enabled: limits),
            connections: ConnectionLimiter(
                limits: .init(perAddress: configuration.maxConnectionsPerAddress, total: configuration.maxConnections)),
            metrics: metrics)

        let router = Router(context: DuetRequestContext.self)
        let assets = configuration.webRoot.map { WebAssets.load(from: URL(fileURLWithPath: $0, isDirectory: true)) } ?? WebAssets.bundled()
        // First: middleware wraps only the routes added after it.
        let securityHeaders = SecurityHeadersMiddleware<DuetRequestContext>(inlineScripts: assets.inlineScripts)
        router.add(middleware: securityHeaders)
        let webSocket = WebSocketTransport(
            hub: hub, gate: gate, blocked: configuration.blockWebSocket, settings: .init(pingInterval: .init(configuration.pingInterval)))
        webSocket.registerRefusals(on: router)
        var sseHeaders: HTTPFields = [.server: Self.serverName]
        securityHeaders.apply(to: &sseHeaders)
        let sse = SSEEndpoint(hub: hub, gate: gate, pingInterval: .init(configuration.pingInterval), commonHeaders: sseHeaders)
        let stun = configuration.stunPort.map {
            STUNService(
                host: configuration.host, port: $0, required: configuration.stunPortRequired, rateLimits: limits, metrics: metrics,
                logger: logger)
        }
        self.stun = stun
        let iceServers = IceServerList(
            ownStunPort: { stun?.boundPort }, stunURIs: configuration.stunURIs,
            turn: TurnCredentialIssuer(
                secret: configuration.turnSecret, uris: configuration.turnURIs, ttlSeconds: configuration.turnCredentialTTLSeconds),
            ttlSeconds: configuration.turnCredentialTTLSeconds, listenHost: configuration.host)
        APIRoutes(
            hub: hub, gate: gate, roomIds: authorities.roomIds, turnTokens: authorities.turnTokens,
            iceServers: iceServers,
            turnPerSeat: IPRateLimiter(rule: configuration.rateRules.turnCredentials, enabled: limits)
        ).register(on: router)
        PushRoutes(
            hub: hub, gate: gate, roomIds: authorities.roomIds, vapid: vapid, subscriptions: pushStore,
            destinations: pushSettings.destinations
        ).register(on: router)
        SnapshotRoutes(hub: hub, gate: gate, roomIds: authorities.roomIds, subscriptions: pushStore, snapshots: snapshots).register(
            on: router)
        RingRoutes(hub: hub, gate: gate).register(on: router)
        OperationsRoutes(
            hub: hub, metrics: metrics, token: configuration.metricsToken, addresses: addresses, store: storeHealth,
            connections: gate.connections
        ).register(on: router)
        WebClientRoutes(assets: assets).register(on: router)

        let (listening, listeningContinuation) = AsyncStream<Int>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.listening = listening
        self.listeningContinuation = listeningContinuation
        // Before any connection: the first upgrades must not be the first use of the pipeline's types (see there).
        if !UpgradePipelineWarmUp.run(DuetHTTPChannel(responder: { _, _, _ in }, webSocket: webSocket), logger: logger) {
            logger.warning("could not warm up the WebSocket upgrade pipeline; serving anyway")
        }
        let http = HTTPServerBuilder { responder in DuetHTTPChannel(responder: responder, webSocket: webSocket, sse: sse) }
        let app = Application(
            router: router,
            server: try configuration.tls.map { try .tls(http, tlsConfiguration: Self.tlsConfiguration($0)) } ?? http,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port), serverName: Self.serverName,
                backlog: Self.listenBacklog),
            onServerRunning: { channel in
                listeningContinuation.yield(channel.localAddress?.port ?? 0)
                listeningContinuation.finish()
            },
            logger: logger)
        var storeService: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let store, let storeQueue, let storeHealth {
            // First in the group: shut down last, after the connections' last facts were queued.
            storeService = [
                .init(
                    service: StoreService(
                        store: store, changes: store.changes(), rings: store.ringMessages(), queue: storeQueue, hub: hub,
                        health: storeHealth,
                        metrics: metrics, logger: logger))
            ]
        }
        self.group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: storeService + (stun.map { [ServiceGroupConfiguration.ServiceConfiguration(service: $0)] } ?? []) + [
                    .init(service: app),
                    .init(service: HousekeepingService(hub: hub)),
                    .init(
                        service: DrainService(
                            hub: hub, grace: configuration.drainGrace, store: store, queue: storeQueue, logger: logger)),
                ],
                gracefulShutdownSignals: handleSignals ? [.sigterm, .sigint] : [],
                logger: logger))
    }

    /// Runs until shut down (signal or `shutdown()`). The STUN socket is bound first: a port in use fails here, before
    /// the HTTP listener announces itself.
    public func run() async throws {
        defer { listeningContinuation.finish() }
        try await stun?.bind()
        await loadStore()
        try await group.run()
    }

    /// Before the first connection: what the store remembers (ended rooms, left seats, rooms to continue), so that a
    /// client reconnecting the moment the node is back meets the truth. A store that does not answer within
    /// `StoreService.startLoadLimit` does not keep the node from serving: `StoreService` loads it when it returns.
    private func loadStore() async {
        guard let store, let storeHealth else { return }
        let hub = self.hub
        let loaded = await withTaskGroup(of: [DurableFact]?.self) { group in
            group.addTask {
                do {
                    try await store.prepare()
                    return try await store.load(nowMs: Int64(Date().timeIntervalSince1970 * 1000))
                } catch {
                    storeHealth.set(.down(String(describing: error)))
                    return nil
                }
            }
            group.addTask {
                try? await Task.sleep(for: StoreService.startLoadLimit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        if let loaded {
            hub.learn(loaded)
            storeHealth.markLoaded()
            storeHealth.set(.up)
            metrics.storeState(up: true, pending: 0)
            logger.info("room state loaded", metadata: ["store": "\(storeHealth.engine)", "facts": "\(loaded.count)"])
        } else {
            metrics.storeState(up: false, pending: 0)
            logger.error(
                "room state not loaded: serving from memory until the store answers", metadata: ["store": "\(storeHealth.summary)"])
        }
    }

    /// The built-in STUN server's UDP port once bound; nil when it is off.
    public var stunPort: Int? { stun?.boundPort }

    /// A certificate or key that cannot be read is the operator's to fix (exit 78 from `duet serve`), said plainly.
    static func tlsConfiguration(_ files: ServerConfiguration.TLSFiles) throws -> TLSConfiguration {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(files.certificateChain)
        } catch {
            throw ConfigurationError(
                "cannot read the TLS certificate chain \(files.certificateChain) (\(error)); it must be a PEM file readable by this user")
        }
        guard !chain.isEmpty else { throw ConfigurationError("\(files.certificateChain) holds no PEM certificate") }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: files.privateKey, format: .pem)
        } catch {
            throw ConfigurationError(
                "cannot read the TLS private key \(files.privateKey) (\(error)); it must be an unencrypted PEM key readable by this user")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
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
