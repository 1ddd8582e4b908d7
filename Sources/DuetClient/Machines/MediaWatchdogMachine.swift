import DuetProtocol

/// Media that stops arriving while ICE says `connected` (issue 32). A browser that restarts ICE with a peer of
/// another make can be left sending to a port the other side no longer reads: both ICE agents stay `connected`,
/// consent freshness is answered by the old context, and nothing but the inbound counters shows the call is dead.
/// libnice (webrtcbin) has no consent freshness at all. So while ICE is connected this machine has the runtime read
/// the inbound counters every `MEDIA_SAMPLE_INTERVAL_MS`, and calls media stalled when they did not grow for
/// `MEDIA_STALL_TIMEOUT_MS` — packets, whenever the peer says it sends anything; decoded video frames too, when it
/// says its camera or screen is on and frames were decoded on this path before (a receiver without video, such as an
/// audio-only `duet call`, decodes none). A muted track still sends silence and black frames: a mute is no stall.
/// The engine treats a stall as ICE `disconnected` (status and recovery) and restarts ICE; growth again is recovery.
///
/// Counters are the live peer connection's and restart with a new one: a sample below the last is a new baseline,
/// never growth. So is the first sample after ICE (re)connects: what came before says nothing of this path. A stall,
/// once said, lasts until media grows again — through the ICE restart it causes (ICE going `checking` and back to
/// `connected` over a path that still carries nothing proves nothing) and a renewed connection — or until the call
/// has no peer any more (`reset`).
public struct MediaWatchdogMachine: Sendable, Equatable {
    /// Inbound counters of the live peer connection, as the runtime read them.
    public struct Sample: Sendable, Equatable {
        /// RTP packets received, all kinds.
        public var packets: Int64
        /// Video frames decoded.
        public var videoFrames: Int64
        public init(packets: Int64, videoFrames: Int64) {
            self.packets = packets
            self.videoFrames = videoFrames
        }
    }

    public enum Event: Sendable, Equatable {
        /// Whether ICE (as the engine sees it) is connected now.
        case ice(connected: Bool)
        /// Nobody to hear any more (the peer left, the call ended): a stall is forgotten.
        case reset
        /// What the peer says it sends; nil when it has said nothing (then packets are expected, frames are not).
        case peerMedia(MediaState?)
        case timerFired(TimerID)
        /// The runtime's answer to `.sample`: nil when there is no report (no peer connection yet).
        case sampled(Sample?)
        /// A remote description was applied (say, the peer's ICE restart): the path is being renegotiated, and is
        /// judged afresh — the host restarting for an outage both ICE agents saw is not this side's stall to restart.
        case renegotiated
    }

    public enum Action: Sendable, Equatable {
        /// Read the inbound counters and feed them back as `.sampled`.
        case sample
        /// Nothing arrived for the stall timeout while ICE is connected.
        case stalled
        /// Media arrives again after a stall (ICE stayed connected throughout).
        case flowing
        case timer(TimerCommand)
    }

    public private(set) var iceConnected = false
    public private(set) var stalled = false
    private var last: Sample?
    private var quietPacketSamples = 0
    private var quietFrameSamples = 0
    /// Video frames were decoded on this path: from now on, frames that stop are a stall when video is expected.
    private var framesSeen = false
    private var expectsPackets = true
    private var expectsFrames = false

    /// Quiet samples in a row that make a stall.
    static let stallSamples = Int(
        (ResilienceConstants.MEDIA_STALL_TIMEOUT_MS + ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS - 1) / ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS)

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .ice(let connected):
            guard connected != iceConnected else { return [] }
            iceConnected = connected
            // Coming back is a path to judge from a new baseline; a stall stays until media grows on it.
            rebaseline(nil)
            return connected
                ? [.timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))]
                : [.timer(.cancel(.mediaSample))]
        case .reset:
            stalled = false
            rebaseline(nil)
            return []
        case .peerMedia(let media):
            expectsPackets = media.map { $0.audio || $0.video || $0.screen } ?? true
            expectsFrames = media.map { $0.video || $0.screen } ?? false
            return judge()
        case .timerFired(.mediaSample):
            guard iceConnected else { return [] }
            // Scheduled here, not when the sample comes back: a sample the runtime never answers stops nothing.
            return [.sample, .timer(.schedule(.mediaSample, afterMs: ResilienceConstants.MEDIA_SAMPLE_INTERVAL_MS))]
        case .timerFired:
            return []
        case .renegotiated:
            // A stall already said stays until media grows (its restart is under way); otherwise count from now.
            if iceConnected, !stalled { rebaseline(nil) }
            return []
        case .sampled(let sample):
            guard iceConnected, let sample else { return [] }
            guard let previous = last, sample.packets >= previous.packets, sample.videoFrames >= previous.videoFrames else {
                rebaseline(sample)  // the first on this path, or a new peer connection's counters
                return []
            }
            quietPacketSamples = sample.packets > previous.packets ? 0 : quietPacketSamples + 1
            quietFrameSamples = sample.videoFrames > previous.videoFrames ? 0 : quietFrameSamples + 1
            if sample.videoFrames > previous.videoFrames { framesSeen = true }
            last = sample
            return judge()
        }
    }

    private mutating func rebaseline(_ sample: Sample?) {
        last = sample
        quietPacketSamples = 0
        quietFrameSamples = 0
        framesSeen = false
    }

    private mutating func judge() -> [Action] {
        let silent = (expectsPackets && quietPacketSamples >= Self.stallSamples) || (expectsFrames && framesSeen && quietFrameSamples >= Self.stallSamples)
        guard iceConnected, silent != stalled else { return [] }
        stalled = silent
        return [silent ? .stalled : .flowing]
    }
}
