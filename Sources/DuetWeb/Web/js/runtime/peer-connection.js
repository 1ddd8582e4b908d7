// The browser's RTCPeerConnection behind the engine's WebRTC commands. It makes no decisions: offers,
// restarts and rollbacks happen when the engine says so, and every state change goes back to it.

import { establishedDtlsRole, offerKeepingDtlsRole } from './dtls-role.js';

// What stats() reports, all cumulative since the connection was made: video frames decoded; audio packets
// received, samples played out (including concealed ones), concealed samples, and the audio's total energy and
// duration (mean power over a window = Δenergy / Δduration); the selected pair's candidate types (host, srflx,
// prflx, relay), the local candidate's protocol, the relay's protocol to its TURN server (udp, tcp, tls), and RTT.
export function emptyStats() {
  return {
    videoFramesDecoded: 0, audioPacketsReceived: 0, audioSamplesReceived: 0, audioConcealedSamples: 0,
    audioEnergy: 0, audioSamplesDuration: 0, candidateType: null, remoteCandidateType: null,
    localProtocol: null, relayProtocol: null, rttMs: null,
  };
}

// Firefox (Gecko, its own ICE agent) rather than a libwebrtc browser (Chromium, Safari): their ICE agents differ in
// how an ICE restart meets the old generation (PeerConnection.createOffer).
function isGecko() {
  return typeof navigator !== 'undefined' && /\bGecko\/\d/.test(navigator.userAgent) && !/like Gecko/.test(navigator.userAgent);
}

export class PeerConnection {
  // onLocalCandidate (optional): every gathered RTCIceCandidate as it is, for observers (its type, relay protocol
  // and TURN URL); the engine gets its own copy through onEvent. onCandidateError (optional): every
  // icecandidateerror ({url, errorCode, errorText}: a STUN or TURN server that did not answer or refused).
  // onConfigurationRefused (optional): (configuration, error) when the browser refuses the configuration
  // (`new RTCPeerConnection` or setConfiguration throws, say on a malformed ICE server URL); the error is rethrown.
  constructor({ localMedia, onEvent, onRemoteStream, onLocalCandidate = () => {}, onCandidateError = () => {},
    onConfigurationRefused = () => {}, holdsRestartOffer = !isGecko(), keepsDtlsRole = false }) {
    this.localMedia = localMedia;
    this.onEvent = onEvent;
    this.onRemoteStream = onRemoteStream;
    this.onLocalCandidate = onLocalCandidate;
    this.onCandidateError = onCandidateError;
    this.onConfigurationRefused = onConfigurationRefused;
    // Whether an ICE restart offer is applied with its answer rather than at once (createOffer says why).
    this.holdsRestartOffer = holdsRestartOffer;
    // Whether offers name the DTLS role this side holds (runtime/dtls-role.js). Off by default: measured, a
    // Chromium restart under a Firefox host heals faster through the refusal and a new connection than in place
    // (docs/call-engine.md, "Keeping the DTLS role"); on with the call page's `?keep-dtls-role=1`.
    this.keepsDtlsRole = keepsDtlsRole;
    this.pc = null;
    // The ICE restart offer sent and not yet applied ({pc, offer}; createOffer says why), null without one.
    this.unappliedOffer = null;
    // Each connection's "closed" signal: a stats reading ends with the connection it was asked of (Firefox leaves the
    // getStats() of a connection closed meanwhile unsettled: after a renewal, a reading never came back).
    this.closedSignals = new WeakMap();
  }

  ensure(configuration) {
    if (this.pc) return;
    let pc;
    try {
      pc = new RTCPeerConnection(configuration);
    } catch (error) {
      this.onConfigurationRefused(configuration, error);
      throw error;
    }
    this.pc = pc;
    let closed;
    this.closedSignals.set(pc, { promise: new Promise((resolve) => { closed = resolve; }), resolve: () => closed(null) });
    const stream = this.localMedia.stream;
    if (stream) for (const track of stream.getTracks()) pc.addTrack(track, stream);
    // Audio-only calls still receive the other side's video.
    if (stream && !this.localMedia.videoTrack) pc.addTransceiver('video', { direction: 'recvonly' });
    pc.onicecandidate = ({ candidate }) => {
      if (pc !== this.pc) return;
      if (candidate && candidate.candidate) {
        this.onLocalCandidate(candidate);
        this.onEvent({ type: 'localCandidate', candidate: {
          candidate: candidate.candidate, sdpMid: candidate.sdpMid, sdpMLineIndex: candidate.sdpMLineIndex,
          usernameFragment: candidate.usernameFragment ?? undefined } });
      } else {
        this.onEvent({ type: 'gatheringComplete' });
      }
    };
    pc.onicecandidateerror = (event) => {
      if (pc === this.pc) this.onCandidateError({ url: event.url, errorCode: event.errorCode, errorText: event.errorText });
    };
    pc.oniceconnectionstatechange = () => pc === this.pc && this.onEvent({ type: 'iceStateChanged', state: pc.iceConnectionState });
    pc.onconnectionstatechange = () => {
      if (pc !== this.pc) return;
      // 'connecting' is the aggregate's name for ICE's 'checking'.
      const state = pc.connectionState === 'connecting' ? 'checking' : pc.connectionState;
      this.onEvent({ type: 'connectionStateChanged', state });
    };
    pc.onsignalingstatechange = () => pc === this.pc && this.onEvent({ type: 'signalingStateChanged', state: pc.signalingState });
    pc.ontrack = (event) => {
      const remote = event.streams[0] ?? new MediaStream([event.track]);
      this.onRemoteStream(remote);
    };
  }

