import DuetClient
import DuetProtocol

/// `--answer`'s first, brief join only proves this device is one of the call's (its member token): it never makes a
/// peer connection, so it needs no media. Any WebRTC work asked of it fails plainly instead of starting GStreamer.
struct NoMediaEngine: WebRtcEngine {
    struct NotForMedia: Error, CustomStringConvertible {
        var description: String { "this join only fetches the member token: it has no media" }
    }

    let events = AsyncStream<WebRtcEvent> { $0.finish() }
    func ensurePeerConnection(_ configuration: RtcConfiguration) async throws { throw NotForMedia() }
    func createOffer(iceRestart: Bool) async throws -> String { throw NotForMedia() }
    func createAnswer() async throws -> String { throw NotForMedia() }
    func setRemoteDescription(_ kind: NegotiationMachine.DescriptionKind, sdp: String) async throws { throw NotForMedia() }
    func rollback() async throws { throw NotForMedia() }
    func addRemoteCandidate(_ candidate: IceCandidate?) async throws { throw NotForMedia() }
    func setConfiguration(_ configuration: RtcConfiguration) async throws {}
    func close() async {}
    func stats() async -> CallStats? { nil }
}
