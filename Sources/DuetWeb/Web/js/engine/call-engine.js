// Port of CallEngine.swift (+ CallEvent.swift). The whole call engine as one pure value: it routes
// every input to the machines that care and turns their actions into outputs for the runtime (open a
// transport, send an envelope, drive WebRTC, fetch TURN credentials, schedule timers, tell the app).
// No I/O, clock or task lives here; the only randomness is the default jitter seed, drawn once in the
// constructor.
//
// Inputs, outputs and events are plain objects `{type, ...}` named after the Swift cases, with
// associated values as named fields (e.g. `{type:'joinRoom', roomId}`, `{type:'engine', command:
// {type:'createOffer', iceRestart}}`). Enum values are the Swift case names ('inCall', 'recovering').
// `options.resume` and the `{type:'session', seat}` event let a reloaded page reclaim its seat.
import { RESILIENCE } from '../constants.js';
import { CallPhaseMachine } from '../machines/call-phase-machine.js';
import { ConnectionStatusMachine } from '../machines/connection-status-machine.js';
import { JoinMachine, joinOptions } from '../machines/join-machine.js';
import { MediaWatchdogMachine } from '../machines/media-watchdog-machine.js';
import { NegotiationMachine } from '../machines/negotiation-machine.js';
import { SignalingLinkMachine } from '../machines/signaling-link-machine.js';
import { TIMER_IDS, cancel, schedule } from '../machines/timers.js';
import { TrickleIceMachine } from '../machines/trickle-ice-machine.js';
import { TurnMachine } from '../machines/turn-machine.js';

// MARK: - Outputs

const timer = (command) => ({ type: 'timer', command });
const engine = (command) => ({ type: 'engine', command });
const emit = (event) => ({ type: 'emit', event });
const send = (envelope) => ({ type: 'send', envelope });
const closeTransport = () => ({ type: 'closeTransport' });

// MARK: - Inputs from WebRTC

/** W3C RTCSignalingState → NegotiationMachine.SignalingState (the Swift names are accepted too). */
const SIGNALING_STATES = Object.freeze({
  'stable': 'stable',
  'have-local-offer': 'haveLocalOffer',
  'have-remote-offer': 'haveRemoteOffer',
  'haveLocalOffer': 'haveLocalOffer',
  'haveRemoteOffer': 'haveRemoteOffer',
});

const ICE_STATES = new Set(['new', 'checking', 'connected', 'completed', 'disconnected', 'failed', 'closed']);

const WEBRTC_INPUTS = new Set([
  'localDescriptionReady', 'localDescriptionFailed', 'remoteDescriptionApplied', 'remoteDescriptionFailed', 'rollbackFailed', 'localCandidate',
  'gatheringComplete', 'iceStateChanged', 'connectionStateChanged', 'signalingStateChanged', 'mediaSampled',
]);

/** IceState → ConnectionStatusMachine.IceHealth */
export function health(state) {
  switch (state) {
    case 'connected':
    case 'completed':
      return 'connected';
    case 'disconnected':
      return 'disconnected';
    case 'failed':
    case 'closed':
      return 'failed';
    default:
      return 'pending';
  }
}

// MARK: - Wire payloads (what Swift's Codable would accept; anything else is ignored like `try?`)

const ERROR_CODES = new Set([
  'BAD_REQUEST', 'UNSUPPORTED_VERSION', 'INVALID_ROOM_ID', 'ROOM_FULL', 'NOT_HOST', 'NOT_IN_ROOM',
  'INVALID_RECONNECT_TOKEN', 'ROOM_ENDED', 'RATE_LIMITED', 'MESSAGE_TOO_LARGE', 'TURN_REFRESH_FAILED', 'INTERNAL',
]);
const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
const isString = (value) => typeof value === 'string';
const isInt = (value) => typeof value === 'number' && Number.isInteger(value);
/** What Swift decodes as an Int64 (a larger number fails its decoding, and the whole payload with it). */
const isInt64 = (value) => isInt(value) && value >= -(2 ** 63) && value < 2 ** 63;
/** A node's name as a `via` may carry it (CallEngine.swift `acceptableVia`): anything else is no via at all. */
const ACCEPTABLE_VIA = /^[A-Za-z0-9._~-]{1,64}$/;
const isAbsent = (value) => value === undefined || value === null;

/** MediaState: the three booleans, all required (else null, like Swift's Codable). */
export function decodeMediaState(value) {
  if (!isObject(value) || typeof value.audio !== 'boolean' || typeof value.video !== 'boolean' || typeof value.screen !== 'boolean') return null;
  return { audio: value.audio, video: value.video, screen: value.screen };
}

const sameMedia = (a, b) => (a == null || b == null ? a == b : a.audio === b.audio && a.video === b.video && a.screen === b.screen);

/** A media watchdog sample: an integer packet count, or null for anything else (Swift's Int64?). */
export function decodePacketCount(value) {
  return Number.isSafeInteger(value) ? value : null;
}

function decodeParticipant(value) {
  if (!isObject(value) || !isString(value.cid) || !isInt(value.joinedAt)) return null;
  const participant = { cid: value.cid, joinedAt: value.joinedAt };
  if (!isAbsent(value.connectionStatus)) {
    if (value.connectionStatus !== 'connected' && value.connectionStatus !== 'suspended') return null;
    participant.connectionStatus = value.connectionStatus;
  }
  if (!isAbsent(value.media)) {
    const media = decodeMediaState(value.media);
    if (media == null) return null;
    participant.media = media;
  }
  return participant;
}

function decodeParticipants(value) {
  if (!Array.isArray(value)) return null;
  const participants = value.map(decodeParticipant);
  return participants.includes(null) ? null : participants;
}

function decodeRoomState(p) {
  const participants = decodeParticipants(p.participants);
  if (!isString(p.hostCid) || participants == null || !isInt(p.epoch)) return null;
  return { hostCid: p.hostCid, participants, epoch: p.epoch };
}

