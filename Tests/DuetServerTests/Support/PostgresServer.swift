import DuetTestSupport
import Foundation

/// A PostgreSQL 15 of the test's own, started and stopped by the project's one launcher
/// (`Tests/e2e/cluster/postgres.py`): its own cluster in `directory`, on 127.0.0.1 and a free port, trust auth.
///
/// The launcher runs through `runCommand`, which polls for the exit instead of blocking a thread of the cooperative
/// pool, and gives the daemon files rather than pipes (a pipe the server inherited would never close).
final class PostgresServer: Sendable {
    static let launcher = packageRoot + "/Tests/e2e/cluster/postgres.py"

    let directory: String
    /// `postgres://duet@127.0.0.1:PORT/duet`; the same after `restart()`.
    let url: String

    private init(directory: String, url: String) {
        self.directory = directory
        self.url = url
    }

    static func start() async throws -> PostgresServer {
        guard FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/postgres") else {
            throw TestFailure("PostgreSQL 15 is not installed (apt-get install -y postgresql; scripts/test.sh does it)")
        }
        let directory = temporaryDirectory()
        do {
            return PostgresServer(directory: directory, url: try await launch(directory))
        } catch {
            _ = try? await runCommand(["python3", launcher, "stop", "--dir", directory])
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private static func launch(_ directory: String) async throws -> String {
        // --owner-pid: a test process that crashes (or is killed) does not leave its servers running.
        let owner = String(ProcessInfo.processInfo.processIdentifier)
        let result = try await runCommand(["python3", launcher, "start", "--dir", directory, "--owner-pid", owner], timeout: .seconds(60))
        let url = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard result.status == 0, url.hasPrefix("postgres://") else {
            throw TestFailure("postgres.py start failed (\(result.status)): \(result.stdout)\(result.stderr)")
        }
        return url
    }

    /// The same cluster again (same data, same port) after `stop()`.
    func restart() async throws {
        let url = try await Self.launch(directory)
        guard url == self.url else { throw TestFailure("PostgreSQL came back at \(url), not \(self.url)") }
    }

    /// Stops the server (a fast shutdown: clients are disconnected); the data stays for `restart()`.
    func stop() async {
        _ = try? await runCommand(["python3", Self.launcher, "stop", "--dir", directory], timeout: .seconds(60))
    }

    /// Stops the server and deletes its directory.
    func remove() async {
        await stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `body` with a fresh server, removed afterwards whether `body` threw or not.
    static func with<T: Sendable>(_ body: (PostgresServer) async throws -> T) async throws -> T {
        let server = try await start()
        do {
            let value = try await body(server)
            await server.remove()
            return value
        } catch {
            await server.remove()
            throw error
        }
    }
}
