import Dispatch
import DuetLock
import Foundation

/// Writes the engine traces of many seeds and of every named scenario, one JSON-lines file per run, for the
/// browser engine to replay (`scripts/differential.sh`, `Tests/web/differential/replay.mjs`).
public enum TraceExport {
    public struct Summary: Sendable {
        public var files = 0
        public var engines = 0
        public var steps = 0
        /// Runs whose invariants failed: their traces are written all the same (the engines must agree on
        /// a failing run too), but the sweep is not a clean one.
        public var failedRuns: [String] = []
    }

    /// `duetCallSeeds`: also this many seeds with one side as `duet call` (`SeedSweep`'s duet-call mode).
    public static func write(seeds: Int, from first: UInt64, jobs: Int, scenarios: Bool, duetCallSeeds: Int = 0, to directory: String)
        throws -> Summary
    {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var runs: [(name: String, run: @Sendable () -> Simulation.Result)] = (0..<seeds).map { index in
            let seed = first + UInt64(index)
            return (
                "seed-\(seed)",
                {
                    var options = Simulation.Options(seed: seed)
                    options.recordEngineTraces = true
                    return Simulation.run(options)
                }
            )
        }
        runs += (0..<duetCallSeeds).map { index in
            let seed = first + UInt64(index)
            return (
                "duetcall-seed-\(seed)",
                {
                    var options = Simulation.Options(seed: seed)
                    options.recordEngineTraces = true
                    options.duetCallSide = Simulation.duetCallSide(forSeed: seed)
                    return Simulation.run(options)
                }
            )
        }
        if scenarios {
            runs += NamedScenarios.all.map { scenario in ("scenario-\(scenario.name)", { scenario.run(recordEngineTraces: true).result }) }
        }
        let total = Mutex(Summary())
        let errors = Mutex<[String]>([])
        let work = runs
        DispatchQueue.concurrentPerform(iterations: max(1, jobs)) { worker in
            var index = worker
            while index < work.count {
                let (name, run) = work[index]
                let result = run()
                let path = "\(directory)/\(name).jsonl"
                do {
                    try Data(result.engineTraceText.utf8).write(to: URL(fileURLWithPath: path))
                    total.withLock { summary in
                        summary.files += 1
                        summary.engines += result.engineTraces.count
                        summary.steps += result.engineTraces.reduce(0) { $0 + $1.steps.count }
                        if !result.passed { summary.failedRuns.append(name) }
                    }
                } catch {
                    errors.withLock { $0.append("\(path): \(error)") }
                }
                index += max(1, jobs)
            }
        }
        if let first = errors.withLock({ $0.first }) { throw ExportError(message: first) }
        var summary = total.withLock { $0 }
        summary.failedRuns.sort()
        return summary
    }

    struct ExportError: Error, CustomStringConvertible {
        var message: String
        var description: String { "cannot write a trace: \(message)" }
    }
}