function decodeJoined(p) {
  const state = decodeRoomState(p);
  if (state == null || !isInt(p.maxParticipants) || !['fresh', 'reattached', 'recovered'].includes(p.reconnect)
    || !isString(p.reconnectToken) || !isInt(p.reconnectTokenTTLMs) || !isString(p.turnToken)
    || !isInt(p.turnTokenExpiresAt) || !isInt(p.turnTokenTTLMs)) return null;
  return {
    ...state, reconnect: p.reconnect, reconnectToken: p.reconnectToken, reconnectTokenTTLMs: p.reconnectTokenTTLMs,
    turnToken: p.turnToken, turnTokenTTLMs: p.turnTokenTTLMs,
  };
}

function decodeError(p) {
  if (!ERROR_CODES.has(p.code) || !isString(p.message) || typeof p.retryable !== 'boolean') return null;
  return { code: p.code, message: p.message, retryable: p.retryable };
}

/** IceCandidate; `undefined` when malformed (null is end-of-candidates). */
function decodeCandidate(value) {
  if (value === null) return null;
  if (!isObject(value) || !isString(value.candidate)) return undefined;
  if (!isAbsent(value.sdpMid) && !isString(value.sdpMid)) return undefined;
  if (!isAbsent(value.sdpMLineIndex) && !isInt(value.sdpMLineIndex)) return undefined;
  return { candidate: value.candidate, sdpMid: value.sdpMid ?? null, sdpMLineIndex: value.sdpMLineIndex ?? null };
}

/** `{v:1, type, rid?, payload}` ready for JSON.stringify. */
function makeEnvelope(type, rid = null, payload = {}) {
  const envelope = { v: 1, type };
  if (rid != null) envelope.rid = rid;
  envelope.payload = payload;
  return envelope;
}

/** IcePayload: `{candidate:{candidate, sdpMid?, sdpMLineIndex?}}`, or `{candidate:null}` — null must be written. */
function icePayload(candidate) {
  if (candidate == null) return { candidate: null };
  const wire = { candidate: candidate.candidate };
  if (candidate.sdpMid != null) wire.sdpMid = candidate.sdpMid;
  if (candidate.sdpMLineIndex != null) wire.sdpMLineIndex = candidate.sdpMLineIndex;
  return { candidate: wire };
}

function randomSeed() {
  const high = BigInt(Math.floor(Math.random() * 2 ** 32));
  const low = BigInt(Math.floor(Math.random() * 2 ** 32));
  return (high << 32n) | low;
}

// MARK: - Engine

export class CallEngine {
  #roomId = null;
  #cid = null;
  #hostCid = null;
  #reconnectToken = null;
  /** The node the last `draining` named for this room (CallEngine.swift's `via` says how long it is kept). */
  #via = null;
  #viaFailedConnects = 0;
  #participants = [];
  #epoch = 0;
  #peerCid = null;
  /** The seat of the last peer we had, kept while it is missing from the room's view: a server that lost the room
   * sees it come back with the same cid (a seat that left or was evicted never does: its token is revoked). */
  #lastPeerCid = null;
  #peerEpoch = 0;
  #peerSuspended = false;
  /** Set after a signaling reconnect until the first `room_state`. */
  #awaitingRoomStateAfterReconnect = false;
  /** Relayed messages written while signaling was down, stamped with the peer session (its epoch) they belong to. */
  #outbox = [];
  /** A rejoin was sent and not yet acknowledged: relays wait for it. */
  #rejoinPending = false;
  /** The seat a reloaded page had: used by the first join, if it is for that room. */
  #resume = null;
  #joiningWithKeptSeat = false;
  /** What this side last said of its media (sent after every join, so a restarted server and the peer learn it). */
  #localMedia;
  /** What the other participant last said of its media; null until it said something (or after it left). */
  #remoteMedia = null;
  /** 'unverified', 'verified' or 'intercepted' (Swift's `Verification`). */
  #verification = 'unverified';

  /**
   * options: {join: {prepareSnapshot, pushSupported}, sseOnly, jitterSeed, device, resume}.
   * `jitterSeed` undefined draws a random seed; null turns jitter off (Swift's nil); a number or
   * bigint seeds SplitMix64. `resume: {roomId, cid, reconnectToken}` reclaims a seat after a reload.
   */
  constructor(options = {}) {
    this.options = Object.freeze({
      join: joinOptions(options.join),
      sseOnly: options.sseOnly === true,
      jitterSeed: options.jitterSeed === undefined ? randomSeed() : options.jitterSeed,
      device: options.device === undefined ? 'web' : options.device,
      restartsOnlyAsHost: options.restartsOnlyAsHost === true,
      localMedia: Object.freeze(decodeMediaState(options.localMedia) ?? { audio: true, video: true, screen: false }),
      // The link carries a key (#k=): the runtime signs our descriptions and passes on only the peer's that verify;
      // one that does not comes as `descriptionRejected` and ends the call as intercepted.
      keyedLink: options.keyedLink === true,
    });
    this.#localMedia = this.options.localMedia;
    const resume = options.resume;
    if (resume != null && isString(resume.roomId) && isString(resume.cid) && isString(resume.reconnectToken)) {
      this.#resume = { roomId: resume.roomId, cid: resume.cid, reconnectToken: resume.reconnectToken };
    }
    this.phaseMachine = new CallPhaseMachine();
    this.#resetMachines();
  }

