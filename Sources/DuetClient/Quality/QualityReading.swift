/// Call quality over one interval (two consecutive samples), as the app shows it. Rounded as it is shown, the
/// same way in both engines (docs/call-quality.md): milliseconds to a tenth, loss and MOS to a hundredth,
/// bitrates to whole kbit/s, frame rate to a tenth.
public struct QualityReading: Sendable, Equatable, Codable {
    /// The interval this reading covers; 0 for a first sample (nothing is measured over it).
    public var intervalMs: Double
    public var rttMs: Double?
    public var jitterMs: Double?
    /// Inbound audio packets lost over the interval, in percent of those expected (video's when no audio came).
    public var lossPct: Double?
    public var bitrateInKbps: Double?
    public var bitrateOutKbps: Double?
    public var frameWidth: Int?
    public var frameHeight: Int?
    /// Video frames decoded per second over the interval.
    public var fps: Double?
    public var audioCodec: String?
    public var videoCodec: String?
    public var candidateType: String?
    /// The simplified E-model's estimate, 1…4.5; nil without media or without an interval.
    public var mos: Double?
    public var level: QualityLevel?
    /// Inbound media (audio or video packets) arrived during the interval.
    public var mediaFlowing: Bool

    public init(
        intervalMs: Double, rttMs: Double? = nil, jitterMs: Double? = nil, lossPct: Double? = nil,
        bitrateInKbps: Double? = nil, bitrateOutKbps: Double? = nil, frameWidth: Int? = nil, frameHeight: Int? = nil,
        fps: Double? = nil, audioCodec: String? = nil, videoCodec: String? = nil, candidateType: String? = nil,
        mos: Double? = nil, level: QualityLevel? = nil, mediaFlowing: Bool
    ) {
        self.intervalMs = intervalMs
        self.rttMs = rttMs
        self.jitterMs = jitterMs
        self.lossPct = lossPct
        self.bitrateInKbps = bitrateInKbps
        self.bitrateOutKbps = bitrateOutKbps
        self.frameWidth = frameWidth
        self.frameHeight = frameHeight
        self.fps = fps
        self.audioCodec = audioCodec
        self.videoCodec = videoCodec
        self.candidateType = candidateType
        self.mos = mos
        self.level = level
        self.mediaFlowing = mediaFlowing
    }
}

public enum QualityLevel: String, Sendable, Equatable, Codable, CaseIterable {
    case good, fair, poor
}
