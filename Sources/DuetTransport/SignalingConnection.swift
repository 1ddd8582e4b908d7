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
