/// What a participant sends of itself: microphone on, camera on, screen shared. `media_state` carries it to the
/// other participant (relayed like `ice`), and `room_state` repeats each participant's last one, so a peer that
/// reconnects learns it without asking. All three fields are required: a state that says half of itself would
/// leave the other side guessing.
public struct MediaState: Codable, Sendable, Hashable {
    public var audio: Bool
    public var video: Bool
    public var screen: Bool

    public init(audio: Bool, video: Bool, screen: Bool) {
        self.audio = audio
        self.video = video
        self.screen = screen
    }

    /// What a client has before it says anything else: microphone and camera on, no screen.
    public static let initial = MediaState(audio: true, video: true, screen: false)
}
