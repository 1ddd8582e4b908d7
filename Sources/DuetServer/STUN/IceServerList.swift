import DuetProtocol

/// What `/api/turn-credentials` hands a client for its RTCConfiguration: the server's own STUN (at the host name the
/// client used to reach it, so it works behind DNS names and on LAN addresses alike), every `--stun-uri`, and TURN
/// with fresh credentials. Never a public STUN or TURN server: only what this server's operator configured.
struct IceServerList: Sendable {
    /// The built-in STUN server's bound UDP port; nil while it is off.
    let ownStunPort: @Sendable () -> Int?
    let stunURIs: [String]
    let turn: TurnCredentialIssuer?
    /// How long the list is good for: the TURN credentials' lifetime (clients refetch at 0.8 × this).
    let ttlSeconds: Int64
    /// Where the HTTP listener is bound, for a request without a usable Host header.
    let listenHost: String

    /// Nothing at all to hand out: the endpoint answers 503 as it did before STUN existed.
    var isEmpty: Bool { ownStunPort() == nil && stunURIs.isEmpty && turn == nil }

    func response(hostHeader: String?, nowMs: Int64) -> TurnCredentials {
        var stun = stunURIs
        if let port = ownStunPort(), let host = Self.stunHost(hostHeader: hostHeader, listenHost: listenHost) {
            stun.insert("stun:\(host):\(port)", at: 0)
        }
        var servers: [IceServer] = stun.isEmpty ? [] : [IceServer(urls: stun)]
        let relay = turn?.credentials(nowMs: nowMs)
        if let relay { servers.append(relay) }
        return TurnCredentials(
            iceServers: servers, username: relay?.username, password: relay?.credential, uris: relay?.urls ?? [], ttl: ttlSeconds)
    }

    /// The host part of a Host header (`name`, `name:port`, `[v6]`, `[v6]:port`) if it is a plain DNS name or
    /// address — anything else (a client can send any Host) falls back to the bound address, and a wildcard bind
    /// (0.0.0.0, ::) to nothing: a STUN URI the client cannot use is worse than none.
    static func stunHost(hostHeader: String?, listenHost: String) -> String? {
        if let header = hostHeader, let host = hostPart(header), isPlainHost(host) { return host }
        guard !["0.0.0.0", "::", "[::]", ""].contains(listenHost) else { return nil }
        let bound = listenHost.contains(":") && !listenHost.hasPrefix("[") ? "[\(listenHost)]" : listenHost
        return isPlainHost(bound) ? bound : nil
    }

    private static func hostPart(_ header: String) -> String? {
        if header.hasPrefix("[") {
            guard let close = header.firstIndex(of: "]") else { return nil }
            let rest = header[header.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && rest.dropFirst().allSatisfy(\.isNumber)) else { return nil }
            return String(header[...close])
        }
        let parts = header.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, parts.count == 1 || parts[1].allSatisfy(\.isNumber) else { return nil }
        return String(parts[0])
    }

    private static func isPlainHost(_ host: String) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        if host.hasPrefix("[") {
            return host.hasSuffix("]") && host.count > 2
                && host.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        return host.allSatisfy { ($0.isASCII && ($0.isLetter || $0.isNumber)) || $0 == "." || $0 == "-" }
    }
}
