import DuetLock
import DuetTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A bare TCP client for hostile-client tests: what no well-behaved client library will do (stop reading, send
/// invalid UTF-8 or oversized fragments, connect from a chosen loopback address). Blocking calls run on threads of
/// their own (`offPool`), and every read has a timeout.
final class RawSocket: Sendable {
    private let descriptor: Mutex<Int32>

    private init(_ fd: Int32) { descriptor = Mutex(fd) }

    /// - Parameters:
    ///   - source: a local address to bind first (e.g. 127.0.0.2: another client address on the loopback interface).
    ///   - receiveBuffer: `SO_RCVBUF` in bytes, set before connecting: a reader that stops reading fills it fast.
    static func connect(port: Int, host: String = "127.0.0.1", source: String? = nil, receiveBuffer: Int32? = nil) async throws -> RawSocket
    {
        try await offPool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
            if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            if let source {
                var local = try address(source, port: 0)
                let bound = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard bound == 0 else {
                    Glibc.close(fd)
                    throw TestFailure("bind \(source): \(errno)")
                }
            }
            var remote = try address(host, port: port)
            let connected = withUnsafePointer(to: &remote) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                Glibc.close(fd)
                throw TestFailure("connect: \(errno)")
            }
            return RawSocket(fd)
        }
    }

    private static func address(_ text: String, port: Int) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, text, &address.sin_addr) == 1 else { throw TestFailure("bad address \(text)") }
        return address
    }

    func send(_ bytes: [UInt8]) async throws {
        let fd = descriptor.withLock { $0 }
        try await Self.offPool {
            var offset = 0
            while offset < bytes.count {
                let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { throw TestFailure("send: \(errno)") }
                offset += sent
            }
        }
    }

    func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// Up to `count` bytes; empty at end of stream (or when the read timed out).
    func receive(upTo count: Int = 65_536) async throws -> [UInt8] {
        let fd = descriptor.withLock { $0 }
        return try await Self.offPool {
            var buffer = [UInt8](repeating: 0, count: count)
            let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            return received > 0 ? Array(buffer.prefix(received)) : []
        }
    }

    /// Reads until `marker` has arrived (or the stream ends); returns everything read.
    func receive(until marker: String, limit: Int = 1 << 20) async throws -> String {
        var bytes: [UInt8] = []
        while bytes.count < limit {
            let chunk = try await receive()
            if chunk.isEmpty { break }
            bytes += chunk
            if String(decoding: bytes, as: UTF8.self).contains(marker) { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Everything until the stream ends, and whether it ended because the server closed it (recv read end of stream)
    /// (or reset it) or because a read timed out (10 s without a byte: EAGAIN).
    func receiveToEnd() async throws -> (text: String, closedByServer: Bool) {
        let fd = descriptor.withLock { $0 }
        var bytes: [UInt8] = []
        while true {
            let (chunk, received, error) = try await Self.offPool {
                var buffer = [UInt8](repeating: 0, count: 65_536)
                let received = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                return (received > 0 ? Array(buffer.prefix(received)) : [], received, received < 0 ? errno : 0)
            }
            if received <= 0 {
                let timedOut = received < 0 && (error == EAGAIN || error == EWOULDBLOCK)
                return (String(decoding: bytes, as: UTF8.self), !timedOut)
            }
            bytes += chunk
        }
    }

    /// Half-closes: the server reads end of input, and can still write.
    func shutdownWrite() {
        let fd = descriptor.withLock { $0 }
        if fd >= 0 { Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    func close() {
        let fd = descriptor.withLock { fd in
            defer { fd = -1 }
            return fd
        }
        if fd >= 0 { Glibc.close(fd) }
    }

    deinit { close() }

    /// A thread of its own for each blocking call: not the cooperative pool, and not Dispatch's global queue either —
    /// that one is as wide as the CPUs (two here), and blocking it stalls whatever else in the process uses it.
    static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
        }
    }
}

/// WebSocket framing over a `RawSocket` (RFC 6455): client frames are masked.
extension RawSocket {
    static func webSocket(
        port: Int, path: String = "/ws", source: String? = nil, receiveBuffer: Int32? = nil, extraHeaders: String = ""
    ) async throws -> (RawSocket, status: String) {
        let socket = try await connect(port: port, source: source, receiveBuffer: receiveBuffer)
        try await socket.send(
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\(extraHeaders)\r\n")
        let head = try await socket.receive(until: "\r\n\r\n")
        return (socket, String(head.prefix { $0 != "\r" }))
    }

    /// A client frame; `masked: false` and `rsv` make the broken frames a hostile client sends.
    static func frame(opcode: UInt8, _ payload: [UInt8], fin: Bool = true, masked: Bool = true, rsv: UInt8 = 0) -> [UInt8] {
        var bytes: [UInt8] = [(fin ? 0x80 : 0) | (rsv << 4) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: bytes.append(maskBit | UInt8(payload.count))
        case ..<65_536: bytes += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xff)]
        default: bytes += [maskBit | 127] + (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xff) }
        }
        guard masked else { return bytes + payload }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        bytes += mask
        bytes += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return bytes
    }

    func sendText(_ text: String) async throws { try await send(Self.frame(opcode: 1, Array(text.utf8))) }

    /// Server frames (unmasked) read until `predicate` holds for one or the socket ends: (opcode, payload) in order.
    func readFrames(until predicate: (UInt8, [UInt8]) -> Bool) async throws -> [(opcode: UInt8, payload: [UInt8])] {
        var buffer: [UInt8] = []
        var frames: [(UInt8, [UInt8])] = []
        while true {
            while let (frame, used) = Self.parse(buffer) {
                buffer.removeFirst(used)
                frames.append(frame)
                if predicate(frame.0, frame.1) { return frames }
            }
            let chunk = try await receive()
            if chunk.isEmpty { return frames }
            buffer += chunk
        }
    }

    private static func parse(_ bytes: [UInt8]) -> ((UInt8, [UInt8]), Int)? {
        guard bytes.count >= 2 else { return nil }
        var length = Int(bytes[1] & 0x7f)
        var offset = 2
        if length == 126 {
            guard bytes.count >= 4 else { return nil }
            length = Int(bytes[2]) << 8 | Int(bytes[3])
            offset = 4
        } else if length == 127 {
            guard bytes.count >= 10 else { return nil }
            length = bytes[2..<10].reduce(0) { $0 << 8 | Int($1) }
            offset = 10
        }
        guard bytes.count >= offset + length else { return nil }
        return ((bytes[0] & 0x0f, Array(bytes[offset..<offset + length])), offset + length)
    }
}
