import DuetProtocol

/// The WebRTC stack the runtime drives: a browser-like peer connection behind a small async API, so
/// the engine works with GStreamer's webrtcbin on Linux, Google's WebRTC on Apple platforms, or the
/// simulated pair in tests. Calls are made one at a time, in order.
public protocol WebRtcEngine: Sendable {
    /// Candidates, gathering, ICE and signaling state, as they happen.
    var events: AsyncStream<WebRtcEvent> { get }
    /// Creates the peer connection (with local media) if there is none.
    func ensurePeerConnection(_ configuration: RtcConfiguration) async throws
    /// Creates an offer and applies it as the local description; returns its SDP.
    func createOffer(iceRestart: Bool) async throws -> String
    /// Creates an answer and applies it as the local description; returns its SDP.
    func createAnswer() async throws -> String
    func setRemoteDescription(_ kind: NegotiationMachine.DescriptionKind, sdp: String) async throws
    func rollback() async throws
    /// `nil` is end-of-candidates.
    func addRemoteCandidate(_ candidate: IceCandidate?) async throws
    /// Applies new ICE servers (TURN refresh) to the live connection.
    func setConfiguration(_ configuration: RtcConfiguration) async throws
    /// Closes the peer connection; calling it again does nothing.
    func close() async
    /// Media statistics of the live connection (nil without one).
    func stats() async -> CallStats?
    /// The DER of every certificate the other side presented in a DTLS handshake, one per distinct certificate of
    /// the connection's transports (a BUNDLE call has one), for an engine that does not itself hold them to the remote
    /// description's fingerprint (webrtcbin); empty before any handshake, or when the engine checks them itself
    /// (browsers do).
    func remoteCertificatesDER() async -> [[UInt8]]
    /// Whether the engine itself refuses a DTLS handshake whose certificate the remote description does not name
    /// (browsers do). When it does not (webrtcbin), `DuetCall` holds the handshake to it through
    /// `remoteCertificatesDER`: nothing is shown as verified, and the safety code does not count the peer's
    /// fingerprints, until that check has passed.
    var checksRemoteCertificates: Bool { get }
}

extension WebRtcEngine {
    public func remoteCertificatesDER() async -> [[UInt8]] { [] }
    public var checksRemoteCertificates: Bool { true }
}

/// What an app shows about media: is anything arriving, over which path, how fast.
public struct CallStats: Sendable, Equatable {
    public var videoFramesReceived: Int
    public var audioPacketsReceived: Int
    /// `host`, `srflx`, `prflx` or `relay` for the selected candidate pair.
    public var candidateType: String?
    public var roundTripTimeMs: Double?
    /// Decoded audio, for engines that decode it (nil otherwise): samples so far (per channel), and the RMS and
    /// peak level over the last second in dBFS, -100 for silence or nothing decoded.
    public var audioSamplesDecoded: Int?
    public var audioLevelDb: Double?
    public var audioPeakDb: Double?
    /// The live peer connection's statistics normalized for call quality (nil for engines that do not give them):
    /// `DuetCall` turns consecutive ones into `.quality` readings. Counters restart with each new connection.
    public var quality: QualitySample?
    /// The engine's own stats report as it gave it, for diagnostics and captured fixtures (webrtcbin's:
    /// `{"decoded": WebRtcBinStats.Decoded, "report": [its stats as JSON]}`).
    public var rawReport: String?
    public init(
        videoFramesReceived: Int, audioPacketsReceived: Int, candidateType: String?, roundTripTimeMs: Double?,
        audioSamplesDecoded: Int? = nil, audioLevelDb: Double? = nil, audioPeakDb: Double? = nil,
        quality: QualitySample? = nil, rawReport: String? = nil
    ) {
        self.videoFramesReceived = videoFramesReceived
        self.audioPacketsReceived = audioPacketsReceived
        self.candidateType = candidateType
        self.roundTripTimeMs = roundTripTimeMs
        self.audioSamplesDecoded = audioSamplesDecoded
        self.audioLevelDb = audioLevelDb
        self.audioPeakDb = audioPeakDb
        self.quality = quality
        self.rawReport = rawReport
    }
}

public enum WebRtcEvent: Sendable, Equatable {
    case localCandidate(IceCandidate)
    case gatheringComplete
    case iceConnectionState(NegotiationMachine.IceState)
    /// `RTCPeerConnection.connectionState` (`new/connecting/connected/disconnected/failed/closed` map onto the ICE names).
    case connectionState(NegotiationMachine.IceState)
    case signalingState(NegotiationMachine.SignalingState)
}

public struct RtcConfiguration: Sendable, Equatable {
    public var iceServers: [IceServer]
    /// `iceTransportPolicy: relay`.
    public var relayOnly: Bool
    public init(iceServers: [IceServer] = [], relayOnly: Bool = false) {
        self.iceServers = iceServers
        self.relayOnly = relayOnly
    }
}

/// Network reachability, as `NWPathMonitor` (Apple), `ConnectivityManager` (Android) or the browser's
/// `online` / `navigator.connection` events report it.
public protocol NetworkMonitor: Sendable {
    var events: AsyncStream<NetworkEvent> { get }
}

public enum NetworkEvent: Sendable, Equatable {
    /// Connectivity came back (`online`, path `.satisfied`).
    case online
    case offline
    /// The path changed while up (Wi-Fi ↔ cellular, `navigator.connection` change).
    case pathChanged
}

/// For apps that have no network signal to give: nothing ever happens.
public struct NoNetworkMonitor: NetworkMonitor {
    public let events: AsyncStream<NetworkEvent>
    public init() { events = AsyncStream { _ in } }
}
