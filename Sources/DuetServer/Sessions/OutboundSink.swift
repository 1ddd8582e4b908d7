import Synchronization

/// Where the hub puts what one connection must send. SSE streams read an `AsyncStream`; a WebSocket hands
/// its frames to a `WebSocketWriter`, which holds no task while the connection is idle.
///
/// Both are bounded (`OutboundBound`): a client that stops reading would otherwise make the server buffer everything
/// its partner sends. `yield` answers false when the bound is exceeded; the hub then cuts the connection off.
public struct OutboundSink: Sendable {
    let yield: @Sendable (Outbound) -> Bool
    let finish: @Sendable () -> Void
    /// Closes the connection at once, without writing anything more (its client is not reading).
    let abort: @Sendable () -> Void

    public init(yield: @escaping @Sendable (Outbound) -> Bool, finish: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void) {
        self.yield = yield
        self.finish = finish
        self.abort = abort
    }

    /// An SSE stream's queue; `budget.written(_:)` must be called by the reader once a text is written.
    static func stream(budget: OutboundBudget, abort: @escaping @Sendable () -> Void) -> (OutboundSink, AsyncStream<Outbound>) {
        let (stream, continuation) = AsyncStream<Outbound>.makeStream(bufferingPolicy: .unbounded)
        let sink = OutboundSink(
            yield: { item in
                guard budget.admit(item) else { return false }
                continuation.yield(item)
                return true
            },
            finish: { continuation.finish() }, abort: abort)
        return (sink, stream)
    }
}

/// How much one connection may have queued and not yet written to its socket.
public enum OutboundBound {
    /// Several times a full call setup (an offer, an answer and their candidates is a few dozen messages, < 100 KB).
    public static let messages = 512
    /// 16 messages of the maximum size.
    public static let bytes = 1 << 20
}

/// Messages and bytes queued for one connection and not yet written. Close requests are always admitted.
final class OutboundBudget: Sendable {
    private let state = Mutex<(messages: Int, bytes: Int)>((0, 0))
    private let maxMessages: Int
    private let maxBytes: Int

    init(maxMessages: Int = OutboundBound.messages, maxBytes: Int = OutboundBound.bytes) {
        self.maxMessages = maxMessages
        self.maxBytes = maxBytes
    }

    func admit(_ item: Outbound) -> Bool {
        guard case .text(let text) = item else { return true }
        let size = text.utf8.count
        return state.withLock { state in
            guard state.messages + 1 <= maxMessages, state.bytes + size <= maxBytes else { return false }
            state.messages += 1
            state.bytes += size
            return true
        }
    }

    func written(_ item: Outbound) {
        guard case .text(let text) = item else { return }
        let size = text.utf8.count
        state.withLock { state in
            state.messages -= 1
            state.bytes -= size
        }
    }

    var queued: (messages: Int, bytes: Int) { state.withLock { $0 } }
}
