/// The `o=` line of a session description: which peer connection made it (`sessionId`) and how many
/// descriptions it had made by then (`version`, RFC 3264 §8 / JSEP §5.2.1: it grows with every new description
/// of one session — Chromium and GStreamer's webrtcbin both keep the id and count up).
///
/// Signaling may deliver an older offer after a newer one (an SSE POST duplicated and reordered by a proxy, a
/// resend crossing a newer restart). Applying it would take WebRTC back to ICE credentials the peer has already
/// replaced; comparing origins is how the negotiation machine recognises it without any extra field on the wire.
public struct SDPOrigin: Sendable, Equatable {
    public let sessionId: String
    public let version: UInt64

    public init(sessionId: String, version: UInt64) {
        self.sessionId = sessionId
        self.version = version
    }

    /// `nil` when there is no parseable `o=` line: such a description is never judged stale (fail open).
    public init?(sdp: String) {
        guard let line = sdp.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("o=") }) else { return nil }
        let fields = line.dropFirst(2).split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 3, let version = UInt64(fields[2]) else { return nil }
        self.init(sessionId: String(fields[1]), version: version)
    }

    /// Made by the same peer connection before `newer`.
    public func isOlder(than newer: SDPOrigin) -> Bool {
        sessionId == newer.sessionId && version < newer.version
    }
}
