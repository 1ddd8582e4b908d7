import DuetClient
import DuetProtocol

/// One caller: the real `CallEngine` and a runtime that performs its outputs in the simulated world by
/// DuetCall's rules — timers carry generations (a cancelled or rescheduled timer never fires), a
/// transport attempt the engine gave up on is closed when it completes, WebRTC commands run one at a
/// time in order and stop at teardown, and a send with no transport is dropped.
final class SimClient {
    let side: Side
    private(set) var engine: CallEngine
    unowned let world: World

    private(set) var timers: [TimerID: Int] = [:]
    private var timerGeneration = 0
    private(set) var connection: SimConnection?
    private var connectionGeneration = 0
    private var webRtcQueue: [EngineCommand] = []
    private var webRtcBusy = false
    /// Work waiting for the WebRTC queue to be empty (teardown waits for the engine's `.close` to have run).
    private var whenWebRtcIdle: [() -> Void] = []
    /// A TURN fetch is out: the first peer connection waits for it, as both runtimes do.
    private var turnFetchPending = false
    private var acceptingWebRtcCommands = true
    private(set) var sseSid: String
    private var sidRenewals = 0

    private(set) var phase: CallPhase = .idle
    private(set) var status: ConnectionStatus = .connected
    private(set) var transport: SignalingTransport?
    /// The user left or ended the call (so an end of the call is expected).
    private(set) var userLeft = false
    /// Another connection proved this seat (close 4001): the call stopped here, legitimately, and the seat
    /// it kept is taken back a moment later ("use here").
    private(set) var replacedSeat: Seat??
    private(set) var frozen = false
    private var deferred: [() -> Void] = []
    /// Every event the app would have seen, with its time.
    private(set) var events: [(at: Int64, event: CallEvent)] = []

    let options: CallEngine.Options
    /// Signs and checks descriptions on a keyed link, as DuetCall does (the same `SignedSignaling`).
    private var signing: SignedSignaling
    /// Both sides' link key in a keyed run.
    static let linkKey = LinkKey(bytes: Array(repeating: 0x5a, count: LinkKey.byteCount))!
    /// This engine's trace in the world (differential replay), when recording.
    private var engineTrace: Int?
    /// The seat the app keeps for a relaunch (from `CallEvent.session`).
    private(set) var seat: Seat?
    /// The process died: nothing of it runs any more.
    private(set) var dead = false
    /// When the TURN credentials this side last fetched expire (virtual time); nil before the first.
    private(set) var turnExpiresAt: Int64?

    /// How long the user takes to read "continued in another tab" and press "use here".
    static let useHereAfterMs: Int64 = 3_000

    init(side: Side, world: World, options: CallEngine.Options, history: [(at: Int64, event: CallEvent)] = []) {
        self.side = side
        self.world = world
        self.options = options
        self.events = history
        self.engine = CallEngine(options: options)
        self.signing = SignedSignaling(key: options.keyedLink ? Self.linkKey : nil)
        self.sseSid = "sim-sid-\(side)"
        self.engineTrace = world.beginEngineTrace(side, options)
    }

    // MARK: - The app

    func startNewCall() { run { self.feed(.startNewCall) } }
    func join(_ roomId: String) {
        run {
            self.userLeft = false
            self.feed(.joinRoom(roomId))
        }
    }
    func leave() {
        run {
            self.userLeft = true
            self.feed(.leave)
        }
    }
    func end() {
        run {
            self.userLeft = true
            self.feed(.end)
        }
    }
    /// The user mutes or unmutes: the other side must come to show it, whatever the faults did meanwhile.
    func setMicrophone(on: Bool) {
        run {
            var media = self.engine.localMedia
            media.audio = on
            self.feed(.localMediaChanged(media))
        }
    }
    var localMedia: MediaState { engine.localMedia }
    var remoteMedia: MediaState? { engine.remoteMedia }
    // The device's network hints. `duet call` has none on Linux (no network monitor there): it learns of a change only
    // from its transports and ICE.
    private var hasNetworkMonitor: Bool { !world.media.webrtcbinSides.contains(side) }
    func networkOnline() { run { if self.hasNetworkMonitor { self.feed(.networkOnline) } } }
    func networkPathChanged() { run { if self.hasNetworkMonitor { self.feed(.networkPathChanged) } } }
    func networkOffline() { run { if self.hasNetworkMonitor { self.feed(.networkOffline) } } }

