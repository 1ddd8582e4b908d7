/// Where the hub puts what one connection must send. SSE streams read an `AsyncStream`; a WebSocket hands
/// its frames to a `WebSocketWriter`, which holds no task while the connection is idle.
public struct OutboundSink: Sendable {
    let yield: @Sendable (Outbound) -> Void
    let finish: @Sendable () -> Void

    public init(yield: @escaping @Sendable (Outbound) -> Void, finish: @escaping @Sendable () -> Void) {
        self.yield = yield
        self.finish = finish
    }

    static func stream() -> (OutboundSink, AsyncStream<Outbound>) {
        let (stream, continuation) = AsyncStream<Outbound>.makeStream(bufferingPolicy: .unbounded)
        return (OutboundSink(yield: { continuation.yield($0) }, finish: { continuation.finish() }), stream)
    }
}
