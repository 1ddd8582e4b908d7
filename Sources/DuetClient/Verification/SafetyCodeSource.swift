/// The safety code of the call in progress (issue 19): both sides' DTLS fingerprints as their SDPs state them, and
/// the room. The runtime tells it each description WebRTC took (ours when made, the peer's once applied) and
/// whether there is a peer; it answers with the code to show, or nil while one side is unknown. The browser's twin
/// is in `js/runtime/signed-signaling.js`.
public struct SafetyCodeSource: Sendable, Equatable {
    public private(set) var roomId: String?
    public private(set) var local: [String] = []
    public private(set) var remote: [String] = []
    public private(set) var code: String?

    public init() {}

    public enum Input: Sendable, Equatable {
        case room(String)
        case localDescription(sdp: String)
        case remoteDescriptionApplied(sdp: String)
        /// The fingerprints of the certificate the DTLS handshake actually presented, when it is not the one the
        /// remote description names (found by a runtime whose engine does not refuse that itself, webrtcbin): the
        /// code is then over what DTLS did, so a man in the middle shows as different codes even without a key.
        /// Browsers refuse such a handshake, so the browser's twin never needs it.
        case handshakeCertificate(fingerprints: [String])
        /// The peer left (or a new one came): its fingerprints are no longer the ones on the other end.
        case peerGone
        /// Our peer connection closed or was renewed (a new one brings its own certificate): nothing is known until
        /// its descriptions say.
        case connectionGone
    }

    /// The new code when it changed (nil: none to show), else nothing.
    public mutating func handle(_ input: Input) -> String?? {
        switch input {
        case .room(let id): roomId = id
        case .localDescription(let sdp): local = FingerprintAuth.fingerprints(inSDP: sdp)
        case .remoteDescriptionApplied(let sdp): remote = FingerprintAuth.fingerprints(inSDP: sdp)
        case .handshakeCertificate(let fingerprints):
            remote = Array(Set(fingerprints)).sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        case .peerGone: remote = []
        case .connectionGone:
            local = []
            remote = []
        }
        let next: String? =
            if let roomId, !local.isEmpty, !remote.isEmpty { SafetyCode.code(rid: roomId, local: local, remote: remote) } else { nil }
        guard next != code else { return .none }
        code = next
        return .some(next)
    }
}
