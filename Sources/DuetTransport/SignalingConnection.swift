import DuetProtocol

/// A live signaling transport to a Duet server, as the call engine sees it: typed messages in,
/// typed messages out, and one `closed` at the end. WebSocket and SSE look the same from here.
public protocol SignalingConnection: Sendable {
    var kind: SignalingTransportKind { get }
    /// Messages in arrival order, then `.closed` once, then the stream ends.
    var events: AsyncStream<SignalingEvent> { get }
    func send(_ envelope: Envelope) async throws
    /// Closes from our side; `events` ends with `.closed(.byClient)`.
    func close() async
}

public enum SignalingTransportKind: String, Sendable, CaseIterable {
    case ws, sse
}

public enum SignalingEvent: Sendable, Equatable {
    case message(Envelope)
    /// A frame or SSE event that was not a valid envelope (the server never sends one; a proxy might).
    case undecodable(String)
    case closed(SignalingCloseReason)
}

public enum SignalingCloseReason: Sendable, Equatable {
    /// The server's close code when a newer connection proved the same seat (docs/protocol.md).
    public static let replacedCode = 4001

    case byClient
    /// The server closed it; WebSocket close code and reason when there was a close frame.
    case byServer(code: Int?, reason: String?)
    /// Nothing arrived for longer than the keep-alive allows (half-open connection).
    case silent
    /// The network failed under us.
    case failed(String)
}

public enum SignalingConnectError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut
    /// The server answered the upgrade or stream request with this HTTP status.
    case refused(status: Int)
    case unreachable(String)

    public var description: String {
        switch self {
        case .timedOut: "connection timed out"
        case .refused(let status): "server refused the connection (HTTP \(status))"
        case .unreachable(let detail): "server unreachable: \(detail)"
        }
    }
}

public enum SignalingSendError: Error, Sendable, Equatable {
    case notConnected
    /// SSE POST status: 401 (sid reuse without proof), 410 (stream gone), 413 (too large)…
    case rejected(status: Int)
    case failed(String)
}

/// The signaling URLs of a Duet server (docs/protocol.md, Transports). A connection for a room names it in the query
/// (`?rid=ROOM`): the server starts the connection in that room's shard (a hint: a join moves it to its room's), and a
/// proxy in front of several nodes routes on it
/// (deploy/nginx/duet-cluster.conf hashes it), so every connection of a room — both people's, each SSE POST —
/// reaches the node that holds it. A connection for no room (a watcher, the bench) carries none. After a drain that
/// named the room's next node (`draining {via}`), its connections also carry `&via=NODE`, which the proxy routes to
/// that node before its own choice.
public enum SignalingURL {
    /// `ws(s)://host/ws[?rid=ROOM[&via=NODE]]` for the server `http(s)://host/`.
    public static func webSocket(server: String, roomId: String? = nil, via: String? = nil) -> String {
        var base = server.hasSuffix("/") ? server : server + "/"
        if base.hasPrefix("https://") {
            base = "wss://" + base.dropFirst("https://".count)
        } else if base.hasPrefix("http://") {
            base = "ws://" + base.dropFirst("http://".count)
        }
        return base + "ws" + query(roomId: roomId, via: via, first: "?")
    }

    /// `http(s)://host/sse?sid=SID[&rid=ROOM[&via=NODE]]`: the stream's URL and every POST's.
    public static func sse(server: String, sid: String, roomId: String? = nil, via: String? = nil) -> String {
        let base = server.hasSuffix("/") ? server : server + "/"
        return base + "sse?sid=" + queryComponent(sid) + query(roomId: roomId, via: via, first: "&")
    }

    /// `rid=ROOM[&via=NODE]` after `first`, or nothing for no room (a via means nothing without its room).
    public static func query(roomId: String?, via: String?, first: String) -> String {
        guard let roomId else { return "" }
        return first + "rid=" + queryComponent(roomId) + (via.map { "&via=" + queryComponent($0) } ?? "")
    }

    /// Percent-encodes as JavaScript's `encodeURIComponent` does (the browser client's rule), so a room reads the
    /// same in every client's URL and a proxy hashing it routes them alike.
    public static func queryComponent(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "!"), UInt8(ascii: "~"),
                UInt8(ascii: "*"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }
}
