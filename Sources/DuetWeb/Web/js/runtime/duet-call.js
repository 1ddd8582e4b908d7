// The thin runtime around the pure CallEngine: it performs the engine's outputs (transports, sends,
// HTTP, WebRTC, timers) and feeds every result back as an input. All decisions stay in the engine.
import { RESILIENCE } from '../constants.js';
import { CallEngine } from '../engine/call-engine.js';
import { openWebSocketLink } from './websocket-link.js';
import { openSseLink, newSseSid } from './sse-link.js';
import { roomQuery } from './room-query.js';
import { PeerConnection } from './peer-connection.js';
import { TimerTable } from './timers.js';
import { watchNetwork } from './network-watch.js';
import { sessionStore } from './session-store.js';
import { ConnectivityFacts, iceServersOf } from './connectivity-facts.js';
import { SafetyCodeSource, SignedSignaling } from './signed-signaling.js';
import { SignedMessageOrder } from './signed-message-order.js';
import { dtlsCertificateWithin } from './dtls-identity.js';
import { sampleFromChromiumStats } from '../quality/chromium-stats.js';
import { sdpOrigin } from '../machines/sdp-origin.js';

const RTC_LOG_MAX = 200;

/** A description as the log names it: its o= session id and version, its ICE username(s) and its DTLS role(s) (a=setup). */
function describeSdp(sdp) {
  const origin = sdpOrigin(sdp);
  const ufrags = [...new Set([...sdp.matchAll(/^a=ice-ufrag:(\S+)/gm)].map((m) => m[1]))];
  const setups = [...new Set([...sdp.matchAll(/^a=setup:(\w+)/gm)].map((m) => m[1]))];
  return { origin: origin ? `${origin.sessionId}/${origin.version}` : null, ufrag: ufrags.join(','), setup: setups.join(',') };
}

