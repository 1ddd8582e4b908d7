import DuetClient
import DuetProtocol
import Foundation
import GStreamerShim
import Logging

/// `WebRtcEngine` on GStreamer's webrtcbin: sends a test-pattern VP8 video and an Opus tone (or audio only),
/// decodes what the peer sends, counts it and measures the decoded audio's level. webrtcbin 1.22 has neither ICE
/// restart nor rollback, so both start a fresh session (a new webrtcbin, new ICE credentials and DTLS
/// certificate) that the peer negotiates like any new offer. libnice sends no consent checks, so its ICE stays
/// `connected` on a dead path: the engine's media watchdog (`MediaWatchdogMachine`, fed by `stats()` like a
/// browser's) finds such a path, and this engine only measures how long inbound media has been silent, to know when
/// a session is given up on.
public final class GStreamerWebRtcEngine: WebRtcEngine, @unchecked Sendable {
    public struct Options: Sendable {
        public var audioOnly: Bool
        /// Addresses the ICE agent gathers on; empty lets libnice use every interface but loopback.
        public var iceAddresses: [String]
        /// Inbound media silent this long counts as stopped, from when it last grew (`freshSessionAfter` runs from
        /// there).
        public var silenceTimeout: Duration
        /// An ICE restart (ours or the peer's) replaces the session only after media has been silent this long:
        /// a short cut heals on the path the session already has (browsers cannot follow a fresh DTLS
        /// session), a long one — a new network — needs new candidates.
        public var freshSessionAfter: Duration
        public init(
            audioOnly: Bool = false, iceAddresses: [String] = [], silenceTimeout: Duration = .seconds(3),
            freshSessionAfter: Duration = .seconds(30)
        ) {
            self.audioOnly = audioOnly
            self.iceAddresses = iceAddresses
            self.silenceTimeout = silenceTimeout
            self.freshSessionAfter = freshSessionAfter
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public let events: AsyncStream<WebRtcEvent>
    private let sink: AsyncStream<WebRtcEvent>.Continuation
    private let options: Options
    private let logger = Logger(label: "duet.gstreamer")
    /// Zero of the quality samples' timestamps.
    private let statsOrigin = ContinuousClock.now
    private let lock = NSLock()
    // Guarded by `lock`.
    private var peer: OpaquePointer?
    /// `close()` was called and no new call has made a peer since: a fresh session must not start one.
    private var closed = false
    private var requests: [UInt64: CheckedContinuation<String?, any Error>] = [:]
    private var nextRequest: UInt64 = 1
    private var appliedTurn: Set<String> = []
    private var configuration = RtcConfiguration()
    private var watchdog: Task<Void, Never>?
    private var reportedIce: NegotiationMachine.IceState = .new
    /// When inbound media last stopped, or when the session was made if none has arrived yet (nil while it flows):
    /// a session that never carried media is given up after `freshSessionAfter` like one that stopped — its
    /// candidates may belong to a network that is gone, and libnice cannot gather new ones in place.
    private var silentSince: ContinuousClock.Instant?
    /// What the sessions replaced so far received: a fresh session counts from zero, the call's totals go on.
    private var carried = Received()

    /// The current session has been given up on: media silent for `freshSessionAfter`, or ICE failed.
    private var needsFreshSession: Bool {
        lock.withLock {
            guard peer != nil else { return false }
            if reportedIce == .failed { return true }
            guard let silentSince else { return false }
            return ContinuousClock.now - silentSince >= options.freshSessionAfter
        }
    }

    /// Frees GStreamer's process-lifetime state (`duet_gst_deinit`) so that LeakSanitizer at exit reports only what
    /// Duet lost (scripts/sanitize.sh leaks). Only after every engine is closed, right before exit: GStreamer cannot be
    /// used again after it. Refused while a peer is not yet freed: returns how many are (0: done).
    public static func deinitializeForLeakCheck() -> Int { Int(duet_gst_deinit()) }

    public init(options: Options = Options()) throws {
        var error = [CChar](repeating: 0, count: 512)
        guard duet_gst_init(&error, error.count) != 0 else { throw Failure(description: Self.text(error)) }
        self.options = options
        (events, sink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    deinit {
        if let peer { duet_peer_free(peer) }
        sink.finish()
    }

    // MARK: - WebRtcEngine

    public func ensurePeerConnection(_ configuration: RtcConfiguration) async throws {
        try lock.withLock {
            self.configuration = configuration
            closed = false  // a new call
            if peer == nil { try createPeerLocked() }
        }
    }

    public func createOffer(iceRestart: Bool) async throws -> String {
        if iceRestart, needsFreshSession { try restartSession() }
        let sdp = try await request { duet_peer_create_offer($0, $1) } ?? ""
        lock.withLock {
            audioFirst = Self.audioFirst(sdp)
            negotiatedMids = Self.mids(sdp)
            localOfferPending = true
        }
        logger.debug("offer", metadata: ["sdp": "\(sdp)", "restart": "\(iceRestart)"])
        return sdp
    }

    public func createAnswer() async throws -> String {
        try await request { duet_peer_create_answer($0, $1) } ?? ""
    }

    public func setRemoteDescription(_ kind: NegotiationMachine.DescriptionKind, sdp: String) async throws {
        // A new offer for a connection that already negotiated ICE with other credentials is the peer's ICE
        // restart (or its fresh session): webrtcbin can follow it only with a fresh session of its own.
        let restartedRemotely = lock.withLock { peer != nil && hasRemoteDescription && Self.iceCredentials(sdp) != remoteCredentials }
        // webrtcbin takes a remote offer only when stable: with our offer still applied, only a fresh session can. And
        // it answers on its own sending transceivers only when the offer's payload types are theirs (Firefox's are not).
        let offered = kind == .offer ? PayloadTypes.offered(in: sdp, over: lock.withLock { payloadTypes }) : nil
        let retyped = offered.map { offered in lock.withLock { offered != payloadTypes && peer != nil } } ?? false
        if let offered { lock.withLock { payloadTypes = offered } }
        if kind == .offer, retyped || lock.withLock({ localOfferPending }) || (restartedRemotely && needsFreshSession) {
            try restartSession()
        }
        lock.withLock {
            remoteCredentials = Self.iceCredentials(sdp)
            hasRemoteDescription = true
            if kind == .answer { localOfferPending = false }
            if kind == .offer {
                audioFirst = Self.audioFirst(sdp)
                negotiatedMids = Self.mids(sdp)
            }
        }
        _ = try await request { peer, id in
            sdp.withCString { duet_peer_set_remote(peer, kind == .offer ? 1 : 0, $0, id) }
        }
    }

    public func rollback() async throws {
        // No rollback in webrtcbin 1.22. The unanswered offer may stay applied: our next offer replaces it, and
        // a remote offer meets `localOfferPending` and gets a fresh session then. Only a session given up on is
        // replaced now.
        if needsFreshSession { try restartSession() }
    }

    public func addRemoteCandidate(_ candidate: IceCandidate?) async throws {
        // Retained under the lock: a close or a fresh session meanwhile cannot free it under the call.
        guard
            let peer = lock.withLock({
                peer.map {
                    duet_peer_retain($0)
                    return PeerHandle(pointer: $0)
                }
            })
        else { return }
        defer { duet_peer_release(peer.pointer) }
        guard let candidate else {
            duet_peer_add_candidate(peer.pointer, 0, nil)
            return
        }
        let mline = candidate.sdpMLineIndex ?? 0
        candidate.candidate.withCString { duet_peer_add_candidate(peer.pointer, UInt32(mline), $0) }
    }

    public func setConfiguration(_ configuration: RtcConfiguration) async throws {
        lock.withLock {
            self.configuration = configuration
            // New TURN credentials reach the live session; webrtcbin cannot forget the old ones (harmless).
            if let peer { applyTurnLocked(peer, live: true) }
        }
    }

    public func close() async {
        let (closing, waiting) = lock.withLock { () -> (OpaquePointer?, [CheckedContinuation<String?, any Error>]) in
            closed = true
            watchdog?.cancel()
            watchdog = nil
            return detachLocked()
        }
        if let closing { duet_peer_free(closing) }
        for continuation in waiting { continuation.resume(throwing: Failure(description: "the peer connection was closed")) }
    }

    /// webrtcbin 1.22's DTLS decoder accepts any certificate: `DuetCall` checks it (`remoteCertificatesDER`).
    public var checksRemoteCertificates: Bool { false }

    public func remoteCertificatesDER() async -> [[UInt8]] {
        guard
            let peer = lock.withLock({
                peer.map {
                    duet_peer_retain($0)
                    return PeerHandle(pointer: $0)
                }
            })
        else { return [] }
        defer { duet_peer_release(peer.pointer) }
        guard let pem = duet_peer_remote_certificates(peer.pointer) else { return [] }
        defer { duet_string_free(pem) }
        return CertificateFingerprint.ders(fromPEM: String(cString: pem))
    }

    public func stats() async -> CallStats? {
        // Retained under the lock: a close meanwhile cannot free the peer under the stats call. The carried
        // totals are read with it, so a session replaced meanwhile is not counted twice.
        guard
            let (peer, base) = lock.withLock({
                peer.map {
                    duet_peer_retain($0)
                    return (PeerHandle(pointer: $0), carried)
                }
            })
        else { return nil }
        // `duet_peer_stats` blocks until webrtcbin answers: keep it off the cooperative pool.
        let (stats, report) = await withCheckedContinuation { (done: CheckedContinuation<(DuetStats, String?), Never>) in
            DispatchQueue.global().async {
                var stats = DuetStats()
                duet_peer_stats(peer.pointer, &stats)
                duet_peer_release(peer.pointer)
                let report = stats.report_json.map { String(cString: $0) }
                duet_stats_clear(&stats)
                done.resume(returning: (stats, report))
            }
        }
        let type = withUnsafeBytes(of: stats.candidate_type) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let total = base.adding(stats)
        let decoded = Self.decoded(stats)
        return CallStats(
            videoFramesReceived: total.frames, audioPacketsReceived: total.packets,
            candidateType: type.isEmpty ? nil : type, roundTripTimeMs: stats.has_rtt != 0 ? stats.rtt_ms : nil,
            audioSamplesDecoded: total.samples, audioLevelDb: stats.audio_level_db, audioPeakDb: stats.audio_peak_db,
            quality: report.flatMap { Self.qualitySample(report: $0, decoded: decoded, at: statsOrigin) },
            rawReport: report.map { Self.rawReport($0, decoded: decoded) })
    }

    /// What the shim saw on its own pads, beside webrtcbin's stats (`WebRtcBinStats.Decoded` says why).
    static func decoded(_ stats: DuetStats) -> WebRtcBinStats.Decoded {
        func text<T>(_ tuple: T) -> String? {
            let value = withUnsafeBytes(of: tuple) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return value.isEmpty ? nil : value
        }
        return WebRtcBinStats.Decoded(
            framesDecoded: Int(stats.video_frames), frameWidth: stats.video_width > 0 ? Int(stats.video_width) : nil,
            frameHeight: stats.video_height > 0 ? Int(stats.video_height) : nil,
            audioSsrc: stats.audio_ssrc != 0 ? stats.audio_ssrc : nil, videoSsrc: stats.video_ssrc != 0 ? stats.video_ssrc : nil,
            audioCodec: text(stats.audio_codec), videoCodec: text(stats.video_codec))
    }

    /// `{"decoded":…,"report":[…]}`: everything the quality sample was made of, as the fixtures keep it.
    static func rawReport(_ report: String, decoded: WebRtcBinStats.Decoded) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let side = (try? encoder.encode(decoded)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        return #"{"decoded":"# + side + #","report":"# + report + "}"
    }

    /// The live session's counters for call quality (not the carried totals: a fresh session counts from zero, as
    /// a new browser peer connection does, and `CallQuality` reads that as a restart). Timestamps are this engine's
    /// monotonic milliseconds since it was made.
    static func qualitySample(report: String, decoded: WebRtcBinStats.Decoded, at origin: ContinuousClock.Instant) -> QualitySample? {
        // Whole milliseconds, as a browser's Date.now(): finer digits only make every interval a long fraction.
        let timestampMs = ((ContinuousClock.now - origin) / .milliseconds(1)).rounded(.down)
        return WebRtcBinStats.sample(reportJSON: report, timestampMs: timestampMs, decoded: decoded)
    }

    /// Media received by sessions so far.
    private struct Received {
        var frames = 0
        var packets = 0
        var samples = 0

        func adding(_ stats: DuetStats) -> Received {
            Received(
                frames: frames + Int(stats.video_frames), packets: packets + Int(stats.audio_packets),
                samples: samples + Int(stats.audio_samples))
        }
    }

    // MARK: - Sessions

    private var hasRemoteDescription = false
    private var remoteCredentials: String?
    /// Our offer is applied and unanswered (webrtcbin is in have-local-offer).
    private var localOfferPending = false
    /// The m-line order and mids the call was negotiated with (audio first, `0`/`1` when a browser offered
    /// first): a fresh session's offer must keep both.
    private var audioFirst = false
    private var negotiatedMids: [String] = []
    /// What the session sends with: Chromium's numbers until an offer names others (`PayloadTypes.offered`).
    private var payloadTypes = PayloadTypes()

    /// A fresh webrtcbin: new ICE credentials, new candidates, new DTLS certificate.
    private func restartSession() throws {
        let (old, waiting) = lock.withLock { detachLocked() }
        if let old { duet_peer_free(old) }
        for continuation in waiting { continuation.resume(throwing: Failure(description: "superseded by a fresh session")) }
        logger.info("fresh webrtcbin session (ICE restart or rollback)")
        try lock.withLock {
            // A close while the old session was being freed wins: no pipeline is started after it.
            guard !closed else { throw Failure(description: "the peer connection was closed") }
            try createPeerLocked()
        }
    }

    /// Takes the peer and the requests waiting on it out of the engine; the caller frees and fails them
    /// outside the lock (freeing waits for GStreamer threads that may be calling back into us).
    private func detachLocked() -> (OpaquePointer?, [CheckedContinuation<String?, any Error>]) {
        let detached = peer
        if let detached {
            var counted = DuetStats()
            duet_peer_counters(detached, &counted)  // atomics and a short C lock no callback into us holds
            carried = carried.adding(counted)
        }
        peer = nil
        hasRemoteDescription = false
        remoteCredentials = nil
        localOfferPending = false
        defer { requests.removeAll() }
        return (detached, Array(requests.values))
    }

    private func createPeerLocked() throws {
        var error = [CChar](repeating: 0, count: 512)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let callbacks = DuetPeerCallbacks(ctx: context, on_candidate: onCandidate, on_state: onState, on_reply: onReply)
        let addresses = options.iceAddresses.map { strdup($0) }
        defer { addresses.forEach { free($0) } }
        let created = addresses.map { UnsafePointer($0) }.withUnsafeBufferPointer { list in
            duet_peer_new(
                callbacks, options.audioOnly ? 1 : 0, audioFirst ? 1 : 0, Int32(payloadTypes.opus), Int32(payloadTypes.vp8),
                list.baseAddress, Int32(list.count),
                configuration.relayOnly ? 1 : 0, &error, error.count)
        }
        guard let created else { throw Failure(description: Self.text(error)) }
        negotiatedMids.joined(separator: ",").withCString { duet_peer_set_offer_mids(created, $0) }
        peer = created
        appliedTurn = []
        reportedIce = .new
        silentSince = ContinuousClock.now
        applyTurnLocked(created)
        startWatchdogLocked(created)
    }

    private func applyTurnLocked(_ peer: OpaquePointer, live: Bool = false) {
        if let stun = Self.stunURL(configuration.iceServers), !appliedTurn.contains(stun) {
            _ = stun.withCString { duet_peer_set_stun(peer, $0) }
            appliedTurn.insert(stun)
        }
        for url in Self.turnURLs(configuration.iceServers) where !appliedTurn.contains(url) {
            if url.withCString({ duet_peer_add_turn(peer, $0) }) != 0 {
                appliedTurn.insert(url)
                if live { logger.info("TURN server added to the live session") }
            } else {
                logger.warning("webrtcbin refused a TURN server", metadata: ["url": "\(url.prefix(12))…"])
            }
        }
    }

    /// The first `stun:host:port` as webrtcbin spells it (`stun://host:port`); webrtcbin holds one STUN server.
    static func stunURL(_ servers: [IceServer]) -> String? {
        for server in servers {
            for url in server.urls where url.hasPrefix("stun:") {
                let rest = url.dropFirst("stun:".count).drop { $0 == "/" }
                return "stun://" + rest.prefix { $0 != "?" }
            }
        }
        return nil
    }

    /// `turn:host:port?transport=udp` + credentials → `turn://user:pass@host:port?transport=udp`, escaped.
    static func turnURLs(_ servers: [IceServer]) -> [String] {
        var allowed = CharacterSet.urlUserAllowed
        allowed.remove(charactersIn: ":@/?#%+=")
        return servers.flatMap { server -> [String] in
            guard let user = server.username?.addingPercentEncoding(withAllowedCharacters: allowed),
                let password = server.credential?.addingPercentEncoding(withAllowedCharacters: allowed)
            else { return [] }
            return server.urls.compactMap { url in
                for scheme in ["turn:", "turns:"] where url.hasPrefix(scheme) {
                    let rest = url.dropFirst(scheme.count).drop { $0 == "/" }
                    return "\(scheme)//\(user):\(password)@\(rest)"
                }
                return nil
            }
        }
    }

    /// A NUL-terminated C message buffer as text.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func mids(_ sdp: String) -> [String] {
        sdp.split(whereSeparator: \.isNewline).filter { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst(6)) }
    }

    static func audioFirst(_ sdp: String) -> Bool {
        sdp.split(whereSeparator: \.isNewline).first { $0.hasPrefix("m=") }?.hasPrefix("m=audio") ?? false
    }

    static func iceCredentials(_ sdp: String) -> String? {
        sdp.split(whereSeparator: \.isNewline).first { $0.hasPrefix("a=ice-ufrag:") }.map(String.init)
    }

    private func request(_ start: @escaping (OpaquePointer, UInt64) -> Void) async throws -> String? {
        try await withCheckedThrowingContinuation { continuation in
            // The peer is retained under the lock and released after the call: a close or a fresh session meanwhile
            // frees it only once this is done (and the C side refuses to work on a closed one).
            let started: (PeerHandle, UInt64)? = lock.withLock {
                guard let peer else { return nil }
                let id = nextRequest
                nextRequest += 1
                requests[id] = continuation
                duet_peer_retain(peer)
                return (PeerHandle(pointer: peer), id)
            }
            guard let (peer, id) = started else {
                continuation.resume(throwing: Failure(description: "there is no peer connection"))
                return
            }
            start(peer.pointer, id)
            duet_peer_release(peer.pointer)
        }
    }

    // MARK: - From GStreamer threads

    fileprivate func replied(_ id: UInt64, sdp: String?, error: String?) {
        guard let continuation = lock.withLock({ requests.removeValue(forKey: id) }) else { return }
        if let error { continuation.resume(throwing: Failure(description: error)) } else { continuation.resume(returning: sdp) }
    }

    fileprivate func candidate(mline: UInt32, mid: String?, candidate: String) {
        logger.debug("local candidate", metadata: ["candidate": "\(candidate)"])
        sink.yield(.localCandidate(IceCandidate(candidate: candidate, sdpMid: mid, sdpMLineIndex: Int(mline))))
    }

    fileprivate func state(kind: Int32, value: Int32) {
        switch Int(kind) {
        case DUET_STATE_ICE_CONNECTION:
            let mapped: NegotiationMachine.IceState =
                switch value {
                case 0: .new
                case 1: .checking
                case 2: .connected
                case 3: .completed
                case 4: .failed
                case 5: .disconnected
                default: .closed
                }
            lock.withLock { reportedIce = mapped }
            sink.yield(.iceConnectionState(mapped))
        case DUET_STATE_CONNECTION:
            let mapped: NegotiationMachine.IceState =
                switch value {
                case 0: .new
                case 1: .checking
                case 2: .connected
                case 3: .disconnected
                case 4: .failed
                default: .closed
                }
            sink.yield(.connectionState(mapped))
        case DUET_STATE_SIGNALING:
            switch value {
            case 0: sink.yield(.signalingState(.stable))
            case 2: sink.yield(.signalingState(.haveLocalOffer))
            case 3: sink.yield(.signalingState(.haveRemoteOffer))
            default: break
            }
        case DUET_STATE_GATHERING:
            if value == 2 { sink.yield(.gatheringComplete) }
        default:
            break
        }
    }

    // MARK: - Inbound silence

    /// How long inbound media has been silent (`silentSince`), for `needsFreshSession`. It is not reported as an ICE
    /// state: the call engine's media watchdog is the one rule for media that stops under a connected ICE (issue 32),
    /// whatever the WebRTC stack.
    private func startWatchdogLocked(_ pointer: OpaquePointer) {
        watchdog?.cancel()
        let silence = options.silenceTimeout
        let handle = PeerHandle(pointer: pointer)
        watchdog = Task.detached { [weak self] in
            let peer = handle.pointer
            var watch = InboundWatch(startedAt: .now, silence: silence)
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                // Read under the lock, while the peer is surely still ours (and not freed).
                guard let self, !Task.isCancelled,
                    let counted = self.lock.withLock({ self.peer == peer ? duet_peer_inbound(peer) : nil })
                else { return }
                self.note(watch.read(counted, at: .now), on: peer)
            }
        }
    }

