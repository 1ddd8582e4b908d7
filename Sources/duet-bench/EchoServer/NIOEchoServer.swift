import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The ceiling: a bare WebSocket echo on SwiftNIO. Every text frame goes straight back to its sender; no
/// parsing, no rooms. Prints its port, then serves until killed.
enum NIOEchoServer {
    static func run(port: Int) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 1 << 20, shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
            upgradePipelineHandler: { channel, _ in channel.pipeline.addHandler(EchoHandler()) })
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4_096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline(withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
            }
            .bind(host: "127.0.0.1", port: port).get()
        FileHandle.standardOutput.write(Data("port \(channel.localAddress?.port ?? 0)\n".utf8))
        try await channel.closeFuture.get()
    }
}

private final class EchoHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: frame.opcode, data: frame.unmaskedData)), promise: nil)
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }
}
