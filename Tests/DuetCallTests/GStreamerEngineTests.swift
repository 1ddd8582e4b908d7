import DuetClient
import DuetProtocol
import Testing

@testable import DuetGStreamer

/// The pure parts of the GStreamer engine: what it hands webrtcbin, and what it reads from SDP.
@Suite struct GStreamerEngineTests {
    /// A new session's zero count is not media: before this rule the watchdog's first reading counted as "heard",
    /// cleared the session's silence, and a session that never carried media was never given up (seed 6124).
    @Test func aSessionThatNeverCarriedMediaStaysSilent() {
        let start = ContinuousClock.now
        var watch = InboundWatch(startedAt: start, silence: .seconds(3))
        #expect(watch.read(0, at: start + .milliseconds(500)) == .nothing, "zero inbound is not media")
        #expect(watch.read(0, at: start + .seconds(3)) == .quiet)
        #expect(watch.read(12, at: start + .milliseconds(3_500)) == .heard)
        #expect(watch.read(12, at: start + .seconds(4)) == .nothing)
        #expect(watch.read(12, at: start + .milliseconds(6_500)) == .quiet, "quiet again 3 s after the last growth")
    }

    @Test func turnURLsCarryEscapedRESTCredentials() {
        // coturn REST credentials: `expiry:label` and a base64 HMAC, both full of characters URLs reserve.
        let server = IceServer(
            urls: ["turn:127.0.0.1:3478?transport=udp", "stun:127.0.0.1:3478", "turns:turn.example:5349"],
            username: "1795397000:duet", credential: "a+b/c=")
        #expect(
            GStreamerWebRtcEngine.turnURLs([server]) == [
                "turn://1795397000%3Aduet:a%2Bb%2Fc%3D@127.0.0.1:3478?transport=udp",
                "turns://1795397000%3Aduet:a%2Bb%2Fc%3D@turn.example:5349",
            ])
        #expect(GStreamerWebRtcEngine.turnURLs([IceServer(urls: ["turn:h:3478"])]).isEmpty, "no credentials, no TURN")
        // The server's list: its own STUN first, then TURN. webrtcbin takes the first STUN as stun://host:port.
        #expect(
            GStreamerWebRtcEngine.stunURL([IceServer(urls: ["stun:203.0.113.5:3478", "stun:b:1"]), server]) == "stun://203.0.113.5:3478")
        #expect(GStreamerWebRtcEngine.stunURL([server]) == "stun://127.0.0.1:3478")
        #expect(GStreamerWebRtcEngine.stunURL([IceServer(urls: ["turn:h:3478"], username: "u", credential: "p")]) == nil)
    }

    @Test func aFreshSessionKeepsTheNegotiatedOrderAndMids() {
        let browserOffer =
            "v=0\r\na=group:BUNDLE 0 1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1\r\n"
        #expect(GStreamerWebRtcEngine.audioFirst(browserOffer))
        #expect(GStreamerWebRtcEngine.mids(browserOffer) == ["0", "1"])
        let ownOffer = "v=0\nm=video 9 UDP/TLS/RTP/SAVPF 96\na=mid:video0\nm=audio 0 UDP/TLS/RTP/SAVPF 111\na=mid:audio1\n"
        #expect(!GStreamerWebRtcEngine.audioFirst(ownOffer))
        #expect(GStreamerWebRtcEngine.mids(ownOffer) == ["video0", "audio1"])
    }

    /// webrtcbin answers on its own sending transceivers only when the offer's payload types are theirs: a session
    /// answering Firefox (Opus 109, VP8 120) or aiortc (96, 97) is made with the offer's numbers.
    @Test func theOfferNamesThePayloadTypesASessionSendsWith() {
        let chromium = PayloadTypes()
        let firefox =
            "v=0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 109 9 0 8 101\r\na=rtpmap:109 opus/48000/2\r\na=rtpmap:101 telephone-event/8000\r\n"
            + "m=video 9 UDP/TLS/RTP/SAVPF 120 124 121\r\na=rtpmap:120 VP8/90000\r\na=rtpmap:124 rtx/90000\r\na=rtpmap:121 VP9/90000\r\n"
        #expect(PayloadTypes.offered(in: firefox, over: chromium) == PayloadTypes(opus: 109, vp8: 120))
        // Video first, and VP8 named in an audio section does not count.
        let aiortc =
            "m=video 9 UDP/TLS/RTP/SAVPF 97\r\na=rtpmap:97 VP8/90000\r\nm=audio 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 opus/48000/2\r\n"
        #expect(PayloadTypes.offered(in: aiortc, over: chromium) == PayloadTypes(opus: 96, vp8: 97))
        // Audio only: video keeps the session's number; nothing usable keeps both; a clash keeps both.
        #expect(
            PayloadTypes.offered(in: "m=audio 9 X 100\r\na=rtpmap:100 OPUS/48000/2\r\n", over: chromium) == PayloadTypes(opus: 100, vp8: 96)
        )
        #expect(
            PayloadTypes.offered(in: "m=audio 9 X 8\r\na=rtpmap:8 PCMA/8000\r\na=rtpmap:200 opus/48000\r\n", over: chromium) == chromium)
        #expect(
            PayloadTypes.offered(in: "m=audio 9 X 96\r\na=rtpmap:96 opus/48000/2\r\n", over: chromium) == chromium,
            "Opus on VP8's number: not a session webrtcbin can make")
    }

    @Test func iceCredentialsTellARestartOfferApart() {
        let first = "v=0\na=ice-ufrag:abcd\na=ice-pwd:x\n"
        let restart = "v=0\na=ice-ufrag:efgh\na=ice-pwd:y\n"
        #expect(GStreamerWebRtcEngine.iceCredentials(first) == "a=ice-ufrag:abcd")
        #expect(GStreamerWebRtcEngine.iceCredentials(first) != GStreamerWebRtcEngine.iceCredentials(restart))
    }
}
