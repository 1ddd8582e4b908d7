import DuetProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Everything `duet serve` can be told, with development defaults.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    public var dataDirectory = ServerConfiguration.defaultDataDirectory
    /// `--database-url postgres://…`: durable room state (and the secrets) in PostgreSQL, shared by every node of a
    /// cluster. Nil: SQLite in `dataDirectory` (`rooms.sqlite`), one node.
    public var databaseURL: String?
    /// How long one PostgreSQL operation may take before it fails with a clear error (`PostgresRoomStateStore`). The
    /// in-process cluster tests give it more: their nodes start while hundreds of other tests share two cores.
    public var databaseOperationTimeout: Duration = .seconds(5)
    /// `--node-id`: this node in logs and metrics, and the owner of the rooms it writes to a shared store.
    /// Nil: host and port.
    public var nodeId: String?
    /// False only in tests that must run without any store (nothing persisted, nothing loaded).
    public var persistsRoomState = true
    public var turnSecret: String?
    public var turnURIs: [String] = []
    public var turnCredentialTTLSeconds: Int64 = 3600
    /// UDP port of the built-in STUN server (on `host`); nil: off. 0 picks a free port (tests). `duet serve`
    /// turns it on at 3478 unless `--stun-port 0`.
    public var stunPort: Int?
    /// True when the port was asked for: then a port in use stops the server. False (`duet serve`'s default 3478):
    /// the server runs without its STUN server and says so.
    public var stunPortRequired = true
    /// More STUN servers handed to clients (`--stun-uri`), e.g. coturn's when it runs beside the server.
    public var stunURIs: [String] = []
    /// HTTPS and WSS served directly (`--tls-cert`, `--tls-key`): PEM files.
    public struct TLSFiles: Sendable {
        public var certificateChain: String
        public var privateKey: String
        public init(certificateChain: String, privateKey: String) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
        }
    }
    public var tls: TLSFiles?
    public var allowedOrigins: [String] = []
    public var rateLimits = true
    /// The buckets `rateLimits` turns on: per client address for the HTTP entry points, per connection for
    /// signaling messages. Tests set slow refills so that "the burst is refused" does not depend on how fast the
    /// machine sends it.
    public struct RateRules: Sendable {
        public var api = IPRateLimiter.Rule(capacity: 60, refillPerSecond: 10)
        public var upgrades = IPRateLimiter.Rule(capacity: 30, refillPerSecond: 5)
        public var sse = IPRateLimiter.Rule(capacity: 30, refillPerSecond: 5)
        public var messages = IPRateLimiter.Rule(capacity: ProtocolLimits.messageBurst, refillPerSecond: ProtocolLimits.messagesPerSecond)
        /// `/api/turn-credentials` per seat: a call fetches them at join and on a few ICE restarts.
        public var turnCredentials = IPRateLimiter.Rule(capacity: 10, refillPerSecond: 0.2)
        public init() {}
    }
    public var rateRules = RateRules()
    public var blockWebSocket = false
    /// Proxies whose `X-Forwarded-For` / `Forwarded` name the client (`--trusted-proxy`); nobody else's are read.
    public var trustedProxies: [CIDRRange] = []
    /// Which header those proxies write (`--forwarded-header`).
    public var forwardedHeader: ClientAddressResolver.Header = .xForwardedFor
    /// Open WebSocket and SSE connections per client address: a NAT (a school, an office, a carrier) puts many
    /// users behind one address.
    public var maxConnectionsPerAddress = 200
    public var maxConnections = 20_000
    /// Shards of the hub's rooms (`SessionHub`): rooms of different shards never wait on each other's lock. nil: one per
    /// core, or 1 with a database (a cluster node is one shard: `resolvedHubShards`).
    public var hubShards: Int?

    public var resolvedHubShards: Int {
        if let hubShards { return hubShards }
        return databaseURL != nil ? 1 : min(256, max(1, ProcessInfo.processInfo.activeProcessorCount))
    }
    /// `/metrics` with `Authorization: Bearer <token>`; without a token only loopback peers may read it.
    public var metricsToken: String?
    /// `--push-allow-private-endpoints`: pushes may go to loopback, private and link-local addresses (a lab's or a
    /// test's own push service). Off: only public addresses, so a client cannot aim the server at its own network.
    public var pushAllowPrivateEndpoints = false
    /// `--push-ca-file`: extra trusted roots (PEM) for push services' certificates.
    public var pushTrustRootsFile: String?
    /// `--web-root`: the browser client's folder, read at start-up instead of the built-in copy (DuetWeb's).
    public var webRoot: String?
    /// `--push-contact`: the VAPID `sub` claim.
    public var pushContact = "mailto:operator@duet.invalid"
    /// `--ring-timeout`: how long a ring rings before it is "no answer" (45 s).
    public var ringTimeout: Duration = .milliseconds(RingLimits.ringTimeoutMs)
    /// How often a delivery is tried (tests make the backoff short); RFC 8030 retries within the message's TTL.
    public var pushRetry = PushRetryPolicy()
    public var evictionTimeout: Duration = .seconds(600)
    public var tombstoneDuration: Duration = .seconds(300)
    /// How long a seat of an ended room answers `ROOM_ENDED` (`SignalingCore.Settings.endedSeatMemoryMs`: an hour).
    public var endedSeatMemory: Duration = .seconds(3600)
    public var reconnectTokenTTL: Duration = .seconds(1200)
    public var turnTokenTTL: Duration = .seconds(900)
    /// WebSocket ping frames and SSE `: ping` comments. A socket that has not answered one ping by
    /// the next is closed, so silence is cut after at most twice this (24 s, within the 30 s bound).
    public var pingInterval: Duration = .seconds(12)
    /// Between the `draining` broadcast and closing every connection.
    public var drainGrace: Duration = .seconds(5)
    /// What `draining` tells the first room's clients to wait before reconnecting (the others: spread over a second
    /// after it, `SignalingCore.Settings.drainSpreadMs`).
    public var drainReconnectAfter: Duration = .zero

    public init() {}

    /// `--node-id`, else this machine's name and the port: nodes on different machines must never share an id (a
    /// node ignores its own id's notifications and owns its id's rows), and each binds the same address behind a
    /// local proxy, so the bind address would not do.
    public var resolvedNodeId: String { nodeId ?? "\(Self.machineName):\(port)" }

    /// gethostname(2): a system call. Not `ProcessInfo.hostName`, which resolves the name through DNS and, where
    /// there is no resolver (a network namespace), blocked the thread for tens of seconds on every server start.
    static let machineName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }()

    public static var defaultDataDirectory: String {
        if let xdg = ProcessInfo.processInfo.environment["XDG_DATA_HOME"], !xdg.isEmpty { return xdg + "/duet" }
        let home = ProcessInfo.processInfo.environment["HOME"] ?? "."
        return home + "/.local/share/duet"
    }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
