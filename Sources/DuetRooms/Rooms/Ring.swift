import DuetProtocol

/// A ring in progress in one room (issue 31): who rings, until when, and which of the other person's devices it
/// reached. Kept in memory: after a restart the caller's client rings again with the same `callId` (a new ring under
/// that id, with a full timeout), and a device that accepts simply joins the room.
struct Ring: Sendable, Equatable {
    var callId: String
    var callerCid: String
    var callerDevice: String?
    var caller: JSONValue?
    var snapshotId: String?
    /// What an answer must prove, if the caller said (`RingAnswerCommitments`).
    var answers: RingAnswerCommitments?
    var startedAtMs: Int64
    var expiresAtMs: Int64
    /// Listening connections rung, with their device.
    var live: [ConnectionID: String] = [:]
    /// Devices a push reached (the push service accepted it).
    var pushed: Set<String> = []
    /// Every push of this ring has ended.
    var pushesFinished = false
    /// Devices other nodes rang live (`RingBroadcast.rang`).
    var remoteLive: Set<String> = []

    /// Distinct devices reached: a device both live and pushed counts once.
    var devices: Int { Set(live.values).union(pushed).union(remoteLive).count }
}

/// How a ring ended, as the caller and the devices are told.
enum RingOutcome: Equatable {
    case accepted(by: ConnectionID?)
    case declined
    case cancelled
    case noAnswer
    case unreachable

    var callerState: String {
        switch self {
        case .accepted: "accepted"
        case .declined: "declined"
        case .cancelled: "cancelled"
        case .noAnswer: "no_answer"
        case .unreachable: "unreachable"
        }
    }

    /// What a rung device is told (the one that accepted hears `accepted`, the others `answered_elsewhere`).
    func deviceReason(for connection: ConnectionID?) -> String {
        switch self {
        case .accepted(let by): by != nil && by == connection ? "accepted" : "answered_elsewhere"
        case .declined: "declined"
        case .cancelled: "cancelled"
        case .noAnswer, .unreachable: "no_answer"
        }
    }
}

/// How a room's last ring ended, kept a while for a caller that was away when it did.
struct RingOutcomeMemory: Sendable, Equatable {
    var callerCid: String
    var callId: String
    var state: String
    var devices: Int
    var untilMs: Int64
}
