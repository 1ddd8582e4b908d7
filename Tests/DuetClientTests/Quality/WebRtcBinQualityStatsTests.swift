import DuetClient
import Testing

/// `WebRtcBinStats`: webrtcbin's stats (as the C shim writes them) → `QualitySample`. The real captures are in the
/// fixtures (CallQualityFixtureTests); these are the rules one at a time.
@Suite struct WebRtcBinQualityStatsTests {
    static let decoded = WebRtcBinStats.Decoded(framesDecoded: 120, frameWidth: 320, frameHeight: 240)

    @Test func countsEachKindByItsCodecAndPrefersTheSelectedPairsRtt() throws {
        let report = """
            [{"type":"codec","id":"c-audio","mime-type":"audio/OPUS","clock-rate":48000},
             {"type":"codec","id":"c-video","clock-rate":90000},
             {"type":"inbound-rtp","id":"in-a","codec-id":"c-audio","packets-received":480,"packets-lost":20,"bytes-received":40000,"jitter":0.004},
             {"type":"inbound-rtp","id":"in-v","codec-id":"c-video","packets-received":900,"packets-lost":3,"bytes-received":600000,"jitter":0.01},
             {"type":"outbound-rtp","id":"out-a","bytes-sent":38000},{"type":"outbound-rtp","id":"out-v","bytes-sent":500000},
             {"type":"remote-inbound-rtp","id":"r","round-trip-time":0.05},
             {"type":"transport","id":"t","selected-candidate-pair-id":"p"},
             {"type":"candidate-pair","id":"p","local-candidate-id":"l","current-round-trip-time":0.002},
             {"type":"local-candidate","id":"l","candidate-type":"host"}]
            """
        let sample = try #require(WebRtcBinStats.sample(reportJSON: report, timestampMs: 1_500, decoded: Self.decoded))
        #expect(
            sample
                == QualitySample(
                    timestampMs: 1_500, audioPacketsReceived: 480, audioPacketsLost: 20, videoPacketsReceived: 900, videoPacketsLost: 3,
                    bytesReceived: 640_000, bytesSent: 538_000, jitterMs: 4, rttMs: 2, framesDecoded: 120, frameWidth: 320,
                    frameHeight: 240, audioCodec: "OPUS", videoCodec: nil, candidateType: "host"))
    }

    @Test func withoutASelectedPairRttComesFromRtcpAndJitterFromVideoWhenNoAudio() throws {
        let report = """
            [{"type":"codec","id":"c","mime-type":"video/VP8"},
             {"type":"inbound-rtp","id":"in","codec-id":"c","packets-received":10,"bytes-received":9000,"jitter":0.0125},
             {"type":"remote-inbound-rtp","id":"r","round-trip-time":0.031}]
            """
        let sample = try #require(WebRtcBinStats.sample(reportJSON: report, timestampMs: 0, decoded: .init(framesDecoded: 0)))
        #expect(sample.videoPacketsReceived == 10 && sample.audioPacketsReceived == 0)
        #expect(sample.jitterMs == 12.5 && sample.rttMs == 31 && sample.videoCodec == "VP8" && sample.candidateType == nil)
    }

    /// webrtcbin 1.22 labels every inbound stream `kind: audio` and leaves its codec empty: the SSRCs the shim read
    /// from its pads decide, and a stream that is neither (a repair stream) is not counted.
    @Test func theShimsSsrcsTellTheInboundStreamsApart() throws {
        let report = """
            [{"type":"codec","id":"c"},
             {"type":"inbound-rtp","id":"a","ssrc":3226749419,"kind":"audio","codec-id":"c","packets-received":736,"jitter":0.00025},
             {"type":"inbound-rtp","id":"v","ssrc":941587697,"kind":"audio","codec-id":"c","packets-received":442,"packets-lost":2,"jitter":0.0003},
             {"type":"inbound-rtp","id":"x","ssrc":77,"kind":"audio","codec-id":"c","packets-received":9}]
            """
        let decoded = WebRtcBinStats.Decoded(
            framesDecoded: 440, audioSsrc: 3_226_749_419, videoSsrc: 941_587_697, audioCodec: "OPUS", videoCodec: "VP8")
        let sample = try #require(WebRtcBinStats.sample(reportJSON: report, timestampMs: 0, decoded: decoded))
        #expect(sample.audioPacketsReceived == 736 && sample.videoPacketsReceived == 442 && sample.videoPacketsLost == 2)
        #expect(sample.jitterMs == 0.25 && sample.audioCodec == "OPUS" && sample.videoCodec == "VP8")
    }

    @Test func streamsOfUnknownKindAndBrokenReportsAreNotCounted() {
        let sample = WebRtcBinStats.sample(
            reportJSON: #"[{"type":"inbound-rtp","id":"x","packets-received":5}]"#, timestampMs: 0, decoded: .init(framesDecoded: 0))
        #expect(sample?.audioPacketsReceived == 0 && sample?.videoPacketsReceived == 0)
        #expect(WebRtcBinStats.sample(reportJSON: "not json", timestampMs: 0, decoded: .init(framesDecoded: 0)) == nil)
    }
}
