import DuetProtocol
import DuetRooms
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

@testable import DuetServer

/// One `/ws` connection's handler on an in-memory channel, with a real hub: what it writes, when it flushes, and
/// that the hub never writes to a socket itself.
@Suite struct WebSocketConnectionTests {
    static func hub(authorities: SignalingCore.Authorities = LimitsTests.authorities()) -> SessionHub {
        SessionHub(
            core: SignalingCore(settings: .init(), authorities: authorities, seed: 1), metrics: ServerMetrics(),
            logger: Logger(label: "test"), messageRate: nil)
    }

    static func gate(perAddress: Int = 100, total: Int = 100) -> Gatekeeper {
        Gatekeeper(
            origins: OriginPolicy(allowed: []), addresses: ClientAddressResolver(trusted: [], header: .xForwardedFor),
            upgrades: IPRateLimiter(rule: .init(capacity: 10, refillPerSecond: 1), enabled: false),
            sse: IPRateLimiter(rule: .init(capacity: 10, refillPerSecond: 1), enabled: false),
            api: IPRateLimiter(rule: .init(capacity: 10, refillPerSecond: 1), enabled: false),
            connections: ConnectionLimiter(limits: .init(perAddress: perAddress, total: total)), metrics: ServerMetrics())
    }

    /// Counts flushes reaching the socket.
    final class FlushCounter: ChannelOutboundHandler {
        typealias OutboundIn = WebSocketFrame
        var flushes = 0
        func flush(context: ChannelHandlerContext) {
            flushes += 1
            context.flush()
        }
    }

    /// One connection: its channel, its flush counter, and the limiter whose slot it holds.
    struct Connection {
        let channel: EmbeddedChannel
        let counter: FlushCounter
        let limiter: ConnectionLimiter

        init(hub: SessionHub, pingInterval: TimeAmount = .seconds(12), loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws {
            limiter = ConnectionLimiter(limits: .init(perAddress: 10, total: 10))
            counter = FlushCounter()
            channel = EmbeddedChannel(loop: loop)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
            let handler = WebSocketConnectionHandler(
                hub: hub, settings: .init(pingInterval: pingInterval), limiter: limiter,
                admission: limiter.admit("127.0.0.1").mapError { _ in Gatekeeper.Refusal(status: .serviceUnavailable, message: "full") })
            try channel.pipeline.syncOperations.addHandlers([counter, handler])
        }

        /// One frame read, in the middle of a read burst (`endOfRead` ends it).
        func send(_ text: String, fin: Bool = true) throws { try send(WebSocketMessageAssemblerTests.frame(.text, text, fin: fin)) }

        func send(_ frame: WebSocketFrame) throws { channel.pipeline.fireChannelRead(frame) }

        /// Ends a read burst, as the socket does after it read what was there.
        func endOfRead() { channel.pipeline.fireChannelReadComplete() }

        /// Every frame written so far: (opcode, text).
        func written() throws -> [(WebSocketOpcode, String)] {
            var frames: [(WebSocketOpcode, String)] = []
            while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
                var data = frame.data
                if frame.opcode == .connectionClose, let code = data.readWebSocketErrorCode() {
                    frames.append((frame.opcode, "\(UInt16(webSocketErrorCode: code)) \(String(buffer: data))"))
                } else {
                    frames.append((frame.opcode, String(buffer: data)))
                }
            }
            return frames
        }

        func texts() throws -> [String] { try written().filter { $0.0 == .text }.map(\.1) }
    }

    static let ping = #"{"v":1,"type":"ping","payload":{"ts":1}}"#

    @Test func aMessageIsAnsweredInTheSameReadAndABurstIsFlushedOnce() throws {
        let connection = try Connection(hub: Self.hub())
        for _ in 0..<3 { try connection.send(Self.ping) }
        #expect(connection.counter.flushes == 0, "nothing is flushed before the read burst ends")
        connection.endOfRead()
        #expect(try connection.texts().filter { $0.contains(#""pong""#) }.count == 3)
        #expect(connection.counter.flushes == 1, "one flush per read burst, not one per frame")
    }

