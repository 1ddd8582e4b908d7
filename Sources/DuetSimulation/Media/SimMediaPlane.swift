import DuetClient
import DuetProtocol

/// The two peer connections, as WebRTC behaves where it matters for recovery: descriptions carry ICE
/// credentials (an ICE restart makes new ones), candidates trickle after a description, ICE connects
/// when both sides hold each other's current credentials and candidates over a working path, turns
/// `disconnected` when consent checks stop, `failed` later, and a failed agent needs new credentials.
/// Illegal calls (an offer while one is outstanding, an answer in `stable`) throw as in a browser.
final class SimMediaPlane {
    struct PeerConnection {
        var instance: Int
        var closed = false
        var signaling: NegotiationMachine.SignalingState = .stable
        var localUfrag: String?
        /// The `o=` session version: one more for every description this peer connection creates (as in Chromium).
        var descriptionsCreated: UInt64 = 1
        var localPathEpoch = 0
        var rollbackUfrag: String?
        var remoteUfrag: String?
        var answeredRemoteUfrag: String?
        var remoteCandidates = 0
        var ice: NegotiationMachine.IceState = .new
        var failedUfrag: String?
        /// Invalidates scheduled ICE transitions whenever the picture changes.
        var token = 0
        /// The path epochs (mine, theirs) of the selected candidate pair.
        var pair: [Int]?
        var disconnectedAt: Int64 = 0
    }

    enum Refusal: Error, CustomStringConvertible {
        case noPeerConnection
        case wrongState(String)
        case badDescription
        var description: String {
            switch self {
            case .noPeerConnection: "no peer connection"
            case .wrongState(let text): text
            case .badDescription: "bad description"
            }
        }
    }

    static let disconnectAfterMs: Int64 = 2_500
    static let failAfterMs: Int64 = 15_000
    static let checkingFailsAfterMs: Int64 = 20_000

    unowned let world: World
    private var peers: [PeerConnection?] = [nil, nil]
    private var instances = 0
    private var ufrags = 0

    init(world: World) { self.world = world }

    func isOpen(_ side: Side) -> Bool { peers[side.rawValue].map { !$0.closed } ?? false }
    func ice(_ side: Side) -> NegotiationMachine.IceState? { peers[side.rawValue]?.ice }
    func isConnected(_ side: Side) -> Bool { isOpen(side) && (ice(side) == .connected || ice(side) == .completed) }
    /// Connected, and on a path that still works (consent checks have not noticed a dead one yet).
    func isHealthy(_ side: Side) -> Bool { isConnected(side) && (canConnect(side) || pairAlive(side)) }

    func ensure(_ side: Side) {
        if let peer = peers[side.rawValue], !peer.closed { return }
        instances += 1
        peers[side.rawValue] = PeerConnection(instance: instances)
    }

