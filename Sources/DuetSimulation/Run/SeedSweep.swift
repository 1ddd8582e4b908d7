import Dispatch
import DuetLock
import Foundation

/// Many seeds on all cores, and what they add up to.
public enum SeedSweep {
    public struct Summary: Sendable {
        public var firstSeed: UInt64
        /// Seeds actually run (counted as they finish, not the count asked for).
        public var seeds: Int
        public var failures: [Simulation.Result]
        /// How many runs reached each slow clock.
        public var milestones: [Milestone: Int]
        public var recoveries: [Int64]
        /// The seed that took longest to recover (the lowest of a tie), to replay when the maximum nears the bound.
        public var slowest: (seed: UInt64, ms: Int64)?
        public var events: Int
        public var seconds: Double
        public var firstFailure: Simulation.Result? { failures.min { $0.seed < $1.seed } }

        mutating func noteRecovery(_ ms: Int64, seed: UInt64) {
            guard let current = slowest else {
                slowest = (seed, ms)
                return
            }
            if ms > current.ms || (ms == current.ms && seed < current.seed) { slowest = (seed, ms) }
        }

        public var text: String {
            let sorted = recoveries.sorted()
            func percentile(_ p: Double) -> String {
                sorted.isEmpty
                    ? "-" : String(format: "%.1f s", Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) / 1_000)
            }
            var byInvariant: [String: (count: Int, first: UInt64)] = [:]
            for failure in failures.sorted(by: { $0.seed < $1.seed }) {
                let key = failure.violations.first?.invariant.rawValue ?? "?"
                byInvariant[key] = ((byInvariant[key]?.count ?? 0) + 1, byInvariant[key]?.first ?? failure.seed)
            }
            return """
                \(seeds) seeds, \(failures.count) with violations, \(events) events, \(String(format: "%.1f", seconds)) s
                recovery after the last fault healed: p50 \(percentile(0.5)), p90 \(percentile(0.9)), p99 \(percentile(0.99)), max \(slowest.map { String(format: "%.1f s", Double($0.ms) / 1_000) + " (seed \($0.seed))" } ?? "-") (bound \(RecoveryBound.ms / 1_000) s, \((RecoveryBound.ms + RecoveryBound.stallRenewalMs) / 1_000) s with a silent sender unmended at the heal)
                slow clocks reached: \(Milestone.allCases.map { "\($0.rawValue) \(milestones[$0] ?? 0)" }.joined(separator: ", "))
                """
                    + byInvariant.sorted { $0.key < $1.key }.map { "\n  \($0.value.count) × \($0.key) (first: seed \($0.value.first))" }
                    .joined()
        }
    }

    /// For `until`: stop at the first seed that breaks an invariant.
    public static let failed: @Sendable (Simulation.Result) -> Bool = { !$0.passed }

    /// `run` for async callers (the tests): the sweep is minutes of CPU that never suspends, so it runs on a thread of
    /// its own. Called on the cooperative pool it held one of its threads (of two on this machine) for the whole sweep,
    /// and the other tests running beside it starved (a clean-clone CI timed out WebSocketWriterTests that way).
    public static func runOffThePool(
        from first: UInt64, count: Int, jobs: Int, mutation: Mutation = .none, duetCall: Bool = false,
        until stop: (@Sendable (Simulation.Result) -> Bool)? = nil
    ) async -> Summary {
        await withCheckedContinuation { (done: CheckedContinuation<Summary, Never>) in
            let thread = Thread {
                done.resume(
                    returning: run(
                        from: first, count: count, jobs: jobs, mutation: mutation, duetCall: duetCall, until: stop)
                )
            }
            thread.name = "duet-seed-sweep"
            thread.start()
        }
    }

    /// `duetCall`: one side of every run is `duet call` (webrtcbin, host-only restarts): A on even seeds, B on odd.
    /// `until`: no seed above the lowest one whose result it holds for (found so far) is started, for a sweep that only
    /// needs to know a mutation is caught (`failed` stops at the first failure). Every seed below that one still runs,
    /// so the lowest seed it holds for is the one the whole sweep would name, whatever the workers' timing.
    public static func run(
        from first: UInt64, count: Int, jobs: Int, mutation: Mutation = .none, duetCall: Bool = false,
        until stop: (@Sendable (Simulation.Result) -> Bool)? = nil
    ) -> Summary {
        let started = Date()
        let collected = Mutex(
            Summary(firstSeed: first, seeds: 0, failures: [], milestones: [:], recoveries: [], slowest: nil, events: 0, seconds: 0))
        let workers = max(1, jobs)
        let lowestStop = Mutex<UInt64?>(nil)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var local = Summary(
                firstSeed: first, seeds: 0, failures: [], milestones: [:], recoveries: [], slowest: nil, events: 0, seconds: 0)
            var index = worker
            while index < count {
                let seed = first + UInt64(index)
                if let lowest = lowestStop.withLock({ $0 }), seed > lowest { break }
                var options = Simulation.Options(seed: seed)
                options.mutation = mutation
                if duetCall { options.duetCallSide = Simulation.duetCallSide(forSeed: options.seed) }
                var result = Simulation.run(options)
                local.seeds += 1
                local.events += result.eventsRun
                for milestone in result.milestones { local.milestones[milestone, default: 0] += 1 }
                if let recovery = result.recoveryMs {
                    local.recoveries.append(recovery)
                    local.noteRecovery(recovery, seed: result.seed)
                }
                if let stop, stop(result) { lowestStop.withLock { $0 = min($0 ?? seed, seed) } }
                if !result.passed {
                    result.trace = []
                    local.failures.append(result)
                }
                index += workers
            }
            collected.withLock { total in
                total.seeds += local.seeds
                total.milestones.merge(local.milestones, uniquingKeysWith: +)
                total.failures += local.failures
                total.recoveries += local.recoveries
                if let slowest = local.slowest { total.noteRecovery(slowest.ms, seed: slowest.seed) }
                total.events += local.events
            }
        }
        var summary = collected.withLock { $0 }
        summary.seconds = Date().timeIntervalSince(started)
        return summary
    }
}
