import ArgumentParser
import DuetProtocol
import DuetServer
import Foundation
import Logging

/// `duet serve`: every option is also read from a `DUET_*` environment variable; a flag wins over
/// the environment, the environment over the default.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the signaling server (WebSocket + SSE, rooms, TURN credentials, metrics).",
        discussion: "The first line on stdout is the URL the server listens on.")

    @Option(help: "Address to bind. Env: DUET_HOST. Default: 127.0.0.1")
    var host: String?
    @Option(help: "Port to bind; 0 picks a free one. Env: DUET_PORT. Default: 8080")
    var port: Int?
    @Option(help: "Where secrets are kept across restarts. Env: DUET_DATA_DIR. Default: ~/.local/share/duet")
    var dataDir: String?
    @Option(
        help:
            "PostgreSQL for the room state and secrets shared by every node of a cluster, e.g. postgres://duet@db/duet. Env: DUET_DATABASE_URL. Default: SQLite in the data dir"
    )
    var databaseUrl: String?
    @Option(help: "This node's name in logs, metrics and the shared store. Env: DUET_NODE_ID. Default: hostname:port")
    var nodeId: String?
    @Option(help: "coturn static-auth-secret for TURN REST credentials. Env: DUET_TURN_SECRET")
    var turnSecret: String?
    @Option(help: "TURN URI handed to clients (repeatable). Env: DUET_TURN_URIS (comma-separated)")
    var turnUri: [String] = []
    @Option(help: "Lifetime of TURN credentials in seconds. Env: DUET_TURN_TTL. Default: 3600")
    var turnTtl: Int64?
    @Option(help: "UDP port of the built-in STUN server, on --host; 0 turns it off. Env: DUET_STUN_PORT. Default: 3478")
    var stunPort: Int?
    @Option(
        help: "Another STUN server handed to clients, e.g. stun:turn.example.com:3478 (repeatable). Env: DUET_STUN_URIS (comma-separated)")
    var stunUri: [String] = []
    @Option(help: "PEM certificate chain: serve HTTPS and WSS directly (with --tls-key). Env: DUET_TLS_CERT")
    var tlsCert: String?
    @Option(help: "PEM private key for --tls-cert. Env: DUET_TLS_KEY")
    var tlsKey: String?
    @Option(help: "Extra allowed browser Origin (repeatable). Env: DUET_ALLOWED_ORIGINS (comma-separated)")
    var allowedOrigin: [String] = []
    @Option(help: "Per-IP and per-connection rate limits: on|off. Env: DUET_RATE_LIMIT. Default: on")
    var rateLimit: Switch?
    @Option(help: "Refuse /ws upgrades (clients fall back to SSE): on|off. Env: DUET_BLOCK_WEBSOCKET. Default: off")
    var blockWebsocket: Switch?
    @Option(help: "Seconds a suspended participant keeps its seat. Env: DUET_EVICTION_TIMEOUT. Default: 600")
    var evictionTimeout: Double?
    @Option(
        help:
            "Seconds a dropped client's reconnect token stays good (and a seat that left stays refused), at least --eviction-timeout. Env: DUET_RECONNECT_TOKEN_TTL. Default: 1200, or the eviction timeout if longer"
    )
    var reconnectTokenTtl: Double?
    /// Hidden: what the soak shortens to see the ended seats' table at its plateau within its run.
    @Option(
        help: ArgumentHelp(
            "Seconds a seat of an ended room still answers ROOM_ENDED to its owner. Env: DUET_ENDED_SEAT_MEMORY. Default: 3600",
            visibility: .hidden))
    var endedSeatMemory: Double?
    @Option(help: "Seconds between server pings (WS frames, SSE comments). Env: DUET_PING_INTERVAL. Default: 12")
    var pingInterval: Double?
    @Option(help: "Seconds between the draining broadcast and closing connections on shutdown. Env: DUET_DRAIN_GRACE. Default: 5")
    var drainGrace: Double?
    @Option(help: "Log level: trace|debug|info|notice|warning|error. Env: DUET_LOG_LEVEL. Default: info")
    var logLevel: String?
    @Option(
        help:
            "A proxy (address or CIDR) whose X-Forwarded-For/Forwarded name the client (repeatable). Env: DUET_TRUSTED_PROXIES (comma-separated). Default: none"
    )
    var trustedProxy: [String] = []
    @Option(
        help:
            "The header the trusted proxies write: x-forwarded-for|forwarded (only that one is read). Env: DUET_FORWARDED_HEADER. Default: x-forwarded-for"
    )
    var forwardedHeader: String?
    @Option(help: "Open WebSocket/SSE connections per client address (IPv6: per /64). Env: DUET_MAX_CONNECTIONS_PER_IP. Default: 200")
    var maxConnectionsPerIp: Int?
    @Option(help: "Open WebSocket/SSE connections in total. Env: DUET_MAX_CONNECTIONS. Default: 20000")
    var maxConnections: Int?
    @Option(
        help:
            "Shards of the rooms in this process: rooms of different shards never wait on each other (single node only; up to one per core). Env: DUET_HUB_SHARDS. Default: one per core (1 with --database-url)"
    )
    var hubShards: Int?
    @Option(help: "Bearer token that may read /metrics from anywhere (without one: loopback only). Env: DUET_METRICS_TOKEN")
    var metricsToken: String?
    @Option(help: "Seconds a ring rings before it is no answer. Env: DUET_RING_TIMEOUT. Default: 45")
    var ringTimeout: Double?
    @Option(
        help:
            "Let pushes go to loopback/private/link-local push services (labs and tests only): on|off. Env: DUET_PUSH_ALLOW_PRIVATE_ENDPOINTS. Default: off"
    )
    var pushAllowPrivateEndpoints: Switch?
    @Option(help: "Extra trusted root certificates (PEM) for push services, e.g. a lab's own. Env: DUET_PUSH_CA_FILE")
    var pushCaFile: String?
    @Option(
        help:
            "Serve the browser client from this folder, read at start-up, instead of the one built in (e.g. Sources/DuetWeb/Web while working on it: a restart, no rebuild). Env: DUET_WEB_ROOT"
    )
    var webRoot: String?
    @Option(help: "How push services reach this server's operator (VAPID sub): mailto:… or https://…. Env: DUET_PUSH_CONTACT")
    var pushContact: String?

    enum Switch: String, ExpressibleByArgument { case on, off }

    /// DUET_PING_INTERVAL → --ping-interval (DUET_PING_INTERVAL): one message names both ways of setting it.
    static func flagName(_ key: String) -> String {
        "--" + key.dropFirst("DUET_".count).lowercased().replacingOccurrences(of: "_", with: "-") + " (\(key))"
    }

    func run() async throws {
        let env = ProcessInfo.processInfo.environment
        func list(_ flag: [String], _ key: String) -> [String] {
            if !flag.isEmpty { return flag }
            return (env[key] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        func value<T: LosslessStringConvertible>(_ flag: T?, _ key: String) throws -> T? {
            if let flag { return flag }
            guard let raw = env[key], !raw.isEmpty else { return nil }
            guard let parsed = T(raw) else { throw ValidationError("\(key)=\(raw) is not a valid value") }
            return parsed
        }
        func toggle(_ flag: Switch?, _ key: String) throws -> Bool? {
            if let flag { return flag == .on }
            guard let raw = env[key], !raw.isEmpty else { return nil }
            switch raw.lowercased() {
            case "on", "1", "true", "yes": return true
            case "off", "0", "false", "no": return false
            default: throw ValidationError("\(key)=\(raw): use on or off")
            }
        }
        /// Every number is checked against a range: zero, negative, NaN or absurd values are refused (exit 64), never
        /// trapped on or silently clamped.
        func seconds(_ flag: Double?, _ key: String, _ range: ClosedRange<Double>) throws -> Duration? {
            guard let value = try value(flag, key) else { return nil }
            guard value.isFinite, range.contains(value) else {
                throw ValidationError(
                    "\(Self.flagName(key)) must be between \(range.lowerBound.formatted()) and \(range.upperBound.formatted()) seconds (got \(value))"
                )
            }
            return .milliseconds(Int64(value * 1000))
        }
        func count<T: BinaryInteger & LosslessStringConvertible>(_ flag: T?, _ key: String, _ range: ClosedRange<T>) throws -> T? {
            guard let value = try value(flag, key) else { return nil }
            guard range.contains(value) else {
                throw ValidationError("\(Self.flagName(key)) must be between \(range.lowerBound) and \(range.upperBound) (got \(value))")
            }
            return value
        }

        var config = ServerConfiguration()
        config.host = try value(host, "DUET_HOST") ?? config.host
        config.port = try value(port, "DUET_PORT") ?? config.port
        guard (0...65535).contains(config.port) else { throw ValidationError("port must be 0...65535") }
        config.dataDirectory = try value(dataDir, "DUET_DATA_DIR") ?? config.dataDirectory
        config.databaseURL = try value(databaseUrl, "DUET_DATABASE_URL")
        if let url = config.databaseURL, !(url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")) {
            throw ValidationError(
                "--database-url (DUET_DATABASE_URL) must be a postgres:// or postgresql:// URL (got \(redactedDatabaseURL(url))); without it the room state is kept in SQLite in the data directory"
            )
        }
        config.nodeId = try value(nodeId, "DUET_NODE_ID")
        if let node = config.nodeId, node.isEmpty || node.utf8.count > 64 || node.contains(where: { $0.isWhitespace || $0.isNewline }) {
            throw ValidationError("--node-id (DUET_NODE_ID) must be 1 to 64 characters without spaces")
        }
        config.turnSecret = try value(turnSecret, "DUET_TURN_SECRET")
        // deploy/duet.env's placeholder (the package installs it as it is): a server started before the operator set a
        // secret would hand out credentials anyone can forge. Refused (exit 64: systemd does not restart it).
        if config.turnSecret == "CHANGE_ME_TURN_SECRET" {
            throw ValidationError(
                "\(Self.flagName("DUET_TURN_SECRET")) is still the placeholder CHANGE_ME_TURN_SECRET: set a secret of your own (docs/deploy.md, step 5)"
            )
        }
        config.turnURIs = list(turnUri, "DUET_TURN_URIS")
        config.turnCredentialTTLSeconds = try count(turnTtl, "DUET_TURN_TTL", 1...86_400) ?? config.turnCredentialTTLSeconds
        // Given (flag or environment): a port in use is an error. The default: a port in use (coturn on this machine,
        // say) only turns the built-in STUN server off, with a warning — `swift run duet serve` must just work.
        let givenStunPort = try count(stunPort, "DUET_STUN_PORT", 0...65_535)
        let stun = givenStunPort ?? 3478
        config.stunPort = stun == 0 ? nil : stun
        config.stunPortRequired = givenStunPort != nil
        config.stunURIs = list(stunUri, "DUET_STUN_URIS")
        // A URI a browser refuses would make every call's RTCPeerConnection throw: refuse it here, naming it.
        for uri in config.stunURIs {
            if let problem = IceServerURI.problem(uri, kind: .stun) {
                throw ValidationError("--stun-uri (DUET_STUN_URIS) \(uri): \(problem)")
            }
        }
        for uri in config.turnURIs {
            if let problem = IceServerURI.problem(uri, kind: .turn) {
                throw ValidationError("--turn-uri (DUET_TURN_URIS) \(uri): \(problem)")
            }
        }
        switch (try value(tlsCert, "DUET_TLS_CERT"), try value(tlsKey, "DUET_TLS_KEY")) {
        case (nil, nil): break
        case (let cert?, let key?): config.tls = .init(certificateChain: cert, privateKey: key)
        default: throw ValidationError("--tls-cert (DUET_TLS_CERT) and --tls-key (DUET_TLS_KEY) go together: give both, or neither")
        }
        config.allowedOrigins = list(allowedOrigin, "DUET_ALLOWED_ORIGINS")
        config.rateLimits = try toggle(rateLimit, "DUET_RATE_LIMIT") ?? config.rateLimits
        config.blockWebSocket = try toggle(blockWebsocket, "DUET_BLOCK_WEBSOCKET") ?? config.blockWebSocket
        config.evictionTimeout = try seconds(evictionTimeout, "DUET_EVICTION_TIMEOUT", 1...86_400) ?? config.evictionTimeout
        // A seat must not outlive the token that takes it back: unset, the lifetime is at least the eviction timeout
        // (an `--eviction-timeout` above 1,200 s made seats no token could reattach); set below it, a clear error.
        if let ttl = try seconds(reconnectTokenTtl, "DUET_RECONNECT_TOKEN_TTL", 60...86_400) {
            guard ttl >= config.evictionTimeout else {
                throw ValidationError(
                    "--reconnect-token-ttl (DUET_RECONNECT_TOKEN_TTL, \(ttl.components.seconds) s) is shorter than --eviction-timeout (\(config.evictionTimeout.components.seconds) s): a suspended seat would outlive the token that takes it back"
                )
            }
            config.reconnectTokenTTL = ttl
        } else {
            config.reconnectTokenTTL = max(config.reconnectTokenTTL, config.evictionTimeout)
        }
        config.endedSeatMemory = try seconds(endedSeatMemory, "DUET_ENDED_SEAT_MEMORY", 60...86_400) ?? config.endedSeatMemory
        config.pingInterval = try seconds(pingInterval, "DUET_PING_INTERVAL", 0.1...60) ?? config.pingInterval
        config.drainGrace = try seconds(drainGrace, "DUET_DRAIN_GRACE", 0...300) ?? config.drainGrace
        do {
            config.trustedProxies = try ClientAddressResolver(parsing: list(trustedProxy, "DUET_TRUSTED_PROXIES")).trusted
        } catch {
            throw ValidationError(error.description)
        }
        if let header = try value(forwardedHeader, "DUET_FORWARDED_HEADER") {
            guard let parsed = ClientAddressResolver.Header(rawValue: header.lowercased()) else {
                throw ValidationError("\(Self.flagName("DUET_FORWARDED_HEADER")) must be x-forwarded-for or forwarded (got \(header))")
            }
            config.forwardedHeader = parsed
        }
        config.maxConnectionsPerAddress =
            try count(maxConnectionsPerIp, "DUET_MAX_CONNECTIONS_PER_IP", 1...1_000_000) ?? config.maxConnectionsPerAddress
        config.maxConnections = try count(maxConnections, "DUET_MAX_CONNECTIONS", 1...10_000_000) ?? config.maxConnections
        config.hubShards = try count(hubShards, "DUET_HUB_SHARDS", 1...256) ?? config.hubShards
        // The shards of a node learn each other's facts as nodes do, but a fact from the store would reach every shard
        // before the room's: in a cluster a node is one shard.
        if let shards = config.hubShards, shards > 1, config.databaseURL != nil {
            throw ValidationError("--hub-shards must be 1 with --database-url (a cluster node is one shard; got \(shards))")
        }
        config.metricsToken = try value(metricsToken, "DUET_METRICS_TOKEN")
        if let token = config.metricsToken, token.utf8.count < 16 {
            throw ValidationError("--metrics-token must be at least 16 characters")
        }
        config.ringTimeout = try seconds(ringTimeout, "DUET_RING_TIMEOUT", 1...600) ?? config.ringTimeout
        config.pushAllowPrivateEndpoints =
            try toggle(pushAllowPrivateEndpoints, "DUET_PUSH_ALLOW_PRIVATE_ENDPOINTS") ?? config.pushAllowPrivateEndpoints
        config.pushTrustRootsFile = try value(pushCaFile, "DUET_PUSH_CA_FILE")
        if let root = try value(webRoot, "DUET_WEB_ROOT") {
            guard FileManager.default.fileExists(atPath: root + "/index.html") else {
                throw ValidationError(
                    "\(Self.flagName("DUET_WEB_ROOT")) must be a folder holding the browser client (no index.html in \(root))")
            }
            config.webRoot = root
        }
        if let contact = try value(pushContact, "DUET_PUSH_CONTACT") {
            guard contact.hasPrefix("mailto:") || contact.hasPrefix("https://") else {
                throw ValidationError("\(Self.flagName("DUET_PUSH_CONTACT")) must be a mailto: or https: URI (RFC 8292), got \(contact)")
            }
            config.pushContact = contact
        }
        if config.turnSecret != nil, config.turnURIs.isEmpty {
            throw ValidationError("--turn-secret needs at least one --turn-uri (e.g. turn:turn.example.com:3478)")
        }
        if config.turnSecret == nil, !config.turnURIs.isEmpty {
            throw ValidationError(
                "--turn-uri needs --turn-secret (DUET_TURN_SECRET), coturn's static-auth-secret: without it no client could use the relay")
        }
        let level =
            try value(logLevel, "DUET_LOG_LEVEL").map { raw -> Logger.Level in
                guard let level = Logger.Level(rawValue: raw) else { throw ValidationError("unknown log level \(raw)") }
                return level
            } ?? .info

        // stdout carries only the URL line; logs go to stderr.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "duet")
        let server: DuetServer
        do {
            server = try await DuetServer.make(configuration: config, logger: logger)
        } catch let error as StoreUnavailable {
            // The database is down or refuses us: nothing to fix in the command line; exit 69 (EX_UNAVAILABLE).
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(69)
        } catch let error as ConfigurationError {
            // A broken secrets file or data directory is the operator's to fix: say so, exit 78 (EX_CONFIG).
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(78)
        }
        let announce = Task {
            guard let port = await server.boundPort() else { return }
            let shownHost = config.host.contains(":") ? "[\(config.host)]" : config.host
            // Unbuffered: scripts read this line while the server keeps running.
            FileHandle.standardOutput.write(Data("\(config.tls == nil ? "http" : "https")://\(shownHost):\(port)/\n".utf8))
            logger.info(
                "listening",
                metadata: [
                    "port": "\(port)", "dataDir": "\(config.dataDirectory)", "turn": "\(config.turnURIs.isEmpty ? "off" : "on")",
                    "stun": "\(server.stunPort.map { "udp \($0)" } ?? "off")", "tls": "\(config.tls == nil ? "off" : "on")",
                    "node": "\(config.resolvedNodeId)", "store": "\(config.databaseURL == nil ? "sqlite" : "postgresql")",
                ])
        }
        do {
            try await server.run()
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("Error: \(error.description)\n".utf8))
            throw ExitCode(78)
        }
        announce.cancel()
    }
}
