import DuetProtocol

@testable import DuetClient

/// Test support only (it left the shipping DuetClient product): the DuetCall runtime tests drive real async
/// runtimes against the real server, so they need a WebRtcEngine with real concurrency; the simulator's
/// `SimMediaPlane` is the one model of WebRTC on a virtual clock, and the rules both follow are checked there.
///
/// A simulated media plane for the runtime tests: peer connections that negotiate with SDP
/// (an ICE ufrag per description), trickle candidates, connect when both sides hold matching
/// descriptions and candidates, count "frames" while connected, and lose connectivity when the
/// link is cut — `disconnected` first, `failed` later, back by itself if restored before an ICE
/// restart changed the credentials.
public actor SimulatedMediaNetwork {
    public struct Timing: Sendable {
        public var connect: Duration = .milliseconds(30)
        public var disconnectAfterCut: Duration = .milliseconds(100)
        public var failAfterCut: Duration = .seconds(3)
        public var frameInterval: Duration = .milliseconds(20)
        public init() {}
    }

    public struct Stats: Sendable, Equatable {
        public var framesReceived: Int
        public var peerConnectionsCreated: Int
        public var closed: Bool
        public var iceState: NegotiationMachine.IceState
        public var iceRestartsApplied: Int
        public var offersCreated: Int
    }

    struct Peer {
        var name: String
        var continuation: AsyncStream<WebRtcEvent>.Continuation
        var peerConnections = 0
        var closed = false
        var signaling: NegotiationMachine.SignalingState = .stable
        var localUfrag: String?
        var rollbackUfrag: String?
        var remoteUfrag: String?
        var answeredRemoteUfrag: String?
        var remoteCandidates = 0
        var ice: NegotiationMachine.IceState = .new
        var frames = 0
        var localUfrags = 0
        var configuration = RtcConfiguration()
        var failedUfrag: String?
        var offers = 0
        var refuseRemoteDescriptions = 0
        /// ICE restarts this side applied: new credentials on a connection that had some (a new connection's first do
        /// not count).
        var restarts = 0
        /// The o= line's version: one more for every description this connection makes (its session id is
        /// `sessionId(of:)`), as browsers write it, so the engine's session and ordering rules apply here too.
        var descriptionVersion = 0
    }

    private var peers: [Int: Peer] = [:]
    private var linkUp = true
    private var cutGeneration = 0
    private var ufragCounter = 0
    private var ticker: Task<Void, Never>?
    public let timing: Timing

    public init(timing: Timing = Timing()) { self.timing = timing }

    /// A new simulated engine on this network.
    public func makeEngine(name: String) -> SimulatedWebRtcEngine {
        let id = peers.count + 1
        let (events, continuation) = AsyncStream<WebRtcEvent>.makeStream()
        peers[id] = Peer(name: name, continuation: continuation)
        startTicker()
        return SimulatedWebRtcEngine(id: id, network: self, events: events)
    }

    public func stats(of engine: SimulatedWebRtcEngine) -> Stats {
        let peer = peers[engine.id]!
        return Stats(
            framesReceived: peer.frames, peerConnectionsCreated: peer.peerConnections, closed: peer.closed, iceState: peer.ice,
            iceRestartsApplied: peer.restarts, offersCreated: peer.offers)
    }

    public func configuration(of engine: SimulatedWebRtcEngine) -> RtcConfiguration { peers[engine.id]!.configuration }

    func callStats(_ id: Int) -> CallStats? {
        guard let peer = peers[id], peer.peerConnections > 0, !peer.closed else { return nil }
        let relayed = peer.configuration.relayOnly
        let candidateType = peer.ice == .connected ? (relayed ? "relay" : "host") : nil
        let rttMs: Double? = peer.ice == .connected ? 1 : nil
        // For call quality: packets as the frames arrive, none lost (DuetCall stamps the poll time itself).
        let quality = QualitySample(
            timestampMs: 0, audioPacketsReceived: peer.frames * 2, videoPacketsReceived: peer.frames, rttMs: rttMs,
            framesDecoded: peer.frames, candidateType: candidateType)
        return CallStats(
            videoFramesReceived: peer.frames, audioPacketsReceived: peer.frames * 2,
            candidateType: candidateType, roundTripTimeMs: rttMs, quality: quality)
    }

    /// Cuts the media path (signaling is separate).
    public func cut() {
        linkUp = false
        cutGeneration += 1
        let generation = cutGeneration
        for id in peers.keys where peers[id]!.ice == .connected || peers[id]!.ice == .completed || peers[id]!.ice == .checking {
            after(timing.disconnectAfterCut) { network in await network.degrade(id, to: .disconnected, generation: generation) }
            after(timing.failAfterCut) { network in await network.degrade(id, to: .failed, generation: generation) }
        }
    }

    public func restore() {
        linkUp = true
        cutGeneration += 1
        evaluate()
    }

    // MARK: - Engine operations

    func ensurePeerConnection(_ id: Int, _ configuration: RtcConfiguration) {
        guard var peer = peers[id], peer.peerConnections == 0 || peer.closed else { return }
        // A new connection knows nothing of the one it replaces (a renewal after a wedge, issue 32): no descriptions,
        // no credentials, no candidates, ICE `new`. Only what the engine counts over the whole call carries over.
        // A wedge is its connection's: refusals still owed do not carry over.
        peer = Peer(
            name: peer.name, continuation: peer.continuation, peerConnections: peer.peerConnections + 1,
            frames: peer.frames, localUfrags: peer.localUfrags, configuration: configuration, offers: peer.offers,
            restarts: peer.restarts)
        peers[id] = peer
    }

    /// The engine's next `count` remote descriptions are refused, as a connection a browser has wedged refuses them
    /// (issue 32: Chromium refusing an answer whose DTLS role Firefox flipped).
    public func refuseRemoteDescriptions(of engine: SimulatedWebRtcEngine, count: Int = 1) {
        peers[engine.id]!.refuseRemoteDescriptions += count
    }

    func setConfiguration(_ id: Int, _ configuration: RtcConfiguration) { peers[id]!.configuration = configuration }

    func createOffer(_ id: Int, iceRestart: Bool) throws -> String {
        var peer = try live(id)
        guard peer.signaling == .stable else { throw SimulatedWebRtcError.wrongState("createOffer in \(peer.signaling)") }
        peer.rollbackUfrag = peer.localUfrag
        peer.offers += 1
        let fresh = iceRestart || peer.localUfrag == nil
        if fresh {
            if peer.localUfrag != nil { peer.restarts += 1 }
            peer.localUfrag = newUfrag()
            peer.localUfrags += 1
        }
        peer.descriptionVersion += 1
        peer.signaling = .haveLocalOffer
        peers[id] = peer
        emit(id, .signalingState(.haveLocalOffer))
        if fresh { gather(id) }
        return sdp(peer, id: id)
    }

    func createAnswer(_ id: Int) throws -> String {
        var peer = try live(id)
        guard peer.signaling == .haveRemoteOffer else { throw SimulatedWebRtcError.wrongState("createAnswer in \(peer.signaling)") }
        let fresh = peer.localUfrag == nil || peer.answeredRemoteUfrag != peer.remoteUfrag
        if fresh {
            if peer.localUfrag != nil { peer.restarts += 1 }
            peer.localUfrag = newUfrag()
            peer.localUfrags += 1
        }
        peer.descriptionVersion += 1
        peer.answeredRemoteUfrag = peer.remoteUfrag
        peer.signaling = .stable
        peers[id] = peer
        emit(id, .signalingState(.stable))
        if fresh { gather(id) }
        evaluate()
        return sdp(peer, id: id)
    }

    func setRemote(_ id: Int, kind: NegotiationMachine.DescriptionKind, sdp text: String) throws {
        var peer = try live(id)
        let before = peer.signaling
        guard let ufrag = Self.ufrag(in: text) else { throw SimulatedWebRtcError.badDescription }
        if peer.refuseRemoteDescriptions > 0 {
            peers[id]!.refuseRemoteDescriptions -= 1
            throw SimulatedWebRtcError.refused
        }
        switch kind {
        case .offer:
            // JSEP lets a remote offer replace one not answered yet (have-remote-offer → have-remote-offer).
            guard peer.signaling == .stable || peer.signaling == .haveRemoteOffer else {
                throw SimulatedWebRtcError.wrongState("remote offer in \(peer.signaling)")
            }
            peer.signaling = .haveRemoteOffer
        case .answer:
            guard peer.signaling == .haveLocalOffer else { throw SimulatedWebRtcError.wrongState("remote answer in \(peer.signaling)") }
            peer.signaling = .stable
            peer.rollbackUfrag = nil
        }
        if peer.remoteUfrag != ufrag { peer.remoteCandidates = 0 }
        peer.remoteUfrag = ufrag
        peers[id] = peer
        if peer.signaling != before { emit(id, .signalingState(peer.signaling)) }  // no event for an unchanged state
        evaluate()
    }

    func rollback(_ id: Int) throws {
        var peer = try live(id)
        if peer.signaling == .haveLocalOffer, let previous = peer.rollbackUfrag { peer.localUfrag = previous }
        if peer.signaling == .haveLocalOffer, peer.rollbackUfrag == nil, peer.remoteUfrag == nil { peer.localUfrag = nil }
        peer.signaling = .stable
        peers[id] = peer
        emit(id, .signalingState(.stable))
    }

    func addRemoteCandidate(_ id: Int, _ candidate: IceCandidate?) throws {
        _ = try live(id)
        guard candidate != nil else { return }
        peers[id]!.remoteCandidates += 1
        evaluate()
    }

    func close(_ id: Int) {
        guard peers[id]?.closed == false else { return }
        peers[id]!.closed = true
        setIce(id, .closed)
    }

    // MARK: - ICE

    private func evaluate() {
        for (id, peer) in peers where !peer.closed && peer.peerConnections > 0 {
            let connectable = linkUp && isPaired(id)
            switch peer.ice {
            case .new where connectable, .failed where connectable && peer.localUfrag != peer.failedUfrag:
                // A failed agent needs new credentials (an ICE restart), as in a real stack.
                setIce(id, .checking)
                after(timing.connect) { network in await network.confirm(id) }
            case .disconnected where linkUp && (isPaired(id) || peer.signaling != .stable):
                // Consent checks resume on the same pair.
                setIce(id, .connected)
            case .checking where connectable:
                after(timing.connect) { network in await network.confirm(id) }
            default:
                break
            }
        }
    }

    private func confirm(_ id: Int) {
        guard let peer = peers[id], !peer.closed, peer.ice == .checking, linkUp, isPaired(id) else { return }
        setIce(id, .connected)
    }

    private func degrade(_ id: Int, to state: NegotiationMachine.IceState, generation: Int) {
        guard generation == cutGeneration, !linkUp, let peer = peers[id], !peer.closed, peer.ice != .closed, peer.ice != .new else {
            return
        }
        if state == .failed { peers[id]!.failedUfrag = peer.localUfrag }
        if state == .failed || peer.ice == .connected || peer.ice == .completed || peer.ice == .checking { setIce(id, state) }
    }

    /// Both sides hold each other's current credentials and have candidates for them.
    private func isPaired(_ id: Int) -> Bool {
        guard let me = peers[id], let local = me.localUfrag, let remote = me.remoteUfrag, me.remoteCandidates > 0 else { return false }
        return peers.values.contains { other in
            !other.closed && other.localUfrag == remote && other.remoteUfrag == local && other.remoteCandidates > 0
        }
    }

    private func setIce(_ id: Int, _ state: NegotiationMachine.IceState) {
        guard peers[id]?.ice != state else { return }
        peers[id]!.ice = state
        emit(id, .iceConnectionState(state))
    }

    private func gather(_ id: Int) {
        guard let ufrag = peers[id]?.localUfrag else { return }
        for index in 0..<2 {
            let candidate = IceCandidate(
                candidate:
                    "candidate:\(index + 1) 1 udp 2122260223 10.0.\(id).1 \(50_000 + index) typ host generation 0 ufrag \(ufrag) network-id 1",
                sdpMid: "0", sdpMLineIndex: 0)
            after(.milliseconds(2 + index * 3)) { network in await network.emitCandidate(id, candidate, ufrag: ufrag) }
        }
        after(.milliseconds(12)) { network in await network.emitGatheringComplete(id, ufrag: ufrag) }
    }

    private func emitCandidate(_ id: Int, _ candidate: IceCandidate, ufrag: String) {
        guard peers[id]?.localUfrag == ufrag, peers[id]?.closed == false else { return }
        emit(id, .localCandidate(candidate))
    }

    private func emitGatheringComplete(_ id: Int, ufrag: String) {
        guard peers[id]?.localUfrag == ufrag, peers[id]?.closed == false else { return }
        emit(id, .gatheringComplete)
    }

    // MARK: - Helpers

    private func live(_ id: Int) throws -> Peer {
        guard let peer = peers[id], peer.peerConnections > 0, !peer.closed else { throw SimulatedWebRtcError.noPeerConnection }
        return peer
    }

    private func emit(_ id: Int, _ event: WebRtcEvent) { peers[id]?.continuation.yield(event) }

    private func newUfrag() -> String {
        ufragCounter += 1
        return "u\(ufragCounter)"
    }

    /// A description as a browser writes it, as far as the engine reads it: the connection's own o= session id (one per
    /// side and connection) with a version that grows with every description, and the ICE credentials.
    private func sdp(_ peer: Peer, id: Int) -> String {
        let session = 1000 * id + peer.peerConnections
        return
            "v=0\r\no=- \(session) \(peer.descriptionVersion) IN IP4 127.0.0.1\r\ns=duet-sim \(peer.name)\r\na=ice-ufrag:\(peer.localUfrag ?? "")\r\n"
    }

    static func ufrag(in sdp: String) -> String? {
        sdp.split(separator: "\r\n").first { $0.hasPrefix("a=ice-ufrag:") }.map { String($0.dropFirst("a=ice-ufrag:".count)) }
    }

    private nonisolated func after(_ delay: Duration, _ work: @escaping @Sendable (SimulatedMediaNetwork) async -> Void) {
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard let self else { return }
            await work(self)
        }
    }

    private func startTicker() {
        guard ticker == nil else { return }
        let interval = timing.frameInterval
        ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                await self?.tick()
            }
        }
    }

    private func tick() {
        guard linkUp else { return }
        for (id, peer) in peers where !peer.closed && (peer.ice == .connected || peer.ice == .completed) {
            peers[id]!.frames += 1
        }
    }

    /// Stops the frame ticker (tests end with it).
    public func shutdown() {
        ticker?.cancel()
        for id in peers.keys { peers[id]!.continuation.finish() }
    }
}

