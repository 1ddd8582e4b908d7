/// The STUN and TURN URI grammar browsers accept in `RTCIceServer.urls` (RFC 7064, RFC 7065): `stun:host[:port]`,
/// `stuns:host[:port]`, `turn:host[:port][?transport=udp|tcp]`, `turns:host[:port][?transport=tcp]`. A URL outside it
/// makes `new RTCPeerConnection` throw in every browser that joins, so `duet serve` refuses it at start-up.
public enum IceServerURI {
    public enum Kind: Sendable { case stun, turn }

    /// Nil when `uri` is a valid URI of `kind`; otherwise what is wrong with it, in words for the operator.
    public static func problem(_ uri: String, kind: Kind) -> String? {
        let schemes = kind == .stun ? ["stun:", "stuns:"] : ["turn:", "turns:"]
        guard let scheme = schemes.first(where: { uri.hasPrefix($0) }) else {
            return kind == .stun
                ? "must start with stun: or stuns: (TURN servers go in --turn-uri)"
                : "must start with turn: or turns: (STUN servers go in --stun-uri)"
        }
        var rest = Substring(uri.dropFirst(scheme.count))
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if let query {
            guard kind == .turn else { return "a STUN URI takes no query (?transport= is for TURN)" }
            let allowed = scheme == "turns:" ? ["transport=tcp"] : ["transport=udp", "transport=tcp"]
            guard allowed.contains(String(query)) else {
                return scheme == "turns:"
                    ? "turns: takes only ?transport=tcp (TLS runs over TCP)" : "the query must be ?transport=udp or ?transport=tcp"
            }
        }
        guard !rest.hasPrefix("//") else { return "no // after the scheme (write \(scheme)host:port)" }
        var host = rest
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return "an IPv6 address needs its closing ]" }
            host = rest[...close]
            rest = rest[rest.index(after: close)...]
            guard host.count > 2, host.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                return "\(host) is not an IPv6 address"
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = rest[..<colon]
            rest = rest[colon...]
        } else {
            rest = ""
        }
        if !host.hasPrefix("[") {
            guard !host.isEmpty, host.utf8.count <= 253,
                host.allSatisfy({ ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "." || $0 == "-" })
            else { return "the host must be a DNS name or an address" }
        }
        if !rest.isEmpty {
            guard rest.first == ":", let port = Int(rest.dropFirst()), (1...65535).contains(port), rest.dropFirst().allSatisfy(\.isNumber)
            else {
                return "the port must be a number from 1 to 65535"
            }
        }
        return nil
    }
}
