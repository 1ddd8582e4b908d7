/// What a transport is asked to do for its connection.
public enum Outbound: Sendable, Equatable {
    case text(String)
    case close(CloseCode, reason: String)
}

/// WebSocket close codes the server uses; an SSE stream simply ends.
public enum CloseCode: UInt16, Sendable {
    case goingAway = 1001
    case policyViolation = 1008
    case messageTooBig = 1009
    case serviceRestart = 1012
    /// Private range: a newer transport proved the same participant.
    case replaced = 4001
    /// Private range: the client stopped reading and its queue reached `OutboundBound`; its seat is suspended.
    case notReading = 4002
    /// Private range: a newer stream of the same SSE session took over a stream without a seat; reconnect if wanted.
    case superseded = 4003
}

extension CloseCode {
    /// The reason text sent with the code, and the label of the close in metrics and logs.
    var reason: String {
        switch self {
        case .goingAway: "going_away"
        case .policyViolation: "policy_violation"
        case .messageTooBig: "message_too_big"
        case .serviceRestart: "service_restart"
        case .replaced: "replaced"
        case .notReading: "not_reading"
        case .superseded: "superseded"
        }
    }
}
