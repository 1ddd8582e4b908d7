import DuetLock
import DuetRooms

/// Who listens to a store's `changes()`.
typealias ChangeSubscribers = BroadcastSubscribers<DurableFact>

/// Who listens to a stream of a store (`changes()`, `ringMessages()`): each subscriber gets everything published after
/// it subscribed; `finishAll` (the store's `close`) ends every stream and refuses new ones (they end at once).
final class BroadcastSubscribers<Element: Sendable>: Sendable {
    private struct State {
        var closed = false
        var next = 0
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
    }

    private let state = Mutex(State())

    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id = state.withLock { state -> Int? in
            guard !state.closed else { return nil }
            defer { state.next += 1 }
            state.continuations[state.next] = continuation
            return state.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) } }
        return stream
    }

    /// Whether anyone subscribed heard them (a store's claim marks are kept only then: `snapshotMark(taking:)`).
    @discardableResult
    func publish(_ facts: [Element]) -> Bool {
        guard !facts.isEmpty else { return false }
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations {
            for fact in facts { continuation.yield(fact) }
        }
        return !continuations.isEmpty
    }

    func finishAll() {
        let continuations = state.withLock { state in
            state.closed = true
            defer { state.continuations = [:] }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