    func createOffer(_ side: Side, iceRestart: Bool) throws -> String {
        var peer = try live(side)
        guard peer.signaling == .stable else {
            throw Refusal.wrongState("createOffer in \(peer.signaling)\(peer.signaling == .haveLocalOffer ? ": an offer is already outstanding" : "")")
        }
        peer.rollbackUfrag = peer.localUfrag
        let fresh = iceRestart || peer.localUfrag == nil
        if fresh { newCredentials(side, &peer) }
        peer.signaling = .haveLocalOffer
        peer.descriptionsCreated += 1
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.haveLocalOffer))
        if fresh { gather(side) }
        return sdp(side, peer)
    }

    func createAnswer(_ side: Side) throws -> String {
        var peer = try live(side)
        guard peer.signaling == .haveRemoteOffer else { throw Refusal.wrongState("createAnswer in \(peer.signaling)") }
        let fresh = peer.localUfrag == nil || peer.answeredRemoteUfrag != peer.remoteUfrag
        if fresh { newCredentials(side, &peer) }
        peer.answeredRemoteUfrag = peer.remoteUfrag
        peer.signaling = .stable
        peer.descriptionsCreated += 1
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.stable))
        if fresh { gather(side) }
        evaluate()
        return sdp(side, peer)
    }

    func setRemote(_ side: Side, _ kind: NegotiationMachine.DescriptionKind, sdp text: String) throws {
        var peer = try live(side)
        guard let parsed = Self.parse(text) else { throw Refusal.badDescription }
        switch kind {
        case .offer:
            // A newer remote offer may replace one not yet answered (JSEP allows it).
            guard peer.signaling != .haveLocalOffer else { throw Refusal.wrongState("remote offer in \(peer.signaling)") }
            peer.signaling = .haveRemoteOffer
        case .answer:
            guard peer.signaling == .haveLocalOffer else { throw Refusal.wrongState("remote answer in \(peer.signaling)") }
            peer.signaling = .stable
            peer.rollbackUfrag = nil
        }
        if peer.remoteUfrag != parsed.ufrag { peer.remoteCandidates = 0 }
        peer.remoteUfrag = parsed.ufrag
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(peer.signaling))
        evaluate()
    }

    func rollback(_ side: Side) throws {
        var peer = try live(side)
        guard peer.signaling != .stable else { throw Refusal.wrongState("rollback in stable") }
        if peer.signaling == .haveLocalOffer { peer.localUfrag = peer.rollbackUfrag }
        peer.signaling = .stable
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.stable))
        evaluate()
    }

    func addRemoteCandidate(_ side: Side, _ candidate: IceCandidate?) throws {
        var peer = try live(side)
        guard let candidate else { return }
        guard peer.remoteUfrag != nil else { throw Refusal.wrongState("candidate before a remote description") }
        // A candidate of older credentials is ignored, as browsers do (the foundation carries the ufrag here).
        guard candidate.candidate.hasPrefix("candidate:\(peer.remoteUfrag!)x") else { return }
        peer.remoteCandidates += 1
        update(side, peer)
        evaluate()
    }

    func close(_ side: Side) {
        guard var peer = peers[side.rawValue], !peer.closed else { return }
        peer.closed = true
        peer.ice = .closed
        peer.token += 1
        peers[side.rawValue] = peer
        evaluate()
    }

    // MARK: - ICE

    /// Re-examines both agents after anything changed (a description, a candidate, the network). An agent
    /// keeps its selected pair through an ICE restart until the new credentials connect; the pair dies when
    /// either side's network changes or the media path is cut.
    func evaluate() {
        for side in Side.allCases {
            guard var peer = peers[side.rawValue], !peer.closed else { continue }
            let fresh = canConnect(side)
            let alive = pairAlive(side)
            peer.token += 1
            let token = peer.token
            switch peer.ice {
            case .new, .checking:
                if fresh {
                    if peer.ice == .new { setIce(side, &peer, .checking) }
                    later(side, token, after: 40) { _ in self.canConnect(side) ? .connected : nil }
                } else if peer.ice == .checking, peer.remoteUfrag != nil {
                    later(side, token, after: Self.checkingFailsAfterMs) { _ in self.canConnect(side) ? nil : .failed }
                }
            case .connected, .completed:
                if fresh { peer.pair = pathEpochs(side) }
                if !fresh, !alive {
                    later(side, token, after: Self.disconnectAfterMs) { _ in self.canConnect(side) || self.pairAlive(side) ? nil : .disconnected }
                }
            case .disconnected:
                if fresh || alive {
                    later(side, token, after: 40) { _ in self.canConnect(side) || self.pairAlive(side) ? .connected : nil }
                } else {
                    // Consent failure runs from the moment checks stopped, whatever renegotiation happens meanwhile.
                    let failsAt = peer.disconnectedAt + Self.failAfterMs - Self.disconnectAfterMs
                    later(side, token, after: failsAt - world.scheduler.now) { _ in self.canConnect(side) || self.pairAlive(side) ? nil : .failed }
                }
            case .failed:
                // A failed agent needs new credentials (an ICE restart), as in a real stack.
                if fresh, peer.localUfrag != peer.failedUfrag {
                    setIce(side, &peer, .checking)
                    later(side, token, after: 40) { _ in self.canConnect(side) ? .connected : nil }
                }
            case .closed:
                break
            }
            peers[side.rawValue] = peer
        }
    }

    private func later(_ side: Side, _ token: Int, after delay: Int64, _ next: @escaping (PeerConnection) -> NegotiationMachine.IceState?) {
        world.scheduler.after(delay) { [self] in
            guard var peer = peers[side.rawValue], !peer.closed, peer.token == token, let state = next(peer) else { return }
            if state == .connected, canConnect(side) { peer.pair = pathEpochs(side) }
            setIce(side, &peer, state)
            peers[side.rawValue] = peer
            evaluate()
        }
    }

    private func pathEpochs(_ side: Side) -> [Int] { [world.network(side).pathEpoch, world.network(side.other).pathEpoch] }

    /// Both sides hold each other's current credentials and candidates, gathered on their current paths.
    private func canConnect(_ side: Side) -> Bool {
        guard let me = peers[side.rawValue], let other = peers[side.other.rawValue], !me.closed, !other.closed,
            let mine = me.localUfrag, let theirs = other.localUfrag,
            me.remoteUfrag == theirs, other.remoteUfrag == mine, me.remoteCandidates > 0, other.remoteCandidates > 0,
            me.localPathEpoch == world.network(side).pathEpoch, other.localPathEpoch == world.network(side.other).pathEpoch
        else { return false }
        return world.mediaPathUp(side) && world.mediaPathUp(side.other)
    }

    /// The selected pair still carries media: nobody's network changed since it was chosen, and the path is up.
    private func pairAlive(_ side: Side) -> Bool {
        guard let me = peers[side.rawValue], let other = peers[side.other.rawValue], !me.closed, !other.closed,
            let pair = me.pair, pair == pathEpochs(side)
        else { return false }
        return world.mediaPathUp(side) && world.mediaPathUp(side.other)
    }

    private func setIce(_ side: Side, _ peer: inout PeerConnection, _ state: NegotiationMachine.IceState) {
        guard peer.ice != state else { return }
        if state == .failed { peer.failedUfrag = peer.localUfrag }
        if state == .disconnected { peer.disconnectedAt = world.scheduler.now }
        if state == .connected { world.monitor.iceConnected(side) }
        peer.ice = state
        world.client(side).webRtcEvent(.iceStateChanged(state))
    }

    private func newCredentials(_ side: Side, _ peer: inout PeerConnection) {
        ufrags += 1
        peer.localUfrag = "u\(ufrags)"
        peer.localPathEpoch = world.network(side).pathEpoch
    }

    private func gather(_ side: Side) {
        guard let peer = peers[side.rawValue], let ufrag = peer.localUfrag else { return }
        for index in 0..<2 {
            let candidate = IceCandidate(
                candidate: "candidate:\(ufrag)x\(index + 1) 1 udp 2122260223 10.0.\(side.rawValue).1 \(50_000 + index) typ host",
                sdpMid: "0", sdpMLineIndex: 0)
            world.scheduler.after(Int64(2 + index * 3)) { [self] in
                guard let now = peers[side.rawValue], !now.closed, now.instance == peer.instance, now.localUfrag == ufrag else { return }
                world.client(side).webRtcEvent(.localCandidate(candidate))
            }
        }
        world.scheduler.after(12) { [self] in
            guard let now = peers[side.rawValue], !now.closed, now.instance == peer.instance, now.localUfrag == ufrag else { return }
            world.client(side).webRtcEvent(.gatheringComplete)
        }
    }

    private func live(_ side: Side) throws -> PeerConnection {
        guard let peer = peers[side.rawValue], !peer.closed else { throw Refusal.noPeerConnection }
        return peer
    }

    private func update(_ side: Side, _ peer: PeerConnection) {
        var peer = peer
        peer.token += 1
        peers[side.rawValue] = peer
    }

    private func sdp(_ side: Side, _ peer: PeerConnection) -> String {
        world.mutation.created("v=0\r\no=- \(9_000 + peer.instance) \(peer.descriptionsCreated) IN IP4 0.0.0.0\r\ns=duet-sim \(side) pc#\(peer.instance)\r\na=ice-ufrag:\(peer.localUfrag ?? "")\r\n")
    }

    static func parse(_ sdp: String) -> (instance: Int, ufrag: String)? {
        var instance: Int?
        var ufrag: String?
        for line in sdp.split(separator: "\r\n") {
            if line.hasPrefix("s=duet-sim "), let mark = line.range(of: "pc#") { instance = Int(line[mark.upperBound...]) }
            if line.hasPrefix("a=ice-ufrag:") { ufrag = String(line.dropFirst("a=ice-ufrag:".count)) }
        }
        guard let instance, let ufrag, !ufrag.isEmpty else { return nil }
        return (instance, ufrag)
    }
}
