import DuetProtocol

/// Offer/answer and ICE restart for one side of the call (000 §3–§8, scenarios 2–6).
///
/// - The host offers; the non-host offers itself after 4 s without an offer, at most twice.
/// - An offer unanswered for 8 s is rolled back and followed by an ICE restart.
/// - ICE restart: 2 s after `disconnected`, at once on `failed`, on a media stall (`MediaWatchdogMachine`, and again
///   at every cooldown's end while it lasts), on network online / path change and on request (the escalation's, or
///   the peer's `restart_request`); never within 10 s of the previous one (deferred, not dropped); remembered while
///   signaling is down and fired after the post-reconnect `room_state`.
/// - Glare: the non-host is polite (rolls its offer back and answers), the host ignores a crossing offer.
/// - Remote candidates wait in a buffer (≤ 50, oldest dropped) until a remote description is applied.
/// - A remote description older than one already applied from the same peer connection (`SDPOrigin`) is dropped:
///   signaling may reorder, and WebRTC must never go back to ICE credentials the peer has replaced. Origins that
///   echo one of our own session ids (webrtcbin copies the offer's) are never judged.
/// - A description from another peer connection than the one ours has taken descriptions from (the peer reloaded,
///   rejoined or restarted: a new session id) renews ours first. WebRTC redoes DTLS only when the fingerprint changes,
///   and a browser with a stable DTLS identity (issue 19) keeps its fingerprint across connections: a connection of
///   ours that already did DTLS with the old one would never answer the new one's handshake. Results of work asked of
///   the old connection that are still in flight are dropped, and a session the peer replaced is stale.
/// - A connection that refuses a remote description or a rollback is wedged (issue 32: Chromium refuses an answer
///   whose DTLS role Firefox flipped, then the rollback and every later description the same way): it is replaced, and
///   the new one offers afresh — a new session the peer's connection renews for if it took one of ours (it answered
///   our offer: then what it sends meanwhile is stale), so neither keeps a DTLS association the other gave up; one
///   that never took ours negotiates with the new connection as it is. At once (a wedge shows right after our own
///   restart, in its cooldown); a second replacement within the cooldown of the first waits for its end, and nothing
///   is negotiated on the wedged connection meanwhile.
/// - A stall that outlasts `MEDIA_STALL_RESTARTS_BEFORE_RENEWAL` restarts made while it lasted, with ICE up, and
///   answered by the peer (whatever asked for them: the stall, an escalation, a reconnect, a timed-out offer) is a wedge
///   too: its next stall restart replaces the connection instead (a Firefox peer whose restart's ICE stream failed sends
///   nothing on that connection any more, whatever ICE does next). ICE going down starts the count again.
public struct NegotiationMachine: Sendable, Equatable {
    public enum SignalingState: Sendable, Equatable { case stable, haveLocalOffer, haveRemoteOffer }

    public enum IceState: Sendable, Equatable { case new, checking, connected, completed, disconnected, failed, closed }

    public enum DescriptionKind: Sendable, Equatable { case offer, answer }

    public enum RestartReason: String, Sendable, Equatable {
        case iceDisconnected, iceFailed, networkOnline, networkChange, offerTimeout, signalingReconnect, escalation
        /// Inbound media stopped while ICE says connected (`MediaWatchdogMachine`).
        case mediaStall
        /// Our peer connection refused a remote description or a rollback: a new one replaces it (not an ICE restart
        /// in place — a fresh connection and a fresh offer).
        case peerConnectionWedged
        /// The peer cannot restart ICE in place (`restartsOnlyAsHost`) and asked us to (`restart_request`).
        case peerRequest

        /// A waiting restart that media flowing does not make unneeded: the peer's request (its media is the one down),
        /// and an offer of ours that timed out and was rolled back — the peer may have taken and answered it, so the two
        /// sides may hold different descriptions (different ICE credentials) while media still flows over the old pair,
        /// until the next fault finds them apart (issue 51; the simulator's `connectionsDisagree`, seed 509).
        var outlastsMedia: Bool { self == .peerRequest || self == .offerTimeout }
    }