    /// Work for this side: postponed while the app is frozen, in arrival order.
    func run(_ work: @escaping () -> Void) {
        guard !dead else { return }
        if frozen { deferred.append(work) } else { work() }
    }

    /// The process dies: its sockets are closed by the kernel, its timers and tasks are gone.
    func kill() {
        dead = true
        deferred.removeAll()
        timers.removeAll()
        webRtcQueue.removeAll()
        whenWebRtcIdle.removeAll()
        connection = nil
        for socket in world.connections.values.sorted(by: { $0.id < $1.id }) where socket.side == side && socket.clientGeneration >= 0 {
            world.clientClose(socket)
        }
    }

    func freeze() { frozen = true }
    func thaw() {
        frozen = false
        while !deferred.isEmpty, !frozen {
            let work = deferred.removeFirst()
            work()
        }
    }

    // MARK: - The loop

    /// Whether the engine, before the input being handled, had made enough answered stall restarts that its next one
    /// replaces the connection, and the input is not a refusal (the monitor's `stallRenewed`, told apart from a refused
    /// description's replacement; a stall renewal is never deferred: `restart` returns early in a cooldown).
    private var renewalForStallDue = false

    /// `sentEpoch`: the epoch the server stamped on a relayed message (before any mutation touched it).
    func feed(_ input: CallEngine.Input, sentEpoch: Int64? = nil) {
        world.trace(side, "← \(Describe.input(input))")
        let queuedBefore = engine.queuedRelayTypes.count
        let outerRenewalForStallDue = renewalForStallDue  // a feed nested in this one's outputs gives it back on its way out
        defer { renewalForStallDue = outerRenewalForStallDue }
        renewalForStallDue = engine.negotiation.restartsWithoutMedia >= ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL
        switch input {
        case .remoteDescriptionFailed, .rollbackFailed: renewalForStallDue = false  // a refusal replaces it whatever the count
        default: break
        }
        let outputs = engine.handle(input)
        if let engineTrace { world.recordEngineStep(engineTrace, input, outputs) }
        if case .message(let envelope) = input { checkEpoch(envelope, sentEpoch: sentEpoch, outputs) }
        if engine.queuedRelayTypes.count > queuedBefore {
            world.trace(
                side,
                "queued for after the rejoin: \(engine.queuedRelayTypes.suffix(engine.queuedRelayTypes.count - queuedBefore).joined(separator: ", "))"
            )
        }
        for output in outputs { perform(output) }
    }

    /// The newest remote description applied, per peer-connection instance (the simulator's own creation count):
    /// an older one of the same instance reaching WebRTC is stale SDP. (ICE credentials are no measure: a rollback
    /// after the peer applied an offer brings the older credentials back, legitimately.)
    private var appliedRemoteCreation: [Int: (created: UInt64, ufrag: String)] = [:]

    private func checkNotStale(_ sdp: String) {
        guard let parsed = SimMediaPlane.parse(sdp) else { return }
        if let applied = appliedRemoteCreation[parsed.instance], parsed.created < applied.created {
            world.monitor.staleApplied(
                side,
                "a description with ICE credentials \(parsed.ufrag) (made #\(parsed.created)) after \(applied.ufrag) (#\(applied.created)) of the same peer connection"
            )
        }
        if parsed.created >= (appliedRemoteCreation[parsed.instance]?.created ?? 0) {
            appliedRemoteCreation[parsed.instance] = (parsed.created, parsed.ufrag)
        }
    }

    /// The epoch at which the current peer session began (the peer arrived, or the server restarted).
    private var peerSessionEpoch: Int64 = 0
    private var peerCid: String?
    private var myCid: String?

    /// Negotiation relayed from before the current peer session must not reach WebRTC.
    private func checkEpoch(_ envelope: Envelope, sentEpoch: Int64?, _ outputs: [CallEngine.Output]) {
        if case .participants(let list, _, let me)? = outputs.lazy.compactMap({
            if case .emit(let event) = $0, case .participants = event { event } else { nil }
        }).last {
            let peer = list.first { $0.cid != me }?.cid
            // A new peer, a new seat of ours, or epochs that started over (a server restart): a new peer session.
            if peer != peerCid || me != myCid || engine.epoch < peerSessionEpoch { peerSessionEpoch = engine.epoch }
            peerCid = peer
            myCid = me
        }
        guard let epoch = sentEpoch ?? envelope.epoch, epoch < peerSessionEpoch else { return }
        let applied = outputs.contains {
            if case .engine(.setRemoteDescription) = $0 { return true }
            if case .engine(.addRemoteCandidates) = $0 { return true }
            return false
        }
        if applied {
            world.monitor.staleApplied(side, "\(envelope.type) of epoch \(epoch) in a peer session that began at epoch \(peerSessionEpoch)")
        }
    }

