import DuetLock
import NIOCore

/// Who writes a connection's queued items, on its event loop: a WebSocket's or an SSE stream's handler.
protocol OutboxWriter: AnyObject {
    /// Takes what the outbox queued (`ConnectionOutbox.take`) and writes it. Runs on the connection's event loop.
    func writeQueued()
}

/// What the hub has queued for one connection (a WebSocket, or an SSE stream) and its handler has not written yet: the
/// connection's `OutboundTarget`, one object instead of closures.
///
/// The hub calls it under its lock, from any thread. It never writes to the channel there (a write can re-enter the
/// pipeline and reach the hub's lock again): it queues, and asks the connection's event loop to write at most once
/// until that write has run. While the handler is itself handling one of its connection's messages it writes what
/// this produced right after, so a connection's own answers (`joined`, `pong`, errors) cost no extra hop.
///
/// Bounded like every transport (`OutboundBound`): over it `yield` says false and the hub cuts the client off.
final class ConnectionOutbox: OutboundTarget {
    private struct State {
        var pending: [Outbound] = []
        /// Texts admitted and not yet taken by the channel: queued here or waiting in the handler for writability.
        var queuedMessages = 0
        var queuedBytes = 0
        /// A write is scheduled on the event loop, or the handler is in `channelRead` and will write after it.
        var writerComing = false
        /// The hub finished this connection: nothing more is queued.
        var finished = false
        /// Who writes, on its event loop. Nil once the connection is gone, which also breaks the handler ⇄ outbox cycle.
        var handler: NIOLoopBound<any OutboxWriter>?
    }

    private let state: Mutex<State>
    private let channel: any Channel

    init(handler: any OutboxWriter, channel: any Channel) {
        state = Mutex(State(handler: NIOLoopBound(handler, eventLoop: channel.eventLoop)))
        self.channel = channel
    }

    // MARK: OutboundTarget (the hub, any thread, under its lock)

    func yield(_ item: Outbound) -> Bool {
        let schedule = state.withLock { state -> NIOLoopBound<any OutboxWriter>?? in
            guard !state.finished else { return .some(nil) }
            if case .text(let text) = item {
                let size = text.utf8.count
                guard state.queuedMessages < OutboundBound.messages, state.queuedBytes + size <= OutboundBound.bytes else { return nil }
                state.queuedMessages += 1
                state.queuedBytes += size
            }
            state.pending.append(item)
            guard !state.writerComing, let handler = state.handler else { return .some(nil) }
            state.writerComing = true
            return .some(handler)
        }
        switch schedule {
        case .none: return false
        case .some(.none): return true
        case .some(.some(let handler)):
            handler.eventLoop.execute { handler.value.writeQueued() }
            return true
        }
    }

    func finish() { state.withLock { $0.finished = true } }

    /// Closes the socket from its event loop, later: closing it here, inside the hub's lock, would run its handlers
    /// at once on that loop, and they tell the hub the connection ended (a recursive lock).
    func abort() {
        let channel = channel
        channel.eventLoop.execute { channel.close(promise: nil) }
    }

    // MARK: The handler (its event loop)

    /// The handler is about to hand one of its messages to the hub: what that queues is written by the handler
    /// right after, not by a scheduled write.
    func handlerWillWrite() { state.withLock { $0.writerComing = true } }

    /// Everything queued so far; after this a new item schedules a write again.
    func take() -> [Outbound] {
        state.withLock { state in
            state.writerComing = false
            defer { state.pending = [] }
            return state.pending
        }
    }

    /// A text left the queue for the socket (the channel took it): it no longer counts against the bound.
    func written(_ item: Outbound) {
        guard case .text(let text) = item else { return }
        let size = text.utf8.count
        state.withLock { state in
            state.queuedMessages -= 1
            state.queuedBytes -= size
        }
    }

    /// The connection is gone: no more writes are scheduled, and the handler is released.
    func detach() {
        state.withLock { state in
            state.finished = true
            state.handler = nil
            state.pending = []
        }
    }

    var queued: (messages: Int, bytes: Int) { state.withLock { ($0.queuedMessages, $0.queuedBytes) } }
}
