import DuetProtocol

/// The whole call engine as one pure value: it routes every input to the machines that care and turns
/// their actions into outputs for the runtime (open a transport, send an envelope, drive WebRTC, fetch
/// TURN credentials, schedule timers, tell the app). No I/O, clock or task lives here.
public struct CallEngine: Sendable {
    public struct Options: Sendable, Equatable {
        public var join = JoinMachine.Options()
        /// Leave out to use WebSocket first; `[.sse]` forces SSE.
        public var sseOnly = false
        public var jitterSeed: UInt64?
        public var device = "swift"
        /// See `NegotiationMachine.restartsOnlyAsHost`.
        public var restartsOnlyAsHost = false
        /// A seat kept from before the process died (`CallEvent.session`): joining that room proves it once.
        public var resume: Seat?
        /// What this side says of its microphone, camera and screen from the first join on.
        public var localMedia = MediaState.initial
        /// The link carries a key (`#k=`): the runtime signs our descriptions and passes on only the peer's that
        /// verify; one that does not comes as `descriptionRejected` and ends the call as intercepted.
        public var keyedLink = false
        public init() {}
    }

    public enum Input: Sendable, Equatable {
        // the app
        case startNewCall
        case joinRoom(String)
        case leave
        case end
        case dismissError
        /// The user turned the microphone or camera on or off, or started or stopped sharing the screen.
        case localMediaChanged(MediaState)
        /// The server closed signaling because another connection proved this seat (WebSocket close 4001).
        case replaced
        // HTTP results
        case roomIdCreated(String)
        case roomIdFailed(String)
        case turnCredentialsFetched(ttlSeconds: Int64)
        case turnCredentialsFailed
        case snapshotReady(String?)
        case pushEndpointReady(String?)
        // signaling transport
        case transportOpened(SignalingTransport)
        case transportOpenFailed(SignalingTransport, SignalingLinkMachine.Failure)
        case transportClosed(SignalingLinkMachine.CloseReason)
        case message(Envelope)
        /// On a keyed link: an offer or answer whose `auth` is missing or wrong (the runtime checked it).
        case descriptionRejected(Envelope)
        /// On a keyed link: the DTLS handshake presented a certificate the verified remote description does not name
        /// (the runtime of an engine that does not check it itself, webrtcbin, compared them). The description was
        /// applied, so nothing about it is stale: the call always ends as intercepted.
        case certificateMismatch
        // WebRTC engine
        case localDescriptionReady(NegotiationMachine.DescriptionKind, sdp: String)
        case localDescriptionFailed
        case remoteDescriptionApplied(NegotiationMachine.DescriptionKind)
        /// WebRTC refused the remote description (`setRemoteDescription` threw).
        case remoteDescriptionFailed(NegotiationMachine.DescriptionKind)
        /// WebRTC could not roll our offer back (`setLocalDescription(rollback)` threw).
        case rollbackFailed
        case localCandidate(IceCandidate)
        case gatheringComplete
        case iceStateChanged(NegotiationMachine.IceState)
        /// The peer connection's aggregate state; degraded states count like ICE's.
        case connectionStateChanged(NegotiationMachine.IceState)
        case signalingStateChanged(NegotiationMachine.SignalingState)
        /// The inbound RTP packets (all kinds) the runtime read for `.sampleMedia` (nil: no report, no peer connection).
        case mediaSampled(packets: Int64?)
        // network
        case networkOnline
        case networkPathChanged
        /// The device says it has no network. Nothing to retry against until `networkOnline`.
        case networkOffline
        // runtime
        case timerFired(TimerID)
        case teardownFinished
    }

    public enum Output: Sendable, Equatable {
        /// `via`: the node a draining server handed the room to (`draining {via}`): the runtime names it on this
        /// connection and on every request of it (`&via=`), so that a proxy in front of a cluster routes there.
        case openTransport(SignalingTransport, via: String? = nil)
        case closeTransport
        case send(Envelope)
        case createRoomId
        case fetchTurnCredentials(token: String)
        case prepareSnapshot
        case requestPushEndpoint
        /// Leave over HTTP when signaling is down, so the seat does not wait for eviction.
        case httpLeave(LeaveRequest)
        case engine(EngineCommand)
        /// Read the live peer connection's inbound RTP packet count and feed it back as `mediaSampled` (the media watchdog).
        case sampleMedia
        case timer(TimerCommand)
        case emit(CallEvent)
        /// Close signaling (after what is queued is sent) and the peer connection; the runtime answers
        /// with `teardownFinished`.
        case teardown
    }

    public private(set) var phase = CallPhaseMachine()
    public private(set) var status = ConnectionStatusMachine()
    public private(set) var link: SignalingLinkMachine
    public private(set) var join = JoinMachine()
    public private(set) var negotiation: NegotiationMachine
    public private(set) var trickle = TrickleIceMachine()
    public private(set) var turn = TurnMachine()
    public private(set) var watchdog = MediaWatchdogMachine()
    let options: Options

