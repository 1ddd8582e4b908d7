/// Every message type of protocol v1. Unknown types are not an error (forward compatibility), so
/// `Envelope.type` stays a `String` and this enum is used to interpret it.
public enum MessageType: String, Sendable, CaseIterable {
    // client → server
    case ping, join, leave
    case endRoom = "end_room"
    case offer, answer, ice
    /// A verified call's receiver found an offer or answer whose `auth` does not match (issue 19): relayed to
    /// the other participant, who ends the call too. Carries its own `auth` so a server cannot forge it.
    case verifyFailed = "verify_failed"
    /// A side that cannot restart ICE in place (`duet call`: webrtcbin) asks its peer to (issue 32): relayed like an
    /// offer. Informative `reason`; the receiver restarts only if it can, paced by its own cooldown.
    case restartRequest = "restart_request"
    case turnRefresh = "turn-refresh"
    case reconnectTokenRefresh = "reconnect-token-refresh"
    case watchRooms = "watch_rooms"
    /// Also server → client: relayed to the other participant with `from`.
    case mediaState = "media_state"
    /// Ringing (issue 31): a seated participant rings the room's other devices, cancels, and a device answers.
    case ring
    case ringCancel = "ring_cancel"
    case ringAnswer = "ring_answer"
    // server → client
    case pong, joined
    case roomState = "room_state"
    case roomEnded = "room_ended"
    case error
    case turnRefreshed = "turn-refreshed"
    case reconnectTokenRefreshed = "reconnect-token-refreshed"
    case draining
    case relayFailed = "relay_failed"
    case roomStatuses = "room_statuses"
    case roomStatusUpdate = "room_status_update"
    /// First message of an SSE stream: the token its POSTs must carry (`SSEPostBinding`).
    case sseSession = "sse_session"
    /// Ringing (issue 31): what the caller sees of its ring, a device's incoming call, and its end.
    case ringState = "ring_state"
    case incomingCall = "incoming_call"
    case ringEnded = "ring_ended"

    /// Messages the server forwards from one participant to the other.
    public var isRelayed: Bool {
        self == .offer || self == .answer || self == .ice || self == .verifyFailed || self == .restartRequest
    }
}
