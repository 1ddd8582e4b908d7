// Port of NegotiationMachine.swift. Offer/answer and ICE restart for one side of the call (000 §3–§8,
// scenarios 2–6).
//
// - The host offers; the non-host offers itself after 4 s without an offer, at most twice.
// - An offer unanswered for 8 s is rolled back and followed by an ICE restart.
// - ICE restart: 2 s after `disconnected`, at once on `failed`, on a media stall (and again at every cooldown's
//   end while it lasts), on network online / path change and on request (the escalation's, or the peer's
//   `restart_request`); never within 10 s of the previous one (deferred, not dropped); remembered while signaling
//   is down and fired after the post-reconnect `room_state`. A side that cannot restart in place
//   (`restartsOnlyAsHost`) asks the host instead when it is the guest.
// - Glare: the non-host is polite (rolls its offer back and answers), the host ignores a crossing offer.
// - Remote candidates wait in a buffer (≤ 50, oldest dropped) until a remote description is applied.
// - A remote description older than one already applied from the same peer connection (`sdpOrigin`) is dropped:
//   signaling may reorder, and WebRTC must never go back to ICE credentials the peer has replaced. Origins that
//   echo one of our own session ids (webrtcbin copies the offer's) are never judged.
// - A connection that refuses a remote description or a rollback is wedged (issue 32: Chromium refuses an answer whose
//   DTLS role Firefox flipped, then the rollback and every later description the same way): it is replaced, and the
//   new one offers afresh — a new session the peer's connection renews for if it took one of ours (it answered our
//   offer: then what it sends meanwhile is stale); one that never took ours negotiates with the new one. At once (a wedge shows right after
//   our own restart, in its cooldown); a second replacement within the cooldown of the first waits for its end, and
//   nothing is negotiated on the wedged connection meanwhile. Anything from the peer's old connection is stale.
// - A stall that outlasts MEDIA_STALL_RESTARTS_BEFORE_RENEWAL restarts made while it lasted, with ICE up, and answered
//   by the peer (whatever asked for them: the stall, an escalation, a reconnect, a timed-out offer) is a wedge too: its
//   next stall restart replaces the connection instead (a Firefox peer whose restart's ICE stream failed sends nothing
//   on that connection any more, whatever ICE does next). ICE going down starts the count again.
//
// SignalingState: 'stable' | 'haveLocalOffer' | 'haveRemoteOffer' (Swift names, not W3C ones).
// IceState: 'new' | 'checking' | 'connected' | 'completed' | 'disconnected' | 'failed' | 'closed'.
// DescriptionKind: 'offer' | 'answer'. Candidates: {candidate, sdpMid, sdpMLineIndex} or null.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';
import { isOlder, offerName, sdpOrigin } from './sdp-origin.js';

/**
 * A waiting restart that media flowing does not make unneeded: the peer's request (its media is the one down), and an
 * offer of ours that timed out and was rolled back — the peer may have taken and answered it, so the two sides may
 * hold different descriptions (different ICE credentials) while media still flows over the old pair, until the next
 * fault finds them apart (issue 51; the simulator's connectionsDisagree, seed 509).
 */
const outlastsMedia = (reason) => reason === 'peerRequest' || reason === 'offerTimeout';

/** sendAnswer{sdp, answers?}: `answers` (the offer it answers) only when known, as Swift's optional. */
const sendAnswer = (sdp, answers) => (answers != null ? { type: 'sendAnswer', sdp, answers } : { type: 'sendAnswer', sdp });

export const RESTART_REASONS = Object.freeze([
  'iceDisconnected', 'iceFailed', 'networkOnline', 'networkChange', 'offerTimeout', 'signalingReconnect', 'escalation',
  'mediaStall', 'peerConnectionWedged', 'peerRequest',
]);