  get phase() { return this.phaseMachine.phase; }
  get connectionStatus() { return this.status.status; }
  get transport() { return this.link.transport; }
  get roomId() { return this.#roomId; }
  get cid() { return this.#cid; }
  get hostCid() { return this.#hostCid; }
  get reconnectToken() { return this.#reconnectToken; }
  get via() { return this.#via; }

  /** As Swift's `didSet`: a new via (or none) starts its failed connects from 0. */
  #setVia(via) {
    this.#via = via;
    this.#viaFailedConnects = 0;
  }
  get participants() { return this.#participants; }
  get iceState() { return this.negotiation.iceState; }
  get epoch() { return this.#epoch; }
  get localMedia() { return this.#localMedia; }
  get remoteMedia() { return this.#remoteMedia; }
  get verification() { return this.#verification; }
  /** Relays written while signaling was down, waiting for the rejoin (tests watch it). */
  get queuedRelayTypes() { return this.#outbox.map((entry) => entry.envelope.type); }
  get isSignalingUp() { return this.link.transport != null; }

  /** One input in, every output it causes out. */
  handle(input) {
    const before = this.#seat();
    const out = this.#route(input);
    // The watchdog follows ICE as the negotiation sees it, whatever changed it (an ICE event, a renewal, a reset).
    out.push(...this.#syncWatchdog());
    // The app keeps the seat (on disk, in session storage) so that a new process or a reload can reclaim it.
    const after = this.#seat();
    if (before?.roomId !== after?.roomId || before?.cid !== after?.cid || before?.reconnectToken !== after?.reconnectToken) {
      out.push(emit({ type: 'session', seat: after }));
    }
    return out;
  }

  /** Seat: `{roomId, cid, reconnectToken}` while all three are known, else null. */
  #seat() {
    if (this.#roomId == null || this.#cid == null || this.#reconnectToken == null) return null;
    return { roomId: this.#roomId, cid: this.#cid, reconnectToken: this.#reconnectToken };
  }

  #route(input) {
    // WebRTC news that arrives after the call is over (late candidates, the close itself) is dropped.
    if (WEBRTC_INPUTS.has(input.type) && this.phase !== 'waiting' && this.phase !== 'inCall') return [];
    switch (input.type) {
      case 'startNewCall': return this.#phaseEvent({ type: 'startNewCall' });
      case 'joinRoom': return this.#phaseEvent({ type: 'joinRoom', roomId: input.roomId });
      case 'leave': return this.#phaseEvent({ type: 'leaveCall' });
      case 'end': return this.#phaseEvent({ type: 'endCall' });
      case 'dismissError': return this.#phaseEvent({ type: 'dismissError' });
      case 'localMediaChanged': {
        const media = decodeMediaState(input.media);
        return media ? this.#localMediaChanged(media) : [];
      }
      case 'replaced': return this.#phaseEvent({ type: 'replaced' });
      case 'roomIdCreated': return this.#phaseEvent({ type: 'roomIdReceived', roomId: input.roomId });
      case 'roomIdFailed': return this.#phaseEvent({ type: 'roomIdFailed', reason: input.reason });
      case 'turnCredentialsFetched': return this.#turnEvent({ type: 'fetched', ttlSeconds: input.ttlSeconds });
      case 'turnCredentialsFailed': return this.#turnEvent({ type: 'fetchFailed' });
      case 'snapshotReady': return this.#joinEvent({ type: 'snapshotReady', snapshotId: input.snapshotId ?? null });
      case 'pushEndpointReady': return this.#joinEvent({ type: 'pushEndpointReady', endpoint: input.endpoint ?? null });
      case 'transportOpened': return this.#transportOpened(input.transport);
      case 'transportOpenFailed':
        return this.#linkEvent({ type: 'openFailed', transport: input.transport, failure: input.failure });
      case 'transportClosed': return this.#linkEvent({ type: 'closed', reason: input.reason });
      case 'message': return isObject(input.envelope) ? this.#message(input.envelope) : [];
      case 'descriptionRejected': return isObject(input.envelope) ? this.#descriptionRejected(input.envelope) : [];
      // The DTLS handshake's certificate is not the verified description's (fed by runtimes whose WebRTC does not
      // check it itself; a browser's does, so its runtime never feeds this). Applied already: always intercepted.
      case 'certificateMismatch':
        if (!this.options.keyedLink || (this.phase !== 'waiting' && this.phase !== 'inCall')) return [];
        return this.#phaseEvent({ type: 'intercepted', tellPeer: true });
      case 'localDescriptionReady':
        // A result of a connection renewed since: the negotiation machine drops it, and nothing else may see it.
        if (this.negotiation.staleLocalResults > 0) return this.#negotiationEvent({ type: 'localDescriptionReady', kind: input.kind, sdp: input.sdp });
        return [
          ...this.#negotiationEvent({ type: 'localDescriptionReady', kind: input.kind, sdp: input.sdp }),
          ...this.#trickleEvent({ type: input.kind === 'offer' ? 'offerSent' : 'answerSent' }),
        ];
      case 'localDescriptionFailed':
        if (this.negotiation.staleLocalResults > 0) return this.#negotiationEvent({ type: 'localDescriptionFailed' });
        return [...this.#negotiationEvent({ type: 'localDescriptionFailed' }), ...this.#trickleEvent({ type: 'descriptionFailed' })];
      case 'remoteDescriptionFailed': return this.#negotiationEvent({ type: 'remoteDescriptionFailed', kind: input.kind });
      case 'rollbackFailed': return this.#negotiationEvent({ type: 'rollbackFailed' });
      case 'remoteDescriptionApplied': {
        if (this.negotiation.staleRemoteResults > 0) return this.#negotiationEvent({ type: 'remoteDescriptionApplied', kind: input.kind });
        const out = input.kind === 'offer' ? this.#trickleEvent({ type: 'answering' }) : [];
        out.push(...this.#negotiationEvent({ type: 'remoteDescriptionApplied', kind: input.kind }));
        out.push(...this.#watchdogEvent({ type: 'renegotiated' }));
        // On a keyed link the runtime hands over only descriptions whose fingerprints the key proves.
        if (this.options.keyedLink) out.push(...this.#verificationChanged('verified'));
        // An ICE restart on a connection that never dropped produces no new ICE event: re-check.
        if (input.kind === 'answer') out.push(...this.#statusEvent({ type: 'ice', health: this.#mediaHealth() }));
        return out;
      }
      case 'localCandidate': return this.#trickleEvent({ type: 'localCandidate', candidate: input.candidate });
      case 'gatheringComplete': return this.#trickleEvent({ type: 'gatheringComplete' });
      case 'iceStateChanged':
      case 'connectionStateChanged': {
        // Seeds 000 §6/§8: "conn-disconnected" schedules the same restart as ICE's own state.
        // RTCPeerConnectionState says 'connecting' where RTCIceConnectionState says 'checking'.
        const state = input.type === 'connectionStateChanged' && input.state === 'connecting' ? 'checking' : input.state;
        if (!ICE_STATES.has(state)) return [];
        const out = this.#negotiationEvent({ type: 'iceStateChanged', state });
        out.push(...this.#syncWatchdog());
        out.push(...this.#statusEvent({ type: 'ice', health: this.#mediaHealth() }));
        return out;
      }
      case 'signalingStateChanged': {
        // `have-*-pranswer` and `closed` have no Swift counterpart: the machine never sees them.
        const state = SIGNALING_STATES[input.state];
        return state ? this.#negotiationEvent({ type: 'signalingStateChanged', state }) : [];
      }
      case 'mediaSampled': return this.#watchdogEvent({ type: 'sampled', packets: decodePacketCount(input.packets) });
      case 'networkOnline': {
        const out = [...this.#negotiationEvent({ type: 'networkOnline' }), ...this.#statusEvent({ type: 'networkChanged' })];
        if (this.link.state.type === 'waitingToReconnect') out.push(...this.#linkEvent({ type: 'connect' })); // don't sit out the backoff
        return out;
      }
      case 'networkPathChanged': {
        const out = this.#negotiationEvent({ type: 'networkPathChanged' });
        const healthy = this.isSignalingUp && this.#mediaHealth() === 'connected';
        if (this.phase === 'inCall' && !healthy) out.push(...this.#statusEvent({ type: 'networkChanged' }));
        if (this.link.state.type === 'waitingToReconnect') out.push(...this.#linkEvent({ type: 'connect' }));
        return out;
      }
      case 'networkOffline': {
        // No ICE restart and no reconnect now (they would fail); a call already unhealthy shows it at once.
        const healthy = this.isSignalingUp && this.#mediaHealth() === 'connected';
        return this.phase === 'inCall' && !healthy ? this.#statusEvent({ type: 'networkChanged' }) : [];
      }
      case 'timerFired': return this.#timerFired(input.timer);
      case 'teardownFinished': return this.#phaseEvent({ type: 'cleanupComplete' });
      default: return [];
    }
  }

  // MARK: - Routing each machine's actions

  #phaseEvent(event) {
    const out = [];
    for (const action of this.phaseMachine.handle(event)) {
      switch (action.type) {
        case 'requestRoomId':
          out.push({ type: 'createRoomId' });
          break;
        case 'startJoin':
          this.#roomId = action.roomId;
          this.#takeResume(action.roomId);
          out.push(...this.#verificationChanged('unverified', true));
          out.push(emit({ type: 'room', roomId: action.roomId }));
          out.push(...this.#joinEvent({ type: 'start', options: this.options.join }));
          if (this.link.state.type === 'idle') out.push(...this.#linkEvent({ type: 'connect' }));
          break;
        case 'phaseChanged':
          out.push(emit({ type: 'phase', phase: action.phase }));
          out.push(...this.#statusEvent({ type: 'phaseChanged', phase: action.phase }));
          if (action.phase === 'inCall') out.push(engine({ type: 'ensurePeerConnection' }));
          break;
        case 'teardown':
          out.push(...this.#teardown(action.kind, action.tellPeer));
          break;
        case 'failed':
          out.push(emit({ type: 'failure', failure: action.failure }));
          out.push(...this.#joinEvent({ type: 'cancel' }), ...this.#linkEvent({ type: 'stop' }), ...this.#turnEvent({ type: 'stop' }));
          out.push(...TIMER_IDS.map((id) => timer(cancel(id))));
          out.push(engine({ type: 'close' }));
          out.push(...this.#remoteMediaLearned(null)); // nobody on the other side any more: the app is told
          this.#resetSession();
          break;
      }
    }
    return out;
  }

  /** Duet web: a reloaded page proves its old seat with the stored token (once, and only for that room). */
  #takeResume(roomId) {
    const resume = this.#resume;
    this.#resume = null;
    if (resume == null || resume.roomId !== roomId || this.#cid != null) return;
    this.#cid = resume.cid;
    this.#reconnectToken = resume.reconnectToken;
    this.#joiningWithKeptSeat = true;
  }

  #statusEvent(event) {
    const out = [];
    for (const action of this.status.handle(event)) {
      switch (action.type) {
        case 'statusChanged':
          out.push(emit({ type: 'connectionStatus', status: action.status }));
          break;
        case 'timer':
          out.push(timer(action.command));
          break;
        case 'escalate':
          out.push(emit({ type: 'escalation', step: action.step }));
          switch (action.step) {
            case 'iceRestart': out.push(...this.#negotiationEvent({ type: 'requestIceRestart' })); break;
            case 'offerResend': out.push(...this.#negotiationEvent({ type: 'requestOfferResend' })); break;
            case 'rejoin': out.push(...(this.isSignalingUp ? this.#sendRejoin() : this.#linkEvent({ type: 'connect' }))); break;
            case 'transportFallback': out.push(...this.#linkEvent({ type: 'forceFallback' })); break;
          }
          break;
      }
    }
    return out;
  }

  #linkEvent(event) {
    // Connects through a drain's node failed VIA_FAILED_CONNECTS_TO_FORGET times in a row: CallEngine.swift says why.
    if (this.#via != null && this.link.state.type === 'connecting') {
      if (event.type === 'openFailed' || (event.type === 'timerFired' && event.timer === 'connectTimeout')) {
        this.#viaFailedConnects += 1;
        if (this.#viaFailedConnects >= RESILIENCE.VIA_FAILED_CONNECTS_TO_FORGET) this.#setVia(null);
      } else if (event.type === 'opened') {
        this.#viaFailedConnects = 0;
      }
    }
    const out = [];
    for (const action of this.link.handle(event)) {
      switch (action.type) {
        case 'open': out.push(this.#via == null ? { type: 'openTransport', transport: action.transport } : { type: 'openTransport', transport: action.transport, via: this.#via }); break;
        case 'close': out.push(closeTransport()); break;
        case 'sendPing': out.push(send(makeEnvelope('ping', null, { ts: 0 }))); break;
        case 'up': out.push(emit({ type: 'transport', transport: action.transport })); break;
        case 'down':
          this.#rejoinPending = false;
          out.push(emit({ type: 'transport', transport: null }));
          out.push(
            ...this.#joinEvent({ type: 'signalingClosed' }),
            ...this.#negotiationEvent({ type: 'signaling', up: false }),
            ...this.#turnEvent({ type: 'signaling', up: false }),
          );
          out.push(...this.#statusEvent({ type: 'signaling', up: false }));
          break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  #joinEvent(event) {
    const out = [];
    for (const action of this.join.handle(event)) {
      switch (action.type) {
        case 'prepareSnapshot': out.push({ type: 'prepareSnapshot' }); break;
        case 'requestPushEndpoint': out.push({ type: 'requestPushEndpoint' }); break;
        case 'ensureSignalingConnection': out.push(...this.#linkEvent({ type: 'connect' })); break;
        case 'sendJoin': out.push(send(this.#joinEnvelope(action.snapshotId, action.pushEndpoint))); break;
        case 'promote': out.push(...this.#phaseEvent({ type: 'joined', participants: this.#participants.length })); break;
        case 'fail':
          // Joining with a kept seat is a call in progress coming back, not a new join: it never times out.
          if (this.#joiningWithKeptSeat) out.push(...this.#joinEvent({ type: 'start', options: this.options.join }));
          else out.push(...this.#phaseEvent({ type: 'joinHardTimeout' }));
          break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  #negotiationEvent(event) {
    const out = [];
    for (const action of this.negotiation.handle(event)) {
      switch (action.type) {
        case 'renewPeerConnection':
          out.push(...this.#trickleEvent({ type: 'connectionRenewed' }), engine({ type: 'renewPeerConnection' }));
          break;
        case 'createOffer':
          out.push(...this.#trickleEvent({ type: 'offering' }), engine({ type: 'createOffer', iceRestart: action.iceRestart }));
          break;
        case 'createAnswer': out.push(engine({ type: 'createAnswer' })); break;
        case 'setRemoteDescription':
          out.push(engine({ type: 'setRemoteDescription', kind: action.kind, sdp: action.sdp }));
          break;
        case 'rollback':
          // A rolled-back offer must never reach the peer, however late signaling comes back. (Candidates kept
          // with it still go: they carry no ICE credentials, and WebRTC matches them to what it holds.)
          this.#outbox = this.#outbox.filter((entry) => entry.envelope.type !== 'offer');
          out.push(engine({ type: 'rollback' }));
          break;
        case 'addRemoteCandidates': out.push(engine({ type: 'addRemoteCandidates', candidates: action.candidates })); break;
        case 'sendOffer': out.push(...this.#relay('offer', { sdp: action.sdp })); break;
        case 'sendAnswer':
          out.push(...this.#relay('answer', action.answers != null ? { sdp: action.sdp, offer: action.answers } : { sdp: action.sdp }));
          break;
        case 'iceRestartStarted': out.push(emit({ type: 'iceRestart', reason: action.reason })); break;
        case 'askPeerToRestart': out.push(...this.#relay('restart_request', { reason: action.reason })); break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  #trickleEvent(event) {
    const out = [];
    for (const action of this.trickle.handle(event)) {
      switch (action.type) {
        case 'sendCandidate': out.push(...this.#relay('ice', icePayload(action.candidate))); break;
        case 'sendEndOfCandidates': out.push(...this.#relay('ice', icePayload(null))); break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  #watchdogEvent(event) {
    const out = [];
    for (const action of this.watchdog.handle(event)) {
      switch (action.type) {
        case 'sample': out.push({ type: 'sampleMedia' }); break;
        case 'stalled':
          out.push(...this.#statusEvent({ type: 'ice', health: 'disconnected' }), ...this.#negotiationEvent({ type: 'mediaStalled' }));
          break;
        case 'flowing':
          out.push(...this.#negotiationEvent({ type: 'mediaFlowing' }));
          out.push(...this.#statusEvent({ type: 'ice', health: this.#mediaHealth() }));
          break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  /**
   * Tells the watchdog whether ICE is connected with a peer in the call, when that changed. Alone (waiting) there is
   * nobody to hear, and a peer that comes back is judged from a new baseline.
   */
  #syncWatchdog() {
    const out = [];
    if (this.phase !== 'inCall' && this.watchdog.stalled) {
      // Nobody to hear (the peer left; its leaving reset the negotiation's stall too): the status hears ICE's own word
      // again, or it would keep the stall's "disconnected" for the next peer.
      out.push(...this.#watchdogEvent({ type: 'reset' }), ...this.#statusEvent({ type: 'ice', health: this.#mediaHealth() }));
    }
    const connected = this.phase === 'inCall' && health(this.negotiation.iceState) === 'connected';
    if (connected !== this.watchdog.iceConnected) out.push(...this.#watchdogEvent({ type: 'ice', connected }));
    return out;
  }

  /** ICE's health as the call sees it: connected ICE whose media stalled is disconnected. */
  #mediaHealth() {
    return this.negotiation.mediaStalled ? 'disconnected' : health(this.negotiation.iceState);
  }

  #turnEvent(event) {
    const out = [];
    for (const action of this.turn.handle(event)) {
      switch (action.type) {
        case 'fetchCredentials': out.push({ type: 'fetchTurnCredentials', token: action.token }); break;
        case 'applyFetchedServers': out.push(engine({ type: 'applyFetchedIceServers' })); break;
        case 'applyFallbackServers': out.push(engine({ type: 'applyFallbackIceServers' })); break;
        case 'sendTurnRefresh': if (this.isSignalingUp) out.push(send(makeEnvelope('turn-refresh'))); break;
        case 'timer': out.push(timer(action.command)); break;
      }
    }
    return out;
  }

  #timerFired(id) {
    switch (id) {
      case 'pushEndpointWait': case 'snapshotPrepare': case 'joinKickstart': case 'joinRecovery': case 'joinHardTimeout':
        return this.#joinEvent({ type: 'timerFired', timer: id });
      case 'connectTimeout': case 'reconnectBackoff': case 'ping':
        return this.#linkEvent({ type: 'timerFired', timer: id });
      case 'retryingThreshold': case 'retryEscalation':
        return this.#statusEvent({ type: 'timerFired', timer: id });
      case 'offerTimeout': case 'nonHostFallback': case 'iceRestartDelay': case 'iceRestartCooldown':
        return this.#negotiationEvent({ type: 'timerFired', timer: id });
      case 'endOfCandidates':
        return this.#trickleEvent({ type: 'timerFired', timer: id });
      case 'turnFetchTimeout': case 'turnRefresh':
        return this.#turnEvent({ type: 'timerFired', timer: id });
      case 'mediaSample':
        return this.#watchdogEvent({ type: 'timerFired', timer: id });
      case 'reconnectTokenRefresh':
        // Signaling down: try again soon; the token still has a fifth of its life.
        if (!this.isSignalingUp || this.#rejoinPending) {
          return [timer(schedule('reconnectTokenRefresh', RESILIENCE.RECONNECT_BACKOFF_CAP_MS))];
        }
        return [send(makeEnvelope('reconnect-token-refresh'))];
      default:
        return [];
    }
  }

  // MARK: - Signaling

  #transportOpened(transport) {
    const out = this.#linkEvent({ type: 'opened', transport });
    if (this.phase === 'waiting' || this.phase === 'inCall') {
      out.push(...this.#sendRejoin()); // auto-rejoin the same seat
    } else {
      out.push(...this.#joinEvent({ type: 'signalingOpened' }));
    }
    return out;
  }

  #sendRejoin() {
    if (this.#roomId == null) return [];
    this.#rejoinPending = true;
    this.#awaitingRoomStateAfterReconnect = true;
    return [send(this.#joinEnvelope(null, null, this.#roomId))];
  }

  #joinEnvelope(snapshotId, pushEndpoint, rid = null) {
    const payload = { capabilities: { trickleIce: true } };
    if (this.#reconnectToken != null && this.#cid != null) payload.reconnectCid = this.#cid;
    if (this.#reconnectToken != null) payload.reconnectToken = this.#reconnectToken;
    if (pushEndpoint != null) payload.pushEndpoint = pushEndpoint;
    if (snapshotId != null) payload.snapshotId = snapshotId;
    if (this.options.device != null) payload.device = this.options.device;
    return makeEnvelope('join', rid ?? this.#roomId, payload);
  }

  /**
   * offer / answer / ice: sent now, or kept for after the rejoin while signaling is down. A description kept
   * replaces a kept one of its kind: only our latest offer can be outstanding, and only the answer to the
   * peer's latest offer is awaited (an older one, sent later, would be applied to the wrong negotiation).
   */
  #relay(type, payload) {
    const envelope = makeEnvelope(type, this.#roomId, payload);
    if (this.isSignalingUp && !this.#rejoinPending) return [send(envelope)];
    if (type === 'offer' || type === 'answer' || type === 'restart_request') this.#outbox = this.#outbox.filter((entry) => entry.envelope.type !== type);
    this.#outbox.push({ envelope, peerEpoch: this.#peerEpoch });
    return [];
  }

  #flushOutbox() {
    const pending = this.#outbox;
    this.#outbox = [];
    // Stale: written for an earlier peer session (another peer, or a room recreated since).
    return pending.filter((entry) => entry.peerEpoch === this.#peerEpoch).map((entry) => send(entry.envelope));
  }

  #message(envelope) {
    const payload = isObject(envelope.payload) ? envelope.payload : {};
    const epoch = isInt(envelope.epoch) ? envelope.epoch : null;
    switch (envelope.type) {
      case 'joined': {
        const joined = decodeJoined(payload);
        return joined ? this.#didJoin(joined, isString(envelope.cid) ? envelope.cid : null) : [];
      }
      case 'room_state': {
        const state = decodeRoomState(payload);
        return state ? this.#roomState(state) : [];
      }
      case 'room_ended':
        return this.#phaseEvent({ type: 'roomEnded' });
      case 'error': {
        const error = decodeError(payload);
        return error ? this.#serverError(error) : [];
      }
      case 'offer':
      case 'answer':
        if (!isString(payload.sdp)) return [];
        if (this.#answersAnOfferThePeerNeverSaw(envelope)) return [];
        return this.#negotiationEvent({
          type: 'remoteDescription', kind: envelope.type, sdp: payload.sdp, epoch,
          // The offer an answer names (`offer`, issue 51); a peer that names none, or not as a string, is taken at its word.
          answers: envelope.type === 'answer' && isString(payload.offer) ? payload.offer : null,
        });
      case 'ice': {
        if (payload.candidate === undefined) return [];
        const candidate = decodeCandidate(payload.candidate);
        if (candidate === undefined) return [];
        return this.#negotiationEvent({ type: 'remoteCandidate', candidate, epoch });
      }
      case 'restart_request':
        if (epoch != null && epoch < this.#peerEpoch) return []; // from an earlier peer session
        return this.#negotiationEvent({ type: 'peerAskedForRestart' });
      case 'verify_failed':
        // The runtime passes on only a verify_failed whose auth the key proves; without a key there is none.
        if (!this.options.keyedLink || (this.phase !== 'waiting' && this.phase !== 'inCall')) return [];
        if (epoch != null && epoch < this.#peerEpoch) return []; // about an earlier peer session
        return this.#phaseEvent({ type: 'intercepted', tellPeer: false });
      case 'media_state': {
        const media = decodeMediaState(payload);
        if (media == null || !isString(payload.from) || payload.from !== this.#peerCid) return [];
        return this.#remoteMediaLearned(media);
      }
      case 'pong':
        return this.#linkEvent({ type: 'pong' });
      case 'turn-refreshed':
        if (!isString(payload.turnToken) || !isInt(payload.turnTokenExpiresAt) || !isInt(payload.turnTokenTTLMs)) return [];
        return this.#turnEvent({ type: 'token', token: payload.turnToken, ttlMs: payload.turnTokenTTLMs });
      case 'reconnect-token-refreshed':
        if (!isString(payload.reconnectToken) || !isInt(payload.reconnectTokenTTLMs)) return [];
        this.#reconnectToken = payload.reconnectToken;
        return [this.#scheduleTokenRefresh(payload.reconnectTokenTTLMs)];
      case 'draining': {
        // The server is going away: reconnect after the delay it asked for, not the backoff's (CallEngine.swift says why),
        // through the node it handed this room to, if it named one. As Swift's decoding: a payload whose via is
        // neither a string nor null is no payload at all.
        const decoded = (payload.via == null || isString(payload.via)) && isInt64(payload.reconnectAfterMs);
        const after = decoded ? Math.max(0, payload.reconnectAfterMs) : 0;
        this.#setVia(decoded && isString(payload.via) && ACCEPTABLE_VIA.test(payload.via) ? payload.via : null);
        return [closeTransport(), ...this.#linkEvent({ type: 'closed', reason: 'closedByServer' })].map((output) => {
          if (output.type !== 'timer' || output.command.type !== 'schedule' || output.command.timer !== 'reconnectBackoff') return output;
          return timer(schedule('reconnectBackoff', after));
        });
      }
      default:
        return [];
    }
  }

  #didJoin(joined, newCid) {
    // Epochs may have restarted (server restart) or this is a new seat: a new peer session base.
    const newSession = joined.reconnect === 'recovered' || newCid !== this.#cid;
    this.#cid = newCid;
    this.#reconnectToken = joined.reconnectToken;
    this.#joiningWithKeptSeat = false;
    this.#rejoinPending = false;
    const out = [...this.#joinEvent({ type: 'acknowledged' }), this.#scheduleTokenRefresh(joined.reconnectTokenTTLMs)];
    out.push(...this.#apply({ hostCid: joined.hostCid, participants: joined.participants, epoch: joined.epoch }, newSession));
    if (this.phase === 'joining') {
      out.push(...this.#phaseEvent({ type: 'joined', participants: joined.participants.length }));
    } else {
      // A rejoin's acknowledgement is a membership view too: the phase follows it at once, not at the `room_state`
      // that comes next (CallEngine.swift says why).
      out.push(...this.#phaseEvent({ type: 'roomState', participants: joined.participants.length }));
    }
    out.push(
      ...this.#turnEvent({ type: 'signaling', up: true }),
      ...this.#negotiationEvent({ type: 'signaling', up: true }),
    );
    out.push(...this.#statusEvent({ type: 'signaling', up: true }));
    out.push(...this.#turnEvent({ type: 'token', token: joined.turnToken, ttlMs: joined.turnTokenTTLMs }));
    out.push(...this.#flushOutbox());
    // Said after every join, fresh, reattached or recovered: a restarted server has forgotten it, and the
    // peer's room_state repeats it from the server.
    out.push(send(this.#mediaStateEnvelope()));
    return out;
  }

  #localMediaChanged(media) {
    if (sameMedia(media, this.#localMedia)) return [];
    this.#localMedia = Object.freeze(media);
    // Not queued while signaling is down or a rejoin is unanswered: the join's acknowledgement sends the latest.
    if (!this.isSignalingUp || this.#rejoinPending || this.#cid == null || (this.phase !== 'waiting' && this.phase !== 'inCall')) return [];
    return [send(this.#mediaStateEnvelope())];
  }

  #mediaStateEnvelope() {
    const { audio, video, screen } = this.#localMedia;
    return makeEnvelope('media_state', this.#roomId, { audio, video, screen });
  }

  #remoteMediaLearned(media) {
    if (sameMedia(media, this.#remoteMedia)) return [];
    this.#remoteMedia = media;
    const sends = media != null && (media.audio || media.video || media.screen);
    return [emit({ type: 'remoteMedia', media }), ...this.#watchdogEvent({ type: 'peerSends', sends })];
  }

  #scheduleTokenRefresh(ttlMs) {
    return timer(schedule('reconnectTokenRefresh', Math.trunc(ttlMs * RESILIENCE.RECONNECT_TOKEN_REFRESH_RATIO)));
  }

  #roomState(state) {
    const out = this.#apply(state, false);
    if (this.#awaitingRoomStateAfterReconnect) {
      this.#awaitingRoomStateAfterReconnect = false;
      out.push(...this.#negotiationEvent({ type: 'roomStateAfterReconnect' }));
    }
    out.push(...this.#phaseEvent({ type: 'roomState', participants: state.participants.length }));
    return out;
  }

  /** Takes in a membership view; `fresh` when the server's epochs may have restarted. */
  #apply(state, fresh) {
    this.#participants = state.participants;
    this.#hostCid = state.hostCid;
    this.#epoch = state.epoch;
    const peer = state.participants.find((participant) => participant.cid !== this.#cid) ?? null;
    const wasSuspended = this.#peerSuspended;
    this.#peerSuspended = peer?.connectionStatus === 'suspended';
    const newPeer = (peer?.cid ?? null) !== this.#peerCid;
    const returning = newPeer && peer != null && peer.cid === this.#lastPeerCid;
    if (peer != null) this.#lastPeerCid = peer.cid;
    if (newPeer || fresh) {
      this.#peerCid = peer?.cid ?? null;
      this.#peerEpoch = state.epoch;
    }
    // The server repeats the peer's last media state; a server that does not know it (restarted) leaves what
    // we know of the same peer alone. Another peer (or none) starts from what the server says. Told before the
    // participants, so a page never shows a new peer with the previous one's state.
    const out = [];
    if (peer?.media != null) {
      out.push(...this.#remoteMediaLearned(peer.media));
    } else if (newPeer) {
      out.push(...this.#remoteMediaLearned(null));
    }
    // Another peer, or none: nothing of it is proven yet (its descriptions are checked anew).
    if (newPeer) out.push(...this.#verificationChanged('unverified'));
    out.push(emit({ type: 'participants', participants: state.participants, hostCid: state.hostCid, myCid: this.#cid ?? '' }));
    // The peer connection must exist before the first offer or answer is made.
    if (peer != null) out.push(engine({ type: 'ensurePeerConnection' }));
    out.push(...this.#negotiationEvent({
      type: 'peer', present: peer != null, isHost: state.hostCid === this.#cid, peerEpoch: this.#peerEpoch, returning,
    }));
    // Away or back: while it is away its media's loss is not ours to recover (no restart offered to nobody, no
    // escalation); back, the negotiation makes the restart owed or media needs. Leaving altogether is told by
    // the peer's absence (the negotiation and the call's end reset it).
    if (peer != null && this.#peerSuspended !== wasSuspended) {
      out.push(...this.#negotiationEvent({ type: 'peerSuspended', suspended: this.#peerSuspended }));
      out.push(...this.#statusEvent({ type: 'peerSuspended', suspended: this.#peerSuspended }));
    }
    return out;
  }

  #serverError(error) {
    const phase = this.phase;
    const code = error.code;
    if (phase === 'joining' && (code === 'INVALID_ROOM_ID' || code === 'ROOM_FULL' || code === 'ROOM_ENDED')) {
      return this.#phaseEvent({ type: 'joinRefused', code, message: error.message });
    }
    if ((phase === 'waiting' || phase === 'inCall') && code === 'ROOM_ENDED') {
      return this.#phaseEvent({ type: 'roomEnded' }); // the server confirms the room is gone
    }
    if (code === 'INVALID_RECONNECT_TOKEN') {
      // The seat cannot be proven any more: join fresh.
      this.#reconnectToken = null;
      this.#cid = null;
      if (!this.isSignalingUp || this.#roomId == null) return [];
      return [send(this.#joinEnvelope(null, null, this.#roomId))];
    }
    if ((phase === 'waiting' || phase === 'inCall') && code === 'ROOM_FULL') {
      return this.#phaseEvent({ type: 'roomEnded' }); // our seat is gone and someone else took it
    }
    // A rejoin refused for a reason that is not about the seat: relays would wait for an ack that never comes.
    // Worth retrying (rate limited, an internal error): drop this transport and come back after the backoff, which
    // sends the rejoin again. Never going to work (the room id is no longer valid, the protocol or the message
    // refused): the room is gone for us, end the call rather than knock every 5 s forever.
    if (!this.#rejoinPending) return [];
    if (!error.retryable) return this.#phaseEvent({ type: 'roomEnded' });
    return [closeTransport(), ...this.#linkEvent({ type: 'closed', reason: 'closedByServer' })];
  }

  /**
   * A description failed its check: unless it would have been dropped anyway (another call's, an older peer
   * session's, an answer to an offer the peer never saw), someone may be in the middle.
   */
  #descriptionRejected(envelope) {
    if (!this.options.keyedLink || (this.phase !== 'waiting' && this.phase !== 'inCall')) return [];
    if (envelope.type !== 'offer' && envelope.type !== 'answer') return [];
    if (isInt(envelope.epoch) && envelope.epoch < this.#peerEpoch) return [];
    if (this.#answersAnOfferThePeerNeverSaw(envelope)) return [];
    return this.#phaseEvent({ type: 'intercepted', tellPeer: true });
  }

  /**
   * Our offer is still kept for after the rejoin, so the peer has not seen it: an answer now can only answer an
   * earlier offer of ours (rolled back since), must not be applied to this one, and proves nothing either way.
   */
  #answersAnOfferThePeerNeverSaw(envelope) {
    return envelope.type === 'answer' && this.#outbox.some((entry) => entry.envelope.type === 'offer');
  }

  /**
   * Only a new call leaves 'intercepted': nothing late of the ended one (an answer WebRTC finished applying, a
   * membership change) may take the interception back.
   */
  #verificationChanged(value, newCall = false) {
    if (value === this.#verification || (this.#verification === 'intercepted' && !newCall)) return [];
    this.#verification = value;
    return [emit({ type: 'verification', value })];
  }

  #teardown(kind, tellPeer = false) {
    const out = kind === 'replaced' ? [emit({ type: 'replaced', seat: this.#seat() })] : [];
    if (kind === 'intercepted') {
      // Shown before anything else, and kept after the reset: the page must not go back to a normal screen.
      out.push(...this.#verificationChanged('intercepted'));
      // The runtime signs it; the peer ends its call too instead of waiting for an answer that never comes.
      if (tellPeer && this.isSignalingUp) out.push(send(makeEnvelope('verify_failed', this.#roomId)));
    }
    if (kind === 'leave' || kind === 'endRoom' || kind === 'intercepted') {
      // Only the host can end the room; anyone else ending the call leaves it.
      const ends = kind === 'endRoom' && this.#hostCid === this.#cid;
      if (this.isSignalingUp) {
        out.push(send(makeEnvelope(ends ? 'end_room' : 'leave')));
      } else if (this.#roomId != null && this.#cid != null && this.#reconnectToken != null) {
        // Over HTTP the host's goodbye still ends the call for both (`end`).
        const request = { rid: this.#roomId, cid: this.#cid, reconnectToken: this.#reconnectToken };
        out.push({ type: 'httpLeave', request: ends ? { ...request, end: true } : request });
      }
    }
    // `teardown` closes the transport itself, after the goodbye above has been sent.
    out.push(
      ...this.#joinEvent({ type: 'cancel' }),
      ...this.#turnEvent({ type: 'stop' }),
      ...this.#linkEvent({ type: 'stop' }).filter((output) => output.type !== 'closeTransport'),
    );
    out.push(...TIMER_IDS.map((id) => timer(cancel(id))));
    // Media stops first (it goes through the WebRTC queue now); then the runtime flushes the goodbye and closes.
    out.push(engine({ type: 'close' }), { type: 'teardown' });
    out.push(...this.#remoteMediaLearned(null)); // nobody on the other side any more: the app is told
    this.#resetSession();
    return out;
  }

  /** Fresh machines and no session: the next call starts from nothing. */
  #resetSession() {
    this.#outbox = [];
    this.#joiningWithKeptSeat = false;
    this.#reconnectToken = null;
    this.#setVia(null);
    this.#cid = null;
    this.#hostCid = null;
    this.#participants = [];
    this.#peerCid = null;
    this.#lastPeerCid = null;
    this.#peerSuspended = false; // the machines are made anew: the next call's peer is told from scratch
    this.#remoteMedia = null;
    this.#rejoinPending = false;
    this.#awaitingRoomStateAfterReconnect = false;
    this.#resetMachines();
  }

  #resetMachines() {
    this.status = new ConnectionStatusMachine();
    this.link = new SignalingLinkMachine({ webSocketAvailable: !this.options.sseOnly, jitterSeed: this.options.jitterSeed });
    this.join = new JoinMachine();
    this.negotiation = new NegotiationMachine({ restartsOnlyAsHost: this.options.restartsOnlyAsHost });
    this.trickle = new TrickleIceMachine();
    this.turn = new TurnMachine();
    this.watchdog = new MediaWatchdogMachine();
  }
}
