import DuetProtocol
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The SSE endpoint of one HTTP connection, on its event loop, in front of Hummingbird's router (`DuetHTTPChannel`).
///
/// `GET /sse` turns the connection into a stream: the hub's messages arrive through a `ConnectionOutbox`, which
/// schedules one write on this loop; they are written as events and flushed once per batch, pings are an event-loop
/// timer. `POST /sse` is read and handed to the hub here, and answered at once. Any other request goes on to the
/// router untouched. Answers keep request order: an SSE request behind a router response still being written (or
/// behind the stream) waits here until that response has ended.
///
/// Back-pressure as for WebSocket: while the channel is not writable, taken items wait here, still counted by the
/// outbox against `OutboundBound`, so a client that stops reading is cut off instead of growing the server.
final class SSEConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler, NIOScheduledCallbackHandler, OutboxWriter {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Current {
        /// Between requests: the next part is a head.
        case none
        /// The router's: its parts go on to Hummingbird.
        case routed
        /// A `POST /sse` whose body is being read (nil once it grew past the protocol's limit: it is refused 413).
        case posting(sid: String, postToken: String?, body: ByteBuffer?, closing: Bool)
        /// Answered at its head: the rest of it is read and dropped.
        case discarding(closing: Bool)
        /// `GET /sse`: the connection is the stream's until it ends.
        case streaming
    }

    private struct Stream {
        var id: ConnectionID
        var outbox: ConnectionOutbox
        var ticket: ConnectionLimiter.Ticket
        /// Its request said `Connection: close`: the connection ends with the stream.
        var closing: Bool
        /// Why the server ended it (a close item); wins over what the socket reports.
        var closeReason: String?
    }

    /// A request waiting for the response ahead of it costs at most this much buffered (a body at the protocol's limit).
    static let maxWaitingBytes = ProtocolLimits.maxMessageBytes + 16 * 1024

    private let endpoint: SSEEndpoint
    private var context: ChannelHandlerContext?
    private var current = Current.none
    /// Router responses not yet ended.
    private var routedInFlight = 0
    /// Parts that arrived while a router response or the stream was still going, handled once it has ended.
    /// (An array: empty, it allocates nothing, and a connection almost never has anything waiting.)
    private var waiting: [HTTPRequestPart] = []
    private var waitingBytes = 0
    /// The client half-closed while requests were waiting: told on once they are answered.
    private var inputClosedWhileWaiting = false
    /// A response said `Connection: close`: nothing more is read, and the socket closes once it is written and its
    /// request read to the end (closing with unread input would reset the connection and lose the answer).
    private var closingConnection = false
    /// A keep-alive timer is pending: a stream that follows another on the same connection reuses it.
    private var pingArmed = false
    /// The answer that said `Connection: close`, once written.
    private var lastAnswer: EventLoopFuture<Void>?
    private var stream: Stream?
    /// Taken from the outbox, waiting for the channel to become writable.
    private var backlog: [Outbound] = []
    private var needsFlush = false

