// The facts a call knows about its connectivity, collected as they happen, for js/ui/connectivity-advice.js to
// explain why media does not connect. Pure: no DOM, no timers; time is an argument. DuetCall feeds it what it
// sees (the ICE servers the server handed out, the candidates gathered here and received from the other side,
// ICE states, the engine's phase, transport and participants) and the page asks for a snapshot.
// Also the parsing both the call page and the /check page need: candidate lines and TURN URLs.

/** `candidate:… 1 udp 2122260223 192.0.2.1 5000 typ host …` → {type, protocol, address, port, ufrag} (null if not one). */
export function parseCandidate(text) {
  if (typeof text !== 'string') return null;
  const fields = text.trim().replace(/^a=/, '').split(/\s+/);
  if (!/^candidate:/.test(fields[0] ?? '') || fields.length < 8 || fields[6] !== 'typ') return null;
  const after = (name) => { const i = fields.indexOf(name, 8); return i > 0 ? fields[i + 1] ?? null : null; };
  return {
    protocol: fields[2].toLowerCase(), priority: Number(fields[3]), address: fields[4], port: Number(fields[5]),
    type: fields[7], ufrag: after('ufrag'),
  };
}

/**
 * The transport a TURN URL reaches its server over: 'udp', 'tcp' or 'tls' (turns:, over TCP); null for other URLs
 * and for transports a browser refuses (turn:…?transport=sctp, turns:…?transport=udp).
 */
export function turnTransport(url) {
  const match = /^(turns?):[^?]*(?:\?(.*))?$/i.exec(String(url ?? '').trim());
  if (!match) return null;
  const transport = /(?:^|&)transport=([^&]*)/i.exec(match[2] ?? '')?.[1]?.toLowerCase() ?? null;
  if (match[1].toLowerCase() === 'turns') return transport === null || transport === 'tcp' ? 'tls' : null;
  if (transport === null || transport === 'udp') return 'udp';  // a turn: URL without transport is UDP
  return transport === 'tcp' ? 'tcp' : null;
}

/** What an RTCConfiguration's iceServers offer: {stun: [url], turn: {udp: [url], tcp: [url], tls: [url]}}. */
export function summarizeIceServers(iceServers) {
  const summary = { stun: [], turn: { udp: [], tcp: [], tls: [] } };
  for (const server of Array.isArray(iceServers) ? iceServers : []) {
    const urls = Array.isArray(server?.urls) ? server.urls : [server?.urls];
    for (const url of urls) {
      if (typeof url !== 'string') continue;
      if (/^stuns?:/i.test(url.trim())) summary.stun.push(url.trim());
      const transport = turnTransport(url);
      if (transport) summary.turn[transport].push(url.trim());
    }
  }
  return summary;
}

/**
 * The relay protocol of a gathered relay candidate (how this browser reaches its TURN server): the browser's
 * own `relayProtocol`, else the TURN URL it came from (`url`). Chromium 156 gives `relayProtocol` for TCP and
 * TLS relays but null for UDP ones, and the URL for all of them.
 */
export function relayProtocolOf({ relayProtocol, url } = {}) {
  if (relayProtocol === 'udp' || relayProtocol === 'tcp' || relayProtocol === 'tls') return relayProtocol;
  return turnTransport(url);
}

/**
 * The ICE servers of a /api/turn-credentials answer: its `iceServers`, or, from an older server that answers only
 * {uris, username, password, ttl}, those as one TURN entry; null when the answer has neither.
 */
export function iceServersOf(body) {
  if (Array.isArray(body?.iceServers)) return body.iceServers;
  const uris = typeof body?.uris === 'string' ? [body.uris] : body?.uris;
  if (Array.isArray(uris) && uris.length && typeof body.username === 'string' && typeof body.password === 'string') {
    return [{ urls: uris, username: body.username, credential: body.password }];
  }
  return null;
}

/** Whether `address` (an IP literal of a candidate) is a public one: not private, loopback, link-local, CGNAT or mDNS. */
export function isPublicAddress(address) {
  const a = String(address ?? '').toLowerCase().replace(/^\[|\]$/g, '');
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(a);
  if (v4) {
    const [x, y] = [Number(v4[1]), Number(v4[2])];
    if (x === 0 || x === 10 || x === 127 || x >= 224) return false;
    if (x === 169 && y === 254) return false;
    if (x === 172 && y >= 16 && y <= 31) return false;
    if (x === 192 && y === 168) return false;
    if (x === 100 && y >= 64 && y <= 127) return false;  // carrier-grade NAT
    return true;
  }
  if (!a.includes(':')) return false;  // a name (mDNS .local) hides the address
  return /^[23][0-9a-f]{0,3}:/.test(a) && !a.startsWith('2001:db8:');  // global unicast (2000::/3)
}

