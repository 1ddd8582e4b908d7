import DuetLock
import DuetTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A listening socket on 127.0.0.1 that answers one connection with fixed bytes, then closes it or keeps it open and
/// silent: a server misbehaving in a way `duet serve` never does, for client-side tests.
final class ScriptedHTTPServer: Sendable {
    let port: Int
    private let listener: Int32
    private final class Accepted: Sendable { let fd = Mutex<Int32>(-1) }
    private let accepted = Accepted()

    /// `then`: what happens once `answer` is written.
    enum Then: Sendable { case close, staySilent }

    init(answer: String, then: Then) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 4) == 0 else {
            Glibc.close(fd)
            throw TestFailure("bind/listen: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
        listener = fd
        let accepted = self.accepted
        Thread.detachNewThread {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return }
            accepted.fd.withLock { $0 = connection }
            // The request, up to the end of its head.
            var request: [UInt8] = []
            var byte: UInt8 = 0
            while !request.suffix(4).elementsEqual([13, 10, 13, 10]), recv(connection, &byte, 1, 0) == 1 { request.append(byte) }
            let bytes = Array(answer.utf8)
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if case .close = then { shutdown(connection, Int32(SHUT_RDWR)) }
        }
    }

    var baseURL: String { "http://127.0.0.1:\(port)/" }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        let connection = accepted.fd.withLock { $0 }
        if connection >= 0 { Glibc.close(connection) }
    }
}
