/// Call quality from two consecutive stats samples: pure arithmetic, no clock (times come in the samples). The
/// browser's `js/quality/call-quality.js` does the same operations in the same order and rounds the same way, so
/// the shared fixtures (Tests/fixtures/quality) give both engines identical readings.
public enum CallQuality {
    /// The reading for the interval between `previous` and `current` (nil `previous`: the first sample, which
    /// has no interval, so no loss, bitrate or MOS, and no level). Counters below their previous value are read
    /// as restarted from zero (a new peer connection).
    public static func reading(previous: QualitySample?, current: QualitySample) -> QualityReading {
        var reading = QualityReading(
            intervalMs: 0, rttMs: current.rttMs.map { QualityRounding.round($0, places: 1) },
            jitterMs: current.jitterMs.map { QualityRounding.round($0, places: 1) }, frameWidth: current.frameWidth,
            frameHeight: current.frameHeight, audioCodec: current.audioCodec, videoCodec: current.videoCodec,
            candidateType: current.candidateType, mediaFlowing: false)
        guard let previous, current.timestampMs - previous.timestampMs > 0 else { return reading }
        let intervalMs = current.timestampMs - previous.timestampMs
        let base = current.countersRestarted(since: previous) ? QualitySample(timestampMs: previous.timestampMs) : previous
        let audioReceived = current.audioPacketsReceived - base.audioPacketsReceived
        let videoReceived = current.videoPacketsReceived - base.videoPacketsReceived
        // Voice quality is what the E-model scores: audio's loss when audio was expected, else video's.
        let lossPct =
            lossPercent(received: audioReceived, lost: current.audioPacketsLost - base.audioPacketsLost)
            ?? lossPercent(received: videoReceived, lost: current.videoPacketsLost - base.videoPacketsLost)
        let mediaFlowing = audioReceived + videoReceived > 0
        var mos: Double?
        if mediaFlowing, let lossPct {
            mos = QualityRounding.round(meanOpinionScore(rttMs: current.rttMs, jitterMs: current.jitterMs, lossPct: lossPct), places: 2)
        }
        reading.intervalMs = intervalMs
        reading.lossPct = lossPct.map { QualityRounding.round($0, places: 2) }
        reading.bitrateInKbps = QualityRounding.round(Double(current.bytesReceived - base.bytesReceived) * 8 / intervalMs, places: 0)
        reading.bitrateOutKbps = QualityRounding.round(Double(current.bytesSent - base.bytesSent) * 8 / intervalMs, places: 0)
        reading.fps = QualityRounding.round(Double(current.framesDecoded - base.framesDecoded) * 1000 / intervalMs, places: 1)
        reading.mos = mos
        reading.level = level(mos: mos)
        reading.mediaFlowing = mediaFlowing
        return reading
    }

    /// The simplified E-model: Cole & Rosenbluth's reduction of ITU-T G.107 ("Voice over IP Performance
    /// Monitoring", ACM SIGCOMM CCR 31(2), 2001) in its widely used form —
    /// effective latency = RTT/2 + 2·jitter + 10 ms;
    /// R = 93.2 − latency/40 (latency < 160 ms) or 93.2 − (latency − 120)/10, then − 2.5 per percent lost,
    /// clamped to [0, 100]; MOS = 1 + 0.035·R + 7·10⁻⁶·R·(R − 60)·(100 − R) (G.107 Annex B).
    /// An unknown RTT or jitter counts as 0: loss, always known while media flows, dominates on real links.
    /// MOS is kept at 1 or above.
    public static func meanOpinionScore(rttMs: Double?, jitterMs: Double?, lossPct: Double) -> Double {
        let latency = (rttMs ?? 0) / 2 + 2 * (jitterMs ?? 0) + 10
        let delayImpairment = latency < 160 ? latency / 40 : (latency - 120) / 10
        let r = min(100, max(0, 93.2 - delayImpairment - 2.5 * lossPct))
        // The cubic dips just under 1 for R < 6.5 (0.99 at R = 3): a score never goes below the scale's bottom.
        return max(1, 1 + 0.035 * r + 0.000007 * r * (r - 60) * (100 - r))
    }

    /// good ≥ `QUALITY_GOOD_MOS_MIN`, fair ≥ `QUALITY_FAIR_MOS_MIN`, else poor; nil without a MOS.
    public static func level(mos: Double?) -> QualityLevel? {
        guard let mos else { return nil }
        if mos >= QualityConstants.QUALITY_GOOD_MOS_MIN { return .good }
        if mos >= QualityConstants.QUALITY_FAIR_MOS_MIN { return .fair }
        return .poor
    }

    private static func lossPercent(received: Int, lost: Int) -> Double? {
        let expected = received + lost
        guard expected > 0 else { return nil }
        return min(100, max(0, Double(lost) / Double(expected) * 100))
    }
}

/// Half up at a few decimals, by the same operations as `roundTo` in call-quality.js (`floor(x·scale + 0.5) / scale`),
/// so both engines print the same digits.
enum QualityRounding {
    static func round(_ value: Double, places: Int) -> Double {
        let scale: Double = [1, 10, 100][places]
        return (value * scale + 0.5).rounded(.down) / scale
    }
}
