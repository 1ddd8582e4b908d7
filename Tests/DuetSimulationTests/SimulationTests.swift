import DuetClient
import DuetSimulation
import DuetTestSupport
import Foundation
import Testing

/// The deterministic simulation: thousands of fault schedules, the named scenarios, and proof that the
/// invariants catch a broken runtime.
@Suite struct SimulationTests {
    static let seedCount = 10_000

    @Test func tenThousandFaultSchedulesKeepEveryInvariant() async {
        let summary = await OneAtATime.heavyWork.run {
            SeedSweep.run(from: 1, count: Self.seedCount, jobs: ProcessInfo.processInfo.activeProcessorCount)
        }
        print(summary.text)
        #expect(summary.seeds == Self.seedCount)
        #expect(summary.recoveries.count > Self.seedCount / 2, "most runs measure a recovery")
        #expect(summary.recoveries.allSatisfy { $0 <= RecoveryBound.ms })
        if let failing = summary.firstFailure {
            var options = Simulation.Options(seed: failing.seed)
            options.fullTrace = true
            Issue.record("\(Shrinker.report(Shrinker.minimize(Simulation.run(options), options: options)))\nreplay: swift run duet-sim --seed \(failing.seed) --trace")
        }
    }

    @Test func aSeedReplaysExactly() {
        var options = Simulation.Options(seed: 4_849)
        options.fullTrace = true
        let first = Simulation.run(options), second = Simulation.run(options)
        #expect(!first.faults.isEmpty)
        #expect(first.trace == second.trace)
        #expect(first.recoveryMs == second.recoveryMs)
        #expect(first.eventsRun == second.eventsRun)
    }

    @Test(arguments: NamedScenarios.all.map(\.name))
    func namedScenario(_ name: String) throws {
        let scenario = try #require(NamedScenarios.all.first { $0.name == name })
        let outcome = scenario.run()
        #expect(outcome.problems.isEmpty, "\(scenario.summary)\n\(outcome.problems.joined(separator: "\n"))")
    }

    /// A runtime whose cooldown timer fires at once: the cooldown invariant catches it, and the failing seed
    /// shrinks to a readable schedule.
    @Test func ignoringTheCooldownIsCaught() throws {
        let summary = SeedSweep.run(from: 1, count: 300, jobs: 2, mutation: .cooldownIgnored)
        let failing = try #require(summary.firstFailure, "the broken runtime went unnoticed")
        #expect(failing.violations.first?.invariant == .iceRestartCooldown)
        var options = Simulation.Options(seed: failing.seed)
        options.mutation = .cooldownIgnored
        options.fullTrace = true
        let shrunk = Shrinker.minimize(Simulation.run(options), options: options)
        #expect(shrunk.violations.first?.invariant == .iceRestartCooldown)
        #expect(shrunk.faults.count <= failing.faults.count)
        let report = Shrinker.report(shrunk)
        #expect(report.contains("ICE restart inside the cooldown"))
        #expect(report.contains("faults (\(shrunk.faults.count)):"))
    }

    @Test func losingThePingTimerIsCaught() throws {
        let summary = SeedSweep.run(from: 1, count: 300, jobs: 2, mutation: .pingLost)
        let failing = try #require(summary.firstFailure, "the broken runtime went unnoticed")
        #expect(failing.violations.contains { $0.invariant == .notRecovered })
    }

    /// A runtime that loses the epoch of relayed messages applies a replayed offer from an older peer session.
    @Test func droppingEpochsIsCaught() throws {
        let scenario = try #require(NamedScenarios.all.first { $0.name == "epoch-stale-negotiation-dropped" })
        #expect(scenario.run().problems.isEmpty)
        let broken = scenario.run(mutation: .epochDropped)
        #expect(broken.result.violations.contains { $0.invariant == .staleEpochApplied })
    }

    @Test func theUnbrokenRuntimePassesTheSameSeeds() {
        let summary = SeedSweep.run(from: 1, count: 300, jobs: 2)
        #expect(summary.failures.isEmpty)
    }
}