/** An ICE server URL reduced to compare: lower case, no query, the default port made explicit. */
export function iceUrlKey(url) {
  const match = /^(stuns?|turns?):([^?]*)/i.exec(String(url ?? '').trim());
  if (!match) return String(url ?? '').trim().toLowerCase();
  const scheme = match[1].toLowerCase();
  let hostPort = match[2].toLowerCase();
  if (!/(\]|^[^:]*):\d+$/.test(hostPort) && !/^\[.*\]:\d+$/.test(hostPort)) {
    hostPort = `${hostPort}:${scheme.endsWith('s') ? 5349 : 3478}`;
  }
  return `${scheme}:${hostPort}`;
}

/**
 * The URL of `iceServers` a browser refused (new RTCPeerConnection / setConfiguration threw `error`): the one its
 * message names, else the first that is not a well-formed stun:/stuns:/turn:/turns: URL, else ''.
 */
export function refusedIceServerUrl(iceServers, error) {
  const message = String(error?.message ?? error ?? '');
  const urls = [];
  for (const server of Array.isArray(iceServers) ? iceServers : []) {
    for (const url of Array.isArray(server?.urls) ? server.urls : [server?.urls]) urls.push(String(url ?? ''));
  }
  const named = urls.find((url) => url && message.includes(url));
  if (named) return named;
  const wellFormed = /^(stuns?|turns?):(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?(\?transport=(udp|tcp))?$/i;
  return urls.find((url) => !wellFormed.test(url.trim())) ?? '';
}

// ICE restarts that mean the attempt before did not connect (not a network change or a signaling reconnect).
const GAVE_UP_REASONS = new Set(['escalation', 'iceFailed', 'iceDisconnected']);

export class ConnectivityFacts {
  constructor({ relayOnly = false } = {}) {
    this.relayOnly = relayOnly;
    this.iceServers = { status: 'pending', list: [] };
    // Candidates per ICE generation (ufrag), this one's and the one before: until the new gathering is complete
    // (ours) or ended (theirs: end-of-candidates), the one before still counts, so an ICE restart does not make
    // the explanation flicker through "no relay" or "no address" while the new candidates trickle in.
    this.local = generation();
    this.localBefore = generation();
    this.remote = generation();
    this.remoteBefore = generation();
    this.iceState = 'new';
    this.phase = 'idle';
    this.signalingUp = false;
    this.peerPresent = false;
    this.waitingSinceMs = null;
    this.failed = false;
    this.refused = null;  // {url, message}: the browser refused the ICE servers (its RTCPeerConnection threw)
  }

  // MARK: what the server handed out
  iceServersFetched(list) { this.iceServers = { status: 'fetched', list: Array.isArray(list) ? list : [] }; }
  /** The server has no STUN and no TURN (503). */
  iceServersNone() { this.iceServers = { status: 'none', list: [] }; }
  /** The list could not be fetched (network, timeout, 401): nobody knows what the server has. A list already
   * fetched stays in use (the engine keeps working credentials), and a 503 already said there is none. */
  iceServersFailed() { if (this.iceServers.status === 'pending') this.iceServers = { status: 'failed', list: [] }; }

  /** The browser refused the configuration (`new RTCPeerConnection` or setConfiguration threw `error`). */
  iceServersRefused(iceServers, error) {
    this.refused = { url: refusedIceServerUrl(iceServers, error), message: String(error?.message ?? error ?? '') };
  }
  /** The browser took the configuration. */
  iceServersAccepted() { this.refused = null; }

  // MARK: this browser's peer connection
  newPeerConnection(nowMs) {
    this.refused = null;
    this.local = generation();
    this.localBefore = generation();
    this.remote = generation();
    this.remoteBefore = generation();
    this.setIceState('new', nowMs);
  }

  /** An RTCIceCandidate (or its fields: candidate, usernameFragment, relayProtocol, url) gathered here. */
  localCandidate({ candidate, usernameFragment, relayProtocol, url } = {}) {
    const parsed = parseCandidate(candidate);
    if (!parsed) return;
    const ufrag = usernameFragment ?? parsed.ufrag;
    // A new ufrag is a new gathering (an ICE restart): once it is complete, it alone says what is reachable now.
    if (ufrag && ufrag !== this.local.ufrag) {
      if (this.local.candidates.length) this.localBefore = this.local;
      const errors = this.local.candidates.length ? [] : this.local.errors;  // reported before its first candidate
      this.local = generation(ufrag);
      this.local.errors = errors;
    }
    this.local.candidates.push({
      type: parsed.type, protocol: parsed.protocol, address: parsed.address,
      relayProtocol: parsed.type === 'relay' ? relayProtocolOf({ relayProtocol, url }) : null,
    });
  }

  /** An icecandidateerror here ({url, errorCode, errorText}): a STUN or TURN server that did not answer, or refused. */
  localCandidateError({ url, errorCode, errorText } = {}) {
    this.local.errors.push({ url: typeof url === 'string' ? url : '', code: Number(errorCode) || 0, text: errorText ?? '' });
  }

  // MARK: what DuetCall feeds its engine and what the engine tells the page
  input(input, nowMs) {
    switch (input?.type) {
      case 'gatheringComplete': this.local.done = true; break;
      case 'iceStateChanged': this.setIceState(input.state, nowMs); break;
      case 'message': this.message(input.envelope); break;
    }
  }

  event(event, nowMs) {
    switch (event?.type) {
      case 'phase': this.phase = event.phase; break;
      case 'transport': this.signalingUp = event.transport != null; break;
      case 'iceRestart':
        // The engine gave up on an ICE attempt (its retrying escalation, or ICE failed or disconnected) while
        // media could have connected: that attempt failed, even though ICE itself never said 'failed' (a
        // restart puts it back to checking before Chromium's own timeout, about 30 s, runs out).
        if (this.waitingSinceMs != null && GAVE_UP_REASONS.has(event.reason)) this.failed = true;
        return;
      case 'participants':
        this.peerPresent = (event.participants ?? []).some((p) => p.cid !== event.myCid && p.connectionStatus !== 'suspended');
        break;
      default: return;
    }
    this.update(nowMs);
  }

  message(envelope) {
    const payload = envelope?.payload ?? {};
    if (envelope?.type === 'ice') {
      if (payload.candidate === null) this.remote.done = true;  // their end-of-candidates
      const parsed = parseCandidate(payload.candidate?.candidate);
      if (parsed) this.remote.candidates.push({ type: parsed.type, protocol: parsed.protocol });
    } else if ((envelope?.type === 'offer' || envelope?.type === 'answer') && typeof payload.sdp === 'string') {
      const ufrag = /^a=ice-ufrag:(\S+)/m.exec(payload.sdp)?.[1] ?? null;
      if (ufrag !== this.remote.ufrag) {
        if (this.remote.candidates.length) this.remoteBefore = this.remote;
        this.remote = generation(ufrag);
      }
      for (const line of payload.sdp.split(/\r?\n/)) {
        const parsed = line.startsWith('a=candidate:') ? parseCandidate(line) : null;
        if (parsed) this.remote.candidates.push({ type: parsed.type, protocol: parsed.protocol });
      }
    }
  }

  setIceState(state, nowMs) {
    this.iceState = state;
    if (state === 'failed' && this.waitingSinceMs != null) this.failed = true;
    this.update(nowMs);
  }

  get mediaConnected() { return this.iceState === 'connected' || this.iceState === 'completed'; }

  // Media could connect (both in the call, signaling up) and has not: since when.
  update(nowMs) {
    const waiting = this.phase === 'inCall' && this.signalingUp && this.peerPresent && !this.mediaConnected;
    if (!waiting) { this.waitingSinceMs = null; this.failed = false; return; }
    if (this.waitingSinceMs == null) this.waitingSinceMs = nowMs;
    if (this.iceState === 'failed') this.failed = true;
  }

  snapshot(nowMs) {
    const counted = (now, before) => (now.done ? [...now.candidates] : [...before.candidates, ...now.candidates]);
    return {
      nowMs, waitingSinceMs: this.waitingSinceMs, relayOnly: this.relayOnly, iceState: this.iceState, failed: this.failed,
      iceServers: { status: this.iceServers.status, list: this.iceServers.list },
      refused: this.refused,
      // gatheringComplete: some gathering of this peer connection completed (so its STUN requests were answered or failed)
      local: {
        candidates: counted(this.local, this.localBefore), gatheringComplete: this.local.done || this.localBefore.done,
        // icecandidateerror events of those gatherings: {url, code, text}
        errors: this.local.done ? [...this.local.errors] : [...this.localBefore.errors, ...this.local.errors],
      },
      remote: { candidates: counted(this.remote, this.remoteBefore) },
    };
  }
}

/** The candidates of one ICE generation; done: gathering complete (ours) or end-of-candidates received (theirs). */
function generation(ufrag = null) {
  return { ufrag, candidates: [], errors: [], done: false };
}
