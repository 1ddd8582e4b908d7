import DuetProtocol
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Server-Sent Events fallback: `GET /sse?sid=` streams messages, `POST /sse?sid=` carries one message.
struct SSETransport: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let pingInterval: Duration

    func register(on router: Router<DuetRequestContext>) {
        router.get("/sse") { request, context -> Response in
            guard let sid = request.uri.queryParameters["sid"].map(String.init), SessionIdFormat.isWellFormed(sid) else {
                return .text(.badRequest, "sid is required: S- followed by 16 lowercase hex digits")
            }
            if let refusal = gate.refusal(request, context: context, entry: .sse) { return refusal.response }
            if hub.isDraining { return .text(.serviceUnavailable, "server is draining; reconnect shortly") }
            // Given back when the stream ends, or, should the body never be written, when the slot is dropped.
            let admission = AdmissionSlot()
            switch gate.admit(request, context: context, entry: .sse) {
            case .success(let ticket): admission.hold(ticket, of: gate.connections)
            case .failure(let refusal): return refusal.response
            }
            let channel = context.channel
            let postToken = secureRandomToken()
            let outbox = SSEOutbox(abort: { channel.close() })
            let id = hub.openSSE(sid: sid, postToken: postToken, sink: OutboundSink(outbox))
            // Should the client hang up before the body is written (the closure below then never runs), the session
            // still ends with the socket.
            channel.channel?.closeFuture.whenComplete { _ in
                outbox.finish()
                hub.closed(id, reason: "client_closed")
            }
            let interval = TimeAmount(pingInterval)
            return Response(
                status: .ok,
                headers: [.contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"],
                body: ResponseBody { writer in
                    // Pings on the connection's event loop: no task per stream for them.
                    let pings = channel.channel?.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in outbox.ping() }
                    // Without this a hung-up client is noticed only at the next write (ping).
                    try? await request.body.consumeWithCancellationOnInboundClose { _ in
                        try await stream(outbox, id: id, postToken: postToken, to: &writer)
                    }
                    pings?.cancel()
                    outbox.finish()
                    hub.closed(id, reason: "client_closed")
                    admission.release()
                    try? await writer.finish(nil)
                })
        }

        router.post("/sse") { request, context -> Response in
            guard let sid = request.uri.queryParameters["sid"].map(String.init), SessionIdFormat.isWellFormed(sid) else {
                return .text(.badRequest, "sid is required: S- followed by 16 lowercase hex digits")
            }
            if let refusal = gate.refusal(request, context: context, entry: .sse, consume: false) { return refusal.response }
            var request = request
            let body: ByteBuffer
            do {
                body = try await request.collectBody(upTo: ProtocolLimits.maxMessageBytes)
            } catch {
                return .text(.contentTooLarge, "messages are limited to \(ProtocolLimits.maxMessageBytes) bytes")
            }
            let postToken = request.headers[HTTPField.Name(SSEPostBinding.header)!]
            switch hub.receive(Array(body.readableBytesView), sid: sid, postToken: postToken) {
            case .accepted: return Response(status: .noContent)
            case .wrongPostToken:
                return .text(.unauthorized, "\(SSEPostBinding.header) is missing or is not this stream's token (the stream's first message, sse_session, gives it)")
            case .unknownSession: return .text(.gone, "no open stream for this sid; open GET /sse?sid= again")
            case .unauthorized:
                return .text(.unauthorized, "this sid belongs to a participant: the first message must be a join with its reconnectCid and reconnectToken")
            }
        }
    }

    /// The response's own task writes everything: what the hub queued, and the pings, from one stream.
    private func stream(_ outbox: SSEOutbox, id: ConnectionID, postToken: String, to writer: inout any ResponseBodyWriter) async throws {
        var reason = "server_closed"
        do {
            // One write: the stream is usable (the client may POST) as soon as its first bytes arrive. Whatever the
            // hub queued for this connection meanwhile follows.
            let session = SSEPostBinding.firstMessage(postToken: postToken, nowMs: Int64(Date().timeIntervalSince1970 * 1000)).encodedString()
            try await writer.write(ByteBuffer(string: ": ready\n\ndata: \(session)\n\n"))
            loop: for await item in outbox.items {
                switch item {
                case .ping:
                    try await writer.write(ByteBuffer(string: ": ping\n\n"))
                case .outbound(.text(let text)):
                    try await writer.write(ByteBuffer(string: "data: \(text)\n\n"))
                    outbox.written(text)
                case .outbound(.close(let code, let closeReason)):
                    reason = closeReason
                    // What a WebSocket close frame would say, as a comment (older clients just hear a ping): the
                    // client acts on the code (4001: a newer connection proved this seat — stop, do not fight for it).
                    try? await writer.write(ByteBuffer(string: ": close \(code.rawValue) \(closeReason)\n\n"))
                    break loop
                }
            }
        } catch {
            reason = "client_closed"
        }
        // Inbound close cancels this task, which ends the loop quietly.
        if Task.isCancelled { reason = "client_closed" }
        hub.closed(id, reason: reason)
    }
}
