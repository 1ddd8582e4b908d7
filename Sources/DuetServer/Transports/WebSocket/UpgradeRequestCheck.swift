import NIOCore
import NIOHTTP1

/// Looks at a connection's first request before NIO's upgrader does, and answers the upgrades it would lose.
///
/// NIO's typed upgrader drops the request head of an upgrade it does not take: a WebSocket upgrade without its one
/// `Sec-WebSocket-Key`, of another version than 13, or without `Connection: Upgrade`, and any other protocol (`h2c`)
/// — the client heard nothing and the connection stayed open. Here a broken WebSocket upgrade is answered (400, or
/// 426 with the version this server speaks, RFC 6455 §4.4) and closed; an upgrade to a protocol Duet does not speak
/// is served as the plain HTTP/1.1 request it also is (RFC 9110 §7.8: a server may ignore `Upgrade`), the connection's
/// last (NIO's HTTP decoder parses nothing after a request that asked to upgrade).
final class UpgradeRequestCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// What to do with a connection's first request head.
    enum Verdict {
        case pass
        /// Served without its upgrade (`Upgrade` removed, `Connection: close`).
        case downgrade(HTTPRequestHead)
        case refuse(HTTPResponseStatus, message: String, extraHeaders: [(String, String)])
    }

    static func verdict(_ head: HTTPRequestHead) -> Verdict {
        let upgrades = head.headers[canonicalForm: "Upgrade"].map { $0.lowercased() }
        guard !upgrades.isEmpty else { return .pass }
        guard upgrades.contains("websocket") else {
            var plain = head
            plain.headers.remove(name: "Upgrade")
            plain.headers.remove(name: "HTTP2-Settings")
            // The HTTP decoder has seen the upgrade and parses nothing after this request: it is the connection's last.
            plain.headers.replaceOrAdd(name: "Connection", value: "close")
            return .downgrade(plain)
        }
        guard head.headers[canonicalForm: "Connection"].contains(where: { $0.lowercased() == "upgrade" }) else {
            return .refuse(.badRequest, message: "a WebSocket upgrade needs Connection: Upgrade", extraHeaders: [])
        }
        guard head.headers[canonicalForm: "Sec-WebSocket-Key"].count == 1 else {
            return .refuse(.badRequest, message: "a WebSocket upgrade needs exactly one Sec-WebSocket-Key", extraHeaders: [])
        }
        guard head.headers[canonicalForm: "Sec-WebSocket-Version"] == ["13"] else {
            return .refuse(
                .upgradeRequired, message: "this server speaks WebSocket version 13", extraHeaders: [("Sec-WebSocket-Version", "13")])
        }
        return .pass
    }

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }  // the rest of a refused request: the connection is closing
        guard case .head(let head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        switch Self.verdict(head) {
        case .pass:
            context.fireChannelRead(data)
        case .downgrade(let plain):
            context.fireChannelRead(wrapInboundOut(.head(plain)))
        case .refuse(let status, let message, let extra):
            refused = true
            var body = context.channel.allocator.buffer(capacity: message.utf8.count + 1)
            body.writeString(message + "\n")
            var headers = HTTPHeaders([
                ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", "\(body.readableBytes)"), ("Connection", "close"),
                ("Server", DuetServer.serverName),
            ])
            headers.add(contentsOf: extra)
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        // Only a connection's first request can upgrade: the rest flow past.
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
