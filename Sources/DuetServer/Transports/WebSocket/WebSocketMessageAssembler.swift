import DuetProtocol
import NIOCore
import NIOWebSocket

/// The WebSocket rules (RFC 6455) a client's frames must follow, as a pure value: one frame in, one verdict out.
/// The connection handler acts on the verdict; this never touches a channel, so every rule is tested on its own.
///
/// There are no extensions (no compression), so any RSV bit is a protocol error; a client must mask every frame;
/// control frames are short and never fragmented; data frames are a first frame and continuations. A message is
/// refused as soon as it grows past the protocol's limit, not when it ends: nothing bigger is ever buffered.
struct WebSocketMessageAssembler {
    enum Verdict: Equatable {
        /// A fragment of a message that is not complete yet.
        case incomplete
        /// A complete text (valid UTF-8) or binary message.
        case message([UInt8])
        /// The message grew past `ProtocolLimits.maxMessageBytes`; what follows of it is discarded.
        case oversize
        case ping(ByteBuffer)
        case pong
        /// The client's close frame: its code (nil when it sent none).
        case close(code: UInt16?)
        /// 1002: RSV bits, an unmasked frame, an unknown opcode, a bad continuation, a fragmented or long control frame.
        case protocolError(String)
        /// 1007: a text message (or a close reason) that is not UTF-8.
        case invalidUTF8
    }

    private enum Partial {
        case none
        case collecting(isText: Bool, bytes: ByteBuffer)
        /// An oversize message's remaining fragments are dropped until its last one.
        case discarding
    }

    private var partial = Partial.none
    let limit: Int

    init(limit: Int = ProtocolLimits.maxMessageBytes) { self.limit = limit }

    mutating func receive(_ frame: WebSocketFrame) -> Verdict {
        if frame.rsv1 || frame.rsv2 || frame.rsv3 { return .protocolError("reserved bits set without an extension") }
        guard frame.maskKey != nil else { return .protocolError("client frames must be masked") }
        switch frame.opcode {
        case .ping, .pong, .connectionClose:
            guard frame.fin else { return .protocolError("fragmented control frame") }
            guard frame.length <= 125 else { return .protocolError("control frame longer than 125 bytes") }
            return control(frame)
        case .text, .binary:
            if case .none = partial {} else { return .protocolError("a new message began before the last one ended") }
            return data(frame.unmaskedData, isText: frame.opcode == .text, fin: frame.fin)
        case .continuation:
            switch partial {
            case .none:
                return .protocolError("continuation frame without a message")
            case .discarding:
                if frame.fin { partial = .none }
                return .incomplete
            case .collecting(let isText, var bytes):
                partial = .none  // the buffer is uniquely owned below, so appending does not copy
                guard bytes.readableBytes + frame.length <= limit else { return oversize(fin: frame.fin) }
                var fragment = frame.unmaskedData
                bytes.writeBuffer(&fragment)
                return data(bytes, isText: isText, fin: frame.fin)
            }
        default:
            return .protocolError("unknown opcode \(frame.opcode)")
        }
    }

    private mutating func data(_ bytes: ByteBuffer, isText: Bool, fin: Bool) -> Verdict {
        guard bytes.readableBytes <= limit else { return oversize(fin: fin) }
        guard fin else {
            partial = .collecting(isText: isText, bytes: bytes)
            return .incomplete
        }
        let message = Array(bytes.readableBytesView)
        if isText, !Self.isUTF8(message) { return .invalidUTF8 }
        return .message(message)
    }

    private mutating func oversize(fin: Bool) -> Verdict {
        partial = fin ? .none : .discarding
        return .oversize
    }

    private func control(_ frame: WebSocketFrame) -> Verdict {
        switch frame.opcode {
        case .ping: return .ping(frame.unmaskedData)
        case .pong: return .pong
        default:
            var payload = frame.unmaskedData
            guard payload.readableBytes > 0 else { return .close(code: nil) }
            guard payload.readableBytes >= 2, let code = payload.readInteger(as: UInt16.self) else {
                return .protocolError("a close payload of one byte")
            }
            guard Self.isValidCloseCode(code) else { return .protocolError("close code \(code) may not be sent") }
            guard Self.isUTF8(Array(payload.readableBytesView)) else { return .invalidUTF8 }
            return .close(code: code)
        }
    }

    /// RFC 6455 §7.4: codes an endpoint may put on the wire.
    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011, 3000...4999: true
        default: false
        }
    }

    static func isUTF8(_ bytes: [UInt8]) -> Bool {
        // Signaling is almost all ASCII: skip the decoder for it.
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        return String(validating: bytes, as: UTF8.self) != nil
    }
}
