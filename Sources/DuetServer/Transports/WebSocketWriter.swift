import Synchronization

/// Writes one WebSocket's outbound frames in order. A writer task exists only while frames are waiting: an idle
/// connection (most of them) costs a few bytes here instead of a parked task and a stream, which is what the
/// per-connection memory in docs/benchmarks.md is made of.
final class WebSocketWriter: Sendable {
    private struct State {
        var pending: [Outbound] = []
        var draining = false
        var finished = false
    }

    private let state = Mutex(State())
    /// Writes one frame; returns false once the socket can take no more (closed, or a close was sent).
    private let write: @Sendable (Outbound) async -> Bool

    init(write: @escaping @Sendable (Outbound) async -> Bool) {
        self.write = write
    }

    var sink: OutboundSink {
        OutboundSink(yield: { [self] in enqueue($0) }, finish: { [self] in finish() })
    }

    func enqueue(_ item: Outbound) {
        let start = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.pending.append(item)
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { Task { await drain() } }
    }

    /// Nothing more will be written; frames already queued still go out (a close after an error, say).
    func finish() {
        state.withLock { $0.finished = true }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Outbound] in
                let batch = state.pending
                state.pending = []
                if batch.isEmpty { state.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            for item in batch where !(await write(item)) {
                state.withLock {
                    $0.finished = true
                    $0.pending = []
                    $0.draining = false
                }
                return
            }
        }
    }
}
