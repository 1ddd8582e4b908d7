import ArgumentParser
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
    @Option(help: "coturn static-auth-secret for TURN REST credentials. Env: DUET_TURN_SECRET")
    var turnSecret: String?
    @Option(help: "TURN URI handed to clients (repeatable). Env: DUET_TURN_URIS (comma-separated)")
    var turnUri: [String] = []
    @Option(help: "Lifetime of TURN credentials in seconds. Env: DUET_TURN_TTL. Default: 3600")
    var turnTtl: Int64?
    @Option(help: "Extra allowed browser Origin (repeatable). Env: DUET_ALLOWED_ORIGINS (comma-separated)")
    var allowedOrigin: [String] = []
    @Option(help: "Per-IP and per-connection rate limits: on|off. Env: DUET_RATE_LIMIT. Default: on")
    var rateLimit: Switch?
    @Option(help: "Refuse /ws upgrades (clients fall back to SSE): on|off. Env: DUET_BLOCK_WEBSOCKET. Default: off")
    var blockWebsocket: Switch?
    @Option(help: "Seconds a suspended participant keeps its seat. Env: DUET_EVICTION_TIMEOUT. Default: 600")
    var evictionTimeout: Double?
    @Option(help: "Seconds between server pings (WS frames, SSE comments). Env: DUET_PING_INTERVAL. Default: 12")
    var pingInterval: Double?
    @Option(help: "Seconds between the draining broadcast and closing connections on shutdown. Env: DUET_DRAIN_GRACE. Default: 5")
    var drainGrace: Double?
    @Option(help: "Log level: trace|debug|info|notice|warning|error. Env: DUET_LOG_LEVEL. Default: info")
    var logLevel: String?

    enum Switch: String, ExpressibleByArgument { case on, off }

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
        func seconds(_ flag: Double?, _ key: String) throws -> Duration? {
            guard let value = try value(flag, key) else { return nil }
            guard value >= 0 else { throw ValidationError("\(key) must not be negative") }
            return .milliseconds(Int64(value * 1000))
        }

        var config = ServerConfiguration()
        config.host = try value(host, "DUET_HOST") ?? config.host
        config.port = try value(port, "DUET_PORT") ?? config.port
        guard (0...65535).contains(config.port) else { throw ValidationError("port must be 0...65535") }
        config.dataDirectory = try value(dataDir, "DUET_DATA_DIR") ?? config.dataDirectory
        config.turnSecret = try value(turnSecret, "DUET_TURN_SECRET")
        config.turnURIs = list(turnUri, "DUET_TURN_URIS")
        config.turnCredentialTTLSeconds = try value(turnTtl, "DUET_TURN_TTL") ?? config.turnCredentialTTLSeconds
        config.allowedOrigins = list(allowedOrigin, "DUET_ALLOWED_ORIGINS")
        config.rateLimits = try toggle(rateLimit, "DUET_RATE_LIMIT") ?? config.rateLimits
        config.blockWebSocket = try toggle(blockWebsocket, "DUET_BLOCK_WEBSOCKET") ?? config.blockWebSocket
        config.evictionTimeout = try seconds(evictionTimeout, "DUET_EVICTION_TIMEOUT") ?? config.evictionTimeout
        config.pingInterval = try seconds(pingInterval, "DUET_PING_INTERVAL") ?? config.pingInterval
        config.drainGrace = try seconds(drainGrace, "DUET_DRAIN_GRACE") ?? config.drainGrace
        if config.turnSecret != nil, config.turnURIs.isEmpty {
            throw ValidationError("--turn-secret needs at least one --turn-uri (e.g. turn:turn.example.com:3478)")
        }
        let level = try value(logLevel, "DUET_LOG_LEVEL").map { raw -> Logger.Level in
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
        let server = try DuetServer(configuration: config, logger: logger)
        let announce = Task {
            guard let port = await server.boundPort() else { return }
            let shownHost = config.host.contains(":") ? "[\(config.host)]" : config.host
            // Unbuffered: scripts read this line while the server keeps running.
            FileHandle.standardOutput.write(Data("http://\(shownHost):\(port)/\n".utf8))
            logger.info("listening", metadata: ["port": "\(port)", "dataDir": "\(config.dataDirectory)", "turn": "\(config.turnURIs.isEmpty ? "off" : "on")"])
        }
        try await server.run()
        announce.cancel()
    }
}