    private func perform(_ output: CallEngine.Output) {
        switch output {
        case .openTransport(let kind, _): open(kind)
        case .closeTransport:
            if let detached = detach() { world.clientClose(detached) }
        case .send(let envelope):
            guard let connection else {
                world.trace(side, "send dropped, no transport: \(envelope.type)")
                return
            }
            world.trace(side, "→ \(Describe.envelope(envelope))")
            guard let signed = signing.signed(envelope) else {
                world.trace(side, "a \(envelope.type) that could not be signed: not sent")
                return
            }
            world.monitor.sent(side, on: ObjectIdentifier(connection))
            world.sendUp(connection, signed)
        case .createRoomId:
            world.http(side, timeoutMs: ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS, request: { $0.createRoomId() }) { [self] id in
                feed(id.map { .roomIdCreated($0) } ?? .roomIdFailed("unreachable"))
            }
        case .fetchTurnCredentials:
            turnFetchPending = true
            world.http(side, timeoutMs: ResilienceConstants.TURN_FETCH_TIMEOUT_MS, request: { _ in World.turnTtlSeconds }) { [self] ttl in
                turnFetchPending = false
                defer { pumpWebRtc() }
                if let ttl {
                    if let expiry = turnExpiresAt, expiry <= world.scheduler.now { world.monitor.reached(.turnExpiredThenRenewed) }
                    turnExpiresAt = world.scheduler.now + ttl * 1_000
                }
                feed(ttl.map { .turnCredentialsFetched(ttlSeconds: $0) } ?? .turnCredentialsFailed)
            }
        case .prepareSnapshot: feed(.snapshotReady(nil))
        case .sampleMedia:
            // getStats answers a moment later.
            world.scheduler.after(1) { [self] in
                webRtcEvent(.mediaSampled(packets: world.mutation == .watchdogOff ? nil : world.media.inboundPackets(side)))
            }
        case .requestPushEndpoint: feed(.pushEndpointReady(nil))
        case .httpLeave(let request):
            world.http(side, timeoutMs: ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS, request: { $0.httpLeave(request) }) { _ in }
        case .engine(let command):
            webRtcQueue.append(command)
            pumpWebRtc()
        case .timer(let command): timer(command)
        case .emit(let event): emit(event)
        case .teardown:
            acceptingWebRtcCommands = false
            // Media stopped first (the engine's `.close`, queued before this); the goodbye goes out (an SSE POST is
            // answered, bounded by the flush timeout), then the transport closes, and teardown is done once the WebRTC
            // queue is past that close.
            var finished = false
            let finish = { [self] in
                guard !finished else { return }
                finished = true
                run {
                    if let detached = self.detach() { self.world.clientClose(detached) }
                    // The engine queued `.close` before `.teardown`: done once the WebRTC queue is past it.
                    self.afterWebRtcQueue { self.feed(.teardownFinished) }
                }
            }
            if let connection, !connection.postQueue.isEmpty {
                connection.whenPostsDrained.append(finish)
                world.scheduler.after(ResilienceConstants.GOODBYE_FLUSH_TIMEOUT_MS, finish)
            } else {
                world.scheduler.after(1, finish)
            }
        }
    }

