import AsyncHTTPClient
import DuetLock
import DuetProtocol
import DuetServer
import DuetTransport
import Foundation
import Logging
import NIOCore
import NIOHTTP1

/// Shared by the test targets (not a product).
///
/// The real `DuetServer`, in process, on an ephemeral port, with its own data directory.
public final class TestServer: Sendable {
    public let server: DuetServer
    public let port: Int
    public let dataDirectory: String
    private let task: Task<Void, any Error>

    public var baseURL: String { "http://127.0.0.1:\(port)/" }
    public var webSocketURL: String { "ws://127.0.0.1:\(port)/ws" }

    public static func start(dataDirectory: String? = nil, port: Int = 0, configure: (inout ServerConfiguration) -> Void = { _ in })
        async throws -> TestServer
    {
        var configuration = ServerConfiguration()
        configuration.port = port
        configuration.dataDirectory = dataDirectory ?? TestServer.temporaryDirectory()
        configuration.rateLimits = false
        configuration.drainGrace = .milliseconds(100)
        configure(&configuration)
        // Two shards whatever this machine's cores (one per core is the default): every test meets rooms and
        // connections of different shards, the same on every machine. A cluster node is one shard.
        if configuration.hubShards == nil, configuration.databaseURL == nil { configuration.hubShards = 2 }
        return try await start(configuration)
    }

    /// Exactly this configuration (a restart keeps it: the same port, data directory and database).
    public static func start(_ configuration: ServerConfiguration) async throws -> TestServer {
        var logger = Logger(label: "duet-test")
        logger.logLevel = ProcessInfo.processInfo.environment["DUET_TEST_LOG"] != nil ? .debug : .critical
        let server = try await DuetServer.make(configuration: configuration, logger: logger, handleSignals: false)
        let task = Task { try await server.run() }
        guard let port = await server.boundPort(), port > 0 else {
            task.cancel()
            throw TestFailure("server did not start")
        }
        return TestServer(server: server, port: port, dataDirectory: configuration.dataDirectory, task: task)
    }

    private init(server: DuetServer, port: Int, dataDirectory: String, task: Task<Void, any Error>) {
        self.server = server
        self.port = port
        self.dataDirectory = dataDirectory
        self.task = task
    }

    public func stop() async {
        await server.shutdown()
        // A connection that never closes must not hang the test run: give up waiting after a while.
        let task = self.task
        await awaitAtMost(.seconds(10)) { _ = await task.result }
        task.cancel()
    }

    /// Stops this server and starts a new process-equivalent with the same configuration (port, data directory,
    /// database): rooms in memory are gone; secrets and what the store remembers are kept.
    public func restarted() async throws -> TestServer {
        // A restart means the old server is gone, with everything it had to write on disk. `stop` gives up waiting
        // after 10 s and cancels the server (a connection that never closes must not hang a test): under CI's load
        // that cancelled the old server's last store writes and started the new one beside it, and a left seat came
        // back (DurableRoomsTests, seen once). Here the wait is longer, and a server that does not stop is said.
        await server.shutdown()
        let task = self.task
        let stopped = StopFlag()
        await awaitAtMost(.seconds(60)) {
            _ = await task.result
            stopped.set()
        }
        guard stopped.isSet else { throw TestFailure("the server did not stop within 60 s: a restart would start beside it") }
        var configuration = server.configuration
        configuration.port = port
        var lastError: (any Error)?
        for _ in 0..<50 {
            do {
                return try await TestServer.start(configuration)
            } catch {
                lastError = error
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        throw lastError ?? TestFailure("restart failed")
    }

    public func secrets() throws -> ServerSecrets {
        try JSONDecoder().decode(ServerSecrets.self, from: Data(contentsOf: URL(fileURLWithPath: dataDirectory + "/secrets.json")))
    }

    public func roomId() async throws -> String { try await Self.roomId(at: baseURL) }

    /// A room id from any server (a node, nginx in front of a cluster, a `duet serve` process).
    public static func roomId(at baseURL: String) async throws -> String {
        let response = try await http(baseURL, .GET, "api/room-id")
        guard response.status == 200 else { throw TestFailure("room-id: \(response.status)") }
        return try JSONDecoder().decode(RoomIdResponse.self, from: Data(response.body.utf8)).roomId
    }

    public struct HTTPResult: Sendable {
        public var status: Int
        public var body: String
        /// Lowercased names; repeated fields joined by ", ".
        public var headers: [String: String] = [:]
    }

    public func http(_ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = []) async throws -> HTTPResult
    {
        try await Self.http(baseURL, method, path, body: body, headers: headers)
    }

    public static func http(_ baseURL: String, _ method: HTTPMethod, _ path: String, body: String? = nil, headers: [(String, String)] = [])
        async throws -> HTTPResult
    {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 4 << 20)
        var headers: [String: String] = [:]
        for (name, value) in response.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        return HTTPResult(status: Int(response.status.code), body: String(buffer: bytes), headers: headers)
    }

    public static func temporaryDirectory() -> String { DuetTestBasics.temporaryDirectory() }
}

/// Set once, from any task.
final class StopFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