export class NegotiationMachine {
  /**
   * `restartsOnlyAsHost`: for a WebRTC stack that cannot restart ICE in place (GStreamer's webrtcbin 1.22):
   * leave restarts to the host and never make crossing restart offers; as the guest, ask the host for the restart
   * it wants (`askPeerToRestart`, sent as `restart_request`). Browsers keep the default.
   */
  constructor({ restartsOnlyAsHost = false } = {}) {
    this.restartsOnlyAsHost = restartsOnlyAsHost;
    this.isHost = false;
    this.peerPresent = false;
    /** Present but unreachable: a restart now would offer to nobody (the server refuses the relay,
     *  `target_suspended`). Owed until it is back; then made if media is still down or the reason outlasts media. */
    this.peerSuspended = false;
    this.signalingState = 'stable';
    this.hasRemoteDescription = false;
    this.iceState = 'new';
    /** ICE says connected but the media watchdog says nothing arrives: media is down all the same. */
    this.mediaStalled = false;
    /** Media was stalled when the peer went missing (the watchdog starts over for whoever comes next, and samples
     * nothing while we are alone): the same peer coming back finds media down, not up. A stall that healed while we
     * were alone costs one restart: the safe side. */
    this.stalledWhenLeft = false;
    this.nonHostFallbackAttempts = 0;
    /** A restart that could not run yet (signaling down, the peer away, cooldown, negotiation in flight). The peer's
     * request (`peerRequest`) outranks our own reasons; it and a timed-out offer (`offerTimeout`) are kept when our
     * media is up (`outlastsMedia`): the peer's media, or which offer it holds, is not ours to see. */
    this.pendingRestart = null;
    /** The peer renegotiated (a remote offer applied) since our last restart offer: a stall that lasts waits one
     * more cooldown for what that renegotiation does instead of crossing it at our cooldown's end. */
    this.peerOfferSinceRestart = false;
    /** Restarts made while our media was stalled under a connected ICE and answered by the peer, since media last
     *  flowed and ICE was last down: the peer hears us and takes new credentials, ICE works, yet nothing arrives.
     *  Whatever asked for the restart (the stall, an escalation, a reconnect, a timed-out offer), it moved the path all
     *  the same: counting only the stall's own would let a stall amid signaling trouble spend its cooldowns on restarts
     *  that prove as much and count for nothing (sweep seed 1440). Past MEDIA_STALL_RESTARTS_BEFORE_RENEWAL of them the
     *  trouble is the connection, not the path (Firefox's senders stay silent after a restart's ICE stream failed,
     *  whatever ICE does next): the next stall restart replaces it, as a wedged one. An unanswered restart, or one made
     *  while ICE was down (an outage: the path), proves nothing of the kind. */
    this.restartsWithoutMedia = 0;
    /** The restart offer out was made while media stalled under a connected ICE: its answer counts. */
    this.offerMadeWhileStalled = false;
    this.remoteCandidateBuffer = [];
    this.signalingUp = true;
    this.makingOffer = false;
    this.offerIsRestart = false;
    this.offerFromFallback = false;
    this.lastLocalOffer = null;
    // The remote offer last taken in, and our answer to it: the same offer again (resent because our answer
    // was lost, or duplicated) gets the same answer again, not a second negotiation.
    this.lastRemoteOffer = null;
    this.lastLocalAnswer = null;
    // The name (offerName) of the remote offer our answer being made answers, and of the one lastLocalAnswer answered:
    // sent with the answer (`answers`), so that the peer never applies it to a later offer of its own (issue 51).
    this.answeringOffer = null;
    this.lastLocalAnswerAnswers = null;
    // The origin of the newest remote description handed to WebRTC in this peer session.
    this.newestRemoteOrigin = null;
    // The session id of the peer connection whose descriptions our current one has taken (not an echo of ours):
    // kept when the peer leaves, since our connection stays, and forgotten only when ours is renewed.
    this.appliedRemoteSession = null;
    // The answer that renewed our connection (it answered the old one's offer): never applied to the new one's.
    this.answerBeforeRenewal = null;
    // Peer connections the peer has replaced (we renewed ours for a newer one): anything from them is stale.
    this.retiredRemoteSessions = [];
    // Results still to come of WebRTC work asked of a connection renewed since (a description being made, one being
    // applied). The runtime performs commands in order, so they arrive before any of the new connection's: they are
    // the old connection's, never taken for the new one's.
    this.staleLocalResults = 0;
    this.staleRemoteResults = 0;
    this.staleRestartOffer = false;
    // Remote descriptions handed to WebRTC whose result has not come back (a burst of offers after a suspension may put
    // several in flight): all of them are the old connection's if it is renewed.
    this.remoteResultsInFlight = 0;
    // Session ids of our own descriptions: a remote origin with one of them is an echo, not the peer's count.
    this.localSessionIds = new Set();
    // Session ids seen in remote descriptions: a local description carrying one was copied from the peer
    // (webrtcbin's answer copies the offer's `o=`), so the id stays the peer's and its count is still judged.
    this.remoteSessionIds = new Set();
    this.inCooldown = false;
    /** A wedged connection waits for the cooldown to be replaced. */
    this.renewalPending = false;
    // The cooldown running is a replacement's (not a restart's): another wedge waits for its end.
    this.replacedInCooldown = false;
    // The peer's connection (`appliedRemoteSession`) answered an offer of our current connection, so it holds a
    // description of ours: if ours is replaced, it renews for the new one, and what it sends meanwhile is stale. A
    // connection of the peer's that never took one of ours does not renew, and the new one negotiates with it.
    this.peerTookOurOffer = false;
    // The peer's session our wedged connection had taken when we replaced it without retiring it (the peer had taken
    // no offer of ours, so it may go on with that connection). Once the peer answers our new connection from another
    // session, it renewed: anything from this one is stale (issue 51, the simulator's seed 2268 with duet call).
    this.sessionLeftBehind = null;
    // Renewed, and nothing has come from the new connection yet: a failed rollback now was asked of the old one (the
    // runtime performs commands in order, and a new connection has no offer to roll back before it made one). A failed
    // local description does not count as the new connection's: an offer given up on in a glare may fail late.
    this.renewalUnconfirmed = false;
    this.peerEpoch = 0;
    this.applyingRemote = false;
    // An answer is being made: a burst of remote offers gets one answer, and no offer of ours starts before it is out.
    this.answering = false;
  }

