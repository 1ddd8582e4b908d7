import Foundation

/// GStreamer webrtcbin's `get-stats` reply → `QualitySample`. The reply arrives as the JSON the C shim makes of
/// it (`duet_peer_stats`: an array of objects, each a stats structure's fields plus its name as `type`). Its
/// field names are the W3C webrtc-stats ones spelled with dashes (`packets-lost`, `round-trip-time`); keys are
/// compared without dashes and case, so the camel-cased browser spelling reads the same.
///
/// What webrtcbin 1.22's stats get wrong or leave out comes in beside them as `Decoded`, from what the shim sees on
/// its own pads: decoded frames and their size (no frame counters in the stats), and each inbound stream's SSRC and
/// encoding name (every `inbound-rtp` is labelled `kind: audio`, with an empty codec — seen in the captures).
public enum WebRtcBinStats {
    public struct Decoded: Sendable, Equatable, Codable {
        public var framesDecoded: Int
        public var frameWidth: Int?
        public var frameHeight: Int?
        /// The inbound audio and video streams' SSRCs, from their pads' caps: which `inbound-rtp` is which.
        public var audioSsrc: UInt32?
        public var videoSsrc: UInt32?
        /// Their encoding names (`OPUS`, `VP8`), for when the stats' codec says nothing.
        public var audioCodec: String?
        public var videoCodec: String?
        public init(
            framesDecoded: Int, frameWidth: Int? = nil, frameHeight: Int? = nil, audioSsrc: UInt32? = nil,
            videoSsrc: UInt32? = nil, audioCodec: String? = nil, videoCodec: String? = nil
        ) {
            self.framesDecoded = framesDecoded
            self.frameWidth = frameWidth
            self.frameHeight = frameHeight
            self.audioSsrc = audioSsrc
            self.videoSsrc = videoSsrc
            self.audioCodec = audioCodec
            self.videoCodec = videoCodec
        }
    }

    /// nil when `reportJSON` is not a JSON array of objects.
    public static func sample(reportJSON: String, timestampMs: Double, decoded: Decoded) -> QualitySample? {
        guard let parsed = try? JSONSerialization.jsonObject(with: Data(reportJSON.utf8)) as? [[String: Any]] else { return nil }
        return sample(report: parsed.map(Stat.init), timestampMs: timestampMs, decoded: decoded)
    }

    /// One stats structure, keys without dashes and lower-cased.
    struct Stat {
        let fields: [String: Any]
        init(_ raw: [String: Any]) {
            fields = Dictionary(raw.map { (Stat.key($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        static func key(_ name: String) -> String { name.replacingOccurrences(of: "-", with: "").lowercased() }
        var type: String? { string("type") }
        var id: String? { string("id") }
        func string(_ name: String) -> String? { fields[Stat.key(name)] as? String }
        func number(_ name: String) -> Double? {
            switch fields[Stat.key(name)] {
            case let value as Int: Double(value)
            case let value as Double: value
            case let value as NSNumber: value.doubleValue
            default: nil
            }
        }
        // `Int(exactly:)` after rounding: a non-finite or out-of-range number in a report is 0, never a crash.
        func int(_ name: String) -> Int { number(name).flatMap { Int(exactly: $0.rounded(.towardZero)) } ?? 0 }
    }

    static func sample(report: [Stat], timestampMs: Double, decoded: Decoded) -> QualitySample {
        let byId = Dictionary(report.compactMap { stat in stat.id.map { ($0, stat) } }, uniquingKeysWith: { first, _ in first })
        var sample = QualitySample(
            timestampMs: timestampMs, framesDecoded: decoded.framesDecoded, frameWidth: decoded.frameWidth,
            frameHeight: decoded.frameHeight)
        var videoJitterMs: Double?
        var remoteRttMs: Double?
        for stat in report {
            switch stat.type {
            case "inbound-rtp":
                let codec = stat.string("codec-id").flatMap { byId[$0] }
                guard let kind = kind(of: stat, codec: codec, decoded: decoded) else { continue }
                sample.bytesReceived += stat.int("bytes-received")
                let jitterMs = stat.number("jitter").map { $0 * 1000 }
                if kind == "audio" {
                    sample.audioPacketsReceived += stat.int("packets-received")
                    sample.audioPacketsLost += stat.int("packets-lost")
                    sample.jitterMs = sample.jitterMs ?? jitterMs
                    sample.audioCodec = sample.audioCodec ?? codecName(codec) ?? decoded.audioCodec
                } else {
                    sample.videoPacketsReceived += stat.int("packets-received")
                    sample.videoPacketsLost += stat.int("packets-lost")
                    videoJitterMs = videoJitterMs ?? jitterMs
                    sample.videoCodec = sample.videoCodec ?? codecName(codec) ?? decoded.videoCodec
                }
            case "outbound-rtp":
                sample.bytesSent += stat.int("bytes-sent")
            case "remote-inbound-rtp":
                if remoteRttMs == nil, let rtt = stat.number("round-trip-time"), rtt > 0 { remoteRttMs = rtt * 1000 }
            default:
                break
            }
        }
        sample.jitterMs = sample.jitterMs ?? videoJitterMs
        let pair = report.first { $0.type == "transport" && $0.string("selected-candidate-pair-id") != nil }
            .flatMap { $0.string("selected-candidate-pair-id") }.flatMap { byId[$0] }
        sample.rttMs = pair?.number("current-round-trip-time").map { $0 * 1000 } ?? remoteRttMs
        sample.candidateType = pair?.string("local-candidate-id").flatMap { byId[$0] }?.string("candidate-type")
        return sample
    }

    /// By SSRC when the shim knows the streams' (a stream that is neither, an RTX or FEC one, is not counted); else
    /// `kind` where the stats say it, the codec's media type (`audio/opus`), or its clock rate (90 kHz is video).
    private static func kind(of stat: Stat, codec: Stat?, decoded: Decoded) -> String? {
        if decoded.audioSsrc != nil || decoded.videoSsrc != nil {
            guard let ssrc = stat.number("ssrc").map({ UInt32(exactly: $0) }) ?? nil else { return nil }
            return ssrc == decoded.audioSsrc ? "audio" : ssrc == decoded.videoSsrc ? "video" : nil
        }
        if let kind = stat.string("kind") ?? stat.string("media-type"), kind == "audio" || kind == "video" { return kind }
        if let mime = codec?.string("mime-type"), let slash = mime.firstIndex(of: "/") { return String(mime[..<slash]).lowercased() }
        if let rate = codec?.number("clock-rate") { return rate == 90_000 ? "video" : "audio" }
        return nil
    }

    private static func codecName(_ codec: Stat?) -> String? {
        guard let mime = codec?.string("mime-type") else { return nil }
        return mime.firstIndex(of: "/").map { String(mime[mime.index(after: $0)...]) } ?? mime
    }
}
