import DuetLock

/// A value delivered once and awaited once, with a deadline: used for "the transport is open".
final class OneShot<Value: Sendable>: Sendable {
    private let state = Mutex<(value: Value?, waiter: CheckedContinuation<Value?, Never>?, done: Bool)>((nil, nil, false))

    func fulfil(_ value: Value) {
        let waiter: CheckedContinuation<Value?, Never>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.value = value
            return nil
        }
        waiter?.resume(returning: value)
    }

    /// Nil if the deadline passed first (later fulfilment is then ignored).
    func wait(timeout: Duration) async -> Value? {
        let timer = Task {
            try await Task.sleep(for: timeout)
            self.expire()
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let ready: Value?? = state.withLock { state in
                if let value = state.value { return .some(value) }
                if state.done { return .some(nil) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func expire() {
        let waiter: CheckedContinuation<Value?, Never>? = state.withLock { state in
            guard !state.done else { return nil }
            state.done = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}

/// A Bool shared between a connection and the task that runs it.
final class SharedFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

/// When something last arrived on a connection (for silence detection).
final class ActivityClock: Sendable {
    private let last = Mutex(ContinuousClock.now)
    func touch() { last.withLock { $0 = .now } }
    var silence: Duration { ContinuousClock.now - last.withLock { $0 } }
}

/// Waits for `operation` at most `timeout`; past that it is left to finish on its own. For teardown
/// paths, where a peer or a library that ignores cancellation must not hang the caller.
public func awaitAtMost(_ timeout: Duration, _ operation: @escaping @Sendable () async -> Void) async {
    let done = OneShot<Void>()
    Task {
        await operation()
        done.fulfil(())
    }
    _ = await done.wait(timeout: timeout)
}

/// The close code and reason a server announced before ending an SSE stream (`: close 4001 replaced`).
final class AnnouncedClose: Sendable {
    private let value = Mutex<(code: Int, reason: String)?>(nil)
    func set(_ close: (code: Int, reason: String)?) { value.withLock { $0 = close } }
    var announced: (code: Int, reason: String)? { value.withLock { $0 } }
}