    private func emit(_ event: CallEvent) {
        events.append((world.scheduler.now, event))
        signing.note(event)
        if event == .iceRestart(.mediaStall) { world.monitor.reached(.mediaStallRestarted) }
        if event == .iceRestart(.peerConnectionWedged) {
            // The same restart reason for both causes: which one it was shows in the engine's count before the input.
            world.monitor.reached(renewalForStallDue ? .stallRenewed : .wedgedConnectionReplaced)
        }
        switch event {
        case .phase(let value):
            // An interception ends the call on purpose (issue 19): like a leave, not a failure.
            let ended = userLeft || replacedSeat != nil || world.client(side.other).userLeft || engine.verification == .intercepted
            world.monitor.phaseChanged(side, from: phase, to: value, userLeft: ended)
            phase = value
            if value == .idle, case .some(let kept?) = replacedSeat, !userLeft {
                world.scheduler.after(Self.useHereAfterMs) { [self] in run { self.world.useHere(self.side, seat: kept) } }
            }
            if value == .joining { acceptingWebRtcCommands = true }
        case .connectionStatus(let value):
            world.monitor.statusChanged(side, from: status, to: value)
            status = value
        case .transport(let value): transport = value
        case .session(let value): seat = value
        case .replaced(let kept): replacedSeat = .some(kept)
        case .room(let id): world.roomCreated(id, by: side)
        case .participants(let list, let host, _): world.monitor.membership(side, participants: list.map(\.cid), host: host)
        default: break
        }
        world.trace(side, "app: \(event)")
    }

    // MARK: - Timers

    private func timer(_ command: TimerCommand) {
        switch command {
        case .schedule(let id, let afterMs):
            timerGeneration += 1
            let generation = timerGeneration
            timers[id] = generation
            world.scheduler.after(world.mutation.timerDelay(id, afterMs)) { [self] in
                run {
                    guard self.timers[id] == generation else { return }
                    self.timers[id] = nil
                    self.feed(.timerFired(id))
                }
            }
        case .cancel(let id):
            timers[id] = nil
        }
    }

    // MARK: - Signaling transport

    private func open(_ kind: SignalingTransport) {
        connectionGeneration += 1
        let generation = connectionGeneration
        let attempt = world.openConnection(side, kind: kind, generation: generation)
        // The transport's own connect timeout; the engine's shorter timer normally decides first. A socket
        // that never opened for us is abandoned (closed) then.
        world.scheduler.after(ResilienceConstants.CONNECT_TIMEOUT_MS + 1_000) { [self] in
            run {
                if attempt !== self.connection { self.world.clientClose(attempt) }
                self.openFailed(kind, .timeout, generation: generation)
            }
        }
    }

    func opened(_ newConnection: SimConnection) {
        guard newConnection.clientGeneration == connectionGeneration, connection == nil, newConnection.clientOpen else {
            world.clientClose(newConnection)  // the engine gave up on this attempt already
            return
        }
        connection = newConnection
        connectionGeneration += 1  // later results of this attempt (its timeout) are stale
        world.watchSilence(newConnection)
        feed(.transportOpened(newConnection.kind))
    }

    func openFailed(_ kind: SignalingTransport, _ failure: SignalingLinkMachine.Failure, generation: Int) {
        guard generation == connectionGeneration else { return }
        connectionGeneration += 1
        feed(.transportOpenFailed(kind, failure))
    }

    func received(_ item: SimConnection.DownItem, on source: SimConnection) {
        guard source === connection else { return }
        switch item {
        case .message(let envelope):
            world.trace(side, "⇐ \(Describe.envelope(envelope))")
            if world.mutation == .restartRequestIgnored, envelope.messageType == .restartRequest { return }
            var received = world.mutation.received(envelope)
            if world.tamperingFingerprints > 0, received.messageType == .offer || received.messageType == .answer,
                let sdp = received.payload["sdp"]?.stringValue
            {
                received.payload["sdp"] = .string(SimMediaPlane.tamperedFingerprints(sdp))
                world.trace(side, "the server rewrote the fingerprints of this \(received.type)")
            }
            // The runtime checks a keyed link's descriptions before the engine sees them (SignedSignaling).
            switch signing.check(received) {
            case .pass: feed(.message(received), sentEpoch: envelope.epoch)
            case .rejected: feed(.descriptionRejected(received), sentEpoch: envelope.epoch)
            case .dropped: world.trace(side, "a \(received.type) not signed for us with the key: ignored")
            }
        case .comment: break
        case .closed(let byServer):
            connection = nil
            source.clientOpen = false
            feed(.transportClosed(byServer ? .closedByServer : .networkError))
        case .replaced:
            connection = nil
            source.clientOpen = false
            feed(.replaced)
        }
    }

