import DuetTestBasics
import Testing

/// The slots the heavy e2e work shares (issue 50), on `SlotQueue`, the rule as a value: scenarios that wait run side
/// by side up to the number of slots, work that computes runs alone, and an exclusive job that waits goes before
/// shared ones.
@Suite struct HeavyWorkSlotsTests {
    @Test(arguments: [1, 2, 3])
    func sharedJobsRunSideBySideUpToTheSlots(slots: Int) {
        var queue = SlotQueue(slots: slots)
        func arrive(_ id: Int, _ weight: Int) -> Bool { queue.arrive(id: id, weight: weight) }
        func leave(_ weight: Int) -> [Int] { queue.leave(weight: weight) }
        let started = (0..<(2 * slots)).filter { arrive($0, 1) }
        #expect(started == Array(0..<slots), "as many start as there are slots; the rest wait")
        #expect(queue.waiting.map(\.id) == Array(slots..<(2 * slots)))
        // Each job that ends lets the next in line start, in order of arrival.
        for next in slots..<(2 * slots) { #expect(leave(1) == [next]) }
        for _ in 0..<slots { #expect(leave(1) == []) }
        #expect(queue.free == slots && queue.waiting.isEmpty)
    }

    @Test func anExclusiveJobRunsAloneAndIsNotOvertaken() {
        var queue = SlotQueue(slots: 2)
        func arrive(_ id: Int, _ weight: Int) -> Bool { queue.arrive(id: id, weight: weight) }
        func leave(_ weight: Int) -> [Int] { queue.leave(weight: weight) }
        #expect(arrive(1, 1))
        #expect(!arrive(2, 2), "one slot is taken: the exclusive job waits")
        #expect(!arrive(3, 1), "a slot is free, but an exclusive job waits: the shared one waits behind it")
        #expect(leave(1) == [2], "the slots are empty: the exclusive job starts, alone")
        #expect(queue.free == 0)
        #expect(!arrive(4, 1), "nothing starts beside an exclusive job")
        #expect(leave(2) == [3, 4])
    }

    /// Work that computes goes first: an exclusive job that comes after shared ones still waiting starts as soon as the
    /// slots drain, before them — so the run's exclusive jobs run together, not one between every few scenarios.
    @Test func anExclusiveJobGoesBeforeSharedJobsThatWait() {
        var queue = SlotQueue(slots: 2)
        func arrive(_ id: Int, _ weight: Int) -> Bool { queue.arrive(id: id, weight: weight) }
        func leave(_ weight: Int) -> [Int] { queue.leave(weight: weight) }
        #expect(arrive(1, 1) && arrive(2, 1))
        #expect(!arrive(3, 1))
        #expect(!arrive(4, 2))
        #expect(!arrive(5, 2), "a second exclusive job queues too")
        #expect(leave(1) == [], "job 3 does not take the free slot while exclusive jobs wait")
        #expect(leave(1) == [4])
        #expect(leave(2) == [5], "the exclusive jobs run one after the other")
        #expect(leave(2) == [3])
        #expect(leave(1) == [] && queue.free == 2)
    }

    /// One slot: everything one at a time, in order of arrival (`DUET_HEAVY_SLOTS=1`, the suite before issue 50).
    @Test func oneSlotRunsEverythingOneAtATime() {
        var queue = SlotQueue(slots: 1)
        func arrive(_ id: Int, _ weight: Int) -> Bool { queue.arrive(id: id, weight: weight) }
        func leave(_ weight: Int) -> [Int] { queue.leave(weight: weight) }
        #expect(arrive(1, 1))
        #expect(!arrive(2, 1))
        #expect(!arrive(3, 1))
        #expect(leave(1) == [2])
        #expect(leave(1) == [3])
    }
}
