/// The heavy end-to-end work (a Chromium scenario, a `duet-call` scenario, the 10,000-seed sweep) runs one
/// piece at a time across all suites: on two cores, a sweep or a second browser next to a call under test
/// would starve its media and make timing checks lie.
public actor OneAtATime {
    public static let heavyWork = OneAtATime()

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public func run<T: Sendable>(_ work: @Sendable () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await work()
    }

    private func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}
