import DuetProtocol

/// What the node holding a room tells the other nodes of a cluster about its ring, and what they answer (issue 31).
/// A page listens on whichever node its `watch_rooms` connection landed on (it watches many rooms at once, so the
/// proxy cannot route it by one), not necessarily the room's: without this, it would never ring live. Ephemeral (in a
/// cluster, PostgreSQL NOTIFY): a message lost with a dropped link costs that page its live ring only — pushes still
/// reach the device, and a client ends a ring by itself after its `expiresAt`.
public enum RingBroadcast: Sendable, Equatable, Codable {
    /// A ring began: listeners elsewhere ring with this `incoming_call` (never the caller's own device).
    case started(IncomingCallPayload, callerDevice: String?)
    /// It ended: those listeners hear `ring_ended` with this reason.
    case ended(rid: String, callId: String, reason: String)
    /// A node rang `device` live: the caller's count includes it, and the ring is not unreachable.
    case rang(rid: String, callId: String, device: String)
    /// A device listening on another node answered over its connection.
    case answered(rid: String, callId: String, device: String, answer: RingAnswerPayload.Answer, secret: String?)
}

/// A ring held by another node, as this node rings its own listeners for it.
struct RemoteRing: Sendable, Equatable {
    var incoming: IncomingCallPayload
    var callerDevice: String?
    /// Listening connections here that ring for it, with their device.
    var live: [ConnectionID: String] = [:]
}

/// What a connection listens as in one core: its device, and the rooms of that core it proved membership of.
struct Listening: Sendable, Equatable {
    var device: String
    var rooms: Set<String>
}
