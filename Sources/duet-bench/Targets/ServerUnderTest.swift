import Foundation

/// The server a run measures, started by the bench itself (so its memory and CPU can be read) on loopback.
final class ServerUnderTest: @unchecked Sendable {
    enum Kind: String, CaseIterable, Codable, Sendable {
        /// `duet serve`, rate limits off.
        case duet
        /// The tutorial relay: Node.js on Debian's node-ws (`benchmarks/node-relay.js`).
        case node
        /// A bare WebSocket echo on SwiftNIO (`duet-bench echo-server`): the ceiling.
        case echo
    }

    let kind: Kind
    let process = Process()
    private(set) var port = 0
    private let dataDirectory: URL
    /// More `duet serve` flags (the soak's eviction timeout).
    private let extraArguments: [String]

    var pid: Int32 { process.processIdentifier }
    var webSocketURL: String { "ws://127.0.0.1:\(port)/ws" }
    var baseURL: String { "http://127.0.0.1:\(port)/" }

    init(_ kind: Kind, port: Int = 0, extraArguments: [String] = []) throws {
        self.kind = kind
        self.port = port
        self.extraArguments = extraArguments
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("duet-bench-\(UUID().uuidString)")
        try start()
    }

    private func start() throws {
        let binDir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().path
        let benchmarks = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../benchmarks")
            .standardized.path
        switch kind {
        case .duet:
            process.executableURL = URL(fileURLWithPath: ProcessInfo.processInfo.environment["DUET_BINARY"] ?? binDir + "/duet")
            process.arguments =
                [
                    "serve", "--host", "127.0.0.1", "--port", "\(port)", "--data-dir", dataDirectory.path,
                    "--rate-limit", "off", "--log-level", "error", "--drain-grace", "0", "--stun-port", "0",
                    // Every client is on loopback: one address. The per-address cap (200, since issue 15)
                    // refused the storm's 1,000 and idle's 19,900 clients (HTTP 400 on the upgrade).
                    "--max-connections-per-ip", "1000000",
                ] + extraArguments
        case .node:
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["node", benchmarks + "/node-relay.js", "\(port)"]
            process.environment = ["NODE_PATH": "/usr/share/nodejs", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"]
        case .echo:
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["echo-server", "--port", "\(port)"]
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        try process.run()
        // Every target prints the port it listens on (duet: its URL) as its first line.
        var line = ""
        while !line.hasSuffix("\n") {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard !byte.isEmpty else { throw BenchError("\(kind) exited before printing its port") }
            line += String(decoding: byte, as: UTF8.self)
        }
        let digits = line.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ":").last.map { $0.filter(\.isNumber) } ?? ""
        guard let number = Int(digits) else { throw BenchError("\(kind) printed \(line) instead of its port") }
        port = number
    }

    var sample: ProcessSample { ProcessSample(pid: pid) }

    /// The bytes of the server's data directory (its SQLite store, WAL and shared memory, its secrets).
    var storeBytes: Int {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)) ?? []
        return files.reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: dataDirectory.appendingPathComponent(name).path)[.size]) as? Int
            return total + (size ?? 0)
        }
    }

    /// The bytes of one file of the data directory (0 when it is not there).
    func storeBytes(of name: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: dataDirectory.appendingPathComponent(name).path)[.size]) as? Int) ?? 0
    }

    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, as an operator would (a profiler under it gets to write its data), then SIGKILL after 30 s.
    func stop() {
        // Its data directory goes with it (runs of the bench had left 93 of them in /tmp, up to 26 MB each). A restart
        // (`restarted()`) only kills, so the next server finds the store the old one wrote.
        defer { try? FileManager.default.removeItem(at: dataDirectory) }
        guard process.isRunning else { return }
        Foundation.kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning, Date() < deadline { usleep(50_000) }
        if process.isRunning {
            // Seen in BenchSmokeTests under load (2 runs of 6, issue 53's session): a server that has not exited 30 s
            // after SIGTERM. Said, so that the next one is found, not just waited out.
            FileHandle.standardError.write(Data("duet-bench: \(kind) did not exit within 30 s of SIGTERM: killed\n".utf8))
        }
        kill()
    }

    /// The same server again, on the same port and data directory (a restart).
    func restarted() throws -> ServerUnderTest {
        kill()
        return try ServerUnderTest(sameAs: self)
    }

    private init(sameAs old: ServerUnderTest) throws {
        kind = old.kind
        port = old.port
        dataDirectory = old.dataDirectory
        extraArguments = old.extraArguments
        try start()
    }

    deinit { kill() }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
