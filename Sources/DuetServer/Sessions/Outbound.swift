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
}
