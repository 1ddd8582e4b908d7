import DuetProtocol
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// `GET /ws`: one JSON message per text frame, bridged to the session hub.
struct WebSocketTransport: Sendable {
    let hub: SessionHub
    let gate: Gatekeeper
    let blocked: @Sendable () -> Bool
    /// Hard cap on what the socket layer buffers; anything over the protocol limit gets
    /// `MESSAGE_TOO_LARGE` and close 1009, so the client learns why.
    static let socketMessageCap = 1 << 20

    func register(on router: Router<DuetRequestContext>) {
        router.ws("/ws") { request, context in
            if blocked() || gate.refusal(request, context: context, entry: .ws) != nil { return .dontUpgrade }
            if hub.isDraining {
                // A refused upgrade can only be answered 400 here (HummingbirdWebSocket writes that itself), and a
                // proxy does not pass a 400 on to another node. A connection closed before any answer is what
                // `proxy_next_upstream error` does pass on: nginx tries the next node of the ring and takes this one
                // out for `fail_timeout`, so a draining node's rooms move at once (deploy/nginx/duet-cluster.conf). A
                // client without a proxy sees a failed connection and retries, as it would a 400.
                await context.channel.closeNow()
                return .dontUpgrade
            }
            // Only a check here: a slot taken now would leak if the client hung up before the upgrade completed.
            if gate.capRefusal(request, context: context, entry: .ws) != nil { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            // The slot is taken by the connection itself and given back when it ends, however it ends.
            let ticket: ConnectionLimiter.Ticket
            switch gate.admit(context.request, context: context.requestContext, entry: .ws) {
            case .success(let admitted): ticket = admitted
            case .failure(let refusal):
                // Filled up since the check: what WebSocket has for 503 + Retry-After.
                try? await outbound.close(.init(codeNumber: 1013), reason: refusal.message)
                return
            }
            defer { gate.connections.release(ticket) }
            let channel = context.requestContext.channel
            try await serve(inbound: inbound, outbound: outbound, abort: { channel.close() })
        }
    }

    /// Refused upgrades fall through to the HTTP router: explain the refusal with a status.
    func registerRefusals(on router: Router<DuetRequestContext>) {
        router.get("/ws") { request, context -> Response in
            if blocked() { return .text(.forbidden, "WebSocket is disabled on this server; use /sse") }
            if let refusal = gate.refusal(request, context: context, entry: .ws, consume: false) { return refusal.response }
            if hub.isDraining { return .text(.serviceUnavailable, "server is draining; reconnect shortly") }
            if let refusal = gate.capRefusal(request, context: context, entry: .ws) { return refusal.response }
            if request.headers[.upgrade]?.lowercased() == "websocket" {
                return .text(.tooManyRequests, "too many connection attempts; back off and retry")
            }
            return .text(.upgradeRequired, "this endpoint speaks WebSocket")
        }
    }

    /// Rethrows what ended the inbound stream, so that the WebSocket layer closes with the code that names it
    /// (1007 for a text message that is not UTF-8, 1009 for a message past the socket's cap) instead of 1000.
    private func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, abort: @escaping @Sendable () -> Void) async throws {
        let writer = WebSocketWriter(abort: abort) { item in
            switch item {
            case .text(let text):
                do { try await outbound.write(.text(text)) } catch { return false }
                return true
            case .close(let code, let reason):
                try? await outbound.close(.init(codeNumber: Int(code.rawValue)), reason: reason)
                return false
            }
        }
        let id = hub.open(.ws, sink: writer.sink)
        var reason = "client_closed"
        var failure: (any Error)?
        do {
            for try await message in inbound.messages(maxSize: Self.socketMessageCap) {
                await writer.handlingOwnMessage {
                    switch message {
                    case .text(let text) where text.utf8.count > ProtocolLimits.maxMessageBytes:
                        hub.refuseOversize(id)
                    case .text(let text):
                        hub.receive(Array(text.utf8), from: id)
                    case .binary(let buffer) where buffer.readableBytes > ProtocolLimits.maxMessageBytes:
                        hub.refuseOversize(id)
                    case .binary(let buffer):
                        // Accepted for clients that send UTF-8 JSON in binary frames.
                        hub.receive(Array(buffer.readableBytesView), from: id)
                    }
                }
            }
        } catch {
            reason = "socket_error"
            failure = error
        }
        // Ends the writer too: the hub finishes the sink. What it queued until now still goes out, before the close.
        hub.closed(id, reason: reason)
        await writer.flushBeforeClose()
        if let failure { throw failure }
    }
}
