import DuetProtocol

/// What an app observes about a call.
public enum CallEvent: Sendable, Equatable {
    case phase(CallPhase)
    case connectionStatus(ConnectionStatus)
    /// The room this call is in (also when it was just created).
    case room(String)
    /// Who is in the room, and who hosts it.
    case participants([ParticipantInfo], hostCid: String, myCid: String)
    /// The signaling transport now in use (nil while down).
    case transport(SignalingTransport?)
    /// A join or room-creation failure (the phase is `error`), or a server error worth showing.
    case failure(CallFailure)
    case iceRestart(NegotiationMachine.RestartReason)
    /// Once per `DuetCall.Configuration.statsInterval` while in a call.
    case stats(CallStats)
    /// Call quality over the last stats interval (after each `.stats` whose engine gives quality samples):
    /// RTT, jitter, loss, bitrates, MOS and level (docs/call-quality.md). `DuetCall.qualitySummary` folds them.
    case quality(QualityReading)
    /// There is no current quality reading any more (no stats report, or the call left `inCall`): show the level
    /// as unknown, not the last one.
    case qualityUnknown
    case escalation(EscalationStep)
    /// The seat to keep across a process death (nil once the call is over): pass it back as
    /// `CallEngine.Options.resume` to reclaim the seat instead of finding the room full.
    case session(Seat?)
    /// The call was taken over by another connection with this seat's token (another tab, window or device):
    /// this one stopped and did not say goodbye. Show it, and offer to take the call back: the seat is still
    /// provable, so a new call engine with it as `CallEngine.Options.resume` reclaims it ("use here").
    case replaced(Seat?)
    /// What the other participant says of its microphone, camera and screen (`media_state`); nil when unknown.
    case remoteMedia(MediaState?)
    /// Whether the peer's DTLS fingerprints are proven by the link's key (issue 19, docs/security.md).
    case verification(Verification)
    /// The six-digit code both people can read to each other (the runtime's, from both sides' DTLS fingerprints and
    /// the room; `SafetyCode`); nil while one side's fingerprints are unknown. Different codes: someone is in the middle.
    case safetyCode(String?)
}

/// What a call can say about who is on the other end of its media.
public enum Verification: String, Sendable, CaseIterable {
    /// No key in the link, or none of the peer's descriptions proven yet (or no peer now).
    case unverified
    /// Every description applied from this peer carried a valid `auth` for the link's key.
    case verified
    /// A description failed its check (here or at the peer): the call was ended and is not retried.
    case intercepted
}

/// A seat in a room, proven by its reconnect token.
public struct Seat: Sendable, Equatable, Codable {
    public var roomId: String
    public var cid: String
    public var reconnectToken: String
    public init(roomId: String, cid: String, reconnectToken: String) {
        self.roomId = roomId
        self.cid = cid
        self.reconnectToken = reconnectToken
    }
}

/// Commands for the WebRTC engine, produced by `CallEngine` and performed by the runtime.
public enum EngineCommand: Sendable, Equatable {
    /// Create the peer connection if there is none (never re-created because signaling dropped).
    case ensurePeerConnection
    /// Close the peer connection and make a new one: the peer's connection is new (`NegotiationMachine`).
    case renewPeerConnection
    case createOffer(iceRestart: Bool)
    case createAnswer
    case setRemoteDescription(NegotiationMachine.DescriptionKind, sdp: String)
    case rollback
    case addRemoteCandidates([IceCandidate?])
    case applyFetchedIceServers
    case applyFallbackIceServers
    case close
}
