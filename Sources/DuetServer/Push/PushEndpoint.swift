import DuetProtocol
import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A push service URL a browser handed over (`PushSubscription.endpoint`), checked before it is stored and again
/// before every request: the server makes requests to addresses its clients choose, so without these rules a client
/// could make it knock on the operator's own network (SSRF).
public struct PushEndpoint: Sendable, Equatable {
    public static let maxLength = 2048
    public let url: URL
    /// Lower-cased host, brackets removed from an IPv6 literal.
    public let host: String
    public let port: Int
    /// `https://host[:port]`: the VAPID `aud` (RFC 8292 §2).
    public let origin: String

    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Only the URL's shape: https, a host, no credentials or fragment, bounded length.
    public init(_ text: String) throws(Refusal) {
        guard text.utf8.count <= Self.maxLength else { throw Refusal("the push endpoint is longer than \(Self.maxLength) bytes") }
        guard let components = URLComponents(string: text), let url = components.url else {
            throw Refusal("the push endpoint is not a URL")
        }
        guard components.scheme?.lowercased() == "https" else { throw Refusal("the push endpoint must be an https URL") }
        guard var host = components.host, !host.isEmpty else { throw Refusal("the push endpoint has no host") }
        // One spelling of the host, the one the connection is pinned by (`dnsOverride` matches the URL's host
        // exactly): lower-case letters, digits, dots and hyphens, or an IP literal. "PUSH.example" or a
        // percent-encoded name would miss the pin and be resolved again, after the check.
        let literal = host.hasPrefix("[") && host.hasSuffix("]") || IPAddress(host) != nil
        guard literal || host.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x2D })
        else {
            throw Refusal("the push endpoint's host must be written in lower case letters, digits, dots and hyphens")
        }
        guard components.user == nil, components.password == nil else { throw Refusal("the push endpoint must not carry credentials") }
        guard components.fragment == nil else { throw Refusal("the push endpoint must not have a fragment") }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? 443
        guard (1...65535).contains(port) else { throw Refusal("the push endpoint's port is out of range") }
        self.url = url
        self.host = host
        self.port = port
        let hostPart = host.contains(":") ? "[\(host)]" : host
        origin = port == 443 ? "https://\(hostPart)" : "https://\(hostPart):\(port)"
    }
}

/// Which addresses a push may go to. Push services live on the public internet; loopback, private, link-local,
/// shared (CGNAT), multicast and reserved ranges are the operator's own network or nobody's. `allowPrivate`
/// (`--push-allow-private-endpoints`) is for labs and tests whose push service runs beside the server.
public struct PushDestinationPolicy: Sendable {
    public var allowPrivate: Bool

    public init(allowPrivate: Bool) { self.allowPrivate = allowPrivate }

    static let refusedRanges: [CIDRRange] = [
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
        "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
        "::/128", "::1/128", "64:ff9b::/96", "fc00::/7", "fe80::/10", "ff00::/8",
    ].compactMap(CIDRRange.init)

    /// Why `address` may not be a destination, nil if it may.
    public func refusal(_ address: IPAddress) -> String? {
        guard !allowPrivate else { return nil }
        guard let range = Self.refusedRanges.first(where: { $0.contains(address) }) else { return nil }
        return "the push endpoint resolves to \(address), in \(range) (loopback, private, link-local or reserved); "
            + "a server that must reach such a push service runs with --push-allow-private-endpoints"
    }

    /// The address to connect to: every address the host resolves to must be allowed (a name with one private
    /// address is refused, whichever address a connection would pick). The caller connects to the address returned,
    /// so a DNS answer that changes between this check and the connection cannot redirect it.
    public func destination(for endpoint: PushEndpoint) async throws -> IPAddress {
        let addresses: [IPAddress]
        if let literal = IPAddress(endpoint.host) {
            addresses = [literal]
        } else {
            addresses = try await Self.resolveWithin(endpoint.host, seconds: 5)
        }
        guard let first = addresses.first else { throw PushEndpoint.Refusal("the push endpoint's host \(endpoint.host) has no address") }
        for address in addresses {
            if let reason = refusal(address) { throw PushEndpoint.Refusal(reason) }
        }
        return first
    }

    /// A resolver that does not answer does not hold a delivery (and its slot) for long.
    static func resolveWithin(_ host: String, seconds: Int) async throws -> [IPAddress] {
        try await withThrowingTaskGroup(of: [IPAddress]?.self) { group in
            group.addTask { try await resolve(host) }
            group.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let addresses = first else {
                throw PushEndpoint.Refusal("the push endpoint's host \(host) did not resolve within \(seconds) s")
            }
            return addresses
        }
    }

    /// getaddrinfo(3) on NIO's blocking-work pool: it blocks for as long as DNS takes.
    static func resolve(_ host: String) async throws -> [IPAddress] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var result: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, "443", &hints, &result)
            guard status == 0, let first = result else {
                throw PushEndpoint.Refusal("the push endpoint's host \(host) does not resolve (\(String(cString: gai_strerror(status))))")
            }
            defer { freeaddrinfo(first) }
            var addresses: [IPAddress] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
                if entry.pointee.ai_family == AF_INET, let raw = entry.pointee.ai_addr {
                    raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
                        var address = inet.pointee.sin_addr
                        _ = inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
                    }
                } else if entry.pointee.ai_family == AF_INET6, let raw = entry.pointee.ai_addr {
                    raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
                        var address = inet6.pointee.sin6_addr
                        _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
                    }
                }
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if let address = IPAddress(text), !addresses.contains(address) { addresses.append(address) }
                cursor = entry.pointee.ai_next
            }
            return addresses
        }
    }
}