export class DuetCall extends EventTarget {
  /** linkKey: the call link's key bytes (#k=, parseLinkKey), or null: the call is then "not verified". */
  constructor({ baseUrl, localMedia, sseOnly = false, relayOnly = false, fallbackIceServers = [], resume = null, mediaState = undefined, linkKey = null, deviceId = null, quietJoin = false, prepareSnapshot = null, keepsDtlsRole = false }) {
    super();
    // The seed's join snapshot (issue 31): `prepareSnapshot()` resolves a snapshot id or null (ringing/snapshot.js);
    // the engine waits for it at most SNAPSHOT_PREPARE_TIMEOUT_MS.
    this.prepareSnapshot = prepareSnapshot;
    // This browser's id (ringing/device-identity.js): every join carries it, and `joined` answers with the member
    // token that lets this browser listen for and answer this call's rings later (issue 31).
    this.deviceId = deviceId;
    this.quietJoin = quietJoin;
    this.baseUrl = baseUrl;
    this.relayOnly = relayOnly;
    this.fallbackIceServers = fallbackIceServers;
    this.fetchedIceServers = [];
    this.engine = new CallEngine({
      sseOnly, device: 'web', resume: resume ?? undefined, localMedia: mediaState, keyedLink: linkKey != null,
      join: { prepareSnapshot: prepareSnapshot != null },
    });
    // Signs what this page sends and checks what it gets on a keyed link, in order: a message waiting for its
    // HMAC holds back the ones after it (an ICE candidate never overtakes its offer), both ways (SignedMessageOrder).
    this.signing = new SignedSignaling(linkKey);
    this.safety = new SafetyCodeSource();
    this.order = new SignedMessageOrder(this.signing, () => this.linkGeneration);
    // How many of the other side's descriptions WebRTC applied in this call (window.duet.remoteDescriptionsApplied):
    // counted where it happens, so a test can prove an intercepted call never applied one.
    this.remoteDescriptionsApplied = 0;
    // The media_state messages this page received, whatever the transport (window.duet.mediaStatesReceived): the
    // engine reports only changes, so a test that must see a state told again reads the messages here. The SSE
    // stream is a fetch, which DevTools does not show message by message. Bounded: the last 20.
    this.mediaStatesReceived = { count: 0, last: [] };
    // Every WebRTC command as performed, oldest first, the last RTC_LOG_MAX (window.duet.rtcLog): when, which connection
    // (a count of the connections this call made), what, the description's o= id and ICE username, and how it ended.
    // Diagnosis only: which description was applied to which connection, in which order (issue 51).
    this.rtcLog = [];
    this.connectionsMade = 0;
    this.timers = new TimerTable((timer) => this.feed({ type: 'timerFired', timer }));
    // What is known about connectivity (ICE servers, candidates, ICE states), for the page to explain a call
    // that does not connect (js/ui/connectivity-advice.js). Observed only: nothing here changes what the engine does.
    this.connectivity = new ConnectivityFacts({ relayOnly });
    this.peer = new PeerConnection({
      localMedia,
      keepsDtlsRole,
      onEvent: (input) => this.feed(input),
      onRemoteStream: (stream) => this.emit('remotestream', stream),
      onLocalCandidate: (candidate) => this.noteConnectivity((c) => c.localCandidate(candidate)),
      onCandidateError: (error) => this.noteConnectivity((c) => c.localCandidateError(error)),
      onConfigurationRefused: (configuration, error) => this.noteConnectivity((c) => c.iceServersRefused(configuration?.iceServers, error)),
    });
    this.sid = sessionStore.sid(newSseSid);
    this.pendingOpen = null;
    this.link = null;
    this.linkGeneration = 0;
    /** The `via` of the last link opened (`CallEngine.via`): its HTTP requests for the room name it too. */
    this.linkVia = null;
    this.rtcChain = Promise.resolve();
    this.acceptingRtc = false;
    this.turnFetch = null;
    // This browser's DTLS certificate (runtime/dtls-identity.js), loaded with the first peer connection; null: none.
    this.certificate = null;
    // What the page shows: every field is set from an engine event, never guessed.
    this.state = {
      phase: 'idle', connectionStatus: 'connected', transport: null, roomId: null, cid: null, hostCid: null,
      participants: [], failure: null, endReason: null, escalation: null, iceRestarts: [], reconnects: [],
      // {audio, video, screen}: what the other person last said of its media (null until known), and what
      // this page says of its own (sent after every join, so it survives a reattach and a server restart).
      remoteMedia: null, localMedia: this.engine.localMedia,
      // 'unverified', 'verified' or 'intercepted' (the engine's), and the six-digit safety code (null: unknown).
      verification: this.engine.verification, safetyCode: null,
      // This browser's member token in this call (from joined), and the ring this page made: {callId, state,
      // devices} as the server last said it (ring_state), null before any.
      memberToken: null, ring: null,
    };
    this.unwatchNetwork = watchNetwork((input) => this.feed(input));
  }

  // MARK: the app's commands
  startNewCall() { this.feed({ type: 'startNewCall' }); }
  join(roomId) { this.state.endReason = null; this.feed({ type: 'joinRoom', roomId }); }
  leave() { this.state.endReason = 'left'; this.goodbye(false); this.feed({ type: 'leave' }); }
  end() {
    const host = this.engine.hostCid != null && this.engine.hostCid === this.engine.cid;  // as the engine decides end_room
    this.state.endReason = host ? 'ended' : 'left';
    this.goodbye(host);
    this.feed({ type: 'end' });
  }

  // The seat this page holds, kept for an HTTP leave after the in-band goodbye (which can be lost on a
  // half-open socket or a dropped POST); the server treats a second leave as done. The host's says `end`: this
  // request and the `end_room` travel on two connections, and whichever the server takes first must end the call
  // for both (a plain leave first made the other person host of a room nobody ended: CI run 20261206T140015Z-bce760).
  goodbye(ends) {
    const { roomId, cid, reconnectToken } = this.engine;
    this.farewell = roomId && cid && reconnectToken ? { rid: roomId, cid, reconnectToken, ...(ends ? { end: true } : {}) } : null;
  }

