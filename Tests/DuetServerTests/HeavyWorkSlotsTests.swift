import DuetTestBasics
import Testing

/// The slots the heavy e2e work shares (issue 50): scenarios that wait run side by side up to the number of slots,
/// work that computes runs alone, and nobody overtakes an exclusive job that is waiting. Every job here holds its
/// slot until the test lets it go, so what runs at once is decided by the slots, never by timing.
@Suite struct HeavyWorkSlotsTests {
    /// Who started, who runs now, the most at once; and a gate per job that the test opens.
    actor Ledger {
        private(set) var started: [String] = []
        private(set) var running = 0
        private(set) var peak = 0
        private(set) var exclusiveShared = false
        private var exclusiveRunning = false
        private var open: Set<String> = []
        private var everyGateOpen = false
        private var waiters: [String: CheckedContinuation<Void, Never>] = [:]

        func run(_ name: String, exclusive: Bool) async {
            if exclusiveRunning || (exclusive && running > 0) { exclusiveShared = true }
            started.append(name)
            running += 1
            peak = max(peak, running)
            if exclusive { exclusiveRunning = true }
            if !everyGateOpen && !open.contains(name) { await withCheckedContinuation { waiters[name] = $0 } }
            running -= 1
            if exclusive { exclusiveRunning = false }
        }

        func release(_ name: String) {
            open.insert(name)
            waiters.removeValue(forKey: name)?.resume()
        }

        func releaseAll() {
            everyGateOpen = true
            for (_, waiter) in waiters { waiter.resume() }
            waiters = [:]
        }
    }

    private func job(_ slots: OneAtATime, _ ledger: Ledger, _ name: String, _ load: OneAtATime.Load) async {
        await slots.run(name, load: load) { await ledger.run(name, exclusive: load == .exclusive) }
    }

    /// Polls a condition that the slots must bring about (a job started, a job queued); one that is not met within
    /// 10 s is a failure, and the jobs are let go so that the test ends.
    private func until(_ ledger: Ledger, _ what: String, _ condition: () async -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while await !condition() {
            guard ContinuousClock.now < deadline else {
                await ledger.releaseAll()
                throw TestFailure("not within 10 s: \(what)")
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test(arguments: [1, 2, 3])
    func sharedJobsRunSideBySideUpToTheSlots(slots count: Int) async throws {
        let slots = OneAtATime(slots: count)
        let ledger = Ledger()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<(2 * count) { group.addTask { await job(slots, ledger, "shared \(index)", .shared) } }
            try await until(ledger, "\(count) running and \(count) waiting") {
                let running = await ledger.running
                let waiting = await slots.waitingCount
                return running == count && waiting == count
            }
            #expect(await ledger.started.count == count, "as many run as there are slots; the rest wait")
            await ledger.releaseAll()
        }
        #expect(await ledger.peak == count)
        #expect(await ledger.started.count == 2 * count, "every job ran")
    }

    @Test func anExclusiveJobRunsAloneAndIsNotOvertaken() async throws {
        let slots = OneAtATime(slots: 2)
        let ledger = Ledger()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await job(slots, ledger, "first", .shared) }
            try await until(ledger, "the first job started") { await ledger.started == ["first"] }
            group.addTask { await job(slots, ledger, "exclusive", .exclusive) }
            try await until(ledger, "the exclusive job waits") { await slots.waitingCount == 1 }
            // A slot is free, but the exclusive job came first: the later shared job waits behind it.
            group.addTask { await job(slots, ledger, "later", .shared) }
            try await until(ledger, "the later job waits behind the exclusive one") { await slots.waitingCount == 2 }
            #expect(await ledger.started == ["first"])
            await ledger.release("first")
            try await until(ledger, "a second job started") { await ledger.started.count == 2 }
            #expect(await ledger.started == ["first", "exclusive"])
            #expect(await slots.waitingCount == 1, "the later job still waits while the exclusive one runs")
            await ledger.release("exclusive")
            await ledger.release("later")
        }
        #expect(await ledger.started == ["first", "exclusive", "later"])
        #expect(await ledger.exclusiveShared == false, "the exclusive job shared the machine")
    }

    /// Work that computes goes first: an exclusive job that comes after shared ones still waiting starts as soon as
    /// the slots drain, before them — so the run's exclusive jobs run together, not one between every few scenarios.
    @Test func anExclusiveJobGoesBeforeSharedJobsThatWait() async throws {
        let slots = OneAtATime(slots: 2)
        let ledger = Ledger()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in ["a", "b"] { group.addTask { await job(slots, ledger, name, .shared) } }
            try await until(ledger, "two shared jobs run") { await ledger.running == 2 }
            group.addTask { await job(slots, ledger, "c", .shared) }
            try await until(ledger, "c waits") { await slots.waitingCount == 1 }
            group.addTask { await job(slots, ledger, "exclusive", .exclusive) }
            try await until(ledger, "the exclusive job waits") { await slots.waitingCount == 2 }
            await ledger.release("a")
            try await until(ledger, "a ended") { await ledger.running == 1 }
            #expect(await slots.waitingCount == 2, "c does not take a's slot while the exclusive job waits")
            await ledger.release("b")
            try await until(ledger, "the exclusive job started") { await ledger.started.count == 3 }
            #expect(await ledger.started.last == "exclusive")
            await ledger.release("exclusive")
            await ledger.release("c")
        }
        let started = await ledger.started
        #expect(Set(started.prefix(2)) == ["a", "b"] && Array(started.suffix(2)) == ["exclusive", "c"])
        #expect(await ledger.exclusiveShared == false)
    }
}
