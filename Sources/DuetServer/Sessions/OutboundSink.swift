/// Where the hub puts what one connection must send. The hub calls it under its lock, from any thread, so an
/// implementation only queues: it never writes to a socket there.
///
/// Every target is bounded (`OutboundBound`): a client that stops reading would otherwise make the server buffer
/// everything its partner sends. `yield` answers false when the bound is exceeded; the hub then cuts the connection off.
public protocol OutboundTarget: AnyObject, Sendable {
    /// Queues one item; false when the bound is exceeded (the item is dropped).
    func yield(_ item: Outbound) -> Bool
    /// Nothing more will be queued; what is queued still goes out.
    func finish()
    /// Closes the connection at once, without writing anything more (its client is not reading).
    func abort()
}

/// One connection's target: a WebSocket's or an SSE stream's `ConnectionOutbox`.
public struct OutboundSink: Sendable {
    let target: any OutboundTarget

    init(_ target: any OutboundTarget) { self.target = target }

    /// For tests and embedders: a target made of closures.
    public init(
        yield: @escaping @Sendable (Outbound) -> Bool, finish: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void
    ) {
        target = ClosureTarget(yield: yield, finish: finish, abort: abort)
    }

    func yield(_ item: Outbound) -> Bool { target.yield(item) }
    func finish() { target.finish() }
    func abort() { target.abort() }
}

private final class ClosureTarget: OutboundTarget {
    let yieldItem: @Sendable (Outbound) -> Bool
    let finishItems: @Sendable () -> Void
    let abortConnection: @Sendable () -> Void

    init(yield: @escaping @Sendable (Outbound) -> Bool, finish: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void) {
        yieldItem = yield
        finishItems = finish
        abortConnection = abort
    }

    func yield(_ item: Outbound) -> Bool { yieldItem(item) }
    func finish() { finishItems() }
    func abort() { abortConnection() }
}

/// How much one connection may have queued and not yet written to its socket.
public enum OutboundBound {
    /// Several times a full call setup (an offer, an answer and their candidates is a few dozen messages, < 100 KB).
    public static let messages = 512
    /// 16 messages of the maximum size.
    public static let bytes = 1 << 20
}
