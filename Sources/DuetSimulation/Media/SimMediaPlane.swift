import DuetClient
import DuetProtocol

/// The two peer connections, as WebRTC behaves where it matters for recovery: descriptions carry ICE
/// credentials (an ICE restart makes new ones), candidates trickle after a description, ICE connects
/// when both sides hold each other's current credentials and candidates over a working path, turns
/// `disconnected` when consent checks stop, `failed` later, and a failed agent needs new credentials.
/// Illegal calls (an offer while one is outstanding, an answer in `stable`) throw as in a browser.
///
/// A side can be `duet call` instead (`webrtcbinSides`): GStreamer's webrtcbin 1.22 as `GStreamerWebRtcEngine`
/// drives it — no in-place ICE restart and no rollback: an ICE restart offer or a remote offer meeting our own
/// unanswered one starts a fresh session (a new webrtcbin: new credentials, new candidates) when the old one is
/// given up on (ICE failed, or media silent for `freshSessionAfterMs`) or must be (a remote offer in
/// have-local-offer); otherwise the offer keeps the credentials it has. Its ICE never leaves `connected` for a dead
/// path (libnice has no consent freshness). Its `o=` lines are webrtcbin's: an answer
/// copies the offer's, and later offers reuse that session id, counting versions from 0.
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
        /// The remote peer connection whose description (and so whose certificate fingerprint) was applied last.
        var remoteInstance: Int?
        var answeredRemoteUfrag: String?
        var remoteCandidates = 0
        var ice: NegotiationMachine.IceState = .new
        var failedUfrag: String?
        /// Invalidates scheduled ICE transitions whenever the picture changes.
        var token = 0
        /// The path epochs (mine, theirs) of the selected candidate pair.
        var pair: [Int]?
        var disconnectedAt: Int64 = 0
        /// When the pairs being checked were formed (checking began, or new credentials on either side).
        var checkingSince: Int64 = 0
        /// When inbound media stopped, or when the peer connection was made if none has arrived yet; nil while it
        /// flows (`GStreamerWebRtcEngine`'s `silentSince`, measured on inbound media whatever ICE says; here at the
        /// media watchdog's readings).
        var silentSince: Int64?
        /// webrtcbin: the `o=` session id it took from the first offer it answered, and how many offers it made.
        var webrtcbinOriginId: UInt64?
        var webrtcbinOffers: UInt64 = 0
        /// The `o=` (id, version) of the remote offer being answered (webrtcbin copies it into its answer).
        var remoteOfferOrigin: (id: UInt64, version: UInt64)?
        /// webrtcbin: remote candidates that arrived before any remote description.
        var pendingRemoteCandidates: [String] = []
        /// Inbound RTP packets, this peer connection's, from zero; and whether media arrived at the last reading
        /// (packets that came in part of an interval count for it).
        var inboundPackets: Int64 = 0
        var flowedAtLastSample = false
    }

    /// A one-way black hole (`Fault.mediaStall`): media to the receiver is lost while these two peer connections
    /// keep these credentials.
    struct InboundStall: Equatable {
        var receiver: (instance: Int, ufrag: String?)
        var sender: (instance: Int, ufrag: String?)
        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.receiver == rhs.receiver && lhs.sender == rhs.sender
        }
    }

    enum Refusal: Error, CustomStringConvertible {
        case noPeerConnection
        case wrongState(String)
        case badDescription
        /// `Fault.peerConnectionWedged`: what a browser says, and will say again (Chromium's words).
        case wedged
        var description: String {
            switch self {
            case .noPeerConnection: "no peer connection"
            case .wrongState(let text): text
            case .badDescription: "bad description"
            case .wedged: "Failed to set SSL role for the transport (a wedged peer connection)"
            }
        }
    }

    static let disconnectAfterMs: Int64 = 2_500
    static let failAfterMs: Int64 = 15_000
    static let checkingFailsAfterMs: Int64 = 20_000
    /// `GStreamerWebRtcEngine.Options.freshSessionAfter`.
    static let freshSessionAfterMs: Int64 = 30_000

    unowned let world: World
    private var peers: [PeerConnection?] = [nil, nil]
    private var instances = 0
    private var ufrags = 0
    /// Sides played by `duet call` (webrtcbin) instead of a browser.
    var webrtcbinSides: Set<Side> = []
    private var inboundStalls: [InboundStall?] = [nil, nil]
    /// Peer connections (instances) that refuse every remote description and rollback (`Fault.peerConnectionWedged`).
    private var wedgedInstances: Set<Int> = []
    /// Peer connections (instances) that send no media until they are closed (`Fault.silentSender`).
    private var silentInstances: Set<Int> = []

    init(world: World) { self.world = world }

    /// Issue 51: what keeps the two sides on one pair of connections, or nil when they are: each side holds the other's
    /// current ICE credentials and the other's live connection's description (its certificate fingerprint). Media can
    /// go on over a pair an ICE restart left behind while they disagree (`pairAlive`), into a port nobody reads.
    func disagreement() -> String? {
        guard let a = peers[Side.a.rawValue], let b = peers[Side.b.rawValue], !a.closed, !b.closed else {
            return "a side has no open peer connection"
        }
        var problems: [String] = []
        for (me, other, side) in [(a, b, Side.a), (b, a, Side.b)] {
            if me.remoteUfrag != other.localUfrag {
                problems.append("\(side) holds ufrag \(me.remoteUfrag ?? "none") of the other, whose is \(other.localUfrag ?? "none")")
            }
            if me.remoteInstance != other.instance {
                problems.append(
                    "\(side) holds the description of pc#\(me.remoteInstance.map(String.init) ?? "none"), the other's live one is pc#\(other.instance)"
                )
            }
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    func isOpen(_ side: Side) -> Bool { peers[side.rawValue].map { !$0.closed } ?? false }
    func ice(_ side: Side) -> NegotiationMachine.IceState? { peers[side.rawValue]?.ice }
    func isConnected(_ side: Side) -> Bool { isOpen(side) && (ice(side) == .connected || ice(side) == .completed) }
    /// Connected, and on a path that still works (consent checks have not noticed a dead one yet), and media
    /// arrives on it.
    func isHealthy(_ side: Side) -> Bool { isConnected(side) && (canConnect(side) || pairAlive(side)) && !isInboundStalled(side) }

    /// Media to `side` is lost from now on, ICE untouched, until either side has new credentials or a new connection.
    func stallInbound(_ side: Side) {
        guard let me = peers[side.rawValue], let other = peers[side.other.rawValue], !me.closed, !other.closed else { return }
        inboundStalls[side.rawValue] = InboundStall(receiver: (me.instance, me.localUfrag), sender: (other.instance, other.localUfrag))
    }

    /// `side`'s current peer connection refuses every remote description and rollback from now on.
    func wedge(_ side: Side) {
        guard let peer = peers[side.rawValue], !peer.closed else { return }
        wedgedInstances.insert(peer.instance)
    }

    /// `side`'s current peer connection sends no media from now on (ICE and receiving untouched), until it is closed.
    func silenceSender(_ side: Side) {
        guard let peer = peers[side.rawValue], !peer.closed else { return }
        silentInstances.insert(peer.instance)
    }

    /// A peer connection silenced by `Fault.silentSender` is still open: nothing but its replacement mends it.
    var silentSenderLeft: Bool { peers.contains { $0.map { !$0.closed && silentInstances.contains($0.instance) } ?? false } }

    func isInboundStalled(_ side: Side) -> Bool {
        if let other = peers[side.other.rawValue], !other.closed, silentInstances.contains(other.instance) { return true }
        guard let stall = inboundStalls[side.rawValue], let me = peers[side.rawValue], let other = peers[side.other.rawValue] else {
            return false
        }
        return stall.receiver == (me.instance, me.localUfrag) && stall.sender == (other.instance, other.localUfrag)
    }

    /// New credentials or a new peer connection on `side` make new pairs: a stall it takes part in is over for good,
    /// even if a rollback restores the old credentials later (a black hole no real agent falls into twice).
    private func endStalls(involving side: Side) {
        inboundStalls[side.rawValue] = nil
        inboundStalls[side.other.rawValue] = nil
    }

    /// The runtime's reading of `side`'s inbound packet count (`.sampleMedia`); nil without a peer connection. It grows
    /// while media arrives: connected on a working path, no stall. (A frozen peer's media is not modelled: its ICE
    /// keeps answering here, as it always did in this model.)
    func inboundPackets(_ side: Side) -> Int64? {
        guard var peer = peers[side.rawValue], !peer.closed else { return nil }
        let flowing = isHealthy(side)
        if flowing || peer.flowedAtLastSample { peer.inboundPackets += 50 }
        peer.flowedAtLastSample = flowing
        // webrtcbin's own reading of its inbound counters (`GStreamerWebRtcEngine.silentSince`): a session whose
        // media stopped under a connected ICE (a stall) is given up on like one whose ICE went down.
        if flowing {
            peer.silentSince = nil
        } else if peer.silentSince == nil {
            peer.silentSince = world.scheduler.now
        }
        peers[side.rawValue] = peer
        return peer.inboundPackets
    }

    func ensure(_ side: Side) {
        if let peer = peers[side.rawValue], !peer.closed { return }
        endStalls(involving: side)
        instances += 1
        peers[side.rawValue] = PeerConnection(instance: instances, silentSince: world.scheduler.now)
    }

    func createOffer(_ side: Side, iceRestart: Bool) throws -> String {
        if webrtcbinSides.contains(side) { return try webrtcbinOffer(side, iceRestart: iceRestart) }
        var peer = try live(side)
        // A wedged connection whose rollback failed is still in have-local-offer (Chromium refuses the session too).
        if peer.signaling != .stable, wedgedInstances.contains(peer.instance) { throw Refusal.wedged }
        guard peer.signaling == .stable else {
            throw Refusal.wrongState(
                "createOffer in \(peer.signaling)\(peer.signaling == .haveLocalOffer ? ": an offer is already outstanding" : "")")
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
        // webrtcbin answers an ICE restart with the credentials it has (no in-place restart of its own).
        let fresh = peer.localUfrag == nil || (peer.answeredRemoteUfrag != peer.remoteUfrag && !webrtcbinSides.contains(side))
        if fresh { newCredentials(side, &peer) }
        peer.answeredRemoteUfrag = peer.remoteUfrag
        peer.signaling = .stable
        peer.descriptionsCreated += 1
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.stable))
        if fresh { gather(side) }
        evaluate()
        if webrtcbinSides.contains(side), let origin = webrtcbinAnswerOrigin(side) { return sdp(side, peer, origin: origin) }
        return sdp(side, peer)
    }

    func setRemote(_ side: Side, _ kind: NegotiationMachine.DescriptionKind, sdp text: String) throws {
        if webrtcbinSides.contains(side), kind == .offer { try webrtcbinBeforeRemoteOffer(side, sdp: text) }
        var peer = try live(side)
        guard !wedgedInstances.contains(peer.instance) else { throw Refusal.wedged }
        guard let parsed = Self.parse(text) else { throw Refusal.badDescription }
        if kind == .offer { peer.remoteOfferOrigin = Self.origin(text) }
        switch kind {
        case .offer:
            // A newer remote offer may replace one not yet answered (JSEP allows it).
            guard peer.signaling != .haveLocalOffer else { throw Refusal.wrongState("remote offer in \(peer.signaling)") }
            peer.signaling = .haveRemoteOffer
        case .answer:
            guard peer.signaling == .haveLocalOffer else { throw Refusal.wrongState("remote answer in \(peer.signaling)") }
            peer.signaling = .stable
            peer.rollbackUfrag = nil
            // Our credentials are now paired with the answer's: a later offer of the peer's with the same ufrag is no
            // ICE restart, and our answer to it keeps them (JSEP; the browsers do), as after answering one of its offers.
            peer.answeredRemoteUfrag = parsed.ufrag
        }
        if peer.remoteUfrag != parsed.ufrag {
            peer.remoteCandidates = 0
            peer.checkingSince = world.scheduler.now
        }
        peer.remoteUfrag = parsed.ufrag
        peer.remoteInstance = parsed.instance
        peer.remoteCandidates += peer.pendingRemoteCandidates.filter { $0.hasPrefix("candidate:\(parsed.ufrag)x") }.count
        peer.pendingRemoteCandidates = []
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(peer.signaling))
        evaluate()
    }

    func rollback(_ side: Side) throws {
        if webrtcbinSides.contains(side) {
            // No rollback in webrtcbin: the offer stays applied unless the session is given up on anyway.
            _ = try live(side)
            if needsFreshSession(side) { freshSession(side) }
            return
        }
        var peer = try live(side)
        guard peer.signaling != .stable else { throw Refusal.wrongState("rollback in stable") }
        guard !wedgedInstances.contains(peer.instance) else { throw Refusal.wedged }
        if peer.signaling == .haveLocalOffer { peer.localUfrag = peer.rollbackUfrag }
        peer.signaling = .stable
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.stable))
        evaluate()
    }

    func addRemoteCandidate(_ side: Side, _ candidate: IceCandidate?) throws {
        var peer = try live(side)
        guard let candidate else { return }
        if peer.remoteUfrag == nil, webrtcbinSides.contains(side) {
            // webrtcbin keeps candidates that come before the remote description and adds them with it.
            peer.pendingRemoteCandidates.append(candidate.candidate)
            return update(side, peer)
        }
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
                } else if peer.ice == .new, peer.remoteUfrag != nil, peer.remoteCandidates > 0 {
                    // Pairs to check, none that works (a dead path, candidates of a path left behind): checking,
                    // and failed in the end.
                    setIce(side, &peer, .checking)
                    later(side, token, after: Self.checkingFailsAfterMs) { _ in self.canConnect(side) ? nil : .failed }
                } else if peer.ice == .checking, peer.remoteUfrag != nil {
                    // Checks fail within a bound from when these pairs started (new credentials on either side make
                    // new pairs); a re-sent copy of the same description adds nothing to check.
                    let failsAt = peer.checkingSince + Self.checkingFailsAfterMs
                    later(side, token, after: max(0, failsAt - world.scheduler.now)) { _ in self.canConnect(side) ? nil : .failed }
                }
            case .connected, .completed:
                if fresh { peer.pair = pathEpochs(side) }
                // libnice (webrtcbin) has no consent freshness: its ICE stays connected on a dead path, which only the
                // engine's media watchdog notices.
                if !fresh, !alive, !webrtcbinSides.contains(side) {
                    later(side, token, after: Self.disconnectAfterMs) { _ in
                        self.canConnect(side) || self.pairAlive(side) ? nil : .disconnected
                    }
                }
            case .disconnected:
                if fresh || alive {
                    later(side, token, after: 40) { _ in self.canConnect(side) || self.pairAlive(side) ? .connected : nil }
                } else {
                    // Consent failure runs from the moment checks stopped, whatever renegotiation happens meanwhile.
                    let failsAt = peer.disconnectedAt + Self.failAfterMs - Self.disconnectAfterMs
                    later(side, token, after: failsAt - world.scheduler.now) { _ in
                        self.canConnect(side) || self.pairAlive(side) ? nil : .failed
                    }
                }
            case .failed:
                // A failed agent needs new credentials (an ICE restart), as in Chromium. libnice (webrtcbin) keeps
                // answering checks on a failed stream and goes back to connected when the peer's checks succeed.
                if fresh, peer.localUfrag != peer.failedUfrag || webrtcbinSides.contains(side) {
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

    /// The selected pair's identity: both sides' network paths and the remote peer connection (a pair with a
    /// peer connection that is gone carries nothing, whatever replaced it).
    private func pathEpochs(_ side: Side) -> [Int] {
        [world.network(side).pathEpoch, world.network(side.other).pathEpoch, peers[side.other.rawValue]?.instance ?? 0]
    }

    /// Both sides hold each other's current credentials, at least one holds the other's candidates (its checks
    /// reach the other, which learns a peer-reflexive candidate from them: RFC 8445 §7.3.1.3), and the candidates
    /// were gathered on the current paths.
    private func canConnect(_ side: Side) -> Bool {
        guard let me = peers[side.rawValue], let other = peers[side.other.rawValue], !me.closed, !other.closed,
            let mine = me.localUfrag, let theirs = other.localUfrag,
            me.remoteUfrag == theirs, other.remoteUfrag == mine, me.remoteCandidates > 0 || other.remoteCandidates > 0,
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
        if state == .checking { peer.checkingSince = world.scheduler.now }
        if state == .connected { world.monitor.iceConnected(side) }
        peer.ice = state
        world.client(side).webRtcEvent(.iceStateChanged(state))
    }

    private func newCredentials(_ side: Side, _ peer: inout PeerConnection) {
        ufrags += 1
        endStalls(involving: side)
        peer.checkingSince = world.scheduler.now
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

    private func sdp(_ side: Side, _ peer: PeerConnection, origin: (id: UInt64, version: UInt64)? = nil) -> String {
        let (id, version) = origin ?? (UInt64(9_000 + peer.instance), peer.descriptionsCreated)
        // `d<n>`: the simulator's own count of descriptions this peer connection made, the ground truth of their
        // order for the stale-description check (the `o=` line is what the engines judge, and webrtcbin's is not
        // monotonic).
        return world.mutation.created(
            "v=0\r\no=- \(id) \(version) IN IP4 0.0.0.0\r\ns=duet-sim \(side) pc#\(peer.instance) d\(peer.descriptionsCreated)\r\na=ice-ufrag:\(peer.localUfrag ?? "")\r\n"
                + "a=fingerprint:sha-256 \(Self.fingerprint(side, instance: peer.instance))\r\n")
    }

    /// Each peer connection's own certificate fingerprint (what a verified call's `auth` and safety code cover).
    static func fingerprint(_ side: Side, instance: Int) -> String {
        var draw = SplitMix64(seed: UInt64(instance) &* 2 &+ UInt64(side.rawValue) &+ 0x5eed)
        return (0..<32).map { _ in String(UInt8.random(in: 0...255, using: &draw), radix: 16, uppercase: true) }
            .map { $0.count == 1 ? "0" + $0 : $0 }.joined(separator: ":")
    }

    /// What a server in the middle does to a description (`Fault.tamperFingerprints`): its own fingerprint instead.
    static func tamperedFingerprints(_ sdp: String) -> String {
        sdp.split(separator: "\r\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("a=fingerprint:") ? "a=fingerprint:sha-256 " + fingerprint(.a, instance: 666_000) : String(line)
        }.joined(separator: "\r\n")
    }

    /// The `o=` line's session id and version.
    static func origin(_ sdp: String) -> (id: UInt64, version: UInt64)? {
        guard let line = sdp.split(separator: "\r\n").first(where: { $0.hasPrefix("o=") }) else { return nil }
        let fields = line.split(separator: " ")
        guard fields.count >= 3, let id = UInt64(fields[1]), let version = UInt64(fields[2]) else { return nil }
        return (id, version)
    }

    // MARK: - webrtcbin (duet call)

    /// `GStreamerWebRtcEngine.needsFreshSession`: ICE failed, or inbound media silent for `freshSessionAfterMs`.
    private func needsFreshSession(_ side: Side) -> Bool {
        guard let peer = peers[side.rawValue], !peer.closed else { return false }
        if peer.ice == .failed { return true }
        guard let silentSince = peer.silentSince else { return false }
        return world.scheduler.now - silentSince >= Self.freshSessionAfterMs
    }

    /// A new webrtcbin in place of the old one: new credentials and candidates, nothing negotiated.
    private func freshSession(_ side: Side) {
        guard let old = peers[side.rawValue], !old.closed else { return }
        world.trace(side, "webrtcbin: fresh session (pc#\(old.instance) given up)")
        close(side)
        endStalls(involving: side)
        instances += 1
        peers[side.rawValue] = PeerConnection(instance: instances, silentSince: world.scheduler.now)
        world.client(side).webRtcEvent(.signalingStateChanged(.stable))
        world.client(side).webRtcEvent(.iceStateChanged(.new))
        evaluate()
    }

    /// webrtcbin's offer: an ICE restart keeps the credentials unless the session is given up on (then a fresh
    /// session makes new ones); the `o=` id is the one taken from the first answered offer, versions from 0.
    private func webrtcbinOffer(_ side: Side, iceRestart: Bool) throws -> String {
        if iceRestart, needsFreshSession(side) { freshSession(side) }
        var peer = try live(side)
        // An offer never rolled back is still applied: a new one replaces it (JSEP allows a local offer in
        // have-local-offer; `GStreamerWebRtcEngine.rollback` counts on it).
        guard peer.signaling == .stable || peer.signaling == .haveLocalOffer else {
            throw Refusal.wrongState("createOffer in \(peer.signaling)")
        }
        let fresh = peer.localUfrag == nil
        if fresh { newCredentials(side, &peer) }
        peer.signaling = .haveLocalOffer
        let origin = (peer.webrtcbinOriginId ?? UInt64(9_000 + peer.instance), peer.webrtcbinOffers)
        peer.webrtcbinOffers += 1
        peer.descriptionsCreated += 1
        update(side, peer)
        world.client(side).webRtcEvent(.signalingStateChanged(.haveLocalOffer))
        if fresh { gather(side) }
        return sdp(side, peer, origin: origin)
    }

    /// webrtcbin takes a remote offer only in stable: with our offer still applied (never rolled back), or a
    /// peer that restarted ICE on a session given up on, a fresh session takes it.
    private func webrtcbinBeforeRemoteOffer(_ side: Side, sdp text: String) throws {
        let peer = try live(side)
        let restartedRemotely = peer.remoteUfrag != nil && Self.parse(text)?.ufrag != peer.remoteUfrag
        if peer.signaling == .haveLocalOffer || (restartedRemotely && needsFreshSession(side)) { freshSession(side) }
    }

    /// webrtcbin's answer copies the offer's `o=` line, and its later offers go on with that session id.
    private func webrtcbinAnswerOrigin(_ side: Side) -> (id: UInt64, version: UInt64)? {
        guard var peer = peers[side.rawValue], let origin = peer.remoteOfferOrigin else { return nil }
        if peer.webrtcbinOriginId == nil { peer.webrtcbinOriginId = origin.id }
        peers[side.rawValue] = peer
        return origin
    }

    static func parse(_ sdp: String) -> (instance: Int, ufrag: String, created: UInt64)? {
        var instance: Int?
        var created: UInt64 = 0
        var ufrag: String?
        for line in sdp.split(separator: "\r\n") where line.hasPrefix("s=duet-sim ") {
            let fields = line.split(separator: " ")
            instance = fields.first { $0.hasPrefix("pc#") }.flatMap { Int($0.dropFirst(3)) }
            created = fields.first { $0.hasPrefix("d") }.flatMap { UInt64($0.dropFirst()) } ?? 0
        }
        for line in sdp.split(separator: "\r\n") where line.hasPrefix("a=ice-ufrag:") {
            ufrag = String(line.dropFirst("a=ice-ufrag:".count))
        }
        guard let instance, let ufrag, !ufrag.isEmpty else { return nil }
        return (instance, ufrag, created)
    }
}