  dismissError() { this.feed({ type: 'dismissError' }); }
  /** The page's microphone, camera and screen state, {audio, video, screen}: told to the other person. */
  setLocalMediaState(media) {
    this.feed({ type: 'localMediaChanged', media });
    this.state.localMedia = this.engine.localMedia;
  }

  // Connectivity facts are only observed: whatever goes wrong in noting them must never touch the call.
  noteConnectivity(note) {
    try { note(this.connectivity); } catch (error) { console.warn('connectivity facts', error); }
  }
  stats() { return this.peer.stats(); }
  get iceConnectionState() { return this.peer.iceConnectionState; }
  get scheduledTimers() { return this.timers.scheduled; }

  // MARK: the loop
  feed(input) {
    if (input.type === 'message') this.observe(input.envelope);
    this.noteConnectivity((c) => c.input(input, Date.now()));
    if (input.type === 'iceStateChanged') this.emit('ice', input.state);
    for (const output of this.engine.handle(input)) this.perform(output);
  }

  perform(output) {
    switch (output.type) {
      case 'openTransport':
        // The room's node after a drain (engine.via): this link's HTTP requests for the room name it too.
        this.linkVia = output.via ?? null;
        return this.open(output.transport, this.linkVia);
      case 'closeTransport': { const link = this.detach(); link?.close(); return; }
      case 'send': return this.queueSend(output.envelope);
      case 'createRoomId': return void this.createRoomId();
      case 'fetchTurnCredentials': this.turnFetch = this.fetchTurn(output.token); return;
      case 'prepareSnapshot': return void this.snapshot();
      case 'requestPushEndpoint': return this.feed({ type: 'pushEndpointReady', endpoint: null });
      case 'httpLeave': return void this.httpLeave(output.request);
      case 'engine': return this.queueRtc(output.command);
      case 'sampleMedia': return void this.sampleMedia();
      case 'timer':
        return output.command.type === 'schedule'
          ? this.timers.schedule(output.command.timer, output.command.afterMs)
          : this.timers.cancel(output.command.timer);
      case 'emit': return this.apply(output.event);
      case 'teardown': return void this.teardown();
    }
  }

  /** The media watchdog's reading: inbound RTP packets of every kind, from getStats. */
  async sampleMedia() {
    let report = null;
    try { report = await this.peer.rawStats(); } catch { report = null; }
    if (report == null) return this.feed({ type: 'mediaSampled', packets: null });
    const counted = sampleFromChromiumStats(report, 0);
    this.feed({ type: 'mediaSampled', packets: counted.audioPacketsReceived + counted.videoPacketsReceived });
  }

  apply(event) {
    const s = this.state;
    switch (event.type) {
      case 'phase':
        s.phase = event.phase;
        // The call's connection is gone with it: the next call's code comes from its own descriptions.
        if (event.phase === 'ending') this.noteSafety({ type: 'connectionGone' });
        if (event.phase === 'joining') { this.acceptingRtc = true; s.failure = null; }
        break;
      case 'connectionStatus': s.connectionStatus = event.status; break;
      case 'transport': s.transport = event.transport; break;
      case 'room': s.roomId = event.roomId; break;
      case 'participants': s.participants = event.participants; s.hostCid = event.hostCid; s.cid = event.myCid || s.cid; break;
      case 'failure': s.failure = event.failure; break;
      case 'session':
        s.cid = event.seat?.cid ?? null;
        // A seat cleared by a failed join is still ours on the server (suspended): keep it for Try again.
        // Leave, end and a refused or ended room clear it (see teardown and observe).
        if (event.seat) sessionStore.save(event.seat);
        break;
      case 'escalation': s.escalation = event.step; break;
      case 'remoteMedia': s.remoteMedia = event.media; break;
      case 'iceRestart': s.iceRestarts.push(event.reason); break;
      case 'replaced':
        // "Use here" reloads the page, which proves the seat again with what is kept here.
        s.endReason = 'replaced';
        if (event.seat) sessionStore.save(event.seat);
        break;
      case 'verification':
        s.verification = event.value;
        // Someone may be in the middle: the seat is not to be taken back by a reload.
        if (event.value === 'intercepted') s.endReason = 'intercepted';
        break;
      case 'safetyCode': s.safetyCode = event.code; break;
    }
    const peerBefore = this.signing.peerCid;
    this.signing.note(event);
    if (event.type === 'room') this.noteSafety({ type: 'room', roomId: event.roomId });
    if (event.type === 'participants' && this.signing.peerCid !== peerBefore) this.noteSafety({ type: 'peerGone' });
    this.noteConnectivity((c) => c.event(event, Date.now()));
    this.emit('change', event);
  }

