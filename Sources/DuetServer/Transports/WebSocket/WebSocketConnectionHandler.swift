import DuetProtocol
import NIOCore
import NIOWebSocket

/// One `/ws` connection, on its event loop, after the upgrade: no Swift task, no async sequence, no ping task
/// (docs/benchmarks.md: these were most of what an idle connection cost).
///
/// Reads: each frame goes through `WebSocketMessageAssembler`; a complete message goes to the hub synchronously, and
/// what the hub queued for this connection meanwhile is written right after, outside the hub's lock. Writes are
/// flushed once per read burst (`channelReadComplete`) or per scheduled write, never per frame. A peer's messages
/// arrive through its `ConnectionOutbox`, which schedules one write on this loop. Back-pressure: while the channel is not
/// writable, taken items wait here, still counted by the outbox against `OutboundBound`, so a client that stops
/// reading is cut off (4002) instead of growing the server.
final class WebSocketConnectionHandler: ChannelInboundHandler, RemovableChannelHandler, NIOScheduledCallbackHandler, OutboxWriter {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    struct Settings: Sendable {
        var pingInterval: TimeAmount
        /// How long a close frame waits for the client's before the socket is closed anyway.
        var closeTimeout: TimeAmount = .seconds(5)
    }

    private enum Closing {
        case open
        /// Our close frame is out: waiting for the client's, or for `closeTimeout`.
        case closeSent
        /// The socket is being closed; nothing more is read or written.
        case closed
    }

    private let hub: SessionHub
    private let settings: Settings
    private let limiter: ConnectionLimiter
    /// The connection slot, or why none was left when the upgrade completed.
    private var admission: Result<ConnectionLimiter.Ticket, Gatekeeper.Refusal>?
    private var context: ChannelHandlerContext?
    private var outbox: ConnectionOutbox?
    /// Set while the hub knows this connection.
    private var id: ConnectionID?
    /// The upgrade URL's `rid` (`RoomHint`), until the hub has placed the connection.
    private var roomHint: String?
    private var assembler = WebSocketMessageAssembler()
    /// Taken from the outbox, waiting for the channel to become writable.
    private var backlog: [Outbound] = []
    /// Set while `writeBacklog` runs (a write can call back into this handler).
    private var writingBacklog = false
    private var closing = Closing.open
    private var awaitingPong = false
    private var needsFlush = false
    private var closeReason: String?

    init(
        hub: SessionHub, settings: Settings, limiter: ConnectionLimiter, roomHint: String? = nil,
        admission: Result<ConnectionLimiter.Ticket, Gatekeeper.Refusal>
    ) {
        self.roomHint = roomHint
        self.hub = hub
        self.settings = settings
        self.limiter = limiter
        self.admission = admission
    }