    /// A peer's message is written by the receiver's own event loop, after the hub's lock: never inside `yield`.
    /// A write inside the lock can re-enter the pipeline and reach the hub again (a deadlock).
    @Test func aPeersMessageIsWrittenOnTheReceiversLoopNotInsideTheHub() throws {
        let authorities = LimitsTests.authorities()
        let hub = Self.hub(authorities: authorities)
        let rid = authorities.roomIds.issue()
        let loopA = EmbeddedEventLoop()
        let loopB = EmbeddedEventLoop()
        let a = try Connection(hub: hub, loop: loopA)
        let b = try Connection(hub: hub, loop: loopB)
        let join = #"{"v":1,"type":"join","rid":"\#(rid)","payload":{}}"#
        try a.send(join)
        a.endOfRead()
        loopA.run()
        try b.send(join)
        b.endOfRead()
        loopB.run()
        loopA.run()
        let aJoined = try a.texts()
        let bJoined = try b.texts()
        #expect(aJoined.contains { $0.contains(#""joined""#) } && bJoined.contains { $0.contains(#""joined""#) }, "\(aJoined) \(bJoined)")
        try a.send(#"{"v":1,"type":"offer","rid":"\#(rid)","payload":{"sdp":"v=0 from a"}}"#)
        a.endOfRead()
        #expect(try b.texts().isEmpty, "the hub wrote to B's socket from A's read")
        loopB.run()
        let relayed = try b.texts()
        #expect(relayed.count == 1 && relayed[0].contains("v=0 from a"), "\(relayed)")
        #expect(b.counter.flushes >= 1)
    }

    @Test func whileTheSocketIsFullMessagesWaitInOrderAndCountAgainstTheBound() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        connection.channel.isWritable = false
        for index in 0..<5 { try connection.send(#"{"v":1,"type":"ping","payload":{"ts":\#(index)}}"#) }
        connection.endOfRead()
        #expect(try connection.texts().isEmpty)
        connection.channel.isWritable = true
        connection.channel.pipeline.fireChannelWritabilityChanged()
        let pongs = try connection.texts()
        #expect(pongs.count == 5)
        #expect(pongs.enumerated().allSatisfy { $0.element.contains(#""ts":\#($0.offset)"#) }, "\(pongs)")
    }

    /// A socket whose write fails ends the connection (the channel closes, as NIO closes one on a write error).
    final class ClosesOnSecondText: ChannelOutboundHandler {
        typealias OutboundIn = WebSocketFrame
        typealias OutboundOut = WebSocketFrame
        var texts = 0
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if unwrapOutboundIn(data).opcode == .text {
                texts += 1
                if texts == 2 {
                    promise?.fail(ChannelError.ioOnClosedChannel)
                    context.close(promise: nil)
                    return
                }
            }
            context.write(data, promise: promise)
        }
    }

    /// The connection ends in the middle of writing its backlog (the second write fails and the channel closes, which
    /// clears the backlog): the rest is dropped, the hub and the slot are released, and nothing indexes into the
    /// cleared backlog (it did: "Range requires lowerBound <= upperBound" crashed a clean-clone run's test process).
    @Test func aWriteThatEndsTheConnectionMidBacklogDropsTheRest() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        let closer = ClosesOnSecondText()
        try connection.channel.pipeline.syncOperations.addHandler(closer, position: .first)
        connection.channel.isWritable = false
        for index in 0..<5 { try connection.send(#"{"v":1,"type":"ping","payload":{"ts":\#(index)}}"#) }
        connection.endOfRead()
        #expect(try connection.texts().isEmpty)
        connection.channel.isWritable = true
        connection.channel.pipeline.fireChannelWritabilityChanged()
        #expect(closer.texts == 2, "the first pong written, the second's write ended the connection, no more tried")
        #expect(try connection.texts().count == 1)
        #expect(!connection.channel.isActive)
        #expect(hub.snapshot().connections == 0)
        #expect(connection.limiter.openConnections == 0, "its slot was given back")
    }

    @Test func aClientThatNeverReadsIsCutOffAtTheBound() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        connection.channel.isWritable = false
        for _ in 0..<(OutboundBound.messages + 1) { try connection.send(Self.ping) }
        connection.endOfRead()
        connection.channel.embeddedEventLoop.run()
        #expect(!connection.channel.isActive, "the hub cut the connection off")
        #expect(hub.snapshot().connections == 0)
        #expect(connection.limiter.openConnections == 0, "its slot was given back")
    }

    @Test func theClientsCloseIsAnsweredAfterWhatWasQueuedThenTheSocketCloses() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        try connection.send(Self.ping)
        try connection.send(WebSocketMessageAssemblerTests.frame(.connectionClose, [0x03, 0xe8]))
        connection.endOfRead()
        let frames = try connection.written()
        #expect(frames.map(\.0) == [.text, .connectionClose], "\(frames)")
        #expect(frames.last?.1 == "1000 ")
        #expect(!connection.channel.isActive)
        #expect(hub.snapshot().connections == 0)
    }

    @Test func theHubsCloseIsTheLastFrameAndTheSocketClosesWhenTheClientAnswers() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        try connection.send(
            #"{"v":1,"type":"ping","payload":{"pad":""# + String(repeating: "x", count: ProtocolLimits.maxMessageBytes) + #""}}"#)
        try connection.send(Self.ping)  // read after the close: not answered
        connection.endOfRead()
        let frames = try connection.written()
        #expect(frames.map(\.0) == [.text, .connectionClose], "\(frames)")
        #expect(frames.first?.1.contains("MESSAGE_TOO_LARGE") == true)
        #expect(frames.last?.1 == "1009 message too large")
        #expect(connection.channel.isActive, "waits for the client's close")
        try connection.send(WebSocketMessageAssemblerTests.frame(.connectionClose, [0x03, 0xf1]))
        #expect(!connection.channel.isActive)
    }