  // Why a call ended is the page's business (ended screen), not the engine's.
  observe(envelope) {
    if (envelope?.type === 'joined' && typeof envelope.payload?.memberToken === 'string') {
      this.state.memberToken = envelope.payload.memberToken;
      this.emit('member', envelope.payload.memberToken);
    }
    if (envelope?.type === 'ring_state' && envelope.payload?.callId === this.state.ring?.callId) {
      this.state.ring = { ...this.state.ring, state: envelope.payload.state, devices: envelope.payload.devices ?? 0 };
      this.emit('ring', this.state.ring);
    }
    // A restarted server forgot the ring: said again with its call id (the server re-establishes it).
    if (envelope?.type === 'joined' && envelope.payload?.reconnect === 'recovered' && this.state.ring?.state === 'ringing') {
      queueMicrotask(() => this.sendRing());
    }
    // How each join was answered (fresh / reattached / recovered), for operators and tests.
    if (envelope?.type === 'joined') this.state.reconnects.push(envelope.payload?.reconnect ?? 'fresh');
    if (envelope?.type === 'room_ended') this.state.endReason ??= 'roomEnded';
    if (envelope?.type === 'room_ended' && envelope.payload?.reason === 'expired') this.state.endReason = 'expired';
    if (envelope?.type === 'error' && envelope.payload?.code === 'ROOM_ENDED') this.state.endReason ??= 'roomEnded';
    // The stored seat cannot come back: forget it so the next join is a fresh one.
    if (envelope?.type === 'error' && ['ROOM_ENDED', 'ROOM_FULL', 'INVALID_RECONNECT_TOKEN', 'INVALID_ROOM_ID'].includes(envelope.payload?.code)) sessionStore.clear();
    if (envelope?.type === 'error' && envelope.payload?.code === 'ROOM_FULL' && this.state.phase !== 'joining') this.state.endReason ??= 'seatTaken';
  }

  emit(type, detail) { this.dispatchEvent(new CustomEvent(type, { detail })); }

  // The safety code follows the descriptions WebRTC took; its answers come in order (SafetyCodeSource).
  noteSafety(input) {
    this.safety.handle(input).then((changed) => { if (changed) this.apply({ type: 'safetyCode', code: changed.code }); },
      (error) => console.warn('safety code', error));
  }

  // MARK: verified calls: signed out, checked in, each in order (SignedMessageOrder)
  queueSend(envelope) { this.order.outgoing(envelope, (signed) => this.send(signed)); }
  receive(envelope, generation) {
    if (envelope?.type === 'media_state') this.noteMediaState(envelope.payload);
    this.order.incoming(envelope, generation, (input) => this.feed(input));
  }

  noteMediaState(payload) {
    const seen = this.mediaStatesReceived;
    seen.count += 1;
    const { from = null, audio = null, video = null, screen = null } = payload ?? {};
    seen.last.push({ n: seen.count, from, audio, video, screen });
    if (seen.last.length > 20) seen.last.shift();
  }