    public private(set) var roomId: String?
    public private(set) var cid: String?
    public private(set) var hostCid: String?
    public private(set) var reconnectToken: String?
    /// The node the last `draining` named for this room (issue 53: both clients of a room reach the same node). Kept
    /// for every connection after it, until another `draining` says otherwise, a connection through it fails (the
    /// node is gone: go by the room, as the other client will), or a new call starts.
    public private(set) var via: String? { didSet { viaFailedConnects = 0 } }
    private var viaFailedConnects = 0
    public private(set) var participants: [ParticipantInfo] = []
    public private(set) var epoch: Int64 = 0
    /// What this side last said of its media (sent after every join, so a restarted server and the peer learn it).
    public private(set) var localMedia: MediaState
    /// What the other participant last said of its media; nil until it said something (or after it left).
    public private(set) var remoteMedia: MediaState?
    public private(set) var verification = Verification.unverified
    private var peerCid: String?
    /// The seat of the last peer we had, kept while it is missing from the room's view: a server that lost the room
    /// sees it come back with the same cid (a seat that left or was evicted never does: its token is revoked).
    private var lastPeerCid: String?
    private var peerEpoch: Int64 = 0
    private var peerSuspended = false
    /// Set after a signaling reconnect until the first `room_state`.
    private var awaitingRoomStateAfterReconnect = false
    /// Relayed messages written while signaling was down, stamped with the peer session (its epoch)
    /// they belong to.
    private var outbox: [(envelope: Envelope, peerEpoch: Int64)] = []
    /// Relays written while signaling was down, waiting for the rejoin (tests and the simulator watch it).
    public var queuedRelayTypes: [String] { outbox.map(\.envelope.type) }
    /// A rejoin was sent and not yet acknowledged: relays wait for it.
    private var rejoinPending = false
    private var resume: Seat?
    /// Joining with a kept seat is a call in progress coming back, not a new join: it never times out.
    private var joiningWithKeptSeat = false

    public init(options: Options = Options()) {
        self.options = options
        self.link = SignalingLinkMachine(webSocketAvailable: !options.sseOnly, jitterSeed: options.jitterSeed)
        self.negotiation = NegotiationMachine(restartsOnlyAsHost: options.restartsOnlyAsHost)
        self.resume = options.resume
        self.localMedia = options.localMedia
    }

    public var isSignalingUp: Bool { link.transport != nil }

    public mutating func handle(_ input: Input) -> [Output] {
        let seatBefore = seat
        var out = route(input)
        // The watchdog follows ICE as the negotiation sees it, whatever changed it (an ICE event, a renewal, a reset).
        out += syncWatchdog()
        // The app keeps the seat (on disk, in session storage) so that a new process can reclaim it.
        if seat != seatBefore { out.append(.emit(.session(seat))) }
        return out
    }

    private var seat: Seat? {
        guard let roomId, let cid, let reconnectToken else { return nil }
        return Seat(roomId: roomId, cid: cid, reconnectToken: reconnectToken)
    }

