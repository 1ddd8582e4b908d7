import DuetProtocol

/// What `duet call` was given: a call link (`http://host:port/call/ROOM`) or a bare room id plus `--server`.
struct CallLink: Equatable {
    var server: String
    var roomId: String

    enum Problem: Error, CustomStringConvertible {
        case notALink(String)
        var description: String {
            switch self {
            case .notALink(let text):
                "\(text) is neither a Duet call link (http(s)://host/call/ROOM) nor a room id (27 characters of A–Z a–z 0–9 _ -)"
            }
        }
    }

    init(_ text: String, server: String?) throws(Problem) {
        if RoomIdFormat.isWellFormed(text) {
            self.roomId = text
            self.server = Self.normalized(server ?? "http://127.0.0.1:8080/")
            return
        }
        guard text.hasPrefix("http://") || text.hasPrefix("https://"), let range = text.range(of: "/call/") else {
            throw .notALink(text)
        }
        let id = String(text[range.upperBound...].prefix { $0 != "?" && $0 != "#" && $0 != "/" })
        guard RoomIdFormat.isWellFormed(id) else { throw .notALink(text) }
        self.roomId = id
        // `--server` wins: the link names the room, the flag may name a nearer node of the same deployment.
        self.server = Self.normalized(server ?? String(text[..<range.lowerBound]))
    }

    private static func normalized(_ server: String) -> String { server.hasSuffix("/") ? server : server + "/" }
}
