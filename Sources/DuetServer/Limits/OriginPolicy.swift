/// Browser origin check for `/ws`, `/sse` and `/api/*`: no Origin (non-browser clients), the same
/// host, localhost, or an allow-listed origin pass; `Origin: null` and everything else are refused.
public struct OriginPolicy: Sendable {
    public var allowed: Set<String>

    public init(allowed: [String]) {
        self.allowed = Set(allowed.map { Self.normalize($0) })
    }

    public func permits(origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        // Several Origin headers arrive joined by ", ": every one of them must pass.
        let origins = origin.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard origins.count == 1 else { return !origins.isEmpty && origins.allSatisfy { permits(origin: $0, host: host) } }
        let normalized = Self.normalize(origin)
        if normalized == "null" { return false }
        if allowed.contains(normalized) || allowed.contains("*") { return true }
        guard let originHost = Self.hostPart(of: normalized) else { return false }
        if ["localhost", "127.0.0.1", "[::1]"].contains(Self.stripPort(originHost)) { return true }
        // Ports are ignored: non-browser WebSocket clients send "ws://host" without the port.
        if let host, Self.stripPort(Self.normalize(host)) == Self.stripPort(originHost) { return true }
        return false
    }

    static func normalize(_ value: String) -> String {
        var text = value.lowercased()
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    /// "https://a.example:8443" → "a.example:8443"
    static func hostPart(of origin: String) -> String? {
        guard let range = origin.range(of: "://") else { return nil }
        let rest = origin[range.upperBound...]
        return rest.isEmpty ? nil : String(rest)
    }

    static func stripPort(_ host: String) -> String {
        if host.hasPrefix("[") { return host.split(separator: "]").first.map { $0 + "]" } ?? host }
        return host.split(separator: ":").first.map(String.init) ?? host
    }
}
