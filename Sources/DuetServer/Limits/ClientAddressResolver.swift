/// Who the client is, for per-address limits. Behind a proxy every request comes from the proxy, so the client is
/// read from `X-Forwarded-For` (or `Forwarded`) — but only when the TCP peer is a proxy the operator trusts
/// (`--trusted-proxy`); from anyone else those headers are ignored, or any client could pick its own bucket.
public struct ClientAddressResolver: Sendable {
    /// The one header the trusted proxy writes. Only that one is read: a proxy that writes `Forwarded` passes a
    /// client's own `X-Forwarded-For` through untouched (and the other way round), so reading both would let the
    /// client choose its bucket.
    public enum Header: String, Sendable, CaseIterable {
        case xForwardedFor = "x-forwarded-for"
        case forwarded
    }

    public let trusted: [CIDRRange]
    public let header: Header

    public init(trusted: [CIDRRange], header: Header = .xForwardedFor) {
        self.trusted = trusted
        self.header = header
    }

    /// Parses `--trusted-proxy` values; the error names the bad one.
    public init(parsing specs: [String]) throws(ConfigurationError) {
        var ranges: [CIDRRange] = []
        for spec in specs {
            guard let range = CIDRRange(spec) else {
                throw ConfigurationError("--trusted-proxy \(spec): expected an address or CIDR range, e.g. 10.0.0.0/8 or fd00::/8")
            }
            ranges.append(range)
        }
        trusted = ranges
        header = .xForwardedFor
    }

    func isTrusted(_ address: IPAddress) -> Bool { trusted.contains { $0.contains(address) } }

    /// The rate-limit key of the client: an IPv4 address or an IPv6 /64 (`IPAddress.rateKey`).
    /// - Parameters:
    ///   - peer: the TCP peer's address text.
    ///   - forwardedFor: every `X-Forwarded-For` header value, in order.
    ///   - forwarded: every `Forwarded` header value (RFC 7239), in order.
    /// Only the header chosen by `header` is read.
    public func clientKey(peer: String?, forwardedFor: [String], forwarded: [String]) -> String {
        guard let peerText = peer, let peerAddress = IPAddress(peerText) else { return peer ?? "unknown" }
        guard isTrusted(peerAddress) else { return peerAddress.rateKey }
        let chain =
            switch header {
            case .xForwardedFor: forwardedFor.flatMap { $0.split(separator: ",") }.map(String.init)
            case .forwarded: forwarded.flatMap { Self.forElements(of: $0) }
            }
        // Walk from the right: each trusted proxy appended the address it saw. The first one that is not a trusted
        // proxy is the client; whatever is to its left was written by the client and proves nothing.
        for entry in chain.reversed() {
            guard let address = IPAddress(entry) else { return peerAddress.rateKey }
            if !isTrusted(address) { return address.rateKey }
        }
        // Only trusted hops (a client inside the trusted range): the leftmost is the client.
        if let first = chain.first, let address = IPAddress(first) { return address.rateKey }
        return peerAddress.rateKey
    }

    /// `for=192.0.2.1;proto=https, for="[2001:db8::1]:4711"` → ["192.0.2.1", "[2001:db8::1]:4711"].
    static func forElements(of header: String) -> [String] {
        header.split(separator: ",").compactMap { element in
            for pair in element.split(separator: ";") {
                let trimmed = pair.drop { $0 == " " || $0 == "\t" }
                guard trimmed.lowercased().hasPrefix("for=") else { continue }
                return String(trimmed.dropFirst(4)).replacingQuotes()
            }
            return nil
        }
    }
}

extension String {
    fileprivate func replacingQuotes() -> String { filter { $0 != "\"" } }
}
