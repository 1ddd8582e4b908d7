import Foundation

/// A sweep's result as JSON: the contract for outside checks (`duet-sim --seeds N --report FILE`) and what
/// `scripts/publish-results.sh` turns into the simulation row of docs/resilience.md. Written for every sweep,
/// failed ones included; `violations` > 0 and `failures` say so.
public struct SweepReport: Codable, Sendable, Equatable {
    public struct Recovery: Codable, Sendable, Equatable {
        public var p50Ms: Int64?
        public var p90Ms: Int64?
        public var p99Ms: Int64?
        public var maxMs: Int64?
        /// The seed of `maxMs` (the lowest of a tie).
        public var slowestSeed: UInt64?
    }
    public struct Failure: Codable, Sendable, Equatable {
        public var seed: UInt64
        public var violation: String
    }

    public var seeds: Int
    public var firstSeed: UInt64
    /// Seeds with at least one violation.
    public var violations: Int
    public var failures: [Failure]
    public var recovery: Recovery
    public var boundMs: Int64
    /// The bound of a run with a sender silent for good (`RecoveryBound.ms(for:)`).
    public var boundWithSilentSenderMs: Int64
    public var milestones: [String: Int]
    public var mutation: String
    /// One side of every run was `duet call` (webrtcbin, host-only restarts): the host on even seeds, the guest on odd.
    public var duetCall: Bool
    public var build: String
    public var wallSeconds: Double
    public var commit: String
    public var dirty: Bool
    public var runId: String

    public init(_ summary: SeedSweep.Summary, mutation: Mutation, duetCall: Bool = false, build: String, provenance: Provenance) {
        let sorted = summary.recoveries.sorted()
        func percentile(_ p: Double) -> Int64? { sorted.isEmpty ? nil : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        seeds = summary.seeds
        firstSeed = summary.firstSeed
        violations = summary.failures.count
        failures = summary.failures.sorted { $0.seed < $1.seed }.prefix(100).map {
            Failure(seed: $0.seed, violation: $0.violations.first.map { "\($0.invariant.rawValue): \($0.detail)" } ?? "?")
        }
        recovery = Recovery(
            p50Ms: percentile(0.5), p90Ms: percentile(0.9), p99Ms: percentile(0.99), maxMs: sorted.last, slowestSeed: summary.slowest?.seed)
        boundMs = RecoveryBound.ms
        boundWithSilentSenderMs = RecoveryBound.ms + RecoveryBound.stallRenewalMs
        milestones = Dictionary(uniqueKeysWithValues: Milestone.allCases.map { ($0.rawValue, summary.milestones[$0] ?? 0) })
        self.mutation = mutation.rawValue
        self.duetCall = duetCall
        self.build = build
        wallSeconds = (summary.seconds * 10).rounded() / 10
        commit = provenance.commit
        dirty = provenance.dirty
        runId = provenance.runId
    }

    public func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try (encoder.encode(self) + Data("\n".utf8)).write(to: url, options: .atomic)
    }
}

/// Which code produced a result: the commit (and whether the tree had uncommitted changes) and the run id
/// (`DUET_RUN_ID`, set by scripts/test.sh for a whole suite run).
public struct Provenance: Sendable, Equatable {
    public var commit: String
    public var dirty: Bool
    public var runId: String

    public init(commit: String, dirty: Bool, runId: String) {
        self.commit = commit
        self.dirty = dirty
        self.runId = runId
    }

    public static func current(in directory: String = FileManager.default.currentDirectoryPath) -> Provenance {
        let commit = git(["rev-parse", "HEAD"], in: directory) ?? "unknown"
        // The rule of Tests/e2e/results.py `dirty()` (checked against it by `ProvenanceTests`): any change, an
        // untracked file included, except results under .build; a tree git cannot read counts as dirty.
        let dirty =
            git(["status", "--porcelain", "--untracked-files=normal"], in: directory).map { status in
                status.split(separator: "\n").contains { !$0.isEmpty && !$0.hasPrefix("?? .build/") }
            } ?? true
        let runId = ProcessInfo.processInfo.environment["DUET_RUN_ID"].flatMap { $0.isEmpty ? nil : $0 } ?? localRunId()
        return Provenance(commit: commit, dirty: dirty, runId: runId)
    }

    private static func localRunId() -> String {
        let formatter = DateFormatter()
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return "local-" + formatter.string(from: Date()) + "-" + String(UInt32.random(in: 0...0xFFFFFF), radix: 16)
    }

    private static func git(_ arguments: [String], in directory: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["git", "-C", directory] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
