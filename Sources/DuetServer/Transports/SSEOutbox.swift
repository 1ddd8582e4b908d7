/// What one SSE stream must write: the hub's messages and the pings, in one stream read by the response's own task
/// (no forwarding or ping task per stream). Bounded like every target (`OutboundBound`).
final class SSEOutbox: OutboundTarget {
    enum Item: Sendable {
        case outbound(Outbound)
        case ping
    }

    let items: AsyncStream<Item>
    private let continuation: AsyncStream<Item>.Continuation
    private let budget = OutboundBudget()
    private let closeConnection: @Sendable () -> Void

    init(abort: @escaping @Sendable () -> Void) {
        (items, continuation) = AsyncStream<Item>.makeStream(bufferingPolicy: .unbounded)
        closeConnection = abort
    }

    func yield(_ item: Outbound) -> Bool {
        guard budget.admit(item) else { return false }
        continuation.yield(.outbound(item))
        return true
    }

    func finish() { continuation.finish() }

    func abort() { closeConnection() }

    /// A keep-alive comment; dropped once the stream is finished.
    func ping() { continuation.yield(.ping) }

    /// A text reached the socket: it no longer counts against the bound.
    func written(_ text: String) { budget.written(.text(text)) }
}