    public enum Event: Sendable, Equatable {
        /// From `joined` / `room_state`: who is there and who hosts. `peerEpoch` is the epoch at which this
        /// peer session began; relayed messages from older epochs are stale.
        /// `returning`: the peer is the seat we had before it went missing from the room's view (a server or node
        /// that lost the room sees the two sides come back one by one), not a new session.
        case peer(present: Bool, isHost: Bool, peerEpoch: Int64, returning: Bool = false)
        case signaling(up: Bool)
        /// The server says the peer's seat is suspended (its transport is gone), or that it is back.
        case peerSuspended(Bool)
        /// The first `room_state` after a signaling reconnect.
        case roomStateAfterReconnect
        /// `answers`: the offer an answer names (`SDPOrigin.offerName`), nil when the peer names none.
        case remoteDescription(DescriptionKind, sdp: String, epoch: Int64?, answers: String? = nil)
        case remoteCandidate(IceCandidate?, epoch: Int64?)
        /// The engine created and applied our description.
        case localDescriptionReady(DescriptionKind, sdp: String)
        case localDescriptionFailed
        /// The engine applied a remote description.
        case remoteDescriptionApplied(DescriptionKind)
        /// The engine refused to apply a remote description.
        case remoteDescriptionFailed(DescriptionKind)
        /// The engine could not roll our offer back: the connection is stuck with it.
        case rollbackFailed
        case signalingStateChanged(SignalingState)
        case iceStateChanged(IceState)
        case networkOnline
        case networkPathChanged
        case requestIceRestart
        case requestOfferResend
        /// The media watchdog: nothing arrives while ICE says connected (restart now), or it arrives again.
        case mediaStalled
        case mediaFlowing
        /// The peer asked for an ICE restart (`restart_request`): it cannot make one itself.
        case peerAskedForRestart
        case timerFired(TimerID)
    }

    public enum Action: Sendable, Equatable {
        /// Close our peer connection and make a new one (same media and configuration).
        case renewPeerConnection
        case createOffer(iceRestart: Bool)
        case createAnswer
        case setRemoteDescription(DescriptionKind, sdp: String)
        case rollback
        case addRemoteCandidates([IceCandidate?])
        case sendOffer(sdp: String)
        /// `answers`: the offer it answers (`SDPOrigin.offerName`), sent with it so the peer never applies it to a later
        /// offer of its own.
        case sendAnswer(sdp: String, answers: String? = nil)
        case iceRestartStarted(RestartReason)
        /// Send `restart_request`: this side wants an ICE restart it cannot make (`restartsOnlyAsHost`, not host).
        case askPeerToRestart(RestartReason)
        case timer(TimerCommand)
    }

