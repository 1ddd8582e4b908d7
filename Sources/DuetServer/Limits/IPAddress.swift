#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address as bytes (4 or 16), parsed by `inet_pton`. IPv4-mapped IPv6 (`::ffff:a.b.c.d`, which a
/// dual-stack listener reports for IPv4 peers) is the IPv4 address.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(_ text: some StringProtocol) {
        var text = String(text).trimmingCharacters(in: " \t\"")
        // "[2001:db8::1]:443" and "[2001:db8::1]" (Forwarded, X-Forwarded-For with port), "1.2.3.4:5678".
        if text.hasPrefix("["), let end = text.firstIndex(of: "]") {
            text = String(text[text.index(after: text.startIndex)..<end])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        guard text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let raw = withUnsafeBytes(of: &v6) { Array($0) }
        bytes = raw.prefix(10).allSatisfy { $0 == 0 } && raw[10] == 0xff && raw[11] == 0xff ? Array(raw.suffix(4)) : raw
    }

    public var isIPv6: Bool { bytes.count == 16 }

    /// What rate limits count: an IPv4 address, or an IPv6 /64 — one subscriber gets a whole /64, so counting single
    /// IPv6 addresses would let anyone spray 2^64 fresh buckets.
    public var rateKey: String {
        guard isIPv6 else { return description }
        return bytes.prefix(8).map { String($0, radix: 16) }.chunked2() + "::/64"
    }

    public var description: String {
        if !isIPv6 { return bytes.map(String.init).joined(separator: ".") }
        return bytes.map { String($0, radix: 16) }.chunked2()
    }
}

extension Array where Element == String {
    /// ["20","1","d","b8"] → "2001:db8" (pairs of bytes as IPv6 groups).
    fileprivate func chunked2() -> String {
        stride(from: 0, to: count, by: 2).map { index -> String in
            let high = Int(self[index], radix: 16) ?? 0
            let low = index + 1 < count ? Int(self[index + 1], radix: 16) ?? 0 : 0
            return String(high << 8 | low, radix: 16)
        }.joined(separator: ":")
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}

/// `a.b.c.d/n` or `x::/n` (a bare address is /32 or /128).
public struct CIDRRange: Sendable, Hashable, CustomStringConvertible {
    public let network: IPAddress
    public let prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = IPAddress(parts[0]) else { return nil }
        let maximum = address.bytes.count * 8
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...maximum).contains(length) else { return nil }
            prefixLength = length
        } else {
            prefixLength = maximum
        }
        network = address
    }

    public func contains(_ address: IPAddress) -> Bool {
        guard address.bytes.count == network.bytes.count else { return false }
        var remaining = prefixLength
        for index in network.bytes.indices where remaining > 0 {
            let bits = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - bits))
            if address.bytes[index] & mask != network.bytes[index] & mask { return false }
            remaining -= bits
        }
        return true
    }

    public var description: String { "\(network)/\(prefixLength)" }
}
