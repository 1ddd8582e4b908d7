import DuetProtocol

/// What a person was given to join a call: a call link (`https://host/call/ROOM`, with `#k=<key>` when the call is
/// verified — the key never goes to a server, docs/security.md) or a bare room id plus the server to use.
/// `duet call` takes either; the browser's call page reads the same parts from its own URL.
public struct CallLink: Equatable, Sendable {
    public var server: String
    public var roomId: String
    /// The link's key (`#k=`), nil for a link without one (older links, typed room ids: "not verified").
    public var key: LinkKey?

    public enum Problem: Error, Equatable, CustomStringConvertible {
        case notALink(String)
        /// A `k=` that is not a whole key: a link cut short or altered in copying. Never joined as an unverified
        /// call, which is what someone stripping the key would want.
        case damagedKey
        public var description: String {
            switch self {
            case .notALink(let text):
                "\(text) is neither a Duet call link (http(s)://host/call/ROOM) nor a room id (27 characters of A–Z a–z 0–9 _ -)"
            case .damagedKey:
                "the link's key (#k=…) is damaged: it must be 43 characters of A–Z a–z 0–9 _ -; ask for the link again"
            }
        }
    }

    public init(_ text: String, server: String?) throws(Problem) {
        if RoomIdFormat.isWellFormed(text) {
            self.roomId = text
            self.server = Self.normalized(server ?? "http://127.0.0.1:8080/")
            self.key = nil
            return
        }
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let range = text.range(of: "/call/") else {
            // Not echoed whole: it may hold a key.
            throw .notALink(String(text.prefix { $0 != "#" }))
        }
        let id = String(text[range.upperBound...].prefix { $0 != "?" && $0 != "#" && $0 != "/" })
        guard RoomIdFormat.isWellFormed(id) else { throw .notALink(String(text.prefix { $0 != "#" })) }
        self.roomId = id
        self.key = try Self.key(inFragmentOf: text)
        // `--server` wins: the link names the room, the flag may name a nearer node of the same deployment.
        self.server = Self.normalized(server ?? String(text[..<range.lowerBound]))
    }

    /// The link as people share it: with its key when it has one.
    public var text: String { server + "call/" + roomId + (key.map { "#k=" + $0.base64url } ?? "") }

    /// `k` among the fragment's `&`-separated `name=value` parts; nil when there is none.
    static func key(inFragmentOf text: String) throws(Problem) -> LinkKey? {
        guard let hash = text.firstIndex(of: "#") else { return nil }
        for part in text[text.index(after: hash)...].split(separator: "&") where part.hasPrefix("k=") {
            guard let key = LinkKey(base64url: part.dropFirst(2)) else { throw .damagedKey }
            return key
        }
        return nil
    }

    private static func normalized(_ server: String) -> String { server.hasSuffix("/") ? server : server + "/" }
}