    public private(set) var isHost = false
    public private(set) var peerPresent = false
    /// Present but unreachable: a restart now would offer to nobody (the server refuses the relay,
    /// `target_suspended`). Owed until it is back; then made if media is still down or the reason outlasts media.
    public private(set) var peerSuspended = false
    public private(set) var signalingState: SignalingState = .stable
    public private(set) var hasRemoteDescription = false
    public private(set) var iceState: IceState = .new
    /// ICE says connected but the media watchdog says nothing arrives: media is down all the same.
    public private(set) var mediaStalled = false
    /// Media is up: ICE connected, and arriving.
    public var mediaUp: Bool { (iceState == .connected || iceState == .completed) && !mediaStalled }
    /// Media was stalled when the peer went missing (the watchdog starts over for whoever comes next, and samples
    /// nothing while we are alone): the same peer coming back finds media down, not up. A stall that healed while we
    /// were alone costs one restart: the safe side.
    private var stalledWhenLeft = false
    public private(set) var nonHostFallbackAttempts = 0
    /// A restart that could not run yet (signaling down, the peer away, cooldown, negotiation in flight). The peer's
    /// request (`peerRequest`) outranks our own reasons; it and a timed-out offer (`offerTimeout`) are kept when our
    /// media is up (`RestartReason.outlastsMedia`): the peer's media, or which offer it holds, is not ours to see.
    public private(set) var pendingRestart: RestartReason?
    /// The peer renegotiated (a remote offer applied) since our last restart offer: a stall that lasts waits one more
    /// cooldown for what that renegotiation does instead of crossing it at our cooldown's end.
    private var peerOfferSinceRestart = false
    /// Restarts made while our media was stalled under a connected ICE and answered by the peer, since media last flowed
    /// and ICE was last down: the peer hears us and takes new credentials, ICE works, yet nothing arrives. Whatever asked
    /// for the restart (the stall, an escalation, a reconnect, a timed-out offer), it moved the path all the same: counting
    /// only the stall's own would let a stall amid signaling trouble spend its cooldowns on restarts that prove as much
    /// and count for nothing (sweep seed 1440). Past `MEDIA_STALL_RESTARTS_BEFORE_RENEWAL` of them the trouble is the
    /// connection, not the path (Firefox's senders stay silent after a restart's ICE stream failed, whatever ICE does
    /// next): the next stall restart replaces it, as a wedged one. An unanswered restart, or one made while ICE was down
    /// (an outage: the path), proves nothing of the kind.
    public private(set) var restartsWithoutMedia = 0
    /// The restart offer out was made while media stalled under a connected ICE: its answer counts.
    private var offerMadeWhileStalled = false
    public private(set) var remoteCandidateBuffer: [IceCandidate?] = []
    private var signalingUp = true
    private var makingOffer = false
    private var offerIsRestart = false
    private var offerFromFallback = false
    private var lastLocalOffer: String?
    /// The remote offer last taken in, and our answer to it: the same offer again (resent because our answer
    /// was lost, or duplicated) gets the same answer again, not a second negotiation.
    private var lastRemoteOffer: String?
    private var lastLocalAnswer: String?
    /// The name (`SDPOrigin.offerName`) of the remote offer our answer being made answers, and of the one
    /// `lastLocalAnswer` answered: sent with the answer, so the peer never applies it to a later offer (issue 51).
    private var answeringOffer: String?
    private var lastLocalAnswerAnswers: String?
    /// The origin of the newest remote description handed to WebRTC in this peer session.
    private var newestRemoteOrigin: SDPOrigin?
    /// The session id of the peer connection whose descriptions our current one has taken (not an echo of ours):
    /// kept when the peer leaves, since our connection stays, and forgotten only when ours is renewed.
    public private(set) var appliedRemoteSession: String?
    /// Session ids of our own descriptions: a remote origin with one of them is an echo, not the peer's count.
    private var localSessionIds: Set<String> = []
    /// Session ids seen in remote descriptions: a local description carrying one was copied from the peer
    /// (webrtcbin's answer copies the offer's `o=`), so the id stays the peer's and its count is still judged.
    private var remoteSessionIds: Set<String> = []
    private var inCooldown = false
    /// A wedged connection waits for the cooldown to be replaced.
    public private(set) var renewalPending = false
    /// The cooldown running is a replacement's (not a restart's): another wedge waits for its end.
    private var replacedInCooldown = false
    /// The peer's connection (`appliedRemoteSession`) answered an offer of our current connection, so it holds a
    /// description of ours: if ours is replaced, it renews for the new one, and what it sends meanwhile is stale. A
    /// connection of the peer's that never took one of ours does not renew, and the new one negotiates with it.
    private var peerTookOurOffer = false
    /// The peer's session our wedged connection had taken when we replaced it without retiring it (the peer had taken
    /// no offer of ours, so it may go on with that connection). Once the peer answers our new connection from another
    /// session, it renewed: anything from this one is stale (issue 51, the simulator's seed 2268 with duet call: a
    /// duplicate of the offer that wedged us, taken by the new connection).
    private var sessionLeftBehind: String?
    /// Renewed, and nothing has come from the new connection yet: a failed rollback now was asked of the old one (the
    /// runtime performs commands in order, and a new connection has no offer to roll back before it made one). A failed
    /// local description does not count as the new connection's: an offer given up on in a glare may fail late.
    private var renewalUnconfirmed = false
    /// The answer that renewed our connection (it answered the old one's offer): never applied to the new one's.
    private var answerBeforeRenewal: SDPOrigin?
    /// Peer connections the peer has replaced (we renewed ours for a newer one): anything from them is stale.
    private var retiredRemoteSessions: [String] = []
    /// Results still to come of WebRTC work asked of a connection renewed since (a description being made, one being
    /// applied). The runtime performs commands in order, so they arrive before any of the new connection's: they are
    /// the old connection's, never taken for the new one's.
    public private(set) var staleLocalResults = 0
    public private(set) var staleRemoteResults = 0
    /// Remote descriptions handed to WebRTC whose result has not come back (a burst of offers after a suspension may
    /// put several in flight): all of them are the old connection's if it is renewed.
    private var remoteResultsInFlight = 0
    private var staleRestartOffer = false
    private var peerEpoch: Int64 = 0
    private var applyingRemote = false
    /// An answer is being made: a burst of remote offers (say, after the app was suspended) gets one answer,
    /// and no offer of ours may start before it is out.
    private var answering = false

    /// For a WebRTC stack that cannot restart ICE in place (GStreamer's webrtcbin 1.22 answers a restart only
    /// with a whole new session, which browsers cannot follow): leave restarts to the host, whose offers this
    /// side can answer on its existing session, and never make crossing restart offers. A restart this side wants
    /// as the guest (its media stalled, its network changed, an escalation step) is asked of the host instead
    /// (`askPeerToRestart`): only this side knows its inbound media stopped. Asking again is paced by what asks
    /// (one stall, the escalation's growing pauses), the host's restarts by its cooldown.
    public let restartsOnlyAsHost: Bool

