import DuetTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// `duet serve` as its own process, so a test can measure the server's memory (RSS) apart from its own.
final class ServerProcess: Sendable {
    let process: Process
    let port: Int
    let dataDirectory: String
    /// The URL line `duet serve` printed first.
    let announced: String
    /// What it was started with (after `serve --port … --data-dir …`), for `killedAndStartedAgain`.
    let arguments: [String]
    let environment: [String: String]

    static var binary: String? {
        if let explicit = ProcessInfo.processInfo.environment["DUET_BINARY"] { return explicit }
        return [".build/debug/duet", ".build/x86_64-unknown-linux-gnu/debug/duet", ".build/aarch64-unknown-linux-gnu/debug/duet"]
            .map { packageRoot + "/" + $0 }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    private init(process: Process, port: Int, dataDirectory: String, announced: String, arguments: [String], environment: [String: String])
    {
        self.process = process
        self.arguments = arguments
        self.environment = environment
        self.announced = announced
        self.port = port
        self.dataDirectory = dataDirectory
    }

    static func start(_ arguments: [String] = [], environment: [String: String] = [:], port: Int = 0, dataDirectory: String? = nil)
        async throws -> ServerProcess
    {
        guard let binary else { throw TestFailure("build the package first (swift build): .build/debug/duet not found") }
        let dataDirectory = dataDirectory ?? TestServer.temporaryDirectory()
        let process = Process()
        // Niced: the server under measurement must not take the CPU the other tests' timing needs.
        process.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
        process.arguments = ["-n", "10", binary, "serve", "--port", "\(port)", "--stun-port", "0", "--data-dir", dataDirectory] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(
            ["DUET_LOG_LEVEL": "warning"].merging(environment) { _, new in new }
        ) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let line = try await RawSocket.offPool { () -> String in
            var bytes: [UInt8] = []
            while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 0x0a { bytes.append(byte) }
            return String(decoding: bytes, as: UTF8.self)
        }
        guard let port = line.split(separator: ":").last.flatMap({ Int($0.filter(\.isNumber)) }) else {
            process.terminate()
            throw TestFailure("duet serve printed no URL: \(line)")
        }
        return ServerProcess(
            process: process, port: port, dataDirectory: dataDirectory, announced: line, arguments: arguments, environment: environment)
    }

    /// `kill -9`, then the same binary again on the same port and data directory, with the same arguments.
    func killedAndStartedAgain() async throws -> ServerProcess {
        await stop()
        return try await Self.start(arguments, environment: environment, port: port, dataDirectory: dataDirectory)
    }

    func roomId() async throws -> String { try await TestServer.roomId(at: baseURL) }

    /// A sample of `/metrics` (`name{labels}` as written there), nil if absent.
    func metric(_ series: String) async throws -> Double? {
        let body = try await TestServer.http(baseURL, .GET, "metrics").body
        for line in body.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    /// Polls `/metrics` until `series` equals `value` and `other` is at least its bound (5 s at most).
    func waitForMetric(_ series: String, equals value: Double, andAtLeast other: (String, Double)) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            if try await metric(series) == value, (try await metric(other.0) ?? 0) >= other.1 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("\(series) never became \(value) with \(other.0) ≥ \(other.1)")
    }

    var baseURL: String { "http://127.0.0.1:\(port)/" }
    var webSocketURL: String { "ws://127.0.0.1:\(port)/ws" }

    /// Resident memory now, from /proc.
    var residentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return (Int(line.filter(\.isNumber)) ?? 0) * 1024
    }

    /// SIGKILL, and the wait for the exit off the cooperative pool: a blocked pool thread (there are two here) would
    /// stall every other test for the server's drain grace.
    func stop() async {
        let process = self.process
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        _ = try? await RawSocket.offPool { process.waitUntilExit() }
    }
}
