import AsyncHTTPClient
import DuetProtocol
import DuetTransport
import Foundation
import Logging
import NIOCore

/// A call: the runtime around `CallEngine`. It feeds the engine every input (app commands, signaling,
/// WebRTC and network events, timers on the injected clock) one at a time and performs the outputs.
///
/// ```swift
/// let call = DuetCall(configuration: .init(server: "https://duet.example/"), engine: myWebRtc)
/// Task { for await event in call.events { print(event) } }
/// await call.join(roomId: "…")
/// ```
public actor DuetCall {
    public struct Configuration: Sendable {
        /// The Duet server, e.g. `http://127.0.0.1:8080/`.
        public var server: String
        /// ICE servers used when TURN credentials cannot be fetched (no public defaults).
        public var fallbackIceServers: [IceServer] = []
        public var relayOnly = false
        public var engine = CallEngine.Options()
        /// How often `.stats` is emitted while in a call; nil turns it off.
        public var statsInterval: Duration? = .seconds(1)
        /// The call link's key (`CallLink.key`): with it the call is verified (descriptions signed and checked,
        /// `engine.keyedLink` is set from it); without it the call works as "not verified".
        public var linkKey: LinkKey?
        /// This device's id (issue 31): every join carries it and `joined` answers with `memberToken`, with which
        /// `RingListener` hears this call's rings later.
        public var deviceId: String?
        /// Join without the seed's join alert: this call is about to ring (`ring(callId:callerName:)`).
        public var quietJoin = false
        public init(server: String) { self.server = server.hasSuffix("/") ? server : server + "/" }
    }

    /// What the caller sees of its ring (issue 31): `state` is `ringing`, then `accepted`, `declined`, `no_answer`,
    /// `cancelled` or `unreachable`; `devices`: how many of the other person's devices it reached.
    public struct RingUpdate: Sendable, Equatable {
        public var callId: String
        public var state: String
        public var devices: Int
    }

    /// The caller's ring, as the server says it (`ring_state`), in order.
    public nonisolated let ringUpdates: AsyncStream<RingUpdate>
    private let ringSink: AsyncStream<RingUpdate>.Continuation
    /// The ring this call made: resent after a restarted server recovered the seat (it forgot the ring).
    private var ring: (callId: String, caller: JSONValue, state: String, answers: RingAnswerCommitments?)?
    /// This device's member token in this call (from `joined`, when `deviceId` was set).
    public private(set) var memberToken: String?

    /// Everything that happens to the call, for the app.
    public nonisolated let events: AsyncStream<CallEvent>
    private let eventSink: AsyncStream<CallEvent>.Continuation
    private var engine: CallEngine
    private let configuration: Configuration
    private let webRtc: any WebRtcEngine
    private let clock: any Clock<Duration>
    private let logger: Logger
    private let http: HTTPClient

    private var connection: (any SignalingConnection)?
    private var connectionGeneration = 0
    /// The `via` of the last connection opened (`CallEngine.via`): its HTTP requests for the room name it too.
    private var linkVia: String?
    private var sendQueue: AsyncStream<Envelope>.Continuation?
    private var sendTask: Task<Void, Never>?
    private var sseSid = SessionIdFormat.random()
    private var timers: [TimerID: (generation: Int, task: Task<Void, Never>)] = [:]
    private var timerGeneration = 0
    /// Every call into WebRTC goes through this queue, one at a time in the engine's order — teardown's close too.
    private let webRtcQueue: AsyncStream<WebRtcWork>.Continuation
    private var fetchedIceServers: [IceServer] = []
    /// The TURN fetch in flight: the first peer connection waits for it (bounded by the fetch's own timeout) so
    /// that its first gathering already has relay candidates, as the browser runtime does.
    private var turnFetch: Task<Void, Never>?
    private var hasPeerConnection = false
    /// A media watchdog reading is on its way (`sampleMedia`).
    private var samplingMedia = false
    /// False from teardown until the next join: queued commands must not revive a closed connection.
    private var acceptingWebRtcCommands = true
    private var background: [Task<Void, Never>] = []

    public private(set) var phase: CallPhase = .idle
    public private(set) var connectionStatus: ConnectionStatus = .connected
    public private(set) var transport: SignalingTransport?
    /// This call's quality so far (`.quality` readings folded, gaps and reconnects counted); starts afresh with
    /// each join. `QualityTracker` holds the rule of what counts (the browser's is the same).
    public var qualitySummary: QualitySummary { quality.summary }
    private var quality = QualityTracker()
    /// Signs what we send and checks what we get on a keyed link (the engine only learns the verdicts).
    private var signing: SignedSignaling
    private var safety = SafetyCodeSource()
    /// For engines that do not refuse a wrong DTLS certificate themselves (`WebRtcEngine.checksRemoteCertificates`):
    /// the applied remote description whose certificate the handshake has yet to be held to
    /// (`WebRtcEngine.remoteCertificatesDER`), on every link.
    private var certificateToCheck: (kind: NegotiationMachine.DescriptionKind, sdp: String)?
    /// The engine said `verified` while `certificateToCheck` was pending: said once the handshake matches.
    private var verifiedHeld = false
    /// The code both people can compare (`CallEvent.safetyCode`), nil while unknown.
    public var safetyCode: String? { safety.code }
    /// What the app has been told (`CallEvent.verification`): the engine's verdict, but `verified` only once the
    /// handshake's certificate has been checked where the engine does not check it.
    public private(set) var verification = Verification.unverified
    /// Milliseconds on the injected clock since this call object was made: the stats polls' monotonic time.
    private let elapsedMs: @Sendable () -> Double

    public init(
        configuration: Configuration, engine webRtc: any WebRtcEngine, network: any NetworkMonitor = NoNetworkMonitor(),
        clock: any Clock<Duration> = ContinuousClock(), http: HTTPClient = .shared, logger: Logger = Logger(label: "duet.call")
    ) {
        self.configuration = configuration
        (ringUpdates, ringSink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        var options = configuration.engine
        // Clients reconnecting after a server restart must spread out: backoff jitter is on unless the caller
        // pinned a seed (the pure machines default to none, so tests stay exact).
        if options.jitterSeed == nil { options.jitterSeed = UInt64.random(in: .min ... .max) }
        options.keyedLink = configuration.linkKey != nil
        self.signing = SignedSignaling(key: configuration.linkKey)
        self.engine = CallEngine(options: options)
        self.webRtc = webRtc
        self.clock = clock
        self.elapsedMs = Self.stopwatch(clock)
        self.http = http
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
        let (commands, webRtcQueue) = AsyncStream<WebRtcWork>.makeStream()
        self.webRtcQueue = webRtcQueue
        self.webRtcCommands = commands
        self.network = network
    }

    /// A command for WebRTC, or a barrier that resumes once everything queued before it has run.
    enum WebRtcWork: Sendable {
        case command(EngineCommand)
        case barrier(CheckedContinuation<Void, Never>)
    }

    private let webRtcCommands: AsyncStream<WebRtcWork>
    private let network: any NetworkMonitor
    private var started = false

    /// The loops that carry WebRTC commands and events and network events; started with the first command.
    private func startIfNeeded() {
        guard !started else { return }
        started = true
        let commands = webRtcCommands
        let webRtc = self.webRtc
        let network = self.network
        // WebRTC calls run one after another, in the order the engine asked for them.
        background.append(
            Task { [weak self] in
                for await work in commands {
                    switch work {
                    case .command(let command): await self?.perform(command)
                    case .barrier(let continuation): continuation.resume()
                    }
                }
            })
        background.append(
            Task { [weak self] in
                for await event in webRtc.events { await self?.webRtcEvent(event) }
            })
        background.append(
            Task { [weak self] in
                for await event in network.events { await self?.networkEvent(event) }
            })
        if let interval = configuration.statsInterval {
            let clock = self.clock
            background.append(
                Task { [weak self] in
                    while !Task.isCancelled {
                        do { try await clock.sleep(for: interval) } catch { return }
                        await self?.emitStats()
                    }
                })
        }
    }

    // MARK: - App commands

    /// Creates a room and joins it.
    // MARK: ringing (issue 31): outside the engine, which never hears of it; the server holds the ring's state.

    /// Rings the other person's devices once seated (and alone): `callerName` goes sealed with the link's key.
    public func ring(callId: String, callerName: String) throws {
        guard let rid = engine.roomId else { return }
        // With a key, answers are proven: their secrets go sealed, their hashes to the server.
        let answers = configuration.linkKey.map { _ in CallerSeal.AnswerSecrets.random() }
        let caller = try CallerSeal.seal(name: callerName, rid: rid, callId: callId, key: configuration.linkKey, answers: answers)
        ring = (callId, caller, "ringing", answers?.commitments)
        sendRing()
    }

    public func cancelRing() {
        guard let ring, ring.state == "ringing", let rid = engine.roomId,
            let envelope = try? Envelope(.ringCancel, rid: rid, payload: JSONValue(encoding: RingCancelPayload(callId: ring.callId)))
        else { return }
        sendQueue?.yield(envelope)
    }

    private func sendRing() {
        guard let ring, let rid = engine.roomId,
            let envelope = try? Envelope(
                .ring, rid: rid, payload: JSONValue(encoding: RingPayload(callId: ring.callId, caller: ring.caller, answers: ring.answers)))
        else { return }
        sendQueue?.yield(envelope)
    }

    private func observeRinging(_ envelope: Envelope) {
        switch envelope.messageType {
        case .joined?:
            if let token = envelope.payload["memberToken"]?.stringValue { memberToken = token }
            // A restarted server forgot the ring: said again with its call id (the server re-establishes it).
            if envelope.payload["reconnect"]?.stringValue == "recovered", ring?.state == "ringing" { sendRing() }
        case .ringState?:
            guard let update = try? envelope.payload.decode(RingStatePayload.self), update.callId == ring?.callId else { return }
            ring?.state = update.state
            ringSink.yield(RingUpdate(callId: update.callId, state: update.state, devices: update.devices))
        default:
            break
        }
    }

    public func startNewCall() { feed(.startNewCall) }
    public func join(roomId: String) { feed(.joinRoom(roomId)) }
    /// Leaves the call (the room stays for the other person).
    public func leave() { feed(.leave) }
    /// Ends the room for everyone (host only; otherwise the server refuses and the call just leaves).
    public func end() { feed(.end) }
    public func dismissError() { feed(.dismissError) }
    /// Tells the other participant this side's microphone, camera and screen state (again after every rejoin).
    public func setLocalMedia(_ state: MediaState) { feed(.localMediaChanged(state)) }
    public var remoteMedia: MediaState? { engine.remoteMedia }

    public var roomId: String? { engine.roomId }
    public var cid: String? { engine.cid }
    public var hostCid: String? { engine.hostCid }
    public var participants: [ParticipantInfo] { engine.participants }

    /// Stops every task of this call object (after `leave()`, or when discarding it). What was already queued to send
    /// goes out first (bounded by `GOODBYE_FLUSH_TIMEOUT_MS`): a `leave()` right before it still reaches the server,
    /// even when this runs before the teardown `leave()` started.
    public func shutdown() async {
        for (_, timer) in timers { timer.task.cancel() }
        timers.removeAll()
        await dropConnection(afterPendingSends: true)
        webRtcQueue.finish()
        for task in background { task.cancel() }
        eventSink.finish()
        ringSink.finish()
    }

    /// Timers still scheduled (a finished call has none).
    public var scheduledTimers: Set<TimerID> { Set(timers.keys) }

    /// Kills the signaling transport without a goodbye, as a dying network would (drills and tests).
    public func dropSignalingConnection() {
        switch connection {
        case let ws as WebSocketSignalingConnection: ws.abort()
        case let sse as SSESignalingConnection: Task { await sse.abort() }
        default: break
        }
    }

    // MARK: - The loop

    private func feed(_ input: CallEngine.Input) {
        startIfNeeded()
        for output in engine.handle(input) { perform(output) }
    }

    private func perform(_ output: CallEngine.Output) {
        switch output {
        case .openTransport(let kind, let via):
            linkVia = via
            open(kind, via: via)
        case .closeTransport:
            // Detach now, so that an `openTransport` in the same batch is not mistaken for stale.
            let detached = detachConnection()
            Task { await detached.connection?.close() }
        case .send(var envelope):
            if envelope.messageType == .join, case .object(var payload) = envelope.payload {
                if let device = configuration.deviceId { payload["deviceId"] = .string(device) }
                if configuration.quietJoin { payload["alert"] = false }
                envelope.payload = .object(payload)
            }
            if let signed = signing.signed(envelope) {
                sendQueue?.yield(signed)
            } else {
                logger.warning("a \(envelope.type) could not be signed (nobody to send it to yet): not sent")
            }
        case .createRoomId: Task { await createRoomId() }
        case .fetchTurnCredentials(let token):
            let route = SignalingURL.query(roomId: engine.roomId, via: linkVia, first: "&")
            turnFetch = Task { await fetchTurn(token, route: route) }
        case .prepareSnapshot: feed(.snapshotReady(nil))
        case .requestPushEndpoint: feed(.pushEndpointReady(nil))
        case .httpLeave(let request):
            let via = linkVia
            Task { await httpLeave(request, via: via) }
        case .engine(let command): webRtcQueue.yield(.command(command))
        case .sampleMedia:
            // One reading at a time: a WebRTC stack slow to answer (webrtcbin blocks a thread per call) is skipped, not
            // piled up, and readings never come back out of order.
            guard !samplingMedia else { break }
            samplingMedia = true
            Task { await sampleMedia() }
        case .timer(let command): timer(command)
        case .emit(let event): emit(event)
        case .teardown:
            acceptingWebRtcCommands = false
            Task {
                await dropConnection(afterPendingSends: true)
                // The engine queued `.close` before `.teardown`: once the queue is past it, the peer connection is
                // closed, and no command can touch it after (they are refused until the next join). Bounded: a request
                // WebRTC never answers would hold the queue, and only close() itself fails it — so close() then
                // (closing twice does nothing).
                let queue = webRtcQueue
                await awaitAtMost(.milliseconds(ResilienceConstants.GOODBYE_FLUSH_TIMEOUT_MS)) {
                    await withCheckedContinuation { continuation in
                        if case .terminated = queue.yield(.barrier(continuation)) { continuation.resume() }
                    }
                }
                await webRtc.close()
                hasPeerConnection = false
                feed(.teardownFinished)
            }
        }
    }

    private func emit(_ event: CallEvent) {
        var qualityOutput: QualityTracker.Output?
        switch event {
        case .verification(let value):
            // Not before the handshake is checked: a server that relayed the signed description honestly but led ICE
            // to itself would otherwise be shown as a verified call until the check caught it.
            if value == .verified, certificateToCheck != nil {
                verifiedHeld = true
                return
            }
            verifiedHeld = false
            guard value != verification else { return }  // still what the app was told (a held `verified` undone)
            verification = value
        case .phase(let value):
            phase = value
            if value == .joining { acceptingWebRtcCommands = true }
            // The call's connection is gone with it: the next call's code comes from its own descriptions.
            if value == .ending { noteSafety(.connectionGone) }
            qualityOutput = quality.handle(.phase(value))
        case .connectionStatus(let value):
            _ = quality.handle(.connectionStatus(value))
            connectionStatus = value
        case .transport(let value): transport = value
        default: break
        }
        let peerBefore = signing.peerCid
        signing.note(event)
        logger.debug("event", metadata: ["event": "\(event)"])
        eventSink.yield(event)
        if let qualityOutput { emitQuality(qualityOutput) }  // after the phase that caused it
        if case .room(let id) = event { noteSafety(.room(id)) }
        if case .participants = event, signing.peerCid != peerBefore { noteSafety(.peerGone) }
    }

    private func noteSafety(_ input: SafetyCodeSource.Input) {
        if case .some(let code) = safety.handle(input) { emit(.safetyCode(code)) }
    }

    private func emitQuality(_ output: QualityTracker.Output) {
        switch output {
        case .reading(let reading): emit(.quality(reading))
        case .unknown: emit(.qualityUnknown)
        }
    }

    // MARK: - Timers on the injected clock

    private func timer(_ command: TimerCommand) {
        switch command {
        case .schedule(let id, let afterMs):
            timers[id]?.task.cancel()
            timerGeneration += 1
            let generation = timerGeneration
            let clock = self.clock
            let task = Task { [weak self] in
                do { try await clock.sleep(for: .milliseconds(afterMs)) } catch { return }
                await self?.timerFired(id, generation: generation)
            }
            timers[id] = (generation, task)
        case .cancel(let id):
            timers.removeValue(forKey: id)?.task.cancel()
        }
    }

    private func timerFired(_ id: TimerID, generation: Int) {
        guard timers[id]?.generation == generation else { return }  // cancelled or rescheduled meanwhile
        timers[id] = nil
        feed(.timerFired(id))
    }

    // MARK: - Signaling transport

    private func open(_ kind: SignalingTransport, via: String?) {
        connectionGeneration += 1
        let generation = connectionGeneration
        let server = configuration.server
        let sid = sseSid
        // The room in the URL (?rid=): a proxy in front of several nodes routes the call's connections to one node by it.
        let roomId = engine.roomId
        Task {
            do {
                let connection: any SignalingConnection
                let timeout = Duration.milliseconds(ResilienceConstants.CONNECT_TIMEOUT_MS + 1_000)  // the engine's own timer decides
                switch kind {
                case .ws:
                    let url = SignalingURL.webSocket(server: server, roomId: roomId, via: via)
                    connection = try await WebSocketSignalingConnection.connect(url: url, timeout: timeout)
                case .sse:
                    connection = try await SSESignalingConnection.connect(
                        baseURL: server, sid: sid, roomId: roomId, via: via, timeout: timeout,
                        silenceTimeout: .milliseconds(ResilienceConstants.SSE_SILENCE_TIMEOUT_MS), http: http)
                }
                await opened(connection, kind: kind, generation: generation)
            } catch {
                openFailed(kind, error: error, generation: generation)
            }
        }
    }

    private func opened(_ newConnection: any SignalingConnection, kind: SignalingTransport, generation: Int) async {
        guard generation == connectionGeneration else {
            await newConnection.close()  // the engine gave up on this attempt already
            return
        }
        connection = newConnection
        let (queue, sink) = AsyncStream<Envelope>.makeStream()
        sendQueue = sink
        sendTask = Task { [weak self] in
            for await envelope in queue {
                do {
                    try await newConnection.send(envelope)
                } catch {
                    // A lost POST (or 401/410) means the link is not usable: treat it as closed.
                    await self?.sendFailed(generation: generation, error: error)
                    return
                }
            }
        }
        Task { [weak self] in
            for await event in newConnection.events {
                await self?.signalingEvent(event, generation: generation)
            }
        }
        feed(.transportOpened(kind))
    }

    private func sendFailed(generation: Int, error: any Error) async {
        guard generation == connectionGeneration else { return }
        logger.debug("send failed, dropping the transport", metadata: ["error": "\(error)"])
        // 401: this sid's stream is not ours to resume (someone else's seat is bound to it); 410: the server
        // forgot it. Either way the next SSE stream needs a new sid, or every reconnect fails the same way.
        if case .rejected(let status)? = error as? SignalingSendError, status == 401 || status == 410 { sseSid = SessionIdFormat.random() }
        let (current, _) = detachConnection()
        feed(.transportClosed(.networkError))
        await current?.close()
    }

    private func openFailed(_ kind: SignalingTransport, error: any Error, generation: Int) {
        guard generation == connectionGeneration else { return }
        let failure: SignalingLinkMachine.Failure =
            switch error as? SignalingConnectError {
            case .timedOut?: .timeout
            case .refused?: .unsupported
            default: .error
            }
        logger.debug("transport open failed", metadata: ["transport": "\(kind)", "error": "\(error)"])
        feed(.transportOpenFailed(kind, failure))
    }

    private func signalingEvent(_ event: SignalingEvent, generation: Int) {
        guard generation == connectionGeneration else { return }
        switch event {
        case .message(let envelope):
            observeRinging(envelope)
            switch signing.check(envelope) {
            case .pass: feed(.message(envelope))
            case .rejected:
                logger.warning("a description failed its check against the link's key", metadata: ["type": "\(envelope.type)"])
                feed(.descriptionRejected(envelope))
            case .dropped:
                logger.warning("a verify_failed nobody with the link's key wrote was ignored")
            }
        case .undecodable: break
        case .closed(let reason):
            connection = nil
            sendQueue?.finish()
            sendQueue = nil
            // 4001: a newer connection proved this seat; reconnecting would take it back from under it.
            if case .byServer(code: SignalingCloseReason.replacedCode?, _) = reason { return feed(.replaced) }
            let mapped: SignalingLinkMachine.CloseReason =
                switch reason {
                case .byServer: .closedByServer
                default: .networkError
                }
            feed(.transportClosed(mapped))
        }
    }

    private func detachConnection() -> (connection: (any SignalingConnection)?, sending: Task<Void, Never>?) {
        connectionGeneration += 1
        let detached = (connection, sendTask)
        connection = nil
        sendTask = nil
        sendQueue?.finish()
        sendQueue = nil
        return detached
    }

    private func dropConnection(afterPendingSends: Bool = false) async {
        let (current, sending) = detachConnection()
        if afterPendingSends, let sending {
            // `leave` / `end_room` must reach the server before the socket closes (bounded wait).
            await awaitAtMost(.milliseconds(ResilienceConstants.GOODBYE_FLUSH_TIMEOUT_MS)) { await sending.value }
        }
        sending?.cancel()
        if let current { await awaitAtMost(.milliseconds(ResilienceConstants.GOODBYE_FLUSH_TIMEOUT_MS)) { await current.close() } }
    }

    // MARK: - WebRTC

    private func perform(_ command: EngineCommand) async {
        guard acceptingWebRtcCommands || command == .close else { return }
        do {
            switch command {
            case .ensurePeerConnection:
                if !hasPeerConnection, let turnFetch {
                    await awaitAtMost(.milliseconds(ResilienceConstants.TURN_FETCH_TIMEOUT_MS)) { await turnFetch.value }
                }
                guard acceptingWebRtcCommands else { return }  // the call ended while the TURN fetch was out
                try await webRtc.ensurePeerConnection(rtcConfiguration())
                hasPeerConnection = true
            case .renewPeerConnection:
                noteSafety(.connectionGone)
                certificateToCheck = nil  // the new connection's handshake is held to the next remote description
                await webRtc.close()
                try await webRtc.ensurePeerConnection(rtcConfiguration())
                hasPeerConnection = true
            case .createOffer(let restart):
                let sdp = try await webRtc.createOffer(iceRestart: restart)
                noteSafety(.localDescription(sdp: sdp))
                feed(.localDescriptionReady(.offer, sdp: sdp))
            case .createAnswer:
                let sdp = try await webRtc.createAnswer()
                noteSafety(.localDescription(sdp: sdp))
                feed(.localDescriptionReady(.answer, sdp: sdp))
            case .setRemoteDescription(let kind, let sdp):
                try await webRtc.setRemoteDescription(kind, sdp: sdp)
                if webRtc.checksRemoteCertificates {
                    noteSafety(.remoteDescriptionApplied(sdp: sdp))
                } else {
                    // Its fingerprints count (the code, `verified`) once the handshake is known to match them.
                    certificateToCheck = (kind, sdp)
                }
                feed(.remoteDescriptionApplied(kind))
            case .rollback:
                try await webRtc.rollback()
            case .addRemoteCandidates(let candidates):
                for candidate in candidates { try await webRtc.addRemoteCandidate(candidate) }
            case .applyFetchedIceServers, .applyFallbackIceServers:
                if command == .applyFallbackIceServers { fetchedIceServers = [] }
                try await webRtc.setConfiguration(rtcConfiguration())
            case .close:
                await webRtc.close()
                hasPeerConnection = false
            }
        } catch {
            logger.warning("WebRTC command failed", metadata: ["command": "\(command)", "error": "\(error)"])
            if case .createOffer = command { feed(.localDescriptionFailed) }
            if case .createAnswer = command { feed(.localDescriptionFailed) }
            if case .setRemoteDescription(let kind, _) = command { feed(.remoteDescriptionFailed(kind)) }
            if case .rollback = command { feed(.rollbackFailed) }
        }
    }

    /// The media watchdog's reading (`MediaWatchdogMachine`): inbound RTP packets, audio and video.
    private func sampleMedia() async {
        let stats = await webRtc.stats()
        samplingMedia = false
        feed(.mediaSampled(packets: stats.map { Int64($0.audioPacketsReceived + ($0.quality?.videoPacketsReceived ?? 0)) }))
    }

    private func emitStats() async {
        guard phase == .inCall else { return }
        let stats = await webRtc.stats()
        guard phase == .inCall else { return }  // left while the engine answered: nothing to count
        if let stats { emit(.stats(stats)) }
        await checkCertificate()
        // No report (no peer connection, or none from the engine) is a poll too: the tracker counts the gap.
        if let output = quality.handle(.polled(atMs: elapsedMs(), sample: stats?.quality)) { emitQuality(output) }
    }

    /// The DTLS handshake must have been with the certificate the applied description names: a server that relayed
    /// the description honestly but raced its own candidates and certificate in would otherwise sit in the middle
    /// of an engine that accepts any certificate (webrtcbin). On a keyed link a mismatch ends the call as
    /// intercepted; without a key the safety code is made over the certificate the handshake presented, so the two
    /// people read different codes. Only a match lets the description's fingerprints count and `verified` be said.
    private func checkCertificate() async {
        guard let pending = certificateToCheck else { return }
        let ders = await webRtc.remoteCertificatesDER()
        guard !ders.isEmpty else {
            logger.debug("the peer's DTLS certificate cannot be read yet")
            return
        }
        guard let current = certificateToCheck, current.sdp == pending.sdp, phase == .inCall else { return }
        certificateToCheck = nil
        let fingerprints = FingerprintAuth.fingerprints(inSDP: pending.sdp)
        let keyed = configuration.linkKey != nil
        // Every transport's handshake must have been with a certificate the description names.
        if ders.allSatisfy({ CertificateFingerprint.matches(der: $0, fingerprints: fingerprints) }) {
            logger.info(
                keyed
                    ? "the peer's DTLS certificate is the one its verified description names"
                    : "the peer's DTLS certificate is the one its description names")
            noteSafety(.remoteDescriptionApplied(sdp: pending.sdp))
            if verifiedHeld, engine.verification == .verified { emit(.verification(.verified)) }
        } else if keyed {
            logger.warning("the peer's DTLS certificate is not the one its verified description names")
            feed(.certificateMismatch)
        } else {
            logger.warning(
                "the peer's DTLS certificate is not the one its description names: someone may be in the middle, and the safety code will not match the other side's"
            )
            let algorithms = Set(fingerprints.compactMap { $0.split(separator: " ").first.map(String.init) })
            let presented = ders.flatMap { der in algorithms.compactMap { CertificateFingerprint.fingerprint(of: der, algorithm: $0) } }
            // No algorithm we can compute: the presented certificate's SHA-256 still differs from anything named.
            noteSafety(
                .handshakeCertificate(
                    fingerprints: presented.isEmpty
                        ? ders.compactMap { CertificateFingerprint.fingerprint(of: $0, algorithm: "sha-256") } : presented))
        }
    }

    /// A monotonic millisecond counter on `clock` (opened from the existential, whose instants cannot be
    /// subtracted as `any InstantProtocol`).
    private static func stopwatch<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Double {
        let start = clock.now
        return {
            let elapsed = start.duration(to: clock.now).components
            return Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
        }
    }

    private func rtcConfiguration() -> RtcConfiguration {
        RtcConfiguration(
            iceServers: fetchedIceServers.isEmpty ? configuration.fallbackIceServers : fetchedIceServers, relayOnly: configuration.relayOnly
        )
    }

    private func webRtcEvent(_ event: WebRtcEvent) async {
        switch event {
        case .localCandidate(let candidate): feed(.localCandidate(candidate))
        case .gatheringComplete: feed(.gatheringComplete)
        case .iceConnectionState(let state): feed(.iceStateChanged(state))
        case .connectionState(let state):
            feed(.connectionStateChanged(state))
            // The handshake is done: its certificate is checked now, not at the next stats poll, so a man in the
            // middle gets as little media as the engine can manage (the poll checks again if it was not ready).
            if state == .connected { await checkCertificate() }
        case .signalingState(let state): feed(.signalingStateChanged(state))
        }
    }

    private func networkEvent(_ event: NetworkEvent) {
        switch event {
        case .online: feed(.networkOnline)
        case .pathChanged: feed(.networkPathChanged)
        case .offline: feed(.networkOffline)
        }
    }

    // MARK: - HTTP

    private func createRoomId() async {
        do {
            let response = try await http.execute(
                HTTPClientRequest(url: configuration.server + "api/room-id"),
                timeout: .milliseconds(ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS))
            let body = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok else { throw TransportHTTPError(status: Int(response.status.code)) }
            let id = try JSONDecoder().decode(RoomIdResponse.self, from: Data(body.readableBytesView)).roomId
            feed(.roomIdCreated(id))
        } catch {
            feed(.roomIdFailed("\(error)"))
        }
    }

    /// `route`: `&rid=ROOM[&via=NODE]`, as on the signaling connections — the node that answers must be the one that
    /// holds the seat (it checks the token's seat), and in a cluster only the room in the URL sends it there.
    private func fetchTurn(_ token: String, route: String) async {
        do {
            var components = URLComponents()
            components.queryItems = [URLQueryItem(name: "token", value: token)]
            let url =
                configuration.server + "api/turn-credentials" + (components.percentEncodedQuery.map { "?" + $0 } ?? "") + route
            let response = try await http.execute(
                HTTPClientRequest(url: url), timeout: .milliseconds(ResilienceConstants.TURN_FETCH_TIMEOUT_MS))
            let body = try await response.body.collect(upTo: 64 * 1024)
            guard response.status == .ok else { throw TransportHTTPError(status: Int(response.status.code)) }
            let credentials = try JSONDecoder().decode(TurnCredentials.self, from: Data(body.readableBytesView))
            fetchedIceServers = credentials.iceServers
            feed(.turnCredentialsFetched(ttlSeconds: credentials.ttl))
        } catch {
            feed(.turnCredentialsFailed)
        }
    }

    private func httpLeave(_ request: LeaveRequest, via: String?) async {
        // ?rid= as on the signaling connections: a proxy in front of several nodes sends it to the node holding the room.
        var post = HTTPClientRequest(
            url: configuration.server + "api/leave" + SignalingURL.query(roomId: request.rid, via: via, first: "?"))
        post.method = .POST
        post.headers.add(name: "Content-Type", value: "application/json")
        post.body = .bytes(ByteBuffer(bytes: (try? JSONEncoder().encode(request)) ?? Data()))
        _ = try? await http.execute(post, timeout: .milliseconds(ResilienceConstants.HTTP_REQUEST_TIMEOUT_MS))
    }
}

struct TransportHTTPError: Error { var status: Int }
