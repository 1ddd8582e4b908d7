import ArgumentParser
import Dispatch
import DuetSimulation
import Foundation

@main
struct DuetSim: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "duet-sim",
        abstract: "Runs Duet calls through deterministic fault schedules and checks the invariants at every step.",
        discussion: """
            Every run: A creates a room, B joins, faults drawn from the seed play out, the world heals, and both \
            sides must be back in the call within \(RecoveryBound.ms / 1_000) s (\((RecoveryBound.ms + RecoveryBound.stallRenewalMs) / 1_000) s \
            when a sender went silent for good: its renewal waits for restarts in place); then the call ends and nothing may remain.
            A failing seed prints a shrunk schedule and its trace; `duet-sim --seed N` replays it.
            """)

    @Option(help: "Replay one seed and print its whole trace.") var seed: UInt64?
    @Option(help: "How many seeds to run.") var seeds: Int = 1_000
    @Option(help: "The first seed.") var from: UInt64 = 1
    @Option(help: "Worker threads (default: one per core).") var jobs: Int = ProcessInfo.processInfo.activeProcessorCount
    @Option(help: "Run a deliberately broken runtime: \(Mutation.allCases.map(\.rawValue).joined(separator: ", ")).")
    var mutation: String = "none"
    @Option(help: "Run one named scenario (see --list).") var scenario: String?
    @Flag(help: "List the named scenarios.") var list = false
    @Flag(help: "With --seed: print every line of the trace.") var trace = false
    @Option(help: "With --seeds: also write the sweep's result as JSON to this file (seeds, violations, recovery percentiles, commit).")
    var report: String?
    @Option(
        help:
            "Write every engine's inputs and outputs of --seeds seeds and of every named scenario to this directory (JSON lines per run), for scripts/differential.sh."
    )
    var engineTraces: String?
    @Flag(
        help:
            "One side of every seed is `duet call` (webrtcbin: host-only restarts, no rollback, a fresh session instead of an in-place ICE restart). With --engine-traces: both kinds of seeds are written."
    )
    var duetCall = false

    #if DEBUG
        static let build = "debug"
    #else
        static let build = "release"
    #endif

    func run() throws {
        guard let mutation = Mutation(rawValue: mutation) else { throw ValidationError("unknown mutation \(self.mutation)") }
        if list {
            for scenario in NamedScenarios.all { print("\(scenario.name)\n    \(scenario.summary)") }
            return
        }
        if let name = scenario {
            guard let scenario = NamedScenarios.all.first(where: { $0.name == name }) else {
                throw ValidationError("no scenario \(name); see --list")
            }
            let outcome = scenario.run(mutation: mutation)
            if trace { outcome.result.trace.forEach { print($0) } }
            print(
                outcome.problems.isEmpty
                    ? "✓ \(scenario.name)" : "✗ \(scenario.name)\n" + outcome.problems.map { "  \($0)" }.joined(separator: "\n"))
            if !outcome.problems.isEmpty { throw ExitCode(1) }
            return
        }
        if let engineTraces {
            let summary = try TraceExport.write(
                seeds: seeds, from: from, jobs: jobs, scenarios: true, duetCallSeeds: duetCall ? seeds : 0, to: engineTraces)
            print("engine traces: \(summary.files) runs, \(summary.engines) engines, \(summary.steps) steps → \(engineTraces)")
            // The engines must agree on failing runs too; the invariants are the sweep's business (--seeds alone).
            if !summary.failedRuns.isEmpty {
                print(
                    "(\(summary.failedRuns.count) of these runs broke an invariant, first: \(summary.failedRuns[0]); their traces are written all the same)"
                )
            }
            return
        }
        if let seed {
            var options = Simulation.Options(seed: seed)
            options.mutation = mutation
            options.fullTrace = true
            if duetCall { options.duetCallSide = Simulation.duetCallSide(forSeed: seed) }
            let result = Simulation.run(options)
            if trace || !result.passed { (trace ? result.trace : [Shrinker.report(result)]).forEach { print($0) } }
            print(result.passed ? "✓ seed \(seed): recovered in \(result.recoveryMs.map { "\($0) ms" } ?? "-")" : "✗ seed \(seed)")
            if !result.passed { throw ExitCode(1) }
            return
        }
        let summary = SeedSweep.run(from: from, count: seeds, jobs: jobs, mutation: mutation, duetCall: duetCall)
        print(summary.text)
        if let report {
            try SweepReport(summary, mutation: mutation, duetCall: duetCall, build: Self.build, provenance: .current()).write(to: report)
            print("report: \(report)")
        }
        if let failing = summary.firstFailure {
            var options = Simulation.Options(seed: failing.seed)
            options.mutation = mutation
            options.fullTrace = true
            if duetCall { options.duetCallSide = Simulation.duetCallSide(forSeed: failing.seed) }
            let shrunk = Shrinker.minimize(Simulation.run(options), options: options)
            print(Shrinker.report(shrunk))
            print(
                "replay: swift run -c release duet-sim --seed \(failing.seed)\(mutation == .none ? "" : " --mutation \(mutation.rawValue)")\(duetCall ? " --duet-call" : "") --trace"
            )
            throw ExitCode(1)
        }
    }
}
