import DuetClient
import Testing

/// `CallQuality`'s edges, the same cases as Tests/web/call-quality.test.mjs.
@Suite struct CallQualityTests {
    func at(
        _ timestampMs: Double, audio: Int = 0, audioLost: Int = 0, video: Int = 0, videoLost: Int = 0,
        bytesIn: Int = 0, bytesOut: Int = 0, jitterMs: Double? = nil, rttMs: Double? = nil
    ) -> QualitySample {
        QualitySample(
            timestampMs: timestampMs, audioPacketsReceived: audio, audioPacketsLost: audioLost, videoPacketsReceived: video,
            videoPacketsLost: videoLost, bytesReceived: bytesIn, bytesSent: bytesOut, jitterMs: jitterMs, rttMs: rttMs)
    }

    @Test func firstSampleAloneHasNoIntervalNoMosNoLevel() {
        var sample = at(5_000, audio: 50, jitterMs: 3.21, rttMs: 12.345)
        sample.candidateType = "host"
        let reading = CallQuality.reading(previous: nil, current: sample)
        #expect(reading.intervalMs == 0)
        #expect(reading.mos == nil && reading.level == nil && reading.lossPct == nil)
        #expect(!reading.mediaFlowing)
        #expect(reading.rttMs == 12.3 && reading.jitterMs == 3.2 && reading.candidateType == "host")
    }

    @Test func zeroPacketsIsNoMediaAndNoLevel() {
        let same = at(1_000, audio: 100, video: 300, bytesIn: 5_000, bytesOut: 7_000)
        var later = same
        later.timestampMs = 2_000
        let reading = CallQuality.reading(previous: same, current: later)
        #expect(reading.intervalMs == 1_000)
        #expect(!reading.mediaFlowing)
        #expect(reading.lossPct == nil && reading.mos == nil && reading.level == nil)
        #expect(reading.bitrateInKbps == 0 && reading.bitrateOutKbps == 0)
    }

    @Test func countersGoingBackwardsCountFromZero() {
        let before = at(1_000, audio: 5_000, audioLost: 400, bytesIn: 900_000, bytesOut: 800_000)
        let after = at(2_000, audio: 45, audioLost: 5, bytesIn: 10_000, bytesOut: 12_000)
        let reading = CallQuality.reading(previous: before, current: after)
        #expect(reading.mediaFlowing)
        #expect(reading.lossPct == 10)
        #expect(reading.bitrateInKbps == 80 && reading.bitrateOutKbps == 96)
        #expect(reading.level != nil)
    }

    @Test func missingRttScoresAsZeroAndIsReportedUnknown() {
        let reading = CallQuality.reading(previous: at(0), current: at(1_000, audio: 49, audioLost: 1, jitterMs: 4))
        #expect(reading.rttMs == nil)
        let expected = CallQuality.meanOpinionScore(rttMs: 0, jitterMs: 4, lossPct: 2)
        #expect(reading.mos.map { abs($0 - expected) <= 0.005 } == true)
    }

    @Test func lossIsAudiosWhenAudioWasExpectedElseVideos() {
        #expect(CallQuality.reading(previous: at(0), current: at(1_000, audio: 90, audioLost: 10, video: 100)).lossPct == 10)
        #expect(CallQuality.reading(previous: at(0), current: at(1_000, video: 96, videoLost: 4)).lossPct == 4)
    }

    @Test func eModelBestCaseFloorAndDelayBranches() {
        let best = CallQuality.meanOpinionScore(rttMs: 0, jitterMs: 0, lossPct: 0)
        #expect(abs(best - 4.40) < 0.005, "R = 92.95 → MOS 4.40 (G.107's default R 93.2 is 4.41)")
        #expect(CallQuality.meanOpinionScore(rttMs: 0, jitterMs: 0, lossPct: 40) == 1)
        #expect(CallQuality.meanOpinionScore(rttMs: 0, jitterMs: 0, lossPct: 36) == 1, "the cubic's dip under 1 is cut")
        let below = CallQuality.meanOpinionScore(rttMs: 299.998, jitterMs: 0, lossPct: 0)
        let at160 = CallQuality.meanOpinionScore(rttMs: 300, jitterMs: 0, lossPct: 0)
        #expect(abs(below - at160) < 1e-4, "the two delay branches meet at 160 ms")
        func cost(_ from: Double, _ to: Double) -> Double {
            CallQuality.meanOpinionScore(rttMs: from, jitterMs: 0, lossPct: 0)
                - CallQuality.meanOpinionScore(rttMs: to, jitterMs: 0, lossPct: 0)
        }
        #expect(cost(400, 500) > 3 * cost(0, 100))
        var previous = Double.infinity
        for loss in 0...40 {
            let mos = CallQuality.meanOpinionScore(rttMs: 50, jitterMs: 5, lossPct: Double(loss))
            #expect(mos <= previous, "MOS falls as loss grows (\(loss)%)")
            previous = mos
        }
    }

    @Test func levelThresholds() {
        #expect(CallQuality.level(mos: 4.4) == .good)
        #expect(CallQuality.level(mos: QualityConstants.QUALITY_GOOD_MOS_MIN) == .good)
        #expect(CallQuality.level(mos: 3.99) == .fair)
        #expect(CallQuality.level(mos: QualityConstants.QUALITY_FAIR_MOS_MIN) == .fair)
        #expect(CallQuality.level(mos: 3.09) == .poor)
        #expect(CallQuality.level(mos: 1) == .poor)
        #expect(CallQuality.level(mos: nil) == nil)
    }

    @Test func summaryFoldsTimeNoMediaMeanMosAndReconnects() {
        let readings = [
            CallQuality.reading(previous: nil, current: at(0)),
            CallQuality.reading(previous: at(0), current: at(1_000, audio: 50)),
            CallQuality.reading(previous: at(1_000, audio: 50), current: at(2_500, audio: 50)),
            CallQuality.reading(previous: at(2_500, audio: 50), current: at(3_500, audio: 90, audioLost: 10)),
        ]
        let summary = readings.reduce(QualitySummary()) { $0.adding($1) }.addingReconnect()
        #expect(summary.readings == 4 && summary.durationMs == 3_500 && summary.noMediaMs == 1_500 && summary.reconnects == 1)
        let mean = ((readings[1].mos ?? 0) + (readings[3].mos ?? 0)) / 2
        #expect(summary.averageMos.map { abs($0 - mean) <= 0.005 } == true)
        #expect(QualitySummary().averageMos == nil)
    }
}