    /// A POST was refused (401/410): the stream of this sid is not ours. A new sid for the next stream, as
    /// DuetCall does.
    func sidRejected(_ source: SimConnection) {
        guard source === connection else { return }
        sidRenewals += 1
        sseSid = "sim-sid-\(side)-\(sidRenewals)"
        world.trace(side, "new SSE session id \(sseSid) after a refused POST")
        linkFailed(source)
    }

    /// A POST failed (SSE), or the stream went silent: the link is not usable.
    func linkFailed(_ source: SimConnection) {
        guard source === connection else { return }
        _ = detach()
        world.clientClose(source)
        feed(.transportClosed(.networkError))
    }

    private func detach() -> SimConnection? {
        connectionGeneration += 1
        defer { connection = nil }
        return connection
    }

    // MARK: - WebRTC, one command at a time

    private func afterWebRtcQueue(_ work: @escaping () -> Void) {
        if webRtcQueue.isEmpty, !webRtcBusy { return work() }
        whenWebRtcIdle.append(work)
    }

    private func pumpWebRtc() {
        guard !webRtcBusy else { return }
        guard let next = webRtcQueue.first else {
            let waiting = whenWebRtcIdle
            whenWebRtcIdle.removeAll()
            waiting.forEach { $0() }
            return
        }
        // The first peer connection is made with the TURN servers on their way (the fetch has its own timeout).
        if next == .ensurePeerConnection, turnFetchPending, acceptingWebRtcCommands, !world.media.isOpen(side) { return }
        webRtcBusy = true
        world.scheduler.after(1) { [self] in
            run {
                let command = self.webRtcQueue.removeFirst()
                self.execute(command)
                self.webRtcBusy = false
                self.pumpWebRtc()
            }
        }
    }

    private func execute(_ command: EngineCommand) {
        guard acceptingWebRtcCommands || command == .close else {
            return world.trace(side, "WebRTC command after teardown skipped: \(command)")
        }
        if case .addRemoteCandidates(let list) = command { world.trace(side, "webrtc add \(list.count) candidate(s)") }
        let media: SimMediaPlane = world.media
        do {
            switch command {
            case .ensurePeerConnection: media.ensure(side)
            case .renewPeerConnection:
                media.close(side)
                media.ensure(side)
            case .createOffer(let restart):
                let sdp = try media.createOffer(side, iceRestart: restart)
                if restart { world.monitor.iceRestartOffer(side) }
                feed(.localDescriptionReady(.offer, sdp: sdp))
            case .createAnswer:
                feed(.localDescriptionReady(.answer, sdp: try media.createAnswer(side)))
            case .setRemoteDescription(let kind, let sdp):
                checkNotStale(sdp)
                try media.setRemote(side, kind, sdp: sdp)
                feed(.remoteDescriptionApplied(kind))
            case .rollback:
                try media.rollback(side)
                world.monitor.offerRolledBack(side)
            case .addRemoteCandidates(let candidates):
                for candidate in candidates { try media.addRemoteCandidate(side, candidate) }
            case .applyFetchedIceServers, .applyFallbackIceServers: break
            case .close: media.close(side)
            }
        } catch {
            // A wedged connection's refusals are the fault's, not an illegal call of the engine's.
            let wedged = (error as? SimMediaPlane.Refusal).map { if case .wedged = $0 { true } else { false } } ?? false
            if wedged {
                world.trace(side, "WebRTC refused: \(command): \(error)")
            } else {
                world.monitor.webRtcRefused(side, "\(command): \(error)")
            }
            if wedged, world.mutation == .wedgeUnreported { return }
            // As the runtimes report them (DuetCall, duet-call.js).
            switch command {
            case .createOffer, .createAnswer: feed(.localDescriptionFailed)
            case .setRemoteDescription(let kind, _): feed(.remoteDescriptionFailed(kind))
            case .rollback: feed(.rollbackFailed)
            default: break
            }
        }
    }

    func webRtcEvent(_ input: CallEngine.Input) { run { self.feed(input) } }

    // MARK: - What is left (after leave)

    var leftovers: [String] {
        var found: [String] = []
        if !timers.isEmpty { found.append("timers \(timers.keys.map { "\($0)" }.sorted())") }
        if connection != nil { found.append("a signaling transport") }
        if !webRtcQueue.isEmpty || webRtcBusy { found.append("queued WebRTC commands") }
        if !deferred.isEmpty { found.append("deferred work") }
        if world.media.isOpen(side) { found.append("an open peer connection") }
        return found
    }
}
