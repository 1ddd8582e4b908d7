import DuetTestSupport
import Foundation
import Logging
import SQLiteNIO
import Testing

@testable import DuetServer

/// The single node's SQLite file follows its rows down as well as up (issue 53: the soak found the file growing while
/// every table was flat — each new peak of rows between two prunes left more file behind, and the WAL kept the size
/// of the largest prune).
@Suite struct SQLiteStoreSizeTests {
    static let now: Int64 = 1_800_000_000_000

    enum Origin: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// Created by this version of the store.
        case new
        /// Created before issue 53: no free-page map in the file (SQLite's default), converted when the store opens.
        case madeBefore
        var testDescription: String { rawValue }
    }

    @Test(arguments: Origin.allCases) func aPruneGivesItsPagesBackToTheFileSystem(origin: Origin) async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/rooms.sqlite"
        if origin == .madeBefore {
            let old = try await SQLiteConnection.open(storage: .file(path: path))
            _ = try await old.query("PRAGMA journal_mode = WAL")
            _ = try await old.query("CREATE TABLE before_issue_53 (x INTEGER)")
            #expect(try await old.query("PRAGMA auto_vacuum").first?.column("auto_vacuum")?.integer == 0)
            try await old.close()
        }

        // 6,000 seats that expire in a second: written, then the store closes (its WAL is folded into the file).
        let filled = SQLiteRoomStateStore(path: path)
        try await filled.prepare()
        let seats = (0..<6_000).map {
            DurableFact.seatRevoked(rid: "room-\($0 / 2)", cid: "client-\($0)-of-a-long-name", untilMs: Self.now + 1_000)
        }
        try await filled.write(seats, nowMs: Self.now)
        await filled.close()
        let full = try Self.size(of: path)

        // A node restarted after they expired: its first sweep prunes them.
        let pruning = SQLiteRoomStateStore(path: path)
        try await pruning.prepare()
        #expect(try await pruning.load(nowMs: Self.now + 2_000).isEmpty)
        _ = try await pruning.maintain(nowMs: Self.now + 2_000)
        await pruning.close()
        let pruned = try Self.size(of: path)

        #expect(full > 300_000, "6,000 seats take room in the file (\(full) bytes)")
        #expect(pruned * 5 < full, "the pruned seats' pages went back: \(full) bytes full, \(pruned) after the prune")
    }

    /// The WAL keeps the size of the largest batch unless cut back: after a batch of ~8 MiB it is cut to 4 MiB as soon
    /// as the next write starts it again (`journal_size_limit`), with the store open.
    @Test func theWALIsCutBackAfterALargeBatch() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/rooms.sqlite"
        let store = SQLiteRoomStateStore(path: path)
        try await store.prepare()
        let padding = String(repeating: "x", count: 100)
        let seats = (0..<30_000).map {
            DurableFact.seatRevoked(rid: "room-\($0 / 2)", cid: "client-\($0)-\(padding)", untilMs: Self.now + 60_000)
        }
        try await store.write(seats, nowMs: Self.now)
        let peak = Self.walSize(path)
        try await store.write([.seatRevoked(rid: "room-after", cid: "client-after", untilMs: Self.now + 60_000)], nowMs: Self.now)
        let after = Self.walSize(path)
        await store.close()
        #expect(peak > 6 << 20, "the large batch went through the WAL (\(peak) bytes)")
        #expect(after <= 4 << 20, "the WAL was cut back to 4 MiB: \(peak) bytes after the batch, \(after) after the next write")
    }

    static func walSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size]) as? Int) ?? 0
    }

    static func size(of path: String) throws -> Int {
        // Closed stores: no WAL is left, everything is in the file.
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        return try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
    }
}