    // MARK: - Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        guard context.channel.isActive else {
            // Gone before the upgrade completed: no session, and the slot goes back (deinit).
            closing = .closed
            return
        }
        if case .failure(let refusal) = admission {
            // Filled up between the check and the upgrade: what WebSocket has for 503 + Retry-After.
            admission = nil
            fail(context, code: .unknown(1013), reason: refusal.message, hubReason: nil)
            return
        }
        let outbox = ConnectionOutbox(handler: self, channel: context.channel)
        self.outbox = outbox
        id = hub.open(.ws, sink: OutboundSink(outbox), rid: roomHint)
        roomHint = nil
        schedulePing(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closing = .closed
        endSession(reason: closeReason ?? "client_closed")
        outbox?.detach()
        outbox = nil
        backlog = []
        releaseSlot()
        self.context = nil
        context.fireChannelInactive()
    }

    /// The slot goes back exactly once: when the socket closes, or, for a handler never added to a live channel, when
    /// it is freed.
    private func releaseSlot() {
        if case .success(let ticket) = admission { limiter.release(ticket) }
        admission = nil
    }

    deinit { releaseSlot() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client half-closed: it can send nothing more, not even its close frame.
            context.close(promise: nil)
        } else if event is ChannelShouldQuiesceEvent {
            // The server is shutting down (DrainService has normally closed everyone already).
            fail(context, code: .goingAway, reason: "going_away", hubReason: "server_shutdown")
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case NIOWebSocketError.invalidFrameLength:
            fail(context, code: .messageTooLarge, reason: "frame too large", hubReason: "socket_error")
        case is NIOWebSocketError:
            fail(context, code: .protocolError, reason: "protocol error", hubReason: "socket_error")
        default:
            closeReason = closeReason ?? "socket_error"
            context.close(promise: nil)
        }
    }

    // MARK: - Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard closing != .closed else { return }
        switch assembler.receive(frame) {
        case .incomplete:
            break
        case .message(let bytes):
            guard closing == .open, let id, let outbox else { return }
            outbox.handlerWillWrite()
            hub.receive(bytes, from: id)
            writeQueued(context, flush: false)
        case .oversize:
            guard closing == .open, let id, let outbox else { return }
            outbox.handlerWillWrite()
            hub.refuseOversize(id)  // MESSAGE_TOO_LARGE, then close 1009: both come back through the outbox
            writeQueued(context, flush: false)
        case .ping(let payload):
            guard closing == .open else { return }
            context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: payload)), promise: nil)
            needsFlush = true
        case .pong:
            awaitingPong = false
        case .close(let code):
            clientClosed(context, code: code)
        case .protocolError:
            fail(context, code: .protocolError, reason: "protocol error", hubReason: "socket_error")
        case .invalidUTF8:
            fail(context, code: .dataInconsistentWithMessage, reason: "invalid UTF-8", hubReason: "socket_error")
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context)
        context.fireChannelReadComplete()
    }

    // MARK: - Writing

    /// Scheduled by the outbox when a peer's messages (or the hub's close) arrived for this connection.
    func writeQueued() {
        guard let context else { return }
        writeQueued(context, flush: true)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !backlog.isEmpty {
            writeBacklog(context)
            flushIfNeeded(context)
        }
        context.fireChannelWritabilityChanged()
    }

    private func writeQueued(_ context: ChannelHandlerContext, flush: Bool) {
        guard let outbox else { return }
        let taken = outbox.take()
        if backlog.isEmpty { backlog = taken } else { backlog.append(contentsOf: taken) }
        writeBacklog(context)
        if flush { flushIfNeeded(context) }
    }

    /// Writes in order while the channel takes more; a close item ends the connection's writing for good.
    ///
    /// Not re-entrant, and it owns the items it is writing: a write can end the connection inside this loop (a socket
    /// that fails the write closes the channel, `channelInactive` or `fail` clear `backlog`), and a nested call would
    /// write newer items before older ones. So the items being written are taken out of `backlog` first, a nested
    /// call only leaves what it was given queued behind them, and what is left is put back in front of anything that
    /// arrived meanwhile. (Indexing into `backlog` while a write cleared it crashed the server: "Range requires
    /// lowerBound <= upperBound", in a clean-clone run, run 20261206T074742Z-4b81c5.)
    private func writeBacklog(_ context: ChannelHandlerContext) {
        guard !writingBacklog else { return }
        writingBacklog = true
        defer { writingBacklog = false }
        while !backlog.isEmpty, closing == .open, context.channel.isWritable {
            var writing = backlog
            backlog = []
            var written = 0
            while written < writing.count, closing == .open, context.channel.isWritable {
                let item = writing[written]
                written += 1
                switch item {
                case .text(let text):
                    context.write(wrapOutboundOut(Self.textFrame(text, allocator: context.channel.allocator)), promise: nil)
                    outbox?.written(item)
                    needsFlush = true
                case .close(let code, let reason):
                    sendClose(context, code: WebSocketErrorCode(codeNumber: Int(code.rawValue)), reason: reason)
                }
            }
            writing.removeFirst(written)
            backlog = writing + backlog
        }
        if closing != .open {
            dropTexts(backlog[...])
            backlog = []
        }
    }

    /// Texts that will never be written (the connection is closing) stop counting against the outbox's bound, so a
    /// busy peer during the close handshake is not mistaken for a client that stopped reading.
    private func dropTexts(_ items: ArraySlice<Outbound>) {
        for item in items { if case .text = item { outbox?.written(item) } }
    }

    private func flushIfNeeded(_ context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    /// A text frame whose buffer has room in front for the frame header, so the encoder writes it in place and the
    /// socket gets one contiguous write per frame.
    static func textFrame(_ text: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        let headroom = 10
        var buffer = allocator.buffer(capacity: headroom + text.utf8.count)
        buffer.moveWriterIndex(forwardBy: headroom)
        buffer.moveReaderIndex(forwardBy: headroom)
        buffer.writeString(text)
        return WebSocketFrame(fin: true, opcode: .text, data: buffer)
    }

    // MARK: - Closing

    /// Our close frame, after everything written so far; the socket closes when the client answers, or after
    /// `closeTimeout`.
    private func sendClose(_ context: ChannelHandlerContext, code: WebSocketErrorCode, reason: String) {
        guard closing == .open else { return }
        closing = .closeSent
        context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)), promise: nil)
        needsFlush = false
        let channel = context.channel
        context.eventLoop.scheduleTask(in: settings.closeTimeout) { channel.close(promise: nil) }
    }

    /// The client's close frame: answer it after what the hub had queued (RFC 6455 §5.5.1), then close the socket.
    private func clientClosed(_ context: ChannelHandlerContext, code: UInt16?) {
        guard closing == .open else {
            // It answers ours.
            closing = .closed
            context.close(promise: nil)
            return
        }
        endSession(reason: "client_closed")
        writeQueued(context, flush: false)  // may end with the hub's own close frame
        let answered: EventLoopFuture<Void>
        if closing == .open {
            let echo = code.map { WebSocketErrorCode(codeNumber: Int($0)) } ?? .normalClosure
            answered = context.writeAndFlush(wrapOutboundOut(Self.closeFrame(echo, reason: "", allocator: context.channel.allocator)))
        } else {
            answered = context.eventLoop.makeSucceededVoidFuture()
        }
        closing = .closed
        needsFlush = false
        closeAfterWrite(answered, context)
    }

    /// Fails the connection (RFC 6455 §7.1.7): the close frame says why, and the socket closes once it is written.
    private func fail(_ context: ChannelHandlerContext, code: WebSocketErrorCode, reason: String, hubReason: String?) {
        guard closing != .closed else { return }
        if let hubReason { closeReason = closeReason ?? hubReason }
        let alreadySent = closing == .closeSent
        closing = .closed
        dropTexts(backlog[...])
        backlog = []
        needsFlush = false
        guard !alreadySent else {
            context.close(promise: nil)
            return
        }
        let closed = context.writeAndFlush(wrapOutboundOut(Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)))
        closeAfterWrite(closed, context)
    }

    /// Closes the socket once `written` is on the wire, or after `closeTimeout` if it never gets there (a client that
    /// stopped reading with the socket full): a failed connection always ends, and tells the hub.
    private func closeAfterWrite(_ written: EventLoopFuture<Void>, _ context: ChannelHandlerContext) {
        let channel = context.channel
        written.whenComplete { _ in channel.close(promise: nil) }
        context.eventLoop.scheduleTask(in: settings.closeTimeout) { channel.close(promise: nil) }
    }

    private func endSession(reason: String) {
        guard let id else { return }
        self.id = nil
        hub.closed(id, reason: closeReason ?? reason)
    }

    static func closeFrame(_ code: WebSocketErrorCode, reason: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var buffer = allocator.buffer(capacity: 2 + reason.utf8.count)
        buffer.write(webSocketErrorCode: code)
        // A control frame carries at most 125 bytes (RFC 6455 §5.5).
        buffer.writeBytes(reason.utf8.prefix(123))
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: buffer)
    }

    // MARK: - Keep-alive

    private func schedulePing(_ context: ChannelHandlerContext) {
        // Never cancelled: after a close the callback finds no context and does nothing, holding this handler at most
        // one interval (cancelling is a linear search of the loop's timers).
        _ = try? context.eventLoop.assumeIsolated().scheduleCallback(in: settings.pingInterval, handler: self)
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        guard let context, closing == .open else { return }
        if awaitingPong {
            // The last ping went unanswered for a whole interval: the client is gone.
            fail(context, code: .goingAway, reason: "ping timeout", hubReason: "ping_timeout")
            return
        }
        awaitingPong = true
        context.writeAndFlush(
            wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, data: context.channel.allocator.buffer(capacity: 0))), promise: nil)
        schedulePing(context)
    }
}
