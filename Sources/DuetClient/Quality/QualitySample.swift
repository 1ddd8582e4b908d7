/// One stats report, normalized: what every engine's statistics say about a call at one moment, with every
/// counter cumulative since its peer connection began (a fresh connection starts again from zero). Engines make
/// it (`WebRtcBinStats` for GStreamer, `js/quality/chromium-stats.js` in the browser); `CallQuality` reads two.
/// The fields and their units are documented in docs/call-quality.md; the JSON form is the fixtures'.
public struct QualitySample: Sendable, Equatable, Codable {
    /// When the report was taken, in milliseconds on the caller's clock (only differences matter).
    public var timestampMs: Double
    /// Inbound RTP packets received and lost (RTCInboundRtpStreamStats `packetsReceived` / `packetsLost`).
    public var audioPacketsReceived: Int
    public var audioPacketsLost: Int
    public var videoPacketsReceived: Int
    public var videoPacketsLost: Int
    /// RTP payload bytes over all inbound / all outbound streams.
    public var bytesReceived: Int
    public var bytesSent: Int
    /// Inbound audio jitter in milliseconds (video's when there is no audio); nil when unknown.
    public var jitterMs: Double?
    /// Round-trip time in milliseconds (the selected ICE pair's, else RTCP's); nil when unknown.
    public var rttMs: Double?
    /// Inbound video frames decoded, and the decoded frames' size (nil until known).
    public var framesDecoded: Int
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Inbound codecs as people name them: `opus`, `VP8`.
    public var audioCodec: String?
    public var videoCodec: String?
    /// The selected candidate pair's local candidate: `host`, `srflx`, `prflx` or `relay`.
    public var candidateType: String?

    public init(
        timestampMs: Double, audioPacketsReceived: Int = 0, audioPacketsLost: Int = 0, videoPacketsReceived: Int = 0,
        videoPacketsLost: Int = 0, bytesReceived: Int = 0, bytesSent: Int = 0, jitterMs: Double? = nil, rttMs: Double? = nil,
        framesDecoded: Int = 0, frameWidth: Int? = nil, frameHeight: Int? = nil, audioCodec: String? = nil,
        videoCodec: String? = nil, candidateType: String? = nil
    ) {
        self.timestampMs = timestampMs
        self.audioPacketsReceived = audioPacketsReceived
        self.audioPacketsLost = audioPacketsLost
        self.videoPacketsReceived = videoPacketsReceived
        self.videoPacketsLost = videoPacketsLost
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
        self.jitterMs = jitterMs
        self.rttMs = rttMs
        self.framesDecoded = framesDecoded
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
        self.audioCodec = audioCodec
        self.videoCodec = videoCodec
        self.candidateType = candidateType
    }

    /// Counters that only grow while one peer connection lives: one of them going down means a new connection
    /// (or a fresh webrtcbin session after an ICE restart) counts from zero. Lost counts are not among them:
    /// `packetsLost` may shrink when late packets arrive.
    func countersRestarted(since previous: QualitySample) -> Bool {
        audioPacketsReceived < previous.audioPacketsReceived || videoPacketsReceived < previous.videoPacketsReceived
            || bytesReceived < previous.bytesReceived || bytesSent < previous.bytesSent
            || framesDecoded < previous.framesDecoded
    }
}
