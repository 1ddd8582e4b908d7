import DuetTestBasics
import Testing

/// The slots the heavy e2e work shares (issue 50), on `SlotQueue`, the rule as a value: scenarios that wait run side
/// by side up to the number of slots, work that computes runs alone, and an exclusive job that waits goes before
/// shared ones. Each step is a plain call and a plain comparison (`record`), outside `#expect`.
@Suite struct HeavyWorkSlotsTests {
    /// What a sequence of steps did: whether each arrival started, and whom each end started.
    struct Steps: Equatable, CustomStringConvertible {
        var log: [String] = []
        var description: String { log.joined(separator: " ") }
    }

    private static func play(slots: Int, _ steps: [(arrive: Int, weight: Int)?]) -> Steps {
        var queue = SlotQueue(slots: slots)
        var result = Steps()
        for step in steps {
            if let step {
                let started = queue.arrive(id: step.arrive, weight: step.weight)
                result.log.append("\(step.arrive)\(started ? "+" : "…")")
            } else {
                let ended = queue.leave(weight: 1)
                result.log.append("end→\(ended.map(String.init).joined(separator: ","))")
            }
        }
        return result
    }

    /// `leave` of an exclusive job (all slots).
    private static func playExclusiveEnds(slots: Int, arrivals: [(Int, Int)], ends: [Int]) -> [[Int]] {
        var queue = SlotQueue(slots: slots)
        for (id, weight) in arrivals { _ = queue.arrive(id: id, weight: weight) }
        var started: [[Int]] = []
        for weight in ends { started.append(queue.leave(weight: weight)) }
        return started
    }

    @Test func sharedJobsRunSideBySideUpToTheSlots() {
        for slots in 1...3 {
            var steps: [(arrive: Int, weight: Int)?] = (0..<(2 * slots)).map { (arrive: $0, weight: 1) }
            steps += Array(repeating: nil, count: 2 * slots)
            let expected =
                (0..<slots).map { "\($0)+" } + (slots..<(2 * slots)).map { "\($0)…" }
                + (slots..<(2 * slots)).map { "end→\($0)" } + Array(repeating: "end→", count: slots)
            let got = Self.play(slots: slots, steps)
            #expect(got.log == expected, "\(slots) slots: \(got)")
        }
    }

    @Test func anExclusiveJobRunsAloneAndIsNotOvertaken() {
        // 1 runs; the exclusive 2 waits; 3 waits behind it although a slot is free; 1 ends: 2 starts alone.
        let got = Self.play(slots: 2, [(1, 1), (2, 2), (3, 1), nil])
        #expect(got.log == ["1+", "2…", "3…", "end→2"], "\(got)")
        // And when the exclusive job ends, the shared ones behind it start.
        let ends = Self.playExclusiveEnds(slots: 2, arrivals: [(1, 1), (2, 2), (3, 1), (4, 1)], ends: [1, 2])
        #expect(ends == [[2], [3, 4]], "\(ends)")
    }

    /// Work that computes goes first: an exclusive job that comes after shared ones still waiting starts as soon as the
    /// slots drain, before them — so the run's exclusive jobs run together, not one between every few scenarios.
    @Test func anExclusiveJobGoesBeforeSharedJobsThatWait() {
        let ends = Self.playExclusiveEnds(slots: 2, arrivals: [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)], ends: [1, 1, 2, 2, 1])
        #expect(ends == [[], [4], [5], [3], []], "3 waits for both exclusive jobs, which run one after the other: \(ends)")
    }

    /// One slot: everything one at a time, in order of arrival (`DUET_HEAVY_SLOTS=1`, the suite before issue 50).
    @Test func oneSlotRunsEverythingOneAtATime() {
        let got = Self.play(slots: 1, [(1, 1), (2, 1), (3, 1), nil, nil])
        #expect(got.log == ["1+", "2…", "3…", "end→2", "end→3"], "\(got)")
    }
}
