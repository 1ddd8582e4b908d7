import DuetTestSupport
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A UDP socket on 127.0.0.1 for talking to the STUN server by hand. Blocking calls run on threads of their own
/// (`RawSocket.offPool`); every receive has a timeout.
final class UDPProbe: Sendable {
    let fd: Int32
    let port: Int

    /// `reuseAddress`: SO_REUSEADDR, as coturn sets it — a second socket with it too could then share the port.
    init(bindPort: Int = 0, reuseAddress: Bool = false) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        if reuseAddress {
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(bindPort).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else {
            Glibc.close(fd)
            throw TestFailure("bind: \(errno)")
        }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.fd = fd
        port = Int(UInt16(bigEndian: local.sin_port))
        var timeout = timeval(tv_sec: 3, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    func send(_ bytes: [UInt8], toPort port: Int) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// The next datagram, or nil after 3 s.
    func receive() async throws -> [UInt8]? {
        let fd = self.fd
        return try await RawSocket.offPool {
            var buffer = [UInt8](repeating: 0, count: 2048)
            let count = recv(fd, &buffer, buffer.count, 0)
            return count > 0 ? Array(buffer.prefix(count)) : nil
        }
    }
}
