import Synchronization

/// Writes one WebSocket's outbound frames in order. A writer task exists only while frames are waiting: an idle
/// connection (most of them) costs a few bytes here instead of a parked task and a stream, which is what the
/// per-connection memory in docs/benchmarks.md is made of. While the connection's own task is handling one of
/// its messages, what that produces (`joined`, `pong`, errors; a peer's relay arriving meanwhile) is written by
/// that task afterwards instead of by a new one.
final class WebSocketWriter: Sendable {
    private struct State {
        var pending: [Outbound] = []
        /// Someone is writing `pending` out: a drain task, or the owner in `flushAfterOwnMessage`.
        var draining = false
        /// The owner is handling a message and will write what is pending when it is done.
        var ownerWillFlush = false
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
            if state.draining || state.ownerWillFlush { return false }
            state.draining = true
            return true
        }
        if start { Task { await drain() } }
    }

    /// Nothing more will be written; frames already queued still go out (a close after an error, say).
    func finish() {
        state.withLock { $0.finished = true }
    }

    /// Handles one of the connection's own messages (synchronously, through the hub), then writes what it
    /// produced on the calling task.
    func handlingOwnMessage(_ body: () -> Void) async {
        state.withLock { $0.ownerWillFlush = true }
        body()
        let flush = state.withLock { state -> Bool in
            state.ownerWillFlush = false
            guard !state.draining, !state.pending.isEmpty else { return false }
            state.draining = true
            return true
        }
        if flush { await drain() }
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
