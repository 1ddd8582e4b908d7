import DuetProtocol
import NIOCore
import NIOWebSocket
import Testing

@testable import DuetServer

/// The RFC 6455 rules the server's own WebSocket handler enforces (HummingbirdWebSocket did this before), one frame
/// at a time.
@Suite struct WebSocketMessageAssemblerTests {
    static let key = WebSocketMaskingKey([0x12, 0x34, 0x56, 0x78])!

    static func frame(_ opcode: WebSocketOpcode, _ bytes: [UInt8], fin: Bool = true, masked: Bool = true, rsv1: Bool = false)
        -> WebSocketFrame
    {
        var data = ByteBuffer(bytes: bytes)
        if masked { data.webSocketMask(key) }
        return WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, maskKey: masked ? key : nil, data: data)
    }

    static func frame(_ opcode: WebSocketOpcode, _ text: String, fin: Bool = true) -> WebSocketFrame {
        frame(opcode, Array(text.utf8), fin: fin)
    }

    @Test func aMaskedTextFrameIsAMessage() {
        var assembler = WebSocketMessageAssembler()
        #expect(assembler.receive(Self.frame(.text, #"{"v":1}"#)) == .message(Array(#"{"v":1}"#.utf8)))
        #expect(assembler.receive(Self.frame(.binary, [0xff, 0x00])) == .message([0xff, 0x00]))
    }

    @Test func fragmentsMakeOneMessageEvenWhenACharacterIsSplitBetweenThem() {
        var assembler = WebSocketMessageAssembler()
        let text = Array("héllo".utf8)  // é is two bytes: split it
        #expect(assembler.receive(Self.frame(.text, Array(text[0..<2]), fin: false)) == .incomplete)
        // A ping between fragments is allowed and answered.
        guard case .ping = assembler.receive(Self.frame(.ping, [1])) else {
            Issue.record("ping between fragments")
            return
        }
        #expect(assembler.receive(Self.frame(.continuation, Array(text[2..<4]), fin: false)) == .incomplete)
        #expect(assembler.receive(Self.frame(.continuation, Array(text[4...]))) == .message(text))
    }

    @Test func protocolErrorsAreNamed() {
        func verdict(_ frames: WebSocketFrame...) -> WebSocketMessageAssembler.Verdict {
            var assembler = WebSocketMessageAssembler()
            return frames.map { assembler.receive($0) }.last!
        }
        #expect(verdict(Self.frame(.text, Array("x".utf8), masked: false)) == .protocolError("client frames must be masked"))
        #expect(verdict(Self.frame(.text, Array("x".utf8), rsv1: true)) == .protocolError("reserved bits set without an extension"))
        #expect(verdict(Self.frame(.continuation, "x")) == .protocolError("continuation frame without a message"))
        #expect(
            verdict(Self.frame(.text, "a", fin: false), Self.frame(.text, "b"))
                == .protocolError("a new message began before the last one ended"))
        #expect(verdict(Self.frame(.ping, [1], fin: false)) == .protocolError("fragmented control frame"))
        #expect(verdict(Self.frame(.ping, [UInt8](repeating: 0, count: 126))) == .protocolError("control frame longer than 125 bytes"))
        #expect(
            verdict(Self.frame(WebSocketOpcode(encodedWebSocketOpcode: 3)!, [1]))
                == .protocolError("unknown opcode WebSocketOpcode.unknownNonControl(3)"))
        #expect(verdict(Self.frame(.connectionClose, [0x03])) == .protocolError("a close payload of one byte"))
        #expect(verdict(Self.frame(.connectionClose, [0x03, 0xed])) == .protocolError("close code 1005 may not be sent"))
    }

    @Test func textThatIsNotUTF8IsRefusedAndBinaryIsNot() {
        var assembler = WebSocketMessageAssembler()
        #expect(assembler.receive(Self.frame(.text, [0x7b, 0xc3, 0x28, 0x7d])) == .invalidUTF8)
        #expect(assembler.receive(Self.frame(.binary, [0x7b, 0xc3, 0x28, 0x7d])) == .message([0x7b, 0xc3, 0x28, 0x7d]))
        #expect(assembler.receive(Self.frame(.connectionClose, [0x03, 0xe8, 0xc3, 0x28])) == .invalidUTF8)
        #expect(assembler.receive(Self.frame(.connectionClose, [0x03, 0xe8] + Array("bye".utf8))) == .close(code: 1000))
        #expect(assembler.receive(Self.frame(.connectionClose, [])) == .close(code: nil))
    }

    /// Refused as soon as it grows past the limit; the rest of it is dropped, and the next message is read normally.
    @Test func anOversizeMessageIsRefusedAsItGrowsAndItsRestDiscarded() {
        var assembler = WebSocketMessageAssembler(limit: 10)
        #expect(assembler.receive(Self.frame(.text, "123456", fin: false)) == .incomplete)
        #expect(assembler.receive(Self.frame(.continuation, "78901", fin: false)) == .oversize)
        #expect(assembler.receive(Self.frame(.continuation, "more", fin: false)) == .incomplete)
        #expect(assembler.receive(Self.frame(.continuation, "end")) == .incomplete)
        #expect(assembler.receive(Self.frame(.text, "ok")) == .message(Array("ok".utf8)))
        #expect(assembler.receive(Self.frame(.text, "12345678901")) == .oversize)
        #expect(assembler.receive(Self.frame(.text, "ok")) == .message(Array("ok".utf8)))
    }
}