public enum SimulatedWebRtcError: Error, Equatable {
    case noPeerConnection
    case wrongState(String)
    case badDescription
    case refused
}

/// One side of a simulated call; all state lives in its `SimulatedMediaNetwork`.
public final class SimulatedWebRtcEngine: WebRtcEngine {
    public let id: Int
    public let events: AsyncStream<WebRtcEvent>
    private let network: SimulatedMediaNetwork

    init(id: Int, network: SimulatedMediaNetwork, events: AsyncStream<WebRtcEvent>) {
        self.id = id
        self.network = network
        self.events = events
    }

    public func ensurePeerConnection(_ configuration: RtcConfiguration) async throws {
        await network.ensurePeerConnection(id, configuration)
    }
    public func createOffer(iceRestart: Bool) async throws -> String { try await network.createOffer(id, iceRestart: iceRestart) }
    public func createAnswer() async throws -> String { try await network.createAnswer(id) }
    public func setRemoteDescription(_ kind: NegotiationMachine.DescriptionKind, sdp: String) async throws {
        try await network.setRemote(id, kind: kind, sdp: sdp)
    }
    public func rollback() async throws { try await network.rollback(id) }
    public func addRemoteCandidate(_ candidate: IceCandidate?) async throws { try await network.addRemoteCandidate(id, candidate) }
    public func setConfiguration(_ configuration: RtcConfiguration) async throws { await network.setConfiguration(id, configuration) }
    public func close() async { await network.close(id) }
    public func stats() async -> CallStats? { await network.callStats(id) }
}