  /**
   * Events: peer{present, isHost, peerEpoch, returning}, signaling{up}, peerSuspended{suspended}, roomStateAfterReconnect,
   * remoteDescription{kind, sdp, epoch}, remoteCandidate{candidate, epoch}, localDescriptionReady{kind, sdp},
   * localDescriptionFailed, remoteDescriptionApplied{kind}, remoteDescriptionFailed{kind}, rollbackFailed,
   * signalingStateChanged{state},
   * iceStateChanged{state}, networkOnline, networkPathChanged, requestIceRestart, requestOfferResend,
   * timerFired{timer}.
   * Actions: renewPeerConnection, createOffer{iceRestart}, createAnswer, setRemoteDescription{kind, sdp}, rollback,
   * addRemoteCandidates{candidates}, sendOffer{sdp}, sendAnswer{sdp}, iceRestartStarted{reason}, timer{command}.
   */
  /** Media is up: ICE connected, and arriving. */
  get mediaUp() {
    return (this.iceState === 'connected' || this.iceState === 'completed') && !this.mediaStalled;
  }

  handle(event) {
    switch (event.type) {
      case 'peer': {
        // `peerEpoch` is the epoch at which this peer session began; relayed messages from older
        // epochs are stale.
        const arrived = event.present && !this.peerPresent;
        const roleChanged = event.isHost !== this.isHost;
        this.isHost = event.isHost;
        this.peerEpoch = event.peerEpoch;
        this.peerPresent = event.present;
        if (!event.present) return this.#leftAlone();
        if (!arrived && !roleChanged) return [];
        return this.#startNegotiation(event.returning === true);
      }
      case 'signaling':
        this.signalingUp = event.up;
        return [];
      case 'peerSuspended': {
        const back = this.peerSuspended && !event.suspended;
        this.peerSuspended = event.suspended;
        if (!back) return [];
        // Back: a restart owed meanwhile is made if media still needs it, or if it outlasts media (a timed-out
        // offer the peer may have taken, its own request); media down with nothing owed is restarted too.
        const owed = this.pendingRestart;
        this.pendingRestart = null;
        if (owed != null && (outlastsMedia(owed) || !this.mediaUp)) return this.#restart(owed);
        return this.mediaUp ? [] : this.#restart('escalation');
      }
      case 'roomStateAfterReconnect': {
        const reason = this.pendingRestart;
        if (reason == null || !this.peerPresent) return [];
        this.pendingRestart = null;
        // Only signaling was lost (media flowed all along): a restart wanted meanwhile is not needed (B3) — unless
        // the peer asked for it: its media is the one down.
        if (reason === 'peerRequest') return this.#restart('peerRequest');
        if (this.mediaUp && !outlastsMedia(reason)) return [];
        const made = this.#restart(reason === 'signalingReconnect' ? reason : 'signalingReconnect');
        // Held back again (a cooldown, a renegotiation, the peer away): still owed for what it was, so that media
        // flowing meanwhile does not drop a restart that outlasts it.
        if (outlastsMedia(reason) && this.pendingRestart === 'signalingReconnect') this.pendingRestart = reason;
        return made;
      }
      case 'remoteDescription':
        if (event.epoch != null && event.epoch < this.peerEpoch) return []; // from an older peer session
        return this.#remoteDescription(event.kind, event.sdp, event.answers ?? null);
      case 'remoteCandidate':
        if (event.epoch != null && event.epoch < this.peerEpoch) return [];
        if (this.hasRemoteDescription && !this.applyingRemote) {
          return [{ type: 'addRemoteCandidates', candidates: [event.candidate] }];
        }
        this.remoteCandidateBuffer.push(event.candidate);
        if (this.remoteCandidateBuffer.length > RESILIENCE.ICE_CANDIDATE_BUFFER_MAX) this.remoteCandidateBuffer.shift();
        return [];
      case 'localDescriptionReady':
        if (this.staleLocalResults > 0) {
          this.staleLocalResults -= 1;
          // The old connection's restart offer was made (restarts are paced whatever connection they are on).
          if (event.kind !== 'offer' || !this.staleRestartOffer) return [];
          this.staleRestartOffer = false;
          this.inCooldown = true;
          return [timerAction(schedule('iceRestartCooldown', RESILIENCE.ICE_RESTART_COOLDOWN_MS))];
        }
        this.renewalUnconfirmed = false;
        this.#noteLocalSession(event.sdp);
        if (event.kind === 'offer') {
          this.makingOffer = false;
          this.lastLocalOffer = event.sdp;
          this.signalingState = 'haveLocalOffer';
          const actions = [
            { type: 'sendOffer', sdp: event.sdp },
            timerAction(schedule('offerTimeout', RESILIENCE.OFFER_TIMEOUT_MS)),
          ];
          if (this.offerIsRestart) {
            this.inCooldown = true;
            this.replacedInCooldown = false;
            this.peerOfferSinceRestart = false;
            actions.push(timerAction(schedule('iceRestartCooldown', RESILIENCE.ICE_RESTART_COOLDOWN_MS)));
          }
          return actions;
        }
        this.answering = false;
        this.lastLocalAnswer = event.sdp;
        this.lastLocalAnswerAnswers = this.answeringOffer;
        this.signalingState = 'stable';
        return [sendAnswer(event.sdp, this.answeringOffer)];
      case 'localDescriptionFailed':
        if (this.staleLocalResults > 0) { this.staleLocalResults -= 1; this.staleRestartOffer = false; return []; }
        // (Not a sign of the new connection: an offer the glare made us give up on may still fail on the old one.)
        this.makingOffer = false;
        this.answering = false;
        return [];
      case 'remoteDescriptionFailed':
        if (this.staleRemoteResults > 0) { this.staleRemoteResults -= 1; return []; }
        this.remoteResultsInFlight = Math.max(0, this.remoteResultsInFlight - 1);
        // Nothing is being applied any more (left set, it would hold back every offer, answer and restart), and the
        // connection that refused it will refuse the next one too: it is replaced.
        this.applyingRemote = false;
        this.renewalUnconfirmed = false;
        return this.#connectionWedged();
      case 'rollbackFailed':
        if (this.renewalUnconfirmed) return []; // the replaced connection's
        return this.#connectionWedged();
      case 'remoteDescriptionApplied': {
        if (this.staleRemoteResults > 0) { this.staleRemoteResults -= 1; return []; }
        this.renewalUnconfirmed = false;
        this.remoteResultsInFlight = Math.max(0, this.remoteResultsInFlight - 1);
        this.applyingRemote = false;
        this.hasRemoteDescription = true;
        // The peer renegotiated (its restart, say): a stall restart of ours still waiting would only cross it.
        if (event.kind === 'offer' && this.pendingRestart === 'mediaStall') this.pendingRestart = null;
        if (event.kind === 'offer') this.peerOfferSinceRestart = true;
        if (event.kind === 'answer' && this.offerMadeWhileStalled && this.mediaStalled) this.restartsWithoutMedia += 1;
        const flushed = this.remoteCandidateBuffer;
        this.remoteCandidateBuffer = [];
        const actions = flushed.length === 0 ? [] : [{ type: 'addRemoteCandidates', candidates: flushed }];
        if (event.kind === 'offer') {
          this.signalingState = 'haveRemoteOffer';
          if (!this.answering) {
            actions.push({ type: 'createAnswer' });
            this.answeringOffer = offerName(this.lastRemoteOffer);
          }
          this.answering = true;
        } else {
          this.signalingState = 'stable';
        }
        return actions;
      }
      case 'signalingStateChanged':
        this.signalingState = event.state;
        return [];
      case 'iceStateChanged':
        this.iceState = event.state;
        switch (event.state) {
          case 'connected':
          case 'completed':
            // Media came back by itself: a remembered restart is no longer needed.
            if (!this.mediaStalled && !outlastsMedia(this.pendingRestart)) this.pendingRestart = null;
            return [timerAction(cancel('iceRestartDelay'))];
          case 'disconnected':
            // The path is down now: what restarts do next says nothing of the connection, and the answer to one made
            // before (a network change's, say, just before the path moved) proves no more.
            this.restartsWithoutMedia = 0;
            this.offerMadeWhileStalled = false;
            if (!this.isHost || !this.peerPresent || this.peerSuspended) return [];
            return [timerAction(schedule('iceRestartDelay', RESILIENCE.ICE_DISCONNECTED_RESTART_DELAY_MS))];
          case 'failed':
            this.restartsWithoutMedia = 0;
            this.offerMadeWhileStalled = false;
            if (!this.isHost) return [];
            return [timerAction(cancel('iceRestartDelay')), ...this.#restart('iceFailed')];
          default:
            return [];
        }
      case 'networkOnline':
        return this.peerPresent ? this.#restart('networkOnline') : [];
      case 'networkPathChanged':
        if (!this.peerPresent || !(this.iceState === 'disconnected' || this.iceState === 'failed')) return [];
        return this.#restart('networkChange');
      case 'requestIceRestart':
        return this.peerPresent ? this.#restart('escalation') : [];
      case 'mediaStalled':
        this.mediaStalled = true;
        // At once: the watchdog already waited MEDIA_STALL_TIMEOUT_MS, longer than the disconnected delay.
        return this.peerPresent ? this.#restart('mediaStall') : [];
      case 'mediaFlowing':
        this.mediaStalled = false;
        this.stalledWhenLeft = false;
        this.restartsWithoutMedia = 0;
        if (!outlastsMedia(this.pendingRestart)) this.pendingRestart = null; // media came back by itself (ours, not the peer's)
        return [];
      case 'peerAskedForRestart':
        // Only a side that can restart: two that cannot (both `duet call`) must not ask each other back and forth.
        if (!this.peerPresent || (!this.isHost && this.restartsOnlyAsHost)) return [];
        // Our own restart offer, being made or waiting for its answer, is the restart asked for.
        if (this.offerIsRestart && (this.makingOffer || this.signalingState === 'haveLocalOffer')) return [];
        return this.#restart('peerRequest');
      case 'requestOfferResend':
        if (!this.peerPresent || !this.signalingUp || this.renewalPending) return [];
        if (this.signalingState === 'haveLocalOffer' && this.lastLocalOffer != null) {
          return [
            { type: 'sendOffer', sdp: this.lastLocalOffer },
            timerAction(schedule('offerTimeout', RESILIENCE.OFFER_TIMEOUT_MS)),
          ];
        }
        if (!this.isHost && this.restartsOnlyAsHost) return []; // no offer to cross the host's restart
        return this.#offer(false);
      case 'timerFired':
        return this.#timerFired(event.timer);
      default:
        return [];
    }
  }

  #timerFired(timer) {
    switch (timer) {
      case 'offerTimeout':
        return this.#offerTimedOut();
      case 'nonHostFallback':
        return this.#nonHostFallback();
      case 'iceRestartDelay':
        if (!(this.iceState === 'disconnected' || this.iceState === 'failed')) return [];
        return this.#restart('iceDisconnected');
      case 'iceRestartCooldown': {
        this.inCooldown = false;
        this.replacedInCooldown = false;
        if (this.renewalPending) return this.#connectionWedged();
        // Media still stalled under a connected ICE after the restart: restart again, a cooldown apart, until it
        // flows (a restart that keeps its credentials — webrtcbin's, until it gives its session up — may not have
        // moved the path). Not over a renegotiation the peer made meanwhile, and not when ICE itself is down: then
        // the ICE rules (the host's job) apply.
        const stalledStill = this.mediaStalled && (this.iceState === 'connected' || this.iceState === 'completed');
        if (stalledStill && this.pendingRestart == null && this.peerOfferSinceRestart) {
          // The peer's renegotiation gets one cooldown to show what it did: look again then (the timer only;
          // nothing else is held back meanwhile).
          this.peerOfferSinceRestart = false;
          return [timerAction(schedule('iceRestartCooldown', RESILIENCE.ICE_RESTART_COOLDOWN_MS))];
        }
        const reason = this.pendingRestart ?? (stalledStill ? 'mediaStall' : null);
        // (Signaling down: `#restart` keeps the reason for the reconnect.)
        if (reason == null || (this.mediaUp && !outlastsMedia(reason))) return [];
        this.pendingRestart = null;
        return this.#restart(reason);
      }
      default:
        return [];
    }
  }