    init(endpoint: SSEEndpoint) {
        self.endpoint = endpoint
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    // MARK: - Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard !closingConnection else {
            if case .end = part { closeOnceWritten(context) }
            return
        }
        if !waiting.isEmpty || mustWait(part) {
            wait(part, context)
            return
        }
        handle(part, context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context)
        context.fireChannelReadComplete()
    }

    /// A new request behind a response still going out (ours, or the router's for an SSE request) waits for it.
    private func mustWait(_ part: HTTPRequestPart) -> Bool {
        guard case .head(let head) = part else { return false }
        return stream != nil || (routedInFlight > 0 && SSEEndpoint.handles(head))
    }

    private func wait(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) {
        if case .body(let bytes) = part { waitingBytes += bytes.readableBytes }
        waiting.append(part)
        if waitingBytes > Self.maxWaitingBytes || waiting.count > 1024 {
            // A client pipelining more than a message's worth behind an open response: not one of ours.
            context.close(promise: nil)
        }
    }

    /// What waited, now that nothing is ahead of it.
    private func handleWaiting(_ context: ChannelHandlerContext) {
        var routed = false
        while let part = waiting.first, closingConnection || !mustWait(part) {
            waiting.removeFirst()
            if case .body(let bytes) = part { waitingBytes -= bytes.readableBytes }
            if closingConnection {
                // Behind an answer that closes the connection: read to its request's end, answer nothing more.
                if case .end = part {
                    waiting = []
                    closeOnceWritten(context)
                }
                continue
            }
            if case .none = current, case .head(let head) = part, !SSEEndpoint.handles(head) { routed = true }
            handle(part, context)
        }
        flushIfNeeded(context)
        // The router's channel hands reads on at the end of a read burst: this is one.
        if routed { context.fireChannelReadComplete() }
        if waiting.isEmpty, inputClosedWhileWaiting {
            inputClosedWhileWaiting = false
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
    }

    private func handle(_ part: HTTPRequestPart, _ context: ChannelHandlerContext) {
        switch (current, part) {
        case (.none, .head(let head)):
            guard SSEEndpoint.handles(head) else {
                current = .routed
                routedInFlight += 1
                context.fireChannelRead(wrapInboundOut(part))
                return
            }
            let closing = head.headerFields[.connection]?.lowercased().contains("close") == true
            switch head.method {
            case .get: openStream(head, closing: closing, context)
            case .post: beginPost(head, closing: closing, context)
            default:
                current = .discarding(closing: closing)
                respond(SSEEndpoint.methodNotAllowed, closing: closing, bodiless: head.method == .head, context)
            }
        case (.none, _):
            // The codec only hands over a body or an end after a head.
            break
        case (.routed, .end):
            current = .none
            context.fireChannelRead(wrapInboundOut(part))
        case (.routed, _):
            context.fireChannelRead(wrapInboundOut(part))
        case (.posting(let sid, let token, var body, let closing), .body(var bytes)):
            // Out of `current` while it grows, so that appending does not copy it.
            current = .none
            if let size = body?.readableBytes, size + bytes.readableBytes <= ProtocolLimits.maxMessageBytes {
                body!.writeBuffer(&bytes)
            } else {
                body = nil
            }
            current = .posting(sid: sid, postToken: token, body: body, closing: closing)
        case (.posting(let sid, let token, let body, let closing), .end):
            current = .none
            guard let body else {
                respond(SSEEndpoint.tooLarge, closing: closing, context)
                if closing { closeOnceWritten(context) }
                return
            }
            respond(endpoint.deliver(Array(body.readableBytesView), sid: sid, postToken: token), closing: closing, context)
            if closing { closeOnceWritten(context) }
        case (.posting, .head), (.discarding, .head), (.streaming, .head):
            // The codec never starts a request before the last one's end.
            break
        case (.discarding(let closing), .end):
            current = .none
            if closing { closeOnceWritten(context) }
        case (.discarding, .body), (.streaming, .body), (.streaming, .end):
            break
        }
    }

    // MARK: - POST /sse

    private func beginPost(_ head: HTTPRequest, closing: Bool, _ context: ChannelHandlerContext) {
        switch endpoint.acceptPost(head, peer: context.channel.remoteAddress) {
        case .success(let post):
            current = .posting(
                sid: post.sid, postToken: post.postToken, body: context.channel.allocator.buffer(capacity: 0), closing: closing)
        case .failure(let answer):
            current = .discarding(closing: closing)
            respond(answer, closing: closing, context)
        }
    }

    /// A whole response. When the request asked to close, nothing after it is read or answered; the socket closes
    /// once its request has been read to the end (`closeOnceWritten`).
    /// `bodiless`: the answer to a HEAD, its head only.
    private func respond(_ answer: SSEEndpoint.Answer?, closing: Bool, bodiless: Bool = false, _ context: ChannelHandlerContext) {
        let (head, body) = endpoint.answer(answer, closing: closing)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body, !bodiless { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        needsFlush = true
        guard closing else {
            context.write(wrapOutboundOut(.end(nil)), promise: nil)
            return
        }
        lastAnswer = context.write(wrapOutboundOut(.end(nil)))
        closingConnection = true
    }

    /// The last request has been read: close the socket once everything written so far is out.
    private func closeOnceWritten(_ context: ChannelHandlerContext) {
        let channel = context.channel
        needsFlush = false
        context.flush()
        guard let lastAnswer else {
            channel.close(promise: nil)
            return
        }
        lastAnswer.whenComplete { _ in channel.close(promise: nil) }
    }

    // MARK: - GET /sse

    private func openStream(_ head: HTTPRequest, closing: Bool, _ context: ChannelHandlerContext) {
        switch endpoint.openStream(head, peer: context.channel.remoteAddress) {
        case .failure(let answer):
            current = .discarding(closing: closing)
            respond(answer, closing: closing, context)
        case .success(let opened):
            current = .streaming
            let outbox = ConnectionOutbox(handler: self, channel: context.channel)
            let postToken = secureRandomToken()
            // The hub knows the stream before its client can read the post token and POST (from any other connection);
            // what the hub queues meanwhile is written below, after the opening.
            outbox.handlerWillWrite()
            let id = endpoint.hub.openSSE(
                sid: opened.sid, postToken: postToken, sink: OutboundSink(outbox), rid: RoomHint.rid(in: head.path))
            stream = Stream(id: id, outbox: outbox, ticket: opened.ticket, closing: closing)
            context.write(wrapOutboundOut(.head(endpoint.streamHead(closing: closing))), promise: nil)
            context.write(wrapOutboundOut(.body(ByteBuffer(string: SSEEndpoint.streamOpening(postToken: postToken)))), promise: nil)
            needsFlush = true
            writeQueued(context)
            schedulePing(context)
        }
    }

    /// Scheduled by the outbox when the hub queued something for this stream.
    func writeQueued() {
        guard let context else { return }
        writeQueued(context)
        flushIfNeeded(context)
    }

    private func writeQueued(_ context: ChannelHandlerContext) {
        guard let outbox = stream?.outbox else { return }
        let taken = outbox.take()
        if backlog.isEmpty { backlog = taken } else { backlog.append(contentsOf: taken) }
        writeBacklog(context)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, !backlog.isEmpty {
            writeBacklog(context)
            flushIfNeeded(context)
        }
        context.fireChannelWritabilityChanged()
    }

    /// Writes in order while the channel takes more; a close item ends the stream.
    private func writeBacklog(_ context: ChannelHandlerContext) {
        var written = 0
        var closedBy: String?
        var streamEnded: EventLoopFuture<Void>?
        loop: while written < backlog.count, stream != nil, context.channel.isWritable {
            let item = backlog[written]
            written += 1
            switch item {
            case .text(let text):
                context.write(wrapOutboundOut(.body(ByteBuffer(string: SSEEndpoint.event(text)))), promise: nil)
                stream?.outbox.written(item)
                needsFlush = true
            case .close(let code, let reason):
                context.write(wrapOutboundOut(.body(ByteBuffer(string: SSEEndpoint.close(code, reason: reason)))), promise: nil)
                // The response ends; the connection may carry more requests, as any other (unless it asked to close).
                streamEnded = context.write(wrapOutboundOut(.end(nil)))
                needsFlush = true
                closedBy = reason
                break loop
            }
        }
        guard let closedBy else {
            if written == backlog.count { backlog = [] } else if written > 0 { backlog.removeFirst(written) }
            return
        }
        if stream?.closeReason == nil { stream?.closeReason = closedBy }
        let closing = stream?.closing ?? false
        endStream(reason: "server_closed")  // drops what was queued behind the close
        current = .none
        guard !closing else {
            closingConnection = true
            lastAnswer = streamEnded
            closeOnceWritten(context)
            return
        }
        handleWaiting(context)
    }

    private func flushIfNeeded(_ context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    /// The hub forgets the stream and its slot is given back, exactly once.
    private func endStream(reason: String) {
        guard let stream else { return }
        self.stream = nil
        backlog = []
        stream.outbox.detach()
        endpoint.gate.connections.release(stream.ticket)
        endpoint.hub.closed(stream.id, reason: stream.closeReason ?? reason)
    }

    // MARK: - Keep-alive

    private func schedulePing(_ context: ChannelHandlerContext) {
        // Never cancelled: once the stream ends the callback finds none and does nothing, holding this handler at most
        // one interval (cancelling is a linear search of the loop's timers). A stream that follows another on this
        // connection keeps the one pending: one ping chain per connection.
        guard !pingArmed else { return }
        pingArmed = (try? context.eventLoop.assumeIsolated().scheduleCallback(in: endpoint.pingInterval, handler: self)) != nil
    }

    func handleScheduledCallback(eventLoop: some EventLoop) {
        pingArmed = false
        guard let context, stream != nil else { return }
        context.writeAndFlush(wrapOutboundOut(.body(ByteBuffer(string: SSEEndpoint.ping))), promise: nil)
        schedulePing(context)
    }

    // MARK: - Writes from the router, and the connection's end

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // Only the router writes through here (this handler writes from its own context, past itself).
        context.write(data, promise: promise)
        // (Also the router's own answer to a request the codec could not parse: not one it was handed.)
        guard case .end = unwrapOutboundIn(data), routedInFlight > 0 else { return }
        routedInFlight -= 1
        guard routedInFlight == 0, !waiting.isEmpty else { return }
        // Not from inside the router's write (which would re-enter it): once this write has returned, on the same loop.
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.execute {
            guard let context = handler.value.context else { return }
            handler.value.handleWaiting(context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            if stream != nil {
                // The client half-closed its stream's connection: it is gone.
                endStream(reason: "client_closed")
                context.close(promise: nil)
                return
            }
            if !waiting.isEmpty {
                // Told on once what waits is answered: the router closes the connection when it hears it.
                inputClosedWhileWaiting = true
                return
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A request the codec could not parse. Inside one of this endpoint's requests (or its stream) the router must
    /// not answer it (its 400 would land inside our response): the connection is closed. Otherwise the router's.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch current {
        case .none, .routed:
            guard stream == nil else { fallthrough }
            context.fireErrorCaught(error)
        case .posting, .discarding, .streaming:
            endStream(reason: "socket_error")
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        endStream(reason: "client_closed")
        waiting.removeAll()
        self.context = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        endStream(reason: "client_closed")
        self.context = nil
    }
}