  // MARK: signaling
  open(kind, via = null) {
    const generation = ++this.linkGeneration;
    const handlers = {
      onMessage: (envelope) => { if (generation === this.linkGeneration) this.receive(envelope, generation); },
      onClose: (reason, detail) => {
        if (generation !== this.linkGeneration) return;
        // Close 4001: another tab (or device) proved this seat. The engine stops without a goodbye, which
        // would remove the seat from under the other tab.
        if (detail === 'replaced') { this.detach(); return this.feed({ type: 'replaced' }); }
        // 401: this sid's stream is not ours to resume; 410: the server forgot it. Either way, a new sid.
        if (detail === 'sidRejected') this.sid = sessionStore.renewSid(newSseSid);
        this.detach();
        this.feed({ type: 'transportClosed', reason });
      },
    };
    const abort = new AbortController();
    this.pendingOpen?.abort();
    this.pendingOpen = abort;
    // The room in the URL (?rid=): a proxy in front of several nodes routes the call's links to one node by it.
    const roomId = this.engine.roomId;
    const opening = kind === 'ws'
      ? openWebSocketLink(this.baseUrl, handlers, abort.signal, roomId, via)
      : openSseLink(this.baseUrl, this.sid, handlers, abort.signal, roomId, via);
    opening.then(
      (link) => {
        if (this.pendingOpen === abort) this.pendingOpen = null;
        if (generation !== this.linkGeneration) { link.close(); return; }  // the engine gave up on this attempt
        this.link = link;
        this.feed({ type: 'transportOpened', transport: kind });
      },
      () => {
        if (generation !== this.linkGeneration) return;
        this.feed({ type: 'transportOpenFailed', transport: kind, failure: 'error' });
      });
  }

  detach() {
    this.linkGeneration += 1;
    // An attempt still opening is abandoned too: a late SSE stream with our sid would displace the next one.
    this.pendingOpen?.abort();
    this.pendingOpen = null;
    const link = this.link;
    this.link = null;
    return link;
  }

  async snapshot() {
    let snapshotId = null;
    try { snapshotId = (await this.prepareSnapshot?.()) ?? null; } catch { snapshotId = null; }
    // Late (after the engine's timer) it is ignored: the join went without it.
    this.feed({ type: 'snapshotReady', snapshotId });
  }

  // MARK: ringing (issue 31): outside the engine, which never hears of it; the server holds the ring's state.
  /** Rings the other person's devices with `caller` (sealed, ringing/caller-seal.js) under `callId`, with the
   *  caller's snapshot if one was uploaded for it. */
  ring(callId, caller, snapshotId = null, answers = null) {
    this.state.ring = { callId, caller, snapshotId, answers, state: 'ringing', devices: 0 };
    this.emit('ring', this.state.ring);
    this.sendRing();
  }

  sendRing() {
    const ring = this.state.ring;
    const payload = {
      callId: ring?.callId, caller: ring?.caller, ...(ring?.snapshotId ? { snapshotId: ring.snapshotId } : {}), ...(ring?.answers ? { answers: ring.answers } : {}),
    };
    if (ring && this.link) this.send({ v: 1, type: 'ring', rid: this.state.roomId, payload });
  }

  cancelRing() {
    const ring = this.state.ring;
    if (!ring || ring.state !== 'ringing') return;
    this.send({ v: 1, type: 'ring_cancel', rid: this.state.roomId, payload: { callId: ring.callId } });
  }

  send(envelope) {
    if (envelope?.type === 'join' && this.deviceId) envelope = { ...envelope, payload: { ...envelope.payload, deviceId: this.deviceId } };
    // About to ring (issue 31): no join alert as well; the ring says more.
    if (envelope?.type === 'join' && this.quietJoin) envelope = { ...envelope, payload: { ...envelope.payload, alert: false } };
    try {
      if (!this.link) throw new Error('no transport');
      this.link.send(envelope);
    } catch {
      // A send that cannot go out means the link is unusable: report it closed so the engine reconnects.
      if (!this.link) return;
      this.detach()?.close();
      this.feed({ type: 'transportClosed', reason: 'networkError' });
    }
  }

