import ArgumentParser
import DuetTransport
import Foundation

/// Load generator and benchmarks (docs/benchmarks.md). Loopback only; every run is bounded in count and time.
@main
struct DuetBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duet-bench",
        abstract: "Measures duet serve (and the usual alternatives) with real WebSocket clients on loopback.",
        subcommands: [Relay.self, Call.self, Idle.self, Storm.self, Hold.self, JoinLatency.self, Soak.self, EchoServer.self])

    static func emit(_ result: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        print("BENCH " + String(decoding: try encoder.encode(result), as: UTF8.self))
    }
}

struct Relay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Relay throughput and latency: pairs send ICE-sized messages to each other.")
    @Option(help: "duet, node or echo") var server: ServerUnderTest.Kind = .duet
    @Option var pairs = 50
    @Option(help: "Seconds of load (at most 60).") var seconds = 10.0
    @Option(help: "Total messages per second; leave out to saturate.") var rate: Double?
    @Option(help: "ws or sse (sse: duet only).") var transport: SignalingTransportKind = .ws

    func validate() throws {
        if transport == .sse && server != .duet { throw ValidationError("only duet serve speaks SSE") }
    }

    func run() async throws {
        try DuetBench.emit(try await RelayRun.run(server, over: transport, pairs: min(pairs, 2_000), seconds: min(seconds, 60), rate: rate))
    }
}

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Call-shaped load: join, offer, answer, 20 ICE candidates each, pings.")
    @Option(help: "duet or node") var server: ServerUnderTest.Kind = .duet
    @Option var rooms = 500
    @Option(help: "Client joins per second.") var joinRate = 500.0
    @Option(help: "Seconds of load (at most 60).") var seconds = 10.0
    @Option(help: "ws or sse (sse: duet only).") var transport: SignalingTransportKind = .ws

    func validate() throws {
        if transport == .sse && server != .duet { throw ValidationError("only duet serve speaks SSE") }
    }

    func run() async throws {
        try DuetBench.emit(
            try await CallRun.run(server, over: transport, rooms: min(rooms, 5_000), joinsPerSecond: joinRate, seconds: min(seconds, 60)))
    }
}

struct Idle: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Memory per idle WebSocket connection (RSS and heap), after a call, the CPU to close them all, and a leak check.")
    @Option var server: ServerUnderTest.Kind = .duet
    @Option(help: "At most 19,900: the machine allows 20,000 open files per process.") var connections = 19_900
    @Option(help: "Leak check (duet only): rounds of opening and closing --leak-connections.") var leakRounds = 3
    @Option var leakConnections = 10_000
    @Option(help: "Wait after each leak round's last close: past one ping interval (12 s) by default.") var leakSettleSeconds = 14

    func run() async throws {
        try DuetBench.emit(
            try await IdleRun.run(
                server, connections: min(connections, 19_900), leakRounds: leakRounds, leakRoundConnections: min(leakConnections, 19_900),
                leakSettleSeconds: leakSettleSeconds))
    }
}

struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reconnect storm: clients in rooms, duet serve restarted, time until all are back.")
    @Option var clients = 1_000

    func run() async throws { try DuetBench.emit(try await StormRun.run(clients: min(clients, 10_000))) }
}

struct Hold: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rooms held open through faults (a cluster behind nginx), driven over stdin/stdout.",
        discussion: """
            Makes --rooms rooms at --url (POST /api/room-id), joins two WebSocket clients per room (/ws?rid=ROOM) \
            and keeps them: a lost connection or `draining` is followed by a reconnect with the engine's backoff and \
            a rejoin with the seat's cid and token. Prints `READY <clients>` once all have joined. Reads lines: \
            `MARK <label>` starts a phase; `WAITBACK <timeoutSeconds>` answers `BACK <label> <seconds from MARK until \
            every client was back, or -1> <clients still away>`; `STOP` (or end of input) prints `BENCH {json}` and \
            exits 0. After --max-seconds it prints the same with "timedOut": true and exits 2.
            """)
    @Option(help: "The server or proxy: http(s)://host:port/ (or ws(s)://…).") var url: String
    @Option(help: "Rooms, two clients each (at most 5,000).") var rooms = 100
    @Option(help: "Client connects per second at the start.") var joinRate = 200.0
    @Option(help: "Ends by itself after this long (at most 3,600).") var maxSeconds = 300.0

    func run() async throws {
        try await HoldRun.run(
            url: url, rooms: max(1, min(rooms, 5_000)), joinsPerSecond: joinRate, maxSeconds: min(max(maxSeconds, 1), 3_600))
    }
}

struct JoinLatency: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join-latency",
        abstract: "Join latency through a proxy (--url) against one node directly (--direct-url), rooms alternating.")
    @Option(help: "The proxy, e.g. nginx: http://127.0.0.1:PORT/") var url: String
    @Option(help: "One node behind it: http://127.0.0.1:PORT/") var directURL: String
    @Option(help: "Rooms, two joins each, half through each target (at most 5,000).") var rooms = 1_000
    @Option(help: "Client joins per second, both targets together.") var joinRate = 200.0

    func run() async throws {
        try DuetBench.emit(
            try await JoinLatencyRun.run(url: url, directURL: directURL, rooms: max(2, min(rooms, 5_000)), joinsPerSecond: joinRate))
    }
}

struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Call-shaped churn on a duet serve of its own for a long time: its memory, descriptors, tables and store, sampled (benchmarks/soak.sh).",
        discussion: """
            Prints a `SAMPLE {json}` line per sample as it goes and `BENCH {json}` (SoakResult) at the end: the series, \
            the growth of each after the warm-up, the errors, and the server's tables once every client has gone and \
            the eviction timeout has passed. Ends by itself.
            """)
    @Option(help: "Clients, two per call slot (at most 4,000).") var clients = 2_000
    @Option(help: "Seconds of churn (at most 86,400).") var seconds = 1_800.0
    @Option(help: "Seconds at the start left out of the growth figures.") var warmupSeconds = 300.0
    @Option(help: "Seconds between samples.") var sampleSeconds = 10.0
    @Option(help: "The server's --eviction-timeout: how long an abandoned seat keeps waiting.") var evictionSeconds = 30
    @Option(
        help:
            "The server's --reconnect-token-ttl and --ended-seat-memory: how long a seat that left, or of an ended room, is remembered. Below the warm-up, so that the tables they bound are judged at their plateau."
    )
    var tokenTtlSeconds = 240

    func run() async throws {
        let ttl = max(60, tokenTtlSeconds, evictionSeconds)
        let server = try ServerUnderTest(
            .duet,
            extraArguments: [
                "--eviction-timeout", "\(max(1, evictionSeconds))", "--reconnect-token-ttl", "\(ttl)",
                // The ended seats' memory (an hour by default) likewise: the same lifetime as the token's for the run.
                "--ended-seat-memory", "\(ttl)",
            ])
        defer { server.stop() }
        try DuetBench.emit(
            try await SoakRun.run(
                server: server, clients: max(2, min(clients, 4_000)), seconds: max(1, min(seconds, 86_400)), warmupSeconds: warmupSeconds,
                sampleSeconds: max(1, sampleSeconds), evictionSeconds: max(1, evictionSeconds), tokenTtlSeconds: ttl))
    }
}

struct EchoServer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "echo-server", abstract: "The ceiling: a bare WebSocket echo on SwiftNIO.")
    @Option var port = 0

    func run() async throws { try await NIOEchoServer.run(port: port) }
}

extension ServerUnderTest.Kind: ExpressibleByArgument {}
extension SignalingTransportKind: ExpressibleByArgument {}