  // libwebrtc's ICE restart offer is sent before it is applied here: it is applied just before the answer. Applied at
  // once, libwebrtc's new ports start checking the peer's old-generation candidates, with the old credentials, before
  // the answer brings the new ones. Firefox's old ICE stream answers those checks, so Chromium nominates a pair whose
  // media Firefox never plays, and Firefox's new stream never checks (chromium-hosts-firefox-online-a, 2026-11-29:
  // 5 runs in 13 under load, every run with the answer 0.5 s late; 5 s of silence until Firefox's media watchdog
  // restarted). Applied with the answer, the new ports check only the new generation.
  // Firefox applies its own at once: its candidates must follow its offer, not the answer. libwebrtc answering pairs
  // its new ports with the old candidates it already has, and Firefox's old stream answers those too: with Firefox's
  // candidates an answer's round trip late, chromium-hosts-firefox-online-b went silent the same way, every run.
  // The cost: a libwebrtc restart gathers (TURN allocations included) one signaling round trip later.
  // With keepsDtlsRole, the offer sent names the DTLS role this side already holds (runtime/dtls-role.js).
  async createOffer(iceRestart) {
    this.unappliedOffer = null;
    const role = this.keepsDtlsRole ? establishedDtlsRole(this.pc.currentLocalDescription, this.pc.currentRemoteDescription) : null;
    const offer = await this.pc.createOffer({ iceRestart });
    if (iceRestart && this.holdsRestartOffer) {
      this.unappliedOffer = { pc: this.pc, offer };
      return offerKeepingDtlsRole(offer.sdp, role);
    }
    await this.pc.setLocalDescription(offer);
    return offerKeepingDtlsRole(this.pc.localDescription.sdp, role);
  }

  async createAnswer() {
    const answer = await this.pc.createAnswer();
    await this.pc.setLocalDescription(answer);
    return this.pc.localDescription.sdp;
  }

  async setRemoteDescription(kind, sdp) {
    const pending = this.unappliedOffer;
    this.unappliedOffer = null;
    // An answer answers the restart offer this side sent: applied first. An offer instead (the peer's, crossing
    // ours) leaves ours unapplied: there is nothing to roll back. The offer refused now is the answer refused (the
    // engine hears remoteDescriptionFailed): the connection cannot take the restart it was asked for, and is replaced.
    if (kind === 'answer' && pending?.pc === this.pc) await this.pc.setLocalDescription(pending.offer);
    await this.pc.setRemoteDescription({ type: kind, sdp });
  }

  async rollback() {
    this.unappliedOffer = null;
    if (this.pc && this.pc.signalingState !== 'stable') await this.pc.setLocalDescription({ type: 'rollback' });
  }

  async addRemoteCandidate(candidate) {
    // null: the peer has no more candidates for this generation.
    await this.pc.addIceCandidate(candidate ?? null);
  }

  setConfiguration(configuration) {
    try {
      this.pc?.setConfiguration(configuration);
    } catch (error) {
      this.onConfigurationRefused(configuration, error);
      throw error;
    }
  }

  async replaceVideoTrack(track) {
    const sender = this.pc?.getSenders().find((s) => s.track?.kind === 'video');
    await sender?.replaceTrack(track);
  }

  get iceConnectionState() { return this.pc?.iceConnectionState ?? 'new'; }

  // The live connection's RTCStatsReport as the browser gives it (null without one), read-only: what
  // runtime/quality-monitor.js turns into call quality.
  async rawStats() { return this.#report(); }

  /** The live connection's report; null without one, or when it was closed before the browser answered. */
  #report() {
    const pc = this.pc;
    if (!pc) return Promise.resolve(null);
    return Promise.race([pc.getStats(), this.closedSignals.get(pc).promise]);
  }

  async stats() {
    const report = await this.#report();
    if (!report) return this.pc ? this.stats() : null; // closed while reading: the connection that replaced it
    const result = emptyStats();
    let pair = null;
    report.forEach((s) => {
      if (s.type === 'inbound-rtp' && s.kind === 'video') result.videoFramesDecoded += s.framesDecoded ?? 0;
      if (s.type === 'inbound-rtp' && s.kind === 'audio') {
        // Packets prove only that bytes arrived; the decoder's counters say whether sound came out of them.
        // totalSamplesReceived includes concealed samples (made up over a gap), so both are given.
        result.audioPacketsReceived += s.packetsReceived ?? 0;
        result.audioSamplesReceived += s.totalSamplesReceived ?? 0;
        result.audioConcealedSamples += s.concealedSamples ?? 0;
        result.audioEnergy += s.totalAudioEnergy ?? 0;
        result.audioSamplesDuration += s.totalSamplesDuration ?? 0;
      }
      if (s.type === 'transport' && s.selectedCandidatePairId) pair = report.get(s.selectedCandidatePairId);
    });
    if (!pair) report.forEach((s) => { if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') pair = s; });
    if (pair) {
      const local = report.get(pair.localCandidateId);
      result.candidateType = local?.candidateType ?? null;
      result.localProtocol = local?.protocol ?? null;
      result.relayProtocol = local?.relayProtocol ?? null;
      result.remoteCandidateType = report.get(pair.remoteCandidateId)?.candidateType ?? null;
      if (pair.currentRoundTripTime !== undefined) result.rttMs = Math.round(pair.currentRoundTripTime * 1000);
    }
    return result;
  }

  close() {
    const pc = this.pc;
    this.pc = null;
    this.unappliedOffer = null;
    pc?.close();
    if (pc) this.closedSignals.get(pc).resolve();
  }
}
