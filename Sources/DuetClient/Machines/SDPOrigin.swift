/// The `o=` line of a session description: the session it belongs to (`sessionId`) and its version.
///
/// Signaling may deliver an older offer after a newer one (an SSE POST duplicated and reordered by a proxy, a
/// resend crossing a newer restart). Applying it would take WebRTC back to ICE credentials the peer has already
/// replaced; comparing origins is how the negotiation machine recognises it without any extra field on the wire.
///
/// What the numbers mean depends on who wrote them. Chromium (and Firefox) keep one random session id per peer
/// connection and count the version up with every description they create, offers and answers alike. GStreamer's
/// webrtcbin does not: its answer copies the *offer's* `o=` line, and its later offers take that copied session
/// id with a version counting its own offers from 0. So a remote description is only ordered by its origin when
/// its session id is not one of ours (`NegotiationMachine` keeps those); anything else is never judged stale.
public struct SDPOrigin: Sendable, Equatable {
    public let sessionId: String
    public let version: UInt64

    public init(sessionId: String, version: UInt64) {
        self.sessionId = sessionId
        self.version = version
    }

    /// `nil` when there is no parseable `o=` line (lines end with CR, LF or CRLF; the version is ASCII digits that
    /// fit 64 bits): such a description is never judged stale (fail open).
    public init?(sdp: String) {
        let lines = sdp.utf8.split(omittingEmptySubsequences: true) { $0 == 0x0A || $0 == 0x0D }
        guard let line = lines.first(where: { $0.starts(with: "o=".utf8) }) else { return nil }
        let fields = line.dropFirst(2).split(separator: 0x20, omittingEmptySubsequences: true)
        guard fields.count >= 3, !fields[2].isEmpty, fields[2].allSatisfy({ (0x30...0x39).contains($0) }),
            let version = UInt64(String(decoding: fields[2], as: UTF8.self))
        else { return nil }
        self.init(sessionId: String(decoding: fields[1], as: UTF8.self), version: version)
    }

    /// The name of an offer that its answer carries back (`offer`, next to `sdp`): "<sessionId> <version>".
    public var offerName: String { "\(sessionId) \(version)" }

    /// `offerName` of a description, nil without a parseable `o=` line.
    public static func offerName(of sdp: String?) -> String? { sdp.flatMap { SDPOrigin(sdp: $0)?.offerName } }

    /// Made in the same session before `newer`.
    public func isOlder(than newer: SDPOrigin) -> Bool {
        sessionId == newer.sessionId && version < newer.version
    }
}