    @Test(arguments: [
        ("unmasked", WebSocketMessageAssemblerTests.frame(.text, Array("x".utf8), masked: false), "1002 protocol error"),
        ("RSV1", WebSocketMessageAssemblerTests.frame(.text, Array("x".utf8), rsv1: true), "1002 protocol error"),
        ("not UTF-8", WebSocketMessageAssemblerTests.frame(.text, [0xc3, 0x28]), "1007 invalid UTF-8"),
    ])
    func aBrokenFrameFailsTheConnectionWithItsCode(_ name: String, _ frame: WebSocketFrame, _ close: String) throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        try connection.send(frame)
        let frames = try connection.written()
        #expect(frames.map(\.0) == [.connectionClose], "\(name): \(frames)")
        #expect(frames.first?.1 == close, "\(name)")
        #expect(!connection.channel.isActive, "\(name)")
        #expect(hub.snapshot().connections == 0, "\(name)")
    }

    @Test func anUnansweredPingClosesTheConnectionAfterOneMoreInterval() throws {
        let connection = try Connection(hub: Self.hub(), pingInterval: .seconds(1))
        connection.channel.embeddedEventLoop.advanceTime(by: .milliseconds(999))
        #expect(try connection.written().isEmpty)
        connection.channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(try connection.written().map(\.0) == [.ping])
        try connection.send(WebSocketMessageAssemblerTests.frame(.pong, []))
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try connection.written().map(\.0) == [.ping], "answered: pinged again")
        connection.channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(try connection.written().map(\.1) == ["1001 ping timeout"])
        #expect(!connection.channel.isActive)
    }

    /// Swallows writes and never completes them: a client whose socket is full and never drains.
    final class BlackHole: ChannelOutboundHandler {
        typealias OutboundIn = WebSocketFrame
        var held: [EventLoopPromise<Void>] = []
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if let promise { held.append(promise) }
        }
        func flush(context: ChannelHandlerContext) {}
    }

    /// A failed connection (here: its ping unanswered) ends even when its close frame never reaches the socket, and
    /// the hub and the connection cap hear of it.
    @Test func aFailedConnectionEndsEvenWhenItsCloseFrameIsNeverWritten() throws {
        let hub = Self.hub()
        let limiter = ConnectionLimiter(limits: .init(perAddress: 10, total: 10))
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let hole = BlackHole()
        let handler = WebSocketConnectionHandler(
            hub: hub, settings: .init(pingInterval: .seconds(1), closeTimeout: .seconds(5)), limiter: limiter,
            admission: limiter.admit("127.0.0.1").mapError { _ in Gatekeeper.Refusal(status: .serviceUnavailable, message: "full") })
        try channel.pipeline.syncOperations.addHandlers([hole, handler])
        channel.embeddedEventLoop.advanceTime(by: .seconds(2))  // ping, then the timeout: close 1001 queued forever
        #expect(channel.isActive, "still waiting for its close frame to be written")
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!channel.isActive)
        #expect(hub.snapshot().connections == 0)
        #expect(limiter.openConnections == 0)
        for promise in hole.held { promise.fail(ChannelError.ioOnClosedChannel) }
    }

    /// A handler added to a channel that already closed (the client left during the upgrade) opens no session, and
    /// its slot goes back when it is freed.
    @Test func aHandlerOnAClosedChannelHoldsNothing() throws {
        let hub = Self.hub()
        let limiter = ConnectionLimiter(limits: .init(perAddress: 10, total: 10))
        do {
            let channel = EmbeddedChannel()
            let handler = WebSocketConnectionHandler(
                hub: hub, settings: .init(pingInterval: .seconds(12)), limiter: limiter,
                admission: limiter.admit("127.0.0.1").mapError { _ in Gatekeeper.Refusal(status: .serviceUnavailable, message: "full") })
            try channel.pipeline.syncOperations.addHandler(handler)
            #expect(hub.snapshot().connections == 0)
            _ = try? channel.finish()
        }
        #expect(limiter.openConnections == 0)
    }

    @Test func aClientThatHalfClosesIsClosed() throws {
        let hub = Self.hub()
        let connection = try Connection(hub: hub)
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(!connection.channel.isActive)
        #expect(hub.snapshot().connections == 0)
    }

    @Test func quiescingClosesWithGoingAway() throws {
        let connection = try Connection(hub: Self.hub())
        connection.channel.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        #expect(try connection.written().map(\.1) == ["1001 going_away"])
        #expect(!connection.channel.isActive)
    }

    @Test func noSlotLeftAtTheUpgradeClosesWith1013AndTakesNothing() throws {
        let hub = Self.hub()
        let limiter = ConnectionLimiter(limits: .init(perAddress: 1, total: 1))
        _ = limiter.admit("127.0.0.1")
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let handler = WebSocketConnectionHandler(
            hub: hub, settings: .init(pingInterval: .seconds(12)), limiter: limiter,
            admission: limiter.admit("127.0.0.1").mapError { _ in Gatekeeper.Refusal(status: .serviceUnavailable, message: "full") })
        try channel.pipeline.syncOperations.addHandler(handler)
        let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        var data = close.data
        #expect(data.readWebSocketErrorCode().map { UInt16(webSocketErrorCode: $0) } == 1013)
        #expect(!channel.isActive)
        #expect(hub.snapshot().connections == 0)
        #expect(limiter.openConnections == 1)
    }
}
