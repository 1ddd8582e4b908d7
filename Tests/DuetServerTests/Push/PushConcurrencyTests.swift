import DuetLock
import Testing

@testable import DuetServer

/// The push sender's limits per push service host (issue 31): a busy or slow host takes at most its share, every other
/// host goes on, waiters are served in order, and nothing is kept for a host with nothing running.
@Suite struct PushConcurrencyTests {
    @Test func aBusyHostWaitsWhileAnotherGoesOnAndForgetsItWhenIdle() async throws {
        let limiter = PushHostConcurrency(perHost: 2, queueLimit: 1)
        #expect(await limiter.acquire("slow.example"))
        #expect(await limiter.acquire("slow.example"))
        let third = Mutex(false)
        let waiter = Task {
            let got = await limiter.acquire("slow.example")
            third.withLock { $0 = got }
        }
        // Another host is not held up by the slow one.
        #expect(await limiter.acquire("fast.example"))
        // The queue holds one waiter: a fourth for the slow host is refused rather than kept.
        try await eventuallyTrue { await limiter.waiting == 1 }
        #expect(await limiter.acquire("slow.example") == false)
        #expect(third.withLock { $0 } == false, "the third waits while two run")
        await limiter.release("slow.example")
        await waiter.value
        #expect(third.withLock { $0 }, "a release hands the place to the waiter")
        for host in ["slow.example", "slow.example", "fast.example"] { await limiter.release(host) }
        #expect(await limiter.activeHosts == 0, "nothing is kept for idle hosts")
    }

    private func eventuallyTrue(_ condition: () async -> Bool) async throws {
        for _ in 0..<200 {
            if await condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("the condition never held")
    }
}
