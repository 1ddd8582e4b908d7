import Foundation

/// The heavy end-to-end work (a Chromium scenario, a `duet-call` scenario, a seed sweep) runs in a bounded number of
/// slots across all suites. Work that computes (a sweep on every core, a load run, a soak) takes every slot: on two
/// cores, a second browser next to it would starve its media and make timing checks lie. Work that mostly waits (a
/// scenario in a network namespace of its own, waiting on the product's timers) takes one slot, so two such scenarios
/// run side by side (`DUET_HEAVY_SLOTS`, default 3; 1 runs everything one at a time, as before issue 50).
///
/// An exclusive job waiting goes before every shared one (the slots drain for it); shared jobs are served first come,
/// first served (`SlotQueue`, the rule as a value). Every job's wait and run go to `.build/results/$DUET_RUN_ID/timing/heavy.jsonl`
/// (scripts/timing.py makes the run's timing table from it).
public actor OneAtATime {
    public static let heavyWork = OneAtATime(slots: configuredSlots(), recordsTiming: true)

    /// How much of the machine a job takes.
    public enum Load: String, Sendable {
        /// One slot: the job waits on timers and events far more than it computes (a browser pair in its own namespace).
        case shared
        /// Every slot: the job keeps the cores busy (a sweep, a load generator, a soak), or measures time and must not
        /// share the machine.
        case exclusive
    }

    public var slots: Int { queue.slots }
    /// Only the suite's own slots write the timing table.
    private let recordsTiming: Bool
    private var queue: SlotQueue
    private var nextId = 0
    private var continuations: [Int: CheckedContinuation<Void, Never>] = [:]

    public init(slots: Int, recordsTiming: Bool = false) {
        self.queue = SlotQueue(slots: slots)
        self.recordsTiming = recordsTiming
    }

    /// `label` names the job in the timing table (the calling function unless given).
    public func run<T: Sendable>(
        _ label: String = #function, load: Load = .exclusive, fileID: String = #fileID, _ work: @Sendable () async throws -> T
    ) async rethrows -> T {
        let weight = load == .exclusive ? queue.slots : 1
        let queued = ContinuousClock.now
        let queuedAt = Date()
        nextId += 1
        let id = nextId
        if !queue.arrive(id: id, weight: weight) {
            await withCheckedContinuation { continuations[id] = $0 }
        }
        let started = ContinuousClock.now
        let startedAt = Date()
        defer {
            for next in queue.leave(weight: weight) { continuations.removeValue(forKey: next)?.resume() }
            if recordsTiming {
                HeavyWorkLog.append(
                    label: label, file: fileID, load: load, waited: started - queued, ran: ContinuousClock.now - started,
                    queuedAt: queuedAt, startedAt: startedAt)
            }
        }
        return try await work()
    }

    static func configuredSlots() -> Int {
        ProcessInfo.processInfo.environment["DUET_HEAVY_SLOTS"].flatMap { Int($0) }.map { max(1, $0) } ?? 3
    }
}

/// Who may start, as a value (`OneAtATime` keeps one and resumes whom it names): a job asks for a weight of slots
/// (one, or all of them); it starts when they are free, or waits. Work that computes goes first: while an exclusive
/// job waits, no shared job starts, so the slots drain and it runs as soon as they are empty — and the exclusive jobs,
/// queued together as the suites start, run one after the other at the start of the run, not spread between
/// scenarios. Shared jobs start first come, first served.
public struct SlotQueue: Sendable {
    public let slots: Int
    public private(set) var free: Int
    /// Waiting jobs in order of arrival.
    public private(set) var waiting: [(id: Int, weight: Int)] = []

    public init(slots: Int) {
        self.slots = max(1, slots)
        self.free = self.slots
    }

    /// Job `id` asks for `weight` slots: true if it starts now (its slots are taken), false if it waits.
    public mutating func arrive(id: Int, weight: Int) -> Bool {
        let weight = min(max(1, weight), slots)
        let exclusiveWaiting = waiting.contains { $0.weight == slots }
        let starts = weight == slots ? !exclusiveWaiting && free == slots : !exclusiveWaiting && free >= weight
        if starts { free -= weight } else { waiting.append((id, weight)) }
        return starts
    }

    /// A job that held `weight` slots ended: the ids of the waiting jobs that start now (their slots are taken).
    public mutating func leave(weight: Int) -> [Int] {
        free = min(slots, free + min(max(1, weight), slots))
        if let index = waiting.firstIndex(where: { $0.weight == slots }) {
            guard free == slots else { return [] }
            let job = waiting.remove(at: index)
            free -= job.weight
            return [job.id]
        }
        var started: [Int] = []
        while let head = waiting.first, free >= head.weight {
            waiting.removeFirst()
            free -= head.weight
            started.append(head.id)
        }
        return started
    }
}

/// One JSON line per heavy job under `.build/results/$DUET_RUN_ID/timing/heavy.jsonl` (only in a run with an id:
/// scripts/test.sh sets one). Lines are written whole with O_APPEND, so concurrent jobs never interleave.
enum HeavyWorkLog {
    static func append(
        label: String, file: String, load: OneAtATime.Load, waited: Duration, ran: Duration, queuedAt: Date, startedAt: Date
    ) {
        guard let runId = ProcessInfo.processInfo.environment["DUET_RUN_ID"], !runId.isEmpty, !runId.contains("/") else { return }
        let directory = packageRoot + "/.build/results/" + runId + "/timing"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let line: [String: Any] = [
            "label": label, "file": file, "load": load.rawValue,
            "waitedSeconds": seconds(waited), "ranSeconds": seconds(ran),
            "queuedAt": formatter.string(from: queuedAt), "startedAt": formatter.string(from: startedAt),
        ]
        guard var data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) else { return }
        data.append(0x0A)
        let fd = open(directory + "/heavy.jsonl", O_WRONLY | O_APPEND | O_CREAT, 0o644)
        guard fd >= 0 else { return }
        defer { close(fd) }
        _ = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return (Double(whole) + Double(attoseconds) / 1e18).rounded(toPlaces: 3)
    }

    /// Sources/DuetTestBasics/OneAtATime.swift → the package root.
    static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
}

extension Double {
    fileprivate func rounded(toPlaces places: Int) -> Double {
        let scale = pow(10.0, Double(places))
        return (self * scale).rounded() / scale
    }
}