    private mutating func route(_ input: Input) -> [Output] {
        // WebRTC news that arrives after the call is over (late candidates, the close itself) is dropped.
        if input.isFromWebRtc, phase.phase != .waiting, phase.phase != .inCall { return [] }
        switch input {
        case .startNewCall: return phaseEvent(.startNewCall)
        case .joinRoom(let id): return phaseEvent(.joinRoom(id))
        case .leave: return phaseEvent(.leaveCall)
        case .end: return phaseEvent(.endCall)
        case .dismissError: return phaseEvent(.dismissError)
        case .localMediaChanged(let state): return localMediaChanged(state)
        case .replaced: return phaseEvent(.replaced)
        case .roomIdCreated(let id): return phaseEvent(.roomIdReceived(id))
        case .roomIdFailed(let reason): return phaseEvent(.roomIdFailed(reason))
        case .turnCredentialsFetched(let ttl): return turnEvent(.fetched(ttlSeconds: ttl))
        case .turnCredentialsFailed: return turnEvent(.fetchFailed)
        case .snapshotReady(let id): return joinEvent(.snapshotReady(id))
        case .pushEndpointReady(let endpoint): return joinEvent(.pushEndpointReady(endpoint))
        case .transportOpened(let transport): return transportOpened(transport)
        case .transportOpenFailed(let transport, let failure): return linkEvent(.openFailed(transport, failure))
        case .transportClosed(let reason): return linkEvent(.closed(reason))
        case .message(let envelope): return message(envelope)
        case .descriptionRejected(let envelope): return descriptionRejected(envelope)
        case .certificateMismatch:
            guard options.keyedLink, phase.phase == .waiting || phase.phase == .inCall else { return [] }
            return phaseEvent(.intercepted(tellPeer: true))
        // A result of a connection renewed since: the negotiation machine drops it, and nothing else may see it.
        case .localDescriptionReady(let kind, let sdp) where negotiation.staleLocalResults > 0:
            return negotiationEvent(.localDescriptionReady(kind, sdp: sdp))
        case .remoteDescriptionApplied(let kind) where negotiation.staleRemoteResults > 0:
            return negotiationEvent(.remoteDescriptionApplied(kind))
        case .localDescriptionReady(let kind, let sdp):
            var out = negotiationEvent(.localDescriptionReady(kind, sdp: sdp))
            out += trickleEvent(kind == .offer ? .offerSent : .answerSent)
            return out
        case .localDescriptionFailed where negotiation.staleLocalResults > 0: return negotiationEvent(.localDescriptionFailed)
        case .localDescriptionFailed: return negotiationEvent(.localDescriptionFailed) + trickleEvent(.descriptionFailed)
        case .remoteDescriptionApplied(let kind):
            var out: [Output] = kind == .offer ? trickleEvent(.answering) : []
            out += negotiationEvent(.remoteDescriptionApplied(kind))
            out += watchdogEvent(.renegotiated)
            // On a keyed link the runtime hands over only descriptions whose fingerprints the key proves.
            if options.keyedLink { out += verificationChanged(.verified) }
            // An ICE restart on a connection that never dropped produces no new ICE event: re-check.
            if kind == .answer { out += statusEvent(.ice(mediaHealth)) }
            return out
        case .remoteDescriptionFailed(let kind): return negotiationEvent(.remoteDescriptionFailed(kind))
        case .rollbackFailed: return negotiationEvent(.rollbackFailed)
        case .localCandidate(let candidate): return trickleEvent(.localCandidate(candidate))
        case .gatheringComplete: return trickleEvent(.gatheringComplete)
        case .iceStateChanged(let state), .connectionStateChanged(let state):
            // Seeds 000 §6/§8: "conn-disconnected" schedules the same restart as ICE's own state.
            var out = negotiationEvent(.iceStateChanged(state))
            out += syncWatchdog()
            out += statusEvent(.ice(mediaHealth))
            return out
        case .signalingStateChanged(let state): return negotiationEvent(.signalingStateChanged(state))
        case .mediaSampled(let packets): return watchdogEvent(.sampled(packets: packets))
        case .networkOnline:
            var out = negotiationEvent(.networkOnline) + statusEvent(.networkChanged)
            if case .waitingToReconnect = link.state { out += linkEvent(.connect) }  // don't sit out the backoff
            return out
        case .networkPathChanged:
            var out = negotiationEvent(.networkPathChanged)
            let healthy = isSignalingUp && mediaHealth == .connected
            if phase.phase == .inCall, !healthy { out += statusEvent(.networkChanged) }
            if case .waitingToReconnect = link.state { out += linkEvent(.connect) }
            return out
        case .networkOffline:
            // No ICE restart and no reconnect now (they would fail); a call already unhealthy shows it at once.
            let healthy = isSignalingUp && mediaHealth == .connected
            return phase.phase == .inCall && !healthy ? statusEvent(.networkChanged) : []
        case .timerFired(let timer): return timerFired(timer)
        case .teardownFinished: return phaseEvent(.cleanupComplete)
        }
    }

    // MARK: - Routing each machine's actions

    private mutating func phaseEvent(_ event: CallPhaseMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in phase.handle(event) {
            switch action {
            case .requestRoomId:
                out.append(.createRoomId)
            case .startJoin(let id):
                roomId = id
                if let kept = resume, kept.roomId == id, cid == nil {
                    cid = kept.cid
                    reconnectToken = kept.reconnectToken
                    joiningWithKeptSeat = true
                }
                resume = nil
                out += verificationChanged(.unverified, newCall: true)
                out.append(.emit(.room(id)))
                out += joinEvent(.start(options.join))
                if link.state == .idle { out += linkEvent(.connect) }
            case .phaseChanged(let next):
                out.append(.emit(.phase(next)))
                out += statusEvent(.phaseChanged(next))
                if next == .inCall { out.append(.engine(.ensurePeerConnection)) }
            case .teardown(let kind):
                out += teardown(kind)
            case .failed(let failure):
                out.append(.emit(.failure(failure)))
                out += joinEvent(.cancel) + linkEvent(.stop) + turnEvent(.stop)
                out += TimerID.allCases.map { .timer(.cancel($0)) }
                out.append(.engine(.close))
                out += remoteMediaLearned(nil)  // nobody on the other side any more: the app is told, not left showing it
                resetSession()
            }
        }
        return out
    }

    private mutating func statusEvent(_ event: ConnectionStatusMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in status.handle(event) {
            switch action {
            case .statusChanged(let value): out.append(.emit(.connectionStatus(value)))
            case .timer(let command): out.append(.timer(command))
            case .escalate(let step):
                out.append(.emit(.escalation(step)))
                switch step {
                case .iceRestart: out += negotiationEvent(.requestIceRestart)
                case .offerResend: out += negotiationEvent(.requestOfferResend)
                case .rejoin: out += isSignalingUp ? sendRejoin() : linkEvent(.connect)
                case .transportFallback: out += linkEvent(.forceFallback)
                }
            }
        }
        return out
    }