  // Steps

  #startNegotiation(returning) {
    const stalledBefore = this.stalledWhenLeft;
    this.stalledWhenLeft = false;
    if (this.isHost) {
      // A connection that has been up before needs new ICE credentials for the (re)arrived peer, unless the
      // same peer comes back to a connection whose media flowed all along (only the room's view was lost, B3):
      // a plain offer settles the descriptions again without moving media off its path.
      const restart = this.iceState !== 'new' && !(returning && this.mediaUp && !stalledBefore);
      return [
        timerAction(cancel('nonHostFallback')),
        ...(restart ? [{ type: 'iceRestartStarted', reason: 'signalingReconnect' }] : []),
        ...this.#offer(restart),
      ];
    }
    if (this.hasRemoteDescription) return [];
    // Back first in a rebuilt room, with media that had stalled: the returning host offers nothing (it never saw
    // us leave), so the restart is ours; the fallback stays as the offer of last resort.
    const restarted = returning && stalledBefore ? this.#restart('mediaStall') : [];
    return [...restarted, timerAction(schedule('nonHostFallback', RESILIENCE.NON_HOST_FALLBACK_DELAY_MS))];
  }

  #leftAlone() {
    // A wedged connection waiting for the cooldown is replaced now (no rollback asked of it): the next peer must not
    // meet it.
    const renewal = this.renewalPending ? this.#replaceConnection() : [];
    this.renewalPending = false;
    this.peerOfferSinceRestart = false;
    this.makingOffer = false;
    this.answering = false;
    this.applyingRemote = false;
    this.nonHostFallbackAttempts = 0;
    this.pendingRestart = null;
    this.peerSuspended = false;
    this.hasRemoteDescription = false;
    this.newestRemoteOrigin = null;
    this.remoteSessionIds.clear(); // the next peer brings its own (and a long call must not fill the set)
    this.remoteCandidateBuffer = [];
    this.inCooldown = false;
    this.replacedInCooldown = false;
    this.stalledWhenLeft = this.stalledWhenLeft || this.mediaStalled; // told again by every view while alone
    this.mediaStalled = false;
    this.restartsWithoutMedia = 0;
    // An offer nobody will answer would block the next peer's negotiation.
    const rollback = this.signalingState === 'haveLocalOffer' ? [{ type: 'rollback' }] : [];
    this.signalingState = 'stable';
    return [
      ...renewal,
      ...rollback,
      ...['offerTimeout', 'nonHostFallback', 'iceRestartDelay', 'iceRestartCooldown'].map((id) => timerAction(cancel(id))),
    ];
  }

  #offer(iceRestart, fromFallback = false) {
    if (this.renewalPending || this.makingOffer || this.answering || this.applyingRemote || this.signalingState !== 'stable') return [];
    this.makingOffer = true;
    this.offerIsRestart = iceRestart;
    this.offerMadeWhileStalled = false;
    this.offerFromFallback = fromFallback;
    return [{ type: 'createOffer', iceRestart }];
  }

  #restart(reason) {
    if (!this.peerPresent) return []; // nobody to restart with
    if (this.peerSuspended) {
      // Away: nobody can answer (the relay would fail). Owed until it is back; a reason that outlasts media
      // is not displaced by one that does not.
      this.#owe(reason);
      return [];
    }
    if (!this.isHost && this.restartsOnlyAsHost) return this.#askHostToRestart(reason);
    if (this.renewalPending) return []; // not on a wedged connection: its replacement offers afresh
    if (!this.signalingUp) {
      this.#owe(reason);
      return [];
    }
    if (this.inCooldown || this.makingOffer || this.answering || this.applyingRemote || this.signalingState === 'haveRemoteOffer') {
      this.pendingRestart = reason === 'peerRequest' ? reason : this.pendingRestart ?? reason;
      return [];
    }
    this.pendingRestart = null; // this restart is the one anything waiting wanted
    // A stall under a working ICE. Not for webrtcbin (`restartsOnlyAsHost`): it gives a silent session up by itself, and
    // its offers carry a session id a browser takes for an echo of its own, so the browser would not renew for it (duet
    // call seed 768).
    const stalledUnderWorkingICE = this.mediaStalled && !this.restartsOnlyAsHost
      && (this.iceState === 'connected' || this.iceState === 'completed');
    // Restarts the peer took moved the path, and media still does not come: the path is not what is broken. Only the
    // stall's own restart (or an escalation's) renews: a network change, a timed-out offer or the peer's request is
    // restarted in place, their restart is the right tool.
    const stallRestart = stalledUnderWorkingICE && (reason === 'mediaStall' || reason === 'escalation');
    if (stallRestart && this.restartsWithoutMedia >= RESILIENCE.MEDIA_STALL_RESTARTS_BEFORE_RENEWAL) return this.#connectionWedged();
    const actions = [];
    if (this.signalingState === 'haveLocalOffer') {
      actions.push({ type: 'rollback' }, timerAction(cancel('offerTimeout')));
      this.signalingState = 'stable';
    }
    const offer = this.#offer(true);
    this.offerMadeWhileStalled = stalledUnderWorkingICE && offer.length > 0;
    return [...actions, { type: 'iceRestartStarted', reason }, ...offer];
  }

  /** Remembers a restart for later: the newest reason, except that one which outlasts media (a timed-out offer the
   *  peer may have taken) is not displaced by one that does not; the peer's own request always is kept. */
  #owe(reason) {
    if (reason === 'peerRequest' || !outlastsMedia(this.pendingRestart)) this.pendingRestart = reason;
  }

  // The guest that cannot restart in place asks the host, when the host can hear it and is not already
  // renegotiating with us (its offer, being applied or answered, is a restart or settles the path anew).
  #askHostToRestart(reason) {
    if (!this.signalingUp || this.renewalPending || this.answering || this.applyingRemote
      || this.signalingState === 'haveRemoteOffer') return [];
    return [{ type: 'askPeerToRestart', reason }];
  }

  #noteLocalSession(sdp) {
    // Bounded: a peer connection has one session id (Chromium), webrtcbin adds the ids it copies.
    const id = sdpOrigin(sdp)?.sessionId;
    if (id != null && !this.remoteSessionIds.has(id) && this.localSessionIds.size < 16) this.localSessionIds.add(id);
  }

  #remoteDescription(kind, sdp, answers = null) {
    const parsed = sdpOrigin(sdp);
    const origin = parsed != null && !this.localSessionIds.has(parsed.sessionId) ? parsed : null;
    // The peer's connection is new: ours must be too before it takes this description (a stable DTLS identity
    // keeps the fingerprint, and WebRTC redoes DTLS only when it changes).
    if (origin != null && this.retiredRemoteSessions.includes(origin.sessionId)) return []; // from a replaced connection
    if (origin != null && this.appliedRemoteSession != null && origin.sessionId !== this.appliedRemoteSession) {
      this.retiredRemoteSessions.push(this.appliedRemoteSession);
      if (this.retiredRemoteSessions.length > 16) this.retiredRemoteSessions.shift();
      const renewed = this.#renewPeerConnection();
      if (kind === 'offer') return [...renewed, ...this.#remoteDescription('offer', sdp)];
      // It answered the old connection's offer: the new one offers afresh (and never takes this answer).
      this.answerBeforeRenewal = origin;
      return [...renewed, ...this.#offer(false)];
    }
    if (this.renewalPending) return []; // the wedged connection would refuse it: the replacement offers afresh
    if (origin != null && this.remoteSessionIds.size < 16) this.remoteSessionIds.add(origin.sessionId);
    // Overtaken: the peer has already sent us something newer (a duplicated or reordered delivery).
    if (origin != null && this.newestRemoteOrigin != null && isOlder(origin, this.newestRemoteOrigin)) return [];
    if (kind === 'offer') {
      if (sdp === this.lastRemoteOffer && (this.answering || this.applyingRemote)) return []; // the answer is on its way
      if (sdp === this.lastRemoteOffer && this.signalingState === 'stable' && this.lastLocalAnswer != null) {
        return [sendAnswer(this.lastLocalAnswer, this.lastLocalAnswerAnswers)];
      }
      this.lastRemoteOffer = sdp;
      this.lastLocalAnswer = null;
      // Glare — unless our offer is already answered (the answer is being applied): then we will be stable.
      if ((this.signalingState === 'haveLocalOffer' || this.makingOffer) && !this.applyingRemote) {
        // Glare. The host keeps its offer; the non-host yields.
        if (this.isHost) return [];
        this.makingOffer = false;
        this.signalingState = 'stable';
        this.applyingRemote = true;
        this.newestRemoteOrigin = origin ?? this.newestRemoteOrigin;
        this.appliedRemoteSession = origin?.sessionId ?? this.appliedRemoteSession;
        return [
          { type: 'rollback' },
          timerAction(cancel('offerTimeout')),
          timerAction(cancel('nonHostFallback')),
          this.#apply('offer', sdp),
        ];
      }
      this.applyingRemote = true;
      this.newestRemoteOrigin = origin ?? this.newestRemoteOrigin;
      this.appliedRemoteSession = origin?.sessionId ?? this.appliedRemoteSession;
      return [timerAction(cancel('nonHostFallback')), this.#apply('offer', sdp)];
    }
    // A copy of the answer to the old connection.
    const before = this.answerBeforeRenewal;
    if (origin != null && before != null && origin.sessionId === before.sessionId && origin.version === before.version) return [];
    if (this.signalingState !== 'haveLocalOffer' || this.applyingRemote) return []; // late or duplicate answer
    // The answer to an offer of ours rolled back since (a restart over an unanswered offer, an offer timed out): applied
    // to the offer now out, it would leave us with the peer's ICE credentials of a negotiation it has moved on from,
    // checking an ICE generation the peer keeps only until the new one connects, and it never does (issue 51). The
    // answer to the offer now out follows it. (A peer that does not name the offer it answers is taken at its word.)
    if (answers != null && this.lastLocalOffer != null && answers !== offerName(this.lastLocalOffer)) return [];
    if (this.sessionLeftBehind != null) {
      const left = this.sessionLeftBehind;
      this.sessionLeftBehind = null;
      if (origin?.sessionId !== left) {
        this.retiredRemoteSessions.push(left);
        if (this.retiredRemoteSessions.length > 16) this.retiredRemoteSessions.shift();
      }
    }
    this.applyingRemote = true;
    this.newestRemoteOrigin = origin ?? this.newestRemoteOrigin;
    this.appliedRemoteSession = origin?.sessionId ?? this.appliedRemoteSession;
    this.peerTookOurOffer = true;
    return [timerAction(cancel('offerTimeout')), this.#apply('answer', sdp)];
  }

  #apply(kind, sdp) {
    this.remoteResultsInFlight += 1;
    return { type: 'setRemoteDescription', kind, sdp };
  }

  /**
   * A connection that refused a description or a rollback: replace it and offer afresh from the new one (a session the
   * peer has not seen: its connection renews for it if it took one of ours), at most once per cooldown. With nobody there, the new
   * connection waits for the next peer, whom the host offers to as always.
   */
  #connectionWedged() {
    if (this.inCooldown && this.replacedInCooldown) {
      this.renewalPending = true;
      return [];
    }
    const actions = this.#replaceConnection();
    if (!this.peerPresent) return actions;
    this.inCooldown = true;
    this.replacedInCooldown = true;
    actions.push(
      timerAction(schedule('iceRestartCooldown', RESILIENCE.ICE_RESTART_COOLDOWN_MS)),
      { type: 'iceRestartStarted', reason: 'peerConnectionWedged' },
    );
    return [...actions, ...this.#offer(false)];
  }

  /** Renewal for a connection of ours that is wedged: the peer's connection was negotiating with the one we give up. */
  #replaceConnection() {
    if (this.appliedRemoteSession != null && this.peerTookOurOffer) {
      this.retiredRemoteSessions.push(this.appliedRemoteSession);
      if (this.retiredRemoteSessions.length > 16) this.retiredRemoteSessions.shift();
    } else {
      this.sessionLeftBehind = this.appliedRemoteSession;
    }
    return this.#renewPeerConnection();
  }

  /** Close ours and start over on a new one: nothing of the old connection's negotiation carries over. */
  #renewPeerConnection() {
    this.renewalUnconfirmed = true;
    this.renewalPending = false; // whatever made it, the wedged connection is gone
    this.restartsWithoutMedia = 0; // the new connection gets its own restarts
    this.peerOfferSinceRestart = false;
    this.peerTookOurOffer = false;
    this.appliedRemoteSession = null;
    this.answerBeforeRenewal = null;
    this.staleLocalResults += this.makingOffer || this.answering ? 1 : 0;
    this.staleRemoteResults += this.remoteResultsInFlight;
    this.remoteResultsInFlight = 0;
    // A restart offer still being made is made all the same, by the old connection: it counts for the pacing.
    this.staleRestartOffer = this.staleRestartOffer || (this.makingOffer && this.offerIsRestart);
    this.makingOffer = false;
    this.answering = false;
    this.applyingRemote = false;
    this.signalingState = 'stable';
    this.hasRemoteDescription = false;
    this.newestRemoteOrigin = null;
    this.lastLocalOffer = null;
    this.lastRemoteOffer = null;
    this.lastLocalAnswer = null;
    this.answeringOffer = null;
    this.lastLocalAnswerAnswers = null;
    this.localSessionIds.clear(); // the new connection has its own (and the set is bounded)
    this.remoteCandidateBuffer = []; // for the connection that is gone
    this.iceState = 'new';
    this.pendingRestart = null;
    // The restart cooldown stays: it paces restarts whatever connection they are on.
    return [{ type: 'renewPeerConnection' }, ...['offerTimeout', 'iceRestartDelay'].map((t) => timerAction(cancel(t)))];
  }

  #offerTimedOut() {
    if (this.signalingState !== 'haveLocalOffer') {
      return this.offerFromFallback ? [] : this.#restart('offerTimeout');
    }
    this.signalingState = 'stable';
    const actions = [{ type: 'rollback' }];
    if (this.offerFromFallback) {
      // A non-host fallback offer is not an ICE problem: try the fallback once more instead.
      if (this.nonHostFallbackAttempts < RESILIENCE.NON_HOST_FALLBACK_MAX_ATTEMPTS && !this.hasRemoteDescription) {
        actions.push(timerAction(schedule('nonHostFallback', RESILIENCE.NON_HOST_FALLBACK_DELAY_MS)));
      }
      return actions;
    }
    this.inCooldown = false; // the timed-out restart did not happen: do not hold the next one back
    this.replacedInCooldown = false;
    if (this.renewalPending) return [timerAction(cancel('iceRestartCooldown')), ...this.#connectionWedged()];
    actions.push(timerAction(cancel('iceRestartCooldown')));
    return [...actions, ...this.#restart('offerTimeout')];
  }

  #nonHostFallback() {
    if (this.isHost || !this.peerPresent || this.hasRemoteDescription || this.signalingState !== 'stable'
      || this.makingOffer || this.nonHostFallbackAttempts >= RESILIENCE.NON_HOST_FALLBACK_MAX_ATTEMPTS) {
      return [];
    }
    this.nonHostFallbackAttempts += 1;
    return this.#offer(false, true);
  }
}