    /// Only for the session read: a reading of one replaced meanwhile says nothing of the new one.
    private func note(_ reading: InboundWatch.Reading, on read: OpaquePointer) {
        lock.withLock {
            guard peer == read else { return }
            switch reading {
            case .heard: silentSince = nil
            // An earlier start stays (a session that never carried media is silent from its creation).
            case .quiet: silentSince = silentSince ?? ContinuousClock.now - options.silenceTimeout
            case .nothing: break
            }
        }
    }
}

/// The media watchdog's reading of a session's inbound counters, pure so that its rule is tested without GStreamer:
/// media is heard only when the count grows — a new session's zero is not media, so a session that never carried
/// any stays silent from its creation (`silentSince`) and is given up after `freshSessionAfter` — and it is quiet
/// once nothing grew for `silence`.
struct InboundWatch: Sendable {
    enum Reading: Equatable { case heard, quiet, nothing }
    private var last: Int64 = 0
    private var quietSince: ContinuousClock.Instant
    let silence: Duration

    init(startedAt: ContinuousClock.Instant, silence: Duration) {
        quietSince = startedAt
        self.silence = silence
    }

    mutating func read(_ count: Int64, at now: ContinuousClock.Instant) -> Reading {
        if count > last {
            last = count
            quietSince = now
            return .heard
        }
        return now - quietSince >= silence ? .quiet : .nothing
    }
}

/// The C peer, carried across threads; every use is under the engine's lock or on a peer it still owns.
private struct PeerHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

private func onCandidate(
    _ context: UnsafeMutableRawPointer?, _ mline: UInt32, _ mid: UnsafePointer<CChar>?, _ candidate: UnsafePointer<CChar>?
) {
    guard let context, let candidate else { return }
    let engine = Unmanaged<GStreamerWebRtcEngine>.fromOpaque(context).takeUnretainedValue()
    engine.candidate(mline: mline, mid: mid.map { String(cString: $0) }, candidate: String(cString: candidate))
}

private func onState(_ context: UnsafeMutableRawPointer?, _ kind: Int32, _ value: Int32) {
    guard let context else { return }
    Unmanaged<GStreamerWebRtcEngine>.fromOpaque(context).takeUnretainedValue().state(kind: kind, value: value)
}

private func onReply(_ context: UnsafeMutableRawPointer?, _ request: UInt64, _ sdp: UnsafePointer<CChar>?, _ error: UnsafePointer<CChar>?) {
    guard let context else { return }
    Unmanaged<GStreamerWebRtcEngine>.fromOpaque(context).takeUnretainedValue()
        .replied(request, sdp: sdp.map { String(cString: $0) }, error: error.map { String(cString: $0) })
}

/// The payload types a session sends Opus and VP8 with. webrtcbin 1.22 pairs a remote offer's m-line with one of its
/// own sending transceivers only when their caps intersect, payload type included, and it never rewrites what the
/// payloader sends: answering an offer with other numbers (Firefox: Opus 109, VP8 120) needs a session made with them.
struct PayloadTypes: Equatable, Sendable {
    var opus = 111
    var vp8 = 96

    /// The offer's first Opus and first VP8 payload type, each kept from `current` when the offer has none (or an
    /// unusable one: outside 96–127, or both the same).
    static func offered(in sdp: String, over current: PayloadTypes) -> PayloadTypes {
        var found = current
        var media = ""
        var opus: Int?
        var vp8: Int?
        for line in sdp.split(whereSeparator: \.isNewline) {
            if line.hasPrefix("m=") { media = String(line.dropFirst(2).prefix { $0 != " " }) }
            guard line.hasPrefix("a=rtpmap:") else { continue }
            let parts = line.dropFirst("a=rtpmap:".count).split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let pt = Int(parts[0]), (96...127).contains(pt) else { continue }
            let codec = parts[1].lowercased()
            if media == "audio", opus == nil, codec.hasPrefix("opus/") { opus = pt }
            if media == "video", vp8 == nil, codec.hasPrefix("vp8/") { vp8 = pt }
        }
        if let opus { found.opus = opus }
        if let vp8 { found.vp8 = vp8 }
        return found.opus == found.vp8 ? current : found
    }
}