    private mutating func linkEvent(_ event: SignalingLinkMachine.Event) -> [Output] {
        // Connects through a drain's node failed (refused, an error, no answer in time) VIA_FAILED_CONNECTS_TO_FORGET
        // times in a row: that node is gone, so the next goes by the room alone, as the other client's will.
        if via != nil, case .connecting = link.state {
            switch event {
            case .openFailed, .timerFired(.connectTimeout):
                viaFailedConnects += 1
                if viaFailedConnects >= ResilienceConstants.VIA_FAILED_CONNECTS_TO_FORGET { via = nil }
            case .opened: viaFailedConnects = 0
            default: break
            }
        }
        var out: [Output] = []
        for action in link.handle(event) {
            switch action {
            case .open(let transport): out.append(.openTransport(transport, via: via))
            case .close: out.append(.closeTransport)
            case .sendPing: out.append(.send(Envelope(.ping, payload: ["ts": 0])))
            case .up(let transport):
                out.append(.emit(.transport(transport)))
            case .down:
                rejoinPending = false
                out.append(.emit(.transport(nil)))
                out += joinEvent(.signalingClosed) + negotiationEvent(.signaling(up: false)) + turnEvent(.signaling(up: false))
                out += statusEvent(.signaling(up: false))
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    private mutating func joinEvent(_ event: JoinMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in join.handle(event) {
            switch action {
            case .prepareSnapshot: out.append(.prepareSnapshot)
            case .requestPushEndpoint: out.append(.requestPushEndpoint)
            case .ensureSignalingConnection: out += linkEvent(.connect)
            case .sendJoin(let snapshotId, let pushEndpoint):
                out.append(.send(joinEnvelope(snapshotId: snapshotId, pushEndpoint: pushEndpoint)))
            case .promote:
                out += phaseEvent(.joined(participants: participants.count))
            case .fail: out += joiningWithKeptSeat ? joinEvent(.start(options.join)) : phaseEvent(.joinHardTimeout)
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    private mutating func negotiationEvent(_ event: NegotiationMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in negotiation.handle(event) {
            switch action {
            case .renewPeerConnection:
                out += trickleEvent(.connectionRenewed)
                out.append(.engine(.renewPeerConnection))
            case .createOffer(let restart):
                out += trickleEvent(.offering)
                out.append(.engine(.createOffer(iceRestart: restart)))
            case .createAnswer: out.append(.engine(.createAnswer))
            case .setRemoteDescription(let kind, let sdp): out.append(.engine(.setRemoteDescription(kind, sdp: sdp)))
            case .rollback:
                // A rolled-back offer must never reach the peer, however late signaling comes back. (Candidates
                // kept with it still go: they carry no ICE credentials, and WebRTC matches them to what it holds.)
                outbox.removeAll { $0.envelope.messageType == .offer }
                out.append(.engine(.rollback))
            case .addRemoteCandidates(let list): out.append(.engine(.addRemoteCandidates(list)))
            case .sendOffer(let sdp): out += relay(.offer, ["sdp": .string(sdp)])
            case .sendAnswer(let sdp, let answers):
                let payload: JSONValue = if let answers { ["sdp": .string(sdp), "offer": .string(answers)] } else { ["sdp": .string(sdp)] }
                out += relay(.answer, payload)
            case .iceRestartStarted(let reason): out.append(.emit(.iceRestart(reason)))
            case .askPeerToRestart(let reason): out += relay(.restartRequest, ["reason": .string(reason.rawValue)])
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    private mutating func watchdogEvent(_ event: MediaWatchdogMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in watchdog.handle(event) {
            switch action {
            case .sample: out.append(.sampleMedia)
            case .stalled: out += statusEvent(.ice(.disconnected)) + negotiationEvent(.mediaStalled)
            case .flowing: out += negotiationEvent(.mediaFlowing) + statusEvent(.ice(mediaHealth))
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    /// Tells the watchdog whether ICE is connected with a peer in the call, when that changed. Alone (waiting) there is
    /// nobody to hear, and a peer that comes back is judged from a new baseline.
    private mutating func syncWatchdog() -> [Output] {
        var out: [Output] = []
        if phase.phase != .inCall, watchdog.stalled {
            // Nobody to hear (the peer left; its leaving reset the negotiation's stall too): the status hears ICE's
            // own word again, or it would keep the stall's "disconnected" for the next peer.
            out += watchdogEvent(.reset) + statusEvent(.ice(mediaHealth))
        }
        let connected = phase.phase == .inCall && Self.health(negotiation.iceState) == .connected
        if connected != watchdog.iceConnected { out += watchdogEvent(.ice(connected: connected)) }
        return out
    }

    /// ICE's health as the call sees it: connected ICE whose media stalled is disconnected.
    private var mediaHealth: ConnectionStatusMachine.IceHealth {
        negotiation.mediaStalled ? .disconnected : Self.health(negotiation.iceState)
    }

    private mutating func trickleEvent(_ event: TrickleIceMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in trickle.handle(event) {
            switch action {
            case .sendCandidate(let candidate):
                out += relay(.ice, (try? JSONValue(encoding: IcePayload(candidate: candidate))) ?? [:])
            case .sendEndOfCandidates: out += relay(.ice, (try? JSONValue(encoding: IcePayload(candidate: nil))) ?? [:])
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    private mutating func turnEvent(_ event: TurnMachine.Event) -> [Output] {
        var out: [Output] = []
        for action in turn.handle(event) {
            switch action {
            case .fetchCredentials(let token): out.append(.fetchTurnCredentials(token: token))
            case .applyFetchedServers: out.append(.engine(.applyFetchedIceServers))
            case .applyFallbackServers: out.append(.engine(.applyFallbackIceServers))
            case .sendTurnRefresh: if isSignalingUp { out.append(.send(Envelope(.turnRefresh))) }
            case .timer(let command): out.append(.timer(command))
            }
        }
        return out
    }

    private mutating func timerFired(_ timer: TimerID) -> [Output] {
        switch timer {
        case .pushEndpointWait, .snapshotPrepare, .joinKickstart, .joinRecovery, .joinHardTimeout:
            return joinEvent(.timerFired(timer))
        case .connectTimeout, .reconnectBackoff, .ping:
            return linkEvent(.timerFired(timer))
        case .retryingThreshold, .retryEscalation:
            return statusEvent(.timerFired(timer))
        case .offerTimeout, .nonHostFallback, .iceRestartDelay, .iceRestartCooldown:
            return negotiationEvent(.timerFired(timer))
        case .endOfCandidates:
            return trickleEvent(.timerFired(timer))
        case .turnFetchTimeout, .turnRefresh:
            return turnEvent(.timerFired(timer))
        case .mediaSample:
            return watchdogEvent(.timerFired(timer))
        case .reconnectTokenRefresh:
            // Signaling down: try again soon; the token still has a fifth of its life.
            guard isSignalingUp, !rejoinPending else {
                return [.timer(.schedule(.reconnectTokenRefresh, afterMs: ResilienceConstants.RECONNECT_BACKOFF_CAP_MS))]
            }
            return [.send(Envelope(.reconnectTokenRefresh))]
        }
    }

    // MARK: - Signaling

    private mutating func transportOpened(_ transport: SignalingTransport) -> [Output] {
        var out = linkEvent(.opened(transport))
        if phase.phase == .waiting || phase.phase == .inCall {
            out += sendRejoin()  // auto-rejoin the same seat
        } else {
            out += joinEvent(.signalingOpened)
        }
        return out
    }

    private mutating func sendRejoin() -> [Output] {
        guard let roomId else { return [] }
        rejoinPending = true
        awaitingRoomStateAfterReconnect = true
        return [.send(joinEnvelope(snapshotId: nil, pushEndpoint: nil, rid: roomId))]
    }

    private func joinEnvelope(snapshotId: String?, pushEndpoint: String?, rid: String? = nil) -> Envelope {
        let payload = JoinPayload(
            reconnectCid: reconnectToken == nil ? nil : cid, reconnectToken: reconnectToken, pushEndpoint: pushEndpoint,
            snapshotId: snapshotId, device: options.device)
        return Envelope(.join, rid: rid ?? roomId, payload: (try? JSONValue(encoding: payload)) ?? [:])
    }

    /// offer / answer / ice: sent now, or kept for after the rejoin while signaling is down. A description kept
    /// replaces a kept one of its kind: only our latest offer can be outstanding, and only the answer to the
    /// peer's latest offer is awaited (an older one, sent later, would be applied to the wrong negotiation).
    private mutating func relay(_ type: MessageType, _ payload: JSONValue) -> [Output] {
        let envelope = Envelope(type, rid: roomId, payload: payload)
        if isSignalingUp, !rejoinPending { return [.send(envelope)] }
        if type == .offer || type == .answer || type == .restartRequest { outbox.removeAll { $0.envelope.messageType == type } }
        outbox.append((envelope, peerEpoch))
        return []
    }

    private mutating func flushOutbox() -> [Output] {
        let pending = outbox
        outbox.removeAll()
        // Stale: written for an earlier peer session (another peer, or a room recreated since).
        return pending.filter { $0.peerEpoch == peerEpoch }.map { .send($0.envelope) }
    }

    private mutating func message(_ envelope: Envelope) -> [Output] {
        switch envelope.messageType {
        case .joined?:
            guard let joined = try? envelope.payload.decode(JoinedPayload.self) else { return [] }
            return didJoin(joined, cid: envelope.cid)
        case .roomState?:
            guard let state = try? envelope.payload.decode(RoomStatePayload.self) else { return [] }
            return roomState(state)
        case .roomEnded?:
            return phaseEvent(.roomEnded)
        case .error?:
            guard let error = try? envelope.payload.decode(ErrorPayload.self) else { return [] }
            return serverError(error)
        case .offer?, .answer?:
            guard let sdp = envelope.payload["sdp"]?.stringValue else { return [] }
            if answersAnOfferThePeerNeverSaw(envelope) { return [] }
            // The offer an answer names (`offer`, issue 51); a peer that names none, or not as a string, is taken at its word.
            let answers = envelope.messageType == .answer ? envelope.payload["offer"]?.stringValue : nil
            return negotiationEvent(
                .remoteDescription(envelope.messageType == .offer ? .offer : .answer, sdp: sdp, epoch: envelope.epoch, answers: answers))
        case .ice?:
            guard envelope.payload["candidate"] != nil, let ice = try? envelope.payload.decode(IcePayload.self) else { return [] }
            return negotiationEvent(.remoteCandidate(ice.candidate, epoch: envelope.epoch))
        case .restartRequest?:
            if let epoch = envelope.epoch, epoch < peerEpoch { return [] }  // from an earlier peer session
            return negotiationEvent(.peerAskedForRestart)
        case .verifyFailed?:
            // The runtime passes on only a verify_failed whose auth the key proves; without a key there is none.
            guard options.keyedLink, phase.phase == .waiting || phase.phase == .inCall else { return [] }
            if let epoch = envelope.epoch, epoch < peerEpoch { return [] }  // about an earlier peer session
            return phaseEvent(.intercepted(tellPeer: false))
        case .mediaState?:
            guard let state = try? envelope.payload.decode(MediaState.self),
                let from = envelope.payload["from"]?.stringValue, from == peerCid
            else { return [] }
            return remoteMediaLearned(state)
        case .pong?:
            return linkEvent(.pong)
        case .turnRefreshed?:
            guard let refreshed = try? envelope.payload.decode(TurnRefreshedPayload.self) else { return [] }
            return turnEvent(.token(refreshed.turnToken, ttlMs: refreshed.turnTokenTTLMs))
        case .reconnectTokenRefreshed?:
            guard let refreshed = try? envelope.payload.decode(ReconnectTokenRefreshedPayload.self) else { return [] }
            reconnectToken = refreshed.reconnectToken
            return [scheduleTokenRefresh(ttlMs: refreshed.reconnectTokenTTLMs)]
        case .draining?:
            // The server is going away: reconnect after the delay it asked for, not the backoff's. The server spreads
            // its rooms' delays (a room's two clients alike) so that they do not arrive at once; the backoff's floor
            // (500 ms ± 20 %) on top only kept the first half of them waiting (issue 53: a drain in 3 s).
            let draining = try? envelope.payload.decode(DrainingPayload.self)
            let after = max(0, draining?.reconnectAfterMs ?? 0)
            // Its successor for this room, if it named one: both clients of the room were told the same.
            via = draining?.via.flatMap(Self.acceptableVia)
            return ([.closeTransport] + linkEvent(.closed(.closedByServer))).map { output in
                guard case .timer(.schedule(.reconnectBackoff, _)) = output else { return output }
                return .timer(.schedule(.reconnectBackoff, afterMs: after))
            }
        default:
            return []
        }
    }

    /// A description failed its check: unless it would have been dropped anyway (another call's, an older peer
    /// session's, an answer to an offer the peer never saw), someone may be in the middle.
    private mutating func descriptionRejected(_ envelope: Envelope) -> [Output] {
        guard options.keyedLink, phase.phase == .waiting || phase.phase == .inCall,
            envelope.messageType == .offer || envelope.messageType == .answer
        else { return [] }
        if let epoch = envelope.epoch, epoch < peerEpoch { return [] }
        if answersAnOfferThePeerNeverSaw(envelope) { return [] }
        return phaseEvent(.intercepted(tellPeer: true))
    }

    /// Our offer is still kept for after the rejoin, so the peer has not seen it: an answer now can only answer an
    /// earlier offer of ours (rolled back since), must not be applied to this one, and proves nothing either way.
    private func answersAnOfferThePeerNeverSaw(_ envelope: Envelope) -> Bool {
        envelope.messageType == .answer && outbox.contains { $0.envelope.messageType == .offer }
    }

    /// A node's name as a `via` may carry it: 1–64 of `A–Z a–z 0–9 . _ ~ -` (a `--node-id` never needs more, and it
    /// goes into URLs as it is). Anything else is no via at all, in the browser engine too.
    public static func acceptableVia(_ name: String) -> String? {
        guard (1...64).contains(name.utf8.count) else { return nil }
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~") || byte == UInt8(ascii: "-")
        }
        return allowed ? name : nil
    }

    /// Only a new call leaves `intercepted`: nothing late of the ended one (an answer WebRTC finished applying, a
    /// membership change) may take the interception back.
    private mutating func verificationChanged(_ value: Verification, newCall: Bool = false) -> [Output] {
        guard value != verification, verification != .intercepted || newCall else { return [] }
        verification = value
        return [.emit(.verification(value))]
    }

    private mutating func didJoin(_ joined: JoinedPayload, cid newCid: String?) -> [Output] {
        // Epochs may have restarted (server restart) or this is a new seat: a new peer session base.
        let newSession = joined.reconnect == .recovered || newCid != cid
        cid = newCid
        reconnectToken = joined.reconnectToken
        joiningWithKeptSeat = false
        rejoinPending = false
        var out = joinEvent(.acknowledged) + [scheduleTokenRefresh(ttlMs: joined.reconnectTokenTTLMs)]
        out += apply(RoomStatePayload(hostCid: joined.hostCid, participants: joined.participants, epoch: joined.epoch), fresh: newSession)
        if phase.phase == .joining {
            out += phaseEvent(.joined(participants: joined.participants.count))
        } else {
            // A rejoin's acknowledgement is a membership view too: the phase follows it at once, not at the
            // `room_state` that comes next. Otherwise, between the two, a call alone in a room rebuilt after a server
            // restart reads as in the call and connected.
            out += phaseEvent(.roomState(participants: joined.participants.count))
        }
        out += turnEvent(.signaling(up: true)) + negotiationEvent(.signaling(up: true))
        out += statusEvent(.signaling(up: true))
        out += turnEvent(.token(joined.turnToken, ttlMs: joined.turnTokenTTLMs))
        out += flushOutbox()
        // Said after every join, fresh, reattached or recovered: a restarted server has forgotten it, and the
        // peer's room_state repeats it from the server.
        out.append(.send(mediaStateEnvelope()))
        return out
    }

    private mutating func localMediaChanged(_ state: MediaState) -> [Output] {
        guard state != localMedia else { return [] }
        localMedia = state
        // Not queued while signaling is down or a rejoin is unanswered: the join's acknowledgement sends the latest.
        guard isSignalingUp, !rejoinPending, cid != nil, phase.phase == .waiting || phase.phase == .inCall else { return [] }
        return [.send(mediaStateEnvelope())]
    }

    private func mediaStateEnvelope() -> Envelope {
        Envelope(.mediaState, rid: roomId, payload: (try? JSONValue(encoding: localMedia)) ?? [:])
    }

    private mutating func remoteMediaLearned(_ state: MediaState?) -> [Output] {
        guard state != remoteMedia else { return [] }
        remoteMedia = state
        return [.emit(.remoteMedia(state))] + watchdogEvent(.peerSends(state.map { $0.audio || $0.video || $0.screen } ?? false))
    }

    private func scheduleTokenRefresh(ttlMs: Int64) -> Output {
        .timer(.schedule(.reconnectTokenRefresh, afterMs: Int64(Double(ttlMs) * ResilienceConstants.RECONNECT_TOKEN_REFRESH_RATIO)))
    }

    private mutating func roomState(_ state: RoomStatePayload) -> [Output] {
        var out = apply(state, fresh: false)
        if awaitingRoomStateAfterReconnect {
            awaitingRoomStateAfterReconnect = false
            out += negotiationEvent(.roomStateAfterReconnect)
        }
        out += phaseEvent(.roomState(participants: state.participants.count))
        return out
    }

    /// Takes in a membership view; `fresh` when the server's epochs may have restarted.
    private mutating func apply(_ state: RoomStatePayload, fresh: Bool) -> [Output] {
        participants = state.participants
        hostCid = state.hostCid
        epoch = state.epoch
        let peer = state.participants.first { $0.cid != cid }
        let wasSuspended = peerSuspended
        peerSuspended = peer?.connectionStatus == .suspended
        let newPeer = peer?.cid != peerCid
        let returning = newPeer && peer != nil && peer?.cid == lastPeerCid
        if let peer { lastPeerCid = peer.cid }
        if newPeer || fresh {
            peerCid = peer?.cid
            peerEpoch = state.epoch
        }
        // The server repeats the peer's last media state; a server that does not know it (restarted) leaves what
        // we know of the same peer alone. Another peer (or none) starts from what the server says. Told before the
        // participants, so an app never shows a new peer with the previous one's state.
        var out: [Output] = []
        if let media = peer?.media {
            out += remoteMediaLearned(media)
        } else if newPeer {
            out += remoteMediaLearned(nil)
        }
        // Another peer, or none: nothing of it is proven yet (its descriptions are checked anew).
        if newPeer { out += verificationChanged(.unverified) }
        out.append(.emit(.participants(state.participants, hostCid: state.hostCid, myCid: cid ?? "")))
        // The peer connection must exist before the first offer or answer is made.
        if peer != nil { out.append(.engine(.ensurePeerConnection)) }
        out += negotiationEvent(.peer(present: peer != nil, isHost: state.hostCid == cid, peerEpoch: peerEpoch, returning: returning))
        // Away or back: while it is away its media's loss is not ours to recover (no restart offered to nobody, no
        // escalation); back, the negotiation makes the restart owed or media needs. Leaving altogether is told by
        // the peer's absence (the negotiation and the call's end reset it).
        if peer != nil, peerSuspended != wasSuspended {
            out += negotiationEvent(.peerSuspended(peerSuspended)) + statusEvent(.peerSuspended(peerSuspended))
        }
        return out
    }

    private mutating func serverError(_ error: ErrorPayload) -> [Output] {
        switch (phase.phase, error.code) {
        case (.joining, .invalidRoomId), (.joining, .roomFull), (.joining, .roomEnded):
            return phaseEvent(.joinRefused(error.code, error.message))
        case (.waiting, .roomEnded), (.inCall, .roomEnded):
            return phaseEvent(.roomEnded)  // the server confirms the room is gone
        case (_, .invalidReconnectToken):
            // The seat cannot be proven any more: join fresh.
            reconnectToken = nil
            cid = nil
            guard isSignalingUp, let roomId else { return [] }
            return [.send(joinEnvelope(snapshotId: nil, pushEndpoint: nil, rid: roomId))]
        case (.waiting, .roomFull), (.inCall, .roomFull):
            return phaseEvent(.roomEnded)  // our seat is gone and someone else took it
        default:
            // A rejoin refused for a reason that is not about the seat: relays would wait for an ack that never comes.
            // Worth retrying (rate limited, an internal error): drop this transport and come back after the backoff,
            // which sends the rejoin again. Never going to work (the room id is no longer valid, the protocol or the
            // message refused): the room is gone for us, end the call rather than knock every 5 s forever.
            guard rejoinPending else { return [] }
            guard error.retryable else { return phaseEvent(.roomEnded) }
            return [.closeTransport] + linkEvent(.closed(.closedByServer))
        }
    }

    private mutating func teardown(_ kind: CallPhaseMachine.Teardown) -> [Output] {
        var out: [Output] = kind == .replaced ? [.emit(.replaced(seat))] : []
        var leaves = kind == .leave || kind == .endRoom
        if case .intercepted(let tellPeer) = kind {
            leaves = true
            // Shown before anything else, and kept after the reset: the app must not go back to a normal screen.
            out += verificationChanged(.intercepted)
            // The runtime signs it; the peer ends its call too instead of waiting for an answer that never comes.
            if tellPeer, isSignalingUp { out.append(.send(Envelope(.verifyFailed, rid: roomId))) }
        }
        if leaves {
            // Only the host can end the room; anyone else ending the call leaves it.
            let ends = kind == .endRoom && hostCid == cid
            if isSignalingUp {
                out.append(.send(Envelope(ends ? .endRoom : .leave)))
            } else if let roomId, let cid, let reconnectToken {
                // Over HTTP the host's goodbye still ends the call for both (`end`).
                out.append(.httpLeave(LeaveRequest(rid: roomId, cid: cid, reconnectToken: reconnectToken, end: ends ? true : nil)))
            }
        }
        // `.teardown` closes the transport itself, after the goodbye above has been sent.
        out += joinEvent(.cancel) + turnEvent(.stop) + linkEvent(.stop).filter { $0 != .closeTransport }
        out += TimerID.allCases.map { .timer(.cancel($0)) }
        // Media stops first (through the WebRTC queue, behind what is already queued); then the runtime flushes
        // the goodbye and closes signaling.
        out += [.engine(.close), .teardown]
        out += remoteMediaLearned(nil)  // nobody on the other side any more: the app is told, not left showing it
        resetSession()
        return out
    }

    /// Fresh machines and no session: the next call starts from nothing.
    private mutating func resetSession() {
        outbox.removeAll()
        joiningWithKeptSeat = false
        reconnectToken = nil
        via = nil
        cid = nil
        hostCid = nil
        participants = []
        peerCid = nil
        lastPeerCid = nil
        peerSuspended = false  // the machines are made anew: the next call's peer is told from scratch
        remoteMedia = nil
        rejoinPending = false
        awaitingRoomStateAfterReconnect = false
        status = ConnectionStatusMachine()
        link = SignalingLinkMachine(webSocketAvailable: !options.sseOnly, jitterSeed: options.jitterSeed)
        join = JoinMachine()
        negotiation = NegotiationMachine(restartsOnlyAsHost: options.restartsOnlyAsHost)
        trickle = TrickleIceMachine()
        turn = TurnMachine()
        watchdog = MediaWatchdogMachine()
    }

    static func health(_ state: NegotiationMachine.IceState) -> ConnectionStatusMachine.IceHealth {
        switch state {
        case .connected, .completed: .connected
        case .new, .checking: .pending
        case .disconnected: .disconnected
        case .failed, .closed: .failed
        }
    }
}

extension CallEngine.Input {
    var isFromWebRtc: Bool {
        switch self {
        case .localDescriptionReady, .localDescriptionFailed, .remoteDescriptionApplied, .remoteDescriptionFailed, .rollbackFailed,
            .localCandidate,
            .gatheringComplete, .iceStateChanged, .connectionStateChanged, .signalingStateChanged, .mediaSampled:
            true
        default:
            false
        }
    }
}