    public init(restartsOnlyAsHost: Bool = false) {
        self.restartsOnlyAsHost = restartsOnlyAsHost
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch event {
        case .peer(let present, let host, let epoch, let returning):
            let arrived = present && !peerPresent
            let roleChanged = host != isHost
            isHost = host
            peerEpoch = epoch
            peerPresent = present
            if !present { return leftAlone() }
            guard arrived || roleChanged else { return [] }
            return startNegotiation(returning: returning)
        case .signaling(let up):
            signalingUp = up
            return []
        case .peerSuspended(let suspended):
            let back = peerSuspended && !suspended
            peerSuspended = suspended
            guard back else { return [] }
            // Back: a restart owed meanwhile is made if media still needs it, or if it outlasts media (a timed-out
            // offer the peer may have taken, its own request); media down with nothing owed is restarted too.
            let owed = pendingRestart
            pendingRestart = nil
            if let owed, owed.outlastsMedia || !mediaUp { return restart(owed) }
            return mediaUp ? [] : restart(.escalation)
        case .roomStateAfterReconnect:
            guard let reason = pendingRestart, peerPresent else { return [] }
            pendingRestart = nil
            // Only signaling was lost (media flowed all along): a restart wanted meanwhile is not needed (B3) — unless
            // the peer asked for it: its media is the one down.
            if reason == .peerRequest { return restart(.peerRequest) }
            if mediaUp, !reason.outlastsMedia { return [] }
            let made = restart(reason == .signalingReconnect ? reason : .signalingReconnect)
            // Held back again (a cooldown, a renegotiation, the peer away): still owed for what it was, so that media
            // flowing meanwhile does not drop a restart that outlasts it.
            if reason.outlastsMedia, pendingRestart == .signalingReconnect { pendingRestart = reason }
            return made
        case .remoteDescription(let kind, let sdp, let epoch, let answers):
            if let epoch, epoch < peerEpoch { return [] }  // negotiation from an older peer session
            return remoteDescription(kind, sdp: sdp, answers: answers)
        case .remoteCandidate(let candidate, let epoch):
            if let epoch, epoch < peerEpoch { return [] }
            if hasRemoteDescription && !applyingRemote { return [.addRemoteCandidates([candidate])] }
            remoteCandidateBuffer.append(candidate)
            if remoteCandidateBuffer.count > ResilienceConstants.ICE_CANDIDATE_BUFFER_MAX { remoteCandidateBuffer.removeFirst() }
            return []
        case .localDescriptionReady(let kind, _) where staleLocalResults > 0:
            staleLocalResults -= 1
            // The old connection's restart offer was made (restarts are paced whatever connection they are on).
            guard kind == .offer, staleRestartOffer else { return [] }
            staleRestartOffer = false
            inCooldown = true
            return [.timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS))]
        case .localDescriptionFailed where staleLocalResults > 0:
            staleLocalResults -= 1
            staleRestartOffer = false
            return []
        case .remoteDescriptionApplied where staleRemoteResults > 0, .remoteDescriptionFailed where staleRemoteResults > 0:
            staleRemoteResults -= 1
            return []
        case .remoteDescriptionFailed:
            remoteResultsInFlight = max(0, remoteResultsInFlight - 1)
            // Nothing is being applied any more (left set, it would hold back every offer, answer and restart), and
            // the connection that refused it will refuse the next one too: it is replaced.
            applyingRemote = false
            renewalUnconfirmed = false
            return connectionWedged()
        case .rollbackFailed:
            guard !renewalUnconfirmed else { return [] }  // the replaced connection's
            return connectionWedged()
        case .localDescriptionReady(.offer, let sdp):
            renewalUnconfirmed = false
            noteLocalSession(sdp)
            makingOffer = false
            lastLocalOffer = sdp
            signalingState = .haveLocalOffer
            var actions: [Action] = [.sendOffer(sdp: sdp), .timer(.schedule(.offerTimeout, afterMs: ResilienceConstants.OFFER_TIMEOUT_MS))]
            if offerIsRestart {
                inCooldown = true
                replacedInCooldown = false
                peerOfferSinceRestart = false
                actions.append(.timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)))
            }
            return actions
        case .localDescriptionReady(.answer, let sdp):
            renewalUnconfirmed = false
            noteLocalSession(sdp)
            answering = false
            lastLocalAnswer = sdp
            lastLocalAnswerAnswers = answeringOffer
            signalingState = .stable
            return [.sendAnswer(sdp: sdp, answers: answeringOffer)]
        case .localDescriptionFailed:
            // (Not a sign of the new connection: an offer the glare made us give up on may still fail on the old one.)
            makingOffer = false
            answering = false
            return []
        case .remoteDescriptionApplied(let kind):
            renewalUnconfirmed = false
            remoteResultsInFlight = max(0, remoteResultsInFlight - 1)
            applyingRemote = false
            hasRemoteDescription = true
            // The peer renegotiated (its restart, say): a stall restart of ours still waiting would only cross it.
            if kind == .offer, pendingRestart == .mediaStall { pendingRestart = nil }
            if kind == .offer { peerOfferSinceRestart = true }
            if kind == .answer, offerMadeWhileStalled, mediaStalled { restartsWithoutMedia += 1 }
            let flushed = remoteCandidateBuffer
            remoteCandidateBuffer.removeAll()
            var actions: [Action] = flushed.isEmpty ? [] : [.addRemoteCandidates(flushed)]
            if kind == .offer {
                signalingState = .haveRemoteOffer
                if !answering {
                    actions.append(.createAnswer)
                    answeringOffer = SDPOrigin.offerName(of: lastRemoteOffer)
                }
                answering = true
            } else {
                signalingState = .stable
            }
            return actions
        case .signalingStateChanged(let state):
            signalingState = state
            return []
        case .iceStateChanged(let state):
            iceState = state
            switch state {
            case .connected, .completed:
                // Media came back by itself: a remembered restart is no longer needed.
                if !mediaStalled, pendingRestart?.outlastsMedia != true { pendingRestart = nil }
                return [.timer(.cancel(.iceRestartDelay))]
            case .disconnected:
                // The path is down now: what restarts do next says nothing of the connection, and the answer to one
                // made before (a network change's, say, just before the path moved) proves no more.
                restartsWithoutMedia = 0
                offerMadeWhileStalled = false
                guard isHost, peerPresent, !peerSuspended else { return [] }
                return [.timer(.schedule(.iceRestartDelay, afterMs: ResilienceConstants.ICE_DISCONNECTED_RESTART_DELAY_MS))]
            case .failed:
                restartsWithoutMedia = 0
                offerMadeWhileStalled = false
                guard isHost else { return [] }
                return [.timer(.cancel(.iceRestartDelay))] + restart(.iceFailed)
            default:
                return []
            }
        case .networkOnline:
            return peerPresent ? restart(.networkOnline) : []
        case .networkPathChanged:
            guard peerPresent, iceState == .disconnected || iceState == .failed else { return [] }
            return restart(.networkChange)
        case .requestIceRestart:
            return peerPresent ? restart(.escalation) : []
        case .mediaStalled:
            mediaStalled = true
            // At once: the watchdog already waited MEDIA_STALL_TIMEOUT_MS, longer than the disconnected delay.
            return peerPresent ? restart(.mediaStall) : []
        case .mediaFlowing:
            mediaStalled = false
            stalledWhenLeft = false
            restartsWithoutMedia = 0
            if pendingRestart?.outlastsMedia != true { pendingRestart = nil }  // media came back by itself (ours, not the peer's)
            return []
        case .peerAskedForRestart:
            // Only a side that can restart: two that cannot (both `duet call`) must not ask each other back and forth.
            guard peerPresent, isHost || !restartsOnlyAsHost else { return [] }
            // Our own restart offer, being made or waiting for its answer, is the restart asked for.
            if offerIsRestart, makingOffer || signalingState == .haveLocalOffer { return [] }
            return restart(.peerRequest)
        case .requestOfferResend:
            guard peerPresent, signalingUp, !renewalPending else { return [] }
            if signalingState == .haveLocalOffer, let offer = lastLocalOffer {
                return [.sendOffer(sdp: offer), .timer(.schedule(.offerTimeout, afterMs: ResilienceConstants.OFFER_TIMEOUT_MS))]
            }
            guard isHost || !restartsOnlyAsHost else { return [] }  // no offer to cross the host's restart
            return offer(iceRestart: false)
        case .timerFired(.offerTimeout):
            return offerTimedOut()
        case .timerFired(.nonHostFallback):
            return nonHostFallback()
        case .timerFired(.iceRestartDelay):
            guard iceState == .disconnected || iceState == .failed else { return [] }
            return restart(.iceDisconnected)
        case .timerFired(.iceRestartCooldown):
            inCooldown = false
            replacedInCooldown = false
            if renewalPending { return connectionWedged() }
            // Media still stalled under a connected ICE after the restart: restart again, a cooldown apart, until it
            // flows (a restart that keeps its credentials — webrtcbin's, until it gives its session up — may not have
            // moved the path). Not over a renegotiation the peer made meanwhile, and not when ICE itself is down: then
            // the ICE rules (the host's job) apply.
            let stalledStill = mediaStalled && (iceState == .connected || iceState == .completed)
            if stalledStill, pendingRestart == nil, peerOfferSinceRestart {
                // The peer's renegotiation gets one cooldown to show what it did: look again then (the timer only;
                // nothing else is held back meanwhile).
                peerOfferSinceRestart = false
                return [.timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS))]
            }
            // (Signaling down: `restart` keeps the reason for the reconnect.)
            guard let reason = pendingRestart ?? (stalledStill ? .mediaStall : nil), !mediaUp || reason.outlastsMedia
            else { return [] }
            pendingRestart = nil
            return restart(reason)
        case .timerFired:
            return []
        }
    }

    // MARK: - Steps

    private mutating func startNegotiation(returning: Bool) -> [Action] {
        let stalledBefore = stalledWhenLeft
        stalledWhenLeft = false
        if isHost {
            // A connection that has been up before needs new ICE credentials for the (re)arrived peer, unless the
            // same peer comes back to a connection whose media flowed all along (only the room's view was lost, B3):
            // a plain offer settles the descriptions again without moving media off its path.
            let restart = iceState != .new && !(returning && mediaUp && !stalledBefore)
            return [.timer(.cancel(.nonHostFallback))] + (restart ? [.iceRestartStarted(.signalingReconnect)] : [])
                + offer(iceRestart: restart)
        }
        guard !hasRemoteDescription else { return [] }
        // Back first in a rebuilt room, with media that had stalled: the returning host offers nothing (it never saw
        // us leave), so the restart is ours; the fallback stays as the offer of last resort.
        let restarted = returning && stalledBefore ? restart(.mediaStall) : []
        return restarted + [.timer(.schedule(.nonHostFallback, afterMs: ResilienceConstants.NON_HOST_FALLBACK_DELAY_MS))]
    }

    private mutating func leftAlone() -> [Action] {
        // A wedged connection waiting for the cooldown is replaced now (no rollback asked of it): the next peer must
        // not meet it.
        let renewal = renewalPending ? replaceConnection() : []
        renewalPending = false
        peerOfferSinceRestart = false
        makingOffer = false
        answering = false
        applyingRemote = false
        nonHostFallbackAttempts = 0
        pendingRestart = nil
        peerSuspended = false
        hasRemoteDescription = false
        newestRemoteOrigin = nil
        remoteSessionIds.removeAll()  // the next peer brings its own (and a long call must not fill the set)
        remoteCandidateBuffer.removeAll()
        inCooldown = false
        replacedInCooldown = false
        stalledWhenLeft = stalledWhenLeft || mediaStalled  // told again by every view while alone
        mediaStalled = false
        restartsWithoutMedia = 0
        // An offer nobody will answer would block the next peer's negotiation.
        let rollback: [Action] = signalingState == .haveLocalOffer ? [.rollback] : []
        signalingState = .stable
        return renewal + rollback + [.offerTimeout, .nonHostFallback, .iceRestartDelay, .iceRestartCooldown].map { .timer(.cancel($0)) }
    }

    private mutating func offer(iceRestart: Bool, fromFallback: Bool = false) -> [Action] {
        guard !renewalPending, !makingOffer, !answering, !applyingRemote, signalingState == .stable else { return [] }
        makingOffer = true
        offerIsRestart = iceRestart
        offerMadeWhileStalled = false
        offerFromFallback = fromFallback
        return [.createOffer(iceRestart: iceRestart)]
    }

    private mutating func restart(_ reason: RestartReason) -> [Action] {
        guard peerPresent else { return [] }  // nobody to restart with
        guard !peerSuspended else {
            // Away: nobody can answer (the relay would fail). Owed until it is back; a reason that outlasts media
            // is not displaced by one that does not.
            owe(reason)
            return []
        }
        guard isHost || !restartsOnlyAsHost else { return askHostToRestart(reason) }
        guard !renewalPending else { return [] }  // not on a wedged connection: its replacement offers afresh
        guard signalingUp else {
            owe(reason)
            return []
        }
        guard !inCooldown, !makingOffer, !answering, !applyingRemote, signalingState != .haveRemoteOffer else {
            pendingRestart = reason == .peerRequest ? reason : pendingRestart ?? reason
            return []
        }
        pendingRestart = nil  // this restart is the one anything waiting wanted
        // A stall under a working ICE. Not for webrtcbin (`restartsOnlyAsHost`): it gives a silent session up by itself,
        // and its offers carry a session id a browser takes for an echo of its own, so the browser would not renew for it
        // (duet call seed 768).
        let stalledUnderWorkingICE =
            mediaStalled && !restartsOnlyAsHost && (iceState == .connected || iceState == .completed)
        // Restarts the peer took moved the path, and media still does not come: the path is not what is broken. Only the
        // stall's own restart (or an escalation's) renews: a network change, a timed-out offer or the peer's request is
        // restarted in place, their restart is the right tool.
        let stallRestart = stalledUnderWorkingICE && (reason == .mediaStall || reason == .escalation)
        if stallRestart, restartsWithoutMedia >= ResilienceConstants.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL { return connectionWedged() }
        var actions: [Action] = []
        if signalingState == .haveLocalOffer {
            actions += [.rollback, .timer(.cancel(.offerTimeout))]
            signalingState = .stable
        }
        let made = offer(iceRestart: true)
        offerMadeWhileStalled = stalledUnderWorkingICE && !made.isEmpty
        return actions + [.iceRestartStarted(reason)] + made
    }

    /// Remembers a restart for later: the newest reason, except that one which outlasts media (a timed-out offer the
    /// peer may have taken) is not displaced by one that does not; the peer's own request always is kept.
    private mutating func owe(_ reason: RestartReason) {
        if reason == .peerRequest || pendingRestart?.outlastsMedia != true { pendingRestart = reason }
    }

    /// The guest that cannot restart in place asks the host, when the host can hear it and is not already
    /// renegotiating with us (its offer, being applied or answered, is a restart or settles the path anew).
    private func askHostToRestart(_ reason: RestartReason) -> [Action] {
        guard signalingUp, !renewalPending, !answering, !applyingRemote, signalingState != .haveRemoteOffer else { return [] }
        return [.askPeerToRestart(reason)]
    }

    private mutating func noteLocalSession(_ sdp: String) {
        // Bounded: a peer connection has one session id (Chromium), webrtcbin adds the ids it copies.
        guard let id = SDPOrigin(sdp: sdp)?.sessionId, !remoteSessionIds.contains(id), localSessionIds.count < 16 else { return }
        localSessionIds.insert(id)
    }

    private mutating func remoteDescription(_ kind: DescriptionKind, sdp: String, answers: String? = nil) -> [Action] {
        let origin = SDPOrigin(sdp: sdp).flatMap { localSessionIds.contains($0.sessionId) ? nil : $0 }
        // The peer's connection is new: ours must be too before it takes this description.
        if let id = origin?.sessionId, retiredRemoteSessions.contains(id) { return [] }  // from a replaced connection
        if let id = origin?.sessionId, let applied = appliedRemoteSession, id != applied {
            retiredRemoteSessions.append(applied)
            if retiredRemoteSessions.count > 16 { retiredRemoteSessions.removeFirst() }
            let renewed = renewPeerConnection()
            switch kind {
            case .offer: return renewed + remoteDescription(.offer, sdp: sdp)  // taken, and answered, by the new one
            case .answer:
                // It answered the old connection's offer: the new one offers afresh (and never takes this answer).
                answerBeforeRenewal = origin
                return renewed + offer(iceRestart: false)
            }
        }
        if renewalPending { return [] }  // the wedged connection would refuse it: the replacement offers afresh
        if let id = origin?.sessionId, remoteSessionIds.count < 16 { remoteSessionIds.insert(id) }
        // Overtaken: the peer has already sent us something newer (a duplicated or reordered delivery).
        if let origin, let newest = newestRemoteOrigin, origin.isOlder(than: newest) { return [] }
        switch kind {
        case .offer:
            if sdp == lastRemoteOffer, answering || applyingRemote { return [] }  // the answer is on its way
            if sdp == lastRemoteOffer, signalingState == .stable, let answer = lastLocalAnswer {
                return [.sendAnswer(sdp: answer, answers: lastLocalAnswerAnswers)]
            }
            lastRemoteOffer = sdp
            lastLocalAnswer = nil
            // Glare — unless our offer is already answered (the answer is being applied): then we will be stable.
            if signalingState == .haveLocalOffer || makingOffer, !applyingRemote {
                // Glare. The host keeps its offer; the non-host yields.
                if isHost { return [] }
                makingOffer = false
                signalingState = .stable
                applyingRemote = true
                newestRemoteOrigin = origin ?? newestRemoteOrigin
                appliedRemoteSession = origin?.sessionId ?? appliedRemoteSession
                return [.rollback, .timer(.cancel(.offerTimeout)), .timer(.cancel(.nonHostFallback)), apply(.offer, sdp)]
            }
            applyingRemote = true
            newestRemoteOrigin = origin ?? newestRemoteOrigin
            appliedRemoteSession = origin?.sessionId ?? appliedRemoteSession
            return [.timer(.cancel(.nonHostFallback)), apply(.offer, sdp)]
        case .answer:
            if let origin, origin == answerBeforeRenewal { return [] }  // a copy of the answer to the old connection
            guard signalingState == .haveLocalOffer, !applyingRemote else { return [] }  // late or duplicate answer
            // The answer to an offer of ours rolled back since (a restart over an unanswered offer, an offer timed out):
            // applied to the offer now out, it would leave us with the peer's ICE credentials of a negotiation it has
            // moved on from, checking an ICE generation the peer keeps only until the new one connects, which it never
            // does (issue 51). The answer to the offer now out follows it. (A peer that names no offer is taken at its word.)
            if let answers, let offer = lastLocalOffer, answers != SDPOrigin.offerName(of: offer) { return [] }
            if let left = sessionLeftBehind {
                sessionLeftBehind = nil
                if origin?.sessionId != left {
                    retiredRemoteSessions.append(left)
                    if retiredRemoteSessions.count > 16 { retiredRemoteSessions.removeFirst() }
                }
            }
            applyingRemote = true
            newestRemoteOrigin = origin ?? newestRemoteOrigin
            appliedRemoteSession = origin?.sessionId ?? appliedRemoteSession
            peerTookOurOffer = true
            return [.timer(.cancel(.offerTimeout)), apply(.answer, sdp)]
        }
    }

    private mutating func apply(_ kind: DescriptionKind, _ sdp: String) -> Action {
        remoteResultsInFlight += 1
        return .setRemoteDescription(kind, sdp: sdp)
    }

    /// A connection that refused a description or a rollback: replace it and offer afresh from the new one (a session
    /// the peer has not seen: its connection renews for it if it took one of ours), at most once per cooldown. With nobody there, the new
    /// connection waits for the next peer, whom the host offers to as always.
    private mutating func connectionWedged() -> [Action] {
        guard !(inCooldown && replacedInCooldown) else {
            renewalPending = true
            return []
        }
        var actions = replaceConnection()
        guard peerPresent else { return actions }
        inCooldown = true
        replacedInCooldown = true
        actions += [
            .timer(.schedule(.iceRestartCooldown, afterMs: ResilienceConstants.ICE_RESTART_COOLDOWN_MS)),
            .iceRestartStarted(.peerConnectionWedged),
        ]
        return actions + offer(iceRestart: false)
    }

    /// Renewal for a connection of ours that is wedged: the peer's connection was negotiating with the one we give up,
    /// so whatever else it sends belongs to that.
    private mutating func replaceConnection() -> [Action] {
        if let applied = appliedRemoteSession, peerTookOurOffer {
            retiredRemoteSessions.append(applied)
            if retiredRemoteSessions.count > 16 { retiredRemoteSessions.removeFirst() }
        } else {
            sessionLeftBehind = appliedRemoteSession
        }
        return renewPeerConnection()
    }

    /// Close ours and start over on a new one: nothing of the old connection's negotiation carries over.
    private mutating func renewPeerConnection() -> [Action] {
        renewalUnconfirmed = true
        renewalPending = false  // whatever made it, the wedged connection is gone
        restartsWithoutMedia = 0  // the new connection gets its own restarts
        peerOfferSinceRestart = false
        peerTookOurOffer = false
        appliedRemoteSession = nil
        answerBeforeRenewal = nil
        staleLocalResults += (makingOffer || answering) ? 1 : 0
        staleRemoteResults += remoteResultsInFlight
        remoteResultsInFlight = 0
        // A restart offer still being made is made all the same, by the old connection: it counts for the pacing.
        staleRestartOffer = staleRestartOffer || (makingOffer && offerIsRestart)
        makingOffer = false
        answering = false
        applyingRemote = false
        signalingState = .stable
        hasRemoteDescription = false
        newestRemoteOrigin = nil
        lastLocalOffer = nil
        lastRemoteOffer = nil
        lastLocalAnswer = nil
        answeringOffer = nil
        lastLocalAnswerAnswers = nil
        localSessionIds.removeAll()  // the new connection has its own (and the set is bounded)
        remoteCandidateBuffer.removeAll()  // for the connection that is gone
        iceState = .new
        pendingRestart = nil
        // The restart cooldown stays (and a media stall, until media grows on the new connection): it paces restarts whatever connection they are on.
        return [.renewPeerConnection] + [.offerTimeout, .iceRestartDelay].map { .timer(.cancel($0)) }
    }

    private mutating func offerTimedOut() -> [Action] {
        guard signalingState == .haveLocalOffer else {
            return offerFromFallback ? [] : restart(.offerTimeout)
        }
        signalingState = .stable
        var actions: [Action] = [.rollback]
        if offerFromFallback {
            // A non-host fallback offer is not an ICE problem: try the fallback once more instead.
            if nonHostFallbackAttempts < ResilienceConstants.NON_HOST_FALLBACK_MAX_ATTEMPTS, !hasRemoteDescription {
                actions.append(.timer(.schedule(.nonHostFallback, afterMs: ResilienceConstants.NON_HOST_FALLBACK_DELAY_MS)))
            }
            return actions
        }
        inCooldown = false  // the timed-out restart did not happen: do not hold the next one back
        replacedInCooldown = false
        if renewalPending { return [.timer(.cancel(.iceRestartCooldown))] + connectionWedged() }
        actions.append(.timer(.cancel(.iceRestartCooldown)))
        return actions + restart(.offerTimeout)
    }

    private mutating func nonHostFallback() -> [Action] {
        guard !isHost, peerPresent, !hasRemoteDescription, signalingState == .stable, !makingOffer,
            nonHostFallbackAttempts < ResilienceConstants.NON_HOST_FALLBACK_MAX_ATTEMPTS
        else { return [] }
        nonHostFallbackAttempts += 1
        return offer(iceRestart: false, fromFallback: true)
    }
}