  async teardown() {
    this.acceptingRtc = false;
    // The engine queued `close` just before this: media stops through the WebRTC queue, behind the command in
    // flight and before anything else can touch the peer connection, not after the goodbye has been flushed.
    const mediaStopped = this.rtcChain;
    this.timers.cancelAll();
    // A goodbye still waiting for its HMAC (verify_failed) goes out before the link closes (bounded).
    await Promise.race([this.order.sendsSettled, new Promise((resolve) => setTimeout(resolve, RESILIENCE.GOODBYE_FLUSH_TIMEOUT_MS))]);
    const link = this.detach();
    if (link) {
      await link.flush(RESILIENCE.GOODBYE_FLUSH_TIMEOUT_MS);  // leave / end_room must reach the server first
      link.close();
    }
    // Bounded: a WebRTC call that never settles must not keep the call from ending (closing twice does nothing).
    await Promise.race([mediaStopped, new Promise((resolve) => setTimeout(resolve, RESILIENCE.GOODBYE_FLUSH_TIMEOUT_MS))]);
    this.peer.close();
    if (this.farewell) void this.httpLeave(this.farewell);
    this.farewell = null;
    if (this.state.endReason !== 'replaced') sessionStore.clear();
    this.unwatchNetwork();
    this.feed({ type: 'teardownFinished' });
  }

  // MARK: WebRTC, one command at a time in the engine's order
  queueRtc(command) {
    this.rtcChain = this.rtcChain.then(() => this.performRtc(command));
  }

  async performRtc(command) {
    if (!this.acceptingRtc && command.type !== 'close') return;
    const entry = this.noteRtc(command);
    try {
      switch (command.type) {
        case 'ensurePeerConnection':
          // Gather with the TURN servers that are on their way (bounded by the fetch's own timeout).
          if (!this.peer.pc && this.turnFetch) await this.turnFetch;
          if (!this.acceptingRtc) return;  // the call ended while the TURN fetch was out
          if (!this.peer.pc) this.noteConnectivity((c) => c.newPeerConnection(Date.now()));
          if (!this.peer.pc) this.connectionsMade += 1;
          // This browser's stable DTLS identity (runtime/dtls-identity.js): the same fingerprint call after call, so
          // the safety code is too. (A peer whose connection is new makes the engine renew ours: with an unchanged
          // fingerprint WebRTC would not redo DTLS — NegotiationMachine.)
          if (!this.peer.pc) this.certificate ??= await dtlsCertificateWithin();
          if (!this.acceptingRtc) return;
          return this.peer.ensure(this.rtcConfiguration());
        case 'renewPeerConnection':
          // The peer's connection is new: so is ours (a kept one would not redo DTLS with the same fingerprint).
          this.noteSafety({ type: 'connectionGone' });
          this.peer.close();
          this.connectionsMade += 1;
          this.noteConnectivity((c) => c.newPeerConnection(Date.now()));
          return this.peer.ensure(this.rtcConfiguration());
        case 'createOffer': {
          const sdp = await this.peer.createOffer(command.iceRestart);
          Object.assign(entry, describeSdp(sdp));
          this.noteSafety({ type: 'localDescription', sdp });
          return this.feed({ type: 'localDescriptionReady', kind: 'offer', sdp });
        }
        case 'createAnswer': {
          const sdp = await this.peer.createAnswer();
          Object.assign(entry, describeSdp(sdp));
          this.noteSafety({ type: 'localDescription', sdp });
          return this.feed({ type: 'localDescriptionReady', kind: 'answer', sdp });
        }
        case 'setRemoteDescription':
          await this.peer.setRemoteDescription(command.kind, command.sdp);
          this.remoteDescriptionsApplied += 1;
          this.noteSafety({ type: 'remoteDescriptionApplied', sdp: command.sdp });
          return this.feed({ type: 'remoteDescriptionApplied', kind: command.kind });
        case 'rollback': return await this.peer.rollback();
        case 'addRemoteCandidates':
          for (const candidate of command.candidates) {
            // One bad or late candidate must not stop the others.
            try { await this.peer.addRemoteCandidate(candidate); } catch (error) { console.debug('candidate refused', error); }
          }
          return;
        case 'applyFetchedIceServers':
        case 'applyFallbackIceServers':
          if (command.type === 'applyFallbackIceServers') this.fetchedIceServers = [];
          this.peer.setConfiguration(this.rtcConfiguration());
          if (this.peer.pc) this.noteConnectivity((c) => c.iceServersAccepted());
          return;
        case 'close': return this.peer.close();
      }
      entry.ok = true;
    } catch (error) {
      entry.ok = false;
      entry.error = String(error?.message ?? error).slice(0, 200);
      console.warn('WebRTC command failed', command.type, error);
      if (command.type === 'createOffer' || command.type === 'createAnswer') this.feed({ type: 'localDescriptionFailed' });
      if (command.type === 'setRemoteDescription') this.feed({ type: 'remoteDescriptionFailed', kind: command.kind });
      if (command.type === 'rollback') this.feed({ type: 'rollbackFailed' });
    }
  }

