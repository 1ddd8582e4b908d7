/// A broken promise, with the time it was seen.
public struct Violation: Sendable, Equatable, CustomStringConvertible {
    public enum Invariant: String, Sendable, CaseIterable {
        case illegalPhaseTransition = "illegal phase transition"
        case illegalStatusTransition = "illegal status transition"
        case terminalFailure = "terminal failure while the room exists and nobody left"
        case notRecovered = "not back to InCall + connected within the bound"
        case offerOutstanding = "more than one offer outstanding"
        case illegalWebRtcCall = "WebRTC asked for something its state forbids"
        case iceRestartCooldown = "ICE restart inside the cooldown"
        case staleEpochApplied = "description from a stale peer session applied"
        case membershipDisagreement = "sides disagree on membership or host"
        case leftovers = "timer, task or transport left after leave"
        case vanishedClientKept = "a vanished SSE client kept connected past the liveness rule"
        case evictedSeatResurrected = "an evicted seat brought back by its old token"
        case endedRoomReappeared = "a participant seated in a room its host had ended"
        case staleCredentials = "reconnect token or TURN credentials expired while in the call"
        case messageFlood = "signaling sent faster than the server's message limit allows"
        case connectionsDisagree = "in the call, but the two sides not on one pair of connections (credentials, fingerprints)"
    }

    public var at: Int64
    public var invariant: Invariant
    public var detail: String

    public var description: String { "\(Describe.time(at)) \(invariant.rawValue): \(detail)" }
}
