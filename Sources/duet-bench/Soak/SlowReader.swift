import DuetProtocol
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A WebSocket client that upgrades, joins and then reads nothing (a frozen tab), on a plain socket with a small
/// receive buffer: what the server sends it waits in the kernel and in the server's bounded outbound queue. The
/// socket's blocking calls run on a thread of their own, never on the concurrency pool (two threads on this machine).
final class SlowReader: Sendable {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    static func open(base: String, joining rid: String) async throws -> SlowReader {
        guard let port = URL(string: base)?.port else { throw BenchError("slow reader: no port in \(base)") }
        let join = Envelope(.join, rid: rid, payload: try JSONValue(encoding: JoinPayload(device: "soak-frozen"))).encodedString()
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.connect(port: port, join: join) })
            }
        }
    }

    private static func connect(port: Int, join: String) throws -> SlowReader {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchError("slow reader: socket: errno \(errno)") }
        var small: Int32 = 4_096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let reader = SlowReader(fd: fd)
        guard connected == 0 else {
            reader.close()
            throw BenchError("slow reader: connect: errno \(errno)")
        }
        do {
            try reader.write(
                Array(
                    ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + "Sec-WebSocket-Key: c29hay1mcm96ZW4tdGFiIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
            let head = try reader.readHead()
            guard head.hasPrefix("HTTP/1.1 101") else { throw BenchError("slow reader: upgrade answered \(head.prefix(40))") }
            try reader.write(maskedTextFrame(join))
        } catch {
            reader.close()
            throw error
        }
        return reader
    }

    /// A client's frame is masked (RFC 6455 §5.3); the key need not be secret here.
    static func maskedTextFrame(_ text: String) -> [UInt8] {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = (0..<4).map { _ in UInt8.random(in: 0...255) }
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    private func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw BenchError("slow reader: send: errno \(errno)") }
            sent += n
        }
    }

    /// The response head, byte by byte so that nothing after it is read.
    private func readHead() throws -> String {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            guard head.count < 4_096, recv(fd, &byte, 1, 0) == 1 else { throw BenchError("slow reader: no upgrade answer") }
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self)
    }

    func close() { _ = Glibc.close(fd) }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