  noteRtc(command) {
    const entry = { t: Math.round(performance.now()), pc: this.connectionsMade, type: command.type };
    if (command.kind) entry.kind = command.kind;
    if (command.iceRestart) entry.iceRestart = true;
    if (command.sdp) Object.assign(entry, describeSdp(command.sdp));
    if (command.candidates) entry.candidates = command.candidates.length;
    this.rtcLog.push(entry);
    if (this.rtcLog.length > RTC_LOG_MAX) this.rtcLog.shift();
    return entry;
  }

  rtcConfiguration() {
    return {
      iceServers: this.fetchedIceServers.length ? this.fetchedIceServers : this.fallbackIceServers,
      iceTransportPolicy: this.relayOnly ? 'relay' : 'all',
      // Given to setConfiguration too: Chromium refuses a configuration whose certificates changed.
      ...(this.certificate ? { certificates: [this.certificate] } : {}),
    };
  }

  // MARK: HTTP
  async createRoomId() {
    try {
      const response = await fetch(new URL('api/room-id', this.baseUrl), {
        method: 'POST', signal: AbortSignal.timeout(RESILIENCE.HTTP_REQUEST_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const { roomId } = await response.json();
      this.feed({ type: 'roomIdCreated', roomId });
    } catch (error) {
      this.feed({ type: 'roomIdFailed', reason: String(error?.message ?? error) });
    }
  }

  async fetchTurn(token) {
    try {
      // The room (and its node after a drain) as on the signaling links: the node that answers checks the token's
      // seat, and in a cluster only the room in the URL sends the request to the node that holds it.
      const room = roomQuery(this.engine.roomId, this.linkVia);
      const url = new URL(`api/turn-credentials?token=${encodeURIComponent(token)}` + (room ? `&${room}` : ''), this.baseUrl);
      const response = await fetch(url, { signal: AbortSignal.timeout(RESILIENCE.TURN_FETCH_TIMEOUT_MS) });
      if (response.status === 503) this.noteConnectivity((c) => c.iceServersNone());  // no STUN and no TURN at all
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      // The server's whole list: its own STUN, any configured STUN, and TURN with fresh credentials.
      const body = await response.json();
      const iceServers = iceServersOf(body);
      if (!iceServers) throw new Error('the server sent no iceServers');
      const { ttl } = body;
      this.fetchedIceServers = iceServers;
      this.noteConnectivity((c) => c.iceServersFetched(iceServers));
      this.feed({ type: 'turnCredentialsFetched', ttlSeconds: ttl });
    } catch {
      this.noteConnectivity((c) => c.iceServersFailed());
      this.feed({ type: 'turnCredentialsFailed' });
    }
  }

  async httpLeave(request) {
    try {
      // ?rid= as on the signaling links: a proxy in front of several nodes sends it to the node holding the room.
      const url = new URL(`api/leave?${roomQuery(request.rid, this.linkVia)}`, this.baseUrl);
      await fetch(url, {
        method: 'POST', body: JSON.stringify(request), headers: { 'Content-Type': 'application/json' },
        keepalive: true, signal: AbortSignal.timeout(RESILIENCE.HTTP_REQUEST_TIMEOUT_MS) });
    } catch { /* the seat is evicted by the server in time anyway */ }
  }
}
