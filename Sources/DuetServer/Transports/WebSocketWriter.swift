import Synchronization

/// Writes one WebSocket's outbound frames in order. A writer task exists only while frames are waiting: an idle
/// connection (most of them) costs a few bytes here instead of a parked task and a stream, which is what the
/// per-connection memory in docs/benchmarks.md is made of. While the connection's own task is handling one of
/// its messages, what that produces (`joined`, `pong`, errors; a peer's relay arriving meanwhile) is written by
/// that task afterwards instead of by a new one.
final class WebSocketWriter: Sendable {
    private struct State {
        var pending: [Outbound] = []
        /// A drain task (or the owner, for one batch) is writing: nobody else starts one.
        var draining = false
        /// The owner is handling a message (or closing) and will write what is pending itself.
        var ownerWillFlush = false
        var finished = false
        /// `flushBeforeClose` waiting for a drain task to end.
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    /// Writes one frame; returns false once the socket can take no more (closed, or a close was sent).
    private let writeFrame: @Sendable (Outbound) async -> Bool
    /// What is queued and not yet written, against `OutboundBound`.
    let budget: OutboundBudget
    private let abort: @Sendable () -> Void

    init(budget: OutboundBudget = OutboundBudget(), abort: @escaping @Sendable () -> Void = {}, write: @escaping @Sendable (Outbound) async -> Bool) {
        writeFrame = write
        self.budget = budget
        self.abort = abort
    }

    var sink: OutboundSink {
        OutboundSink(yield: { [self] in enqueue($0) }, finish: { [self] in finish() }, abort: abort)
    }

    /// Queues a frame; false when the queue is over its bound (the client is not reading), and the frame is dropped.
    @discardableResult
    func enqueue(_ item: Outbound) -> Bool {
        var admitted = true
        let start = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            guard budget.admit(item) else {
                admitted = false
                return false
            }
            state.pending.append(item)
            if state.draining || state.ownerWillFlush { return false }
            state.draining = true
            return true
        }
        if start { Task { await drain() } }
        return admitted
    }

    /// Nothing more will be written; frames already queued still go out (a close after an error, say).
    func finish() {
        state.withLock { $0.finished = true }
    }

    /// Handles one of the connection's own messages (synchronously, through the hub), then writes what it
    /// produced on the calling task: one batch only, so that a steady stream from a peer goes to a drain task and
    /// this connection gets back to reading its own socket.
    // Not inlined into `WebSocketTransport.serve`: that frame lives as long as the connection, so whatever is inlined
    // there is paid by every idle connection (1.7 KiB measured at 19,900 connections).
    @inline(never) func handlingOwnMessage(_ body: () -> Void) async {
        state.withLock { $0.ownerWillFlush = true }
        body()
        let batch = state.withLock { state -> [Outbound] in
            state.ownerWillFlush = false
            guard !state.draining, !state.pending.isEmpty else { return [] }
            state.draining = true
            defer { state.pending = [] }
            return state.pending
        }
        guard !batch.isEmpty, await write(batch) else { return }
        let handOver = state.withLock { state -> Bool in
            if !state.pending.isEmpty { return true }
            state.draining = false
            return false
        }
        if handOver { Task { await drain() } }
    }

    /// The socket's last message was read: wait for a running drain task, then write whatever the hub queued on
    /// this task, so that it all goes out before the WebSocket layer sends its close frame.
    // Not inlined either, for the same reason.
    @inline(never) func flushBeforeClose() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                state.ownerWillFlush = true
                guard state.draining else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
        while true {
            let batch = state.withLock { state -> [Outbound] in
                defer { state.pending = [] }
                return state.pending
            }
            guard !batch.isEmpty, await write(batch) else { return }
        }
    }

    private func drain() async {
        while true {
            let (batch, waiters) = state.withLock { state -> ([Outbound], [CheckedContinuation<Void, Never>]) in
                guard !state.pending.isEmpty else {
                    state.draining = false
                    defer { state.idleWaiters = [] }
                    return ([], state.idleWaiters)
                }
                defer { state.pending = [] }
                return (state.pending, [])
            }
            if batch.isEmpty {
                for waiter in waiters { waiter.resume() }
                return
            }
            guard await write(batch) else { return }
        }
    }

    /// Writes in order; after a refused frame (or a close) nothing more is written, ever.
    private func write(_ batch: [Outbound]) async -> Bool {
        for item in batch {
            if await writeFrame(item) {
                budget.written(item)
                continue
            }
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.finished = true
                state.pending = []
                state.draining = false
                defer { state.idleWaiters = [] }
                return state.idleWaiters
            }
            for waiter in waiters { waiter.resume() }
            return false
        }
        return true
    }
}
