import ServiceLifecycle

/// Evictions and expiries run once a second; the core decides what is due.
struct HousekeepingService: Service {
    let hub: SessionHub

    func run() async throws {
        for await _ in AsyncTimerSequence.seconds.cancelOnGracefulShutdown() {
            hub.tick()
        }
    }
}

/// A one-second ticker that ends with the task.
struct AsyncTimerSequence: AsyncSequence, Sendable {
    let interval: Duration
    static var seconds: AsyncTimerSequence { .init(interval: .seconds(1)) }

    struct AsyncIterator: AsyncIteratorProtocol {
        let interval: Duration
        mutating func next() async -> Void? {
            do { try await Task.sleep(for: interval) } catch { return nil }
            return ()
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(interval: interval) }
}
