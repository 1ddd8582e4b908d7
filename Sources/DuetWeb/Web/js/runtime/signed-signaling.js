// The runtime's half of a verified call (issue 19): it signs the offers, answers and `verify_failed` this page
// sends, and checks those it gets, before the engine sees them; and it works out the safety code. The twin of
// DuetClient's SignedSignaling.swift and SafetyCodeSource.swift. HMACs are the runtime's business because WebCrypto
// is asynchronous; the pure engine only learns the verdict (`descriptionRejected`).
//
// Who is who comes from the engine's own events: the engine clears its session when it tears down, before the
// runtime sends that teardown's `verify_failed`, so the runtime keeps the last room and people it was told. The
// context is captured when a message is queued, never when its HMAC is finished.
import {
  fingerprintAuth, fingerprintsInSdp, verifyFailedAuth, verifyFingerprintAuth, verifyVerifyFailed,
} from '../verification/fingerprint-auth.js';
import { safetyCode } from '../verification/safety-code.js';

const SIGNED = new Set(['offer', 'answer', 'verify_failed']);

export class SignedSignaling {
  /** key: the link key's 32 bytes (parseLinkKey), or null for a link without one. */
  constructor(key = null) {
    this.key = key;
    this.roomId = null;
    // Our cids in this call, newest last (a few): a description the peer signed for our previous seat, just before
    // it learned of our new one, is still addressed to us.
    this.myCids = [];
    this.peerCid = null;
  }

  get myCid() { return this.myCids.at(-1) ?? null; }

  /** An engine event: `room` and `participants` say who is who. */
  note(event) {
    if (event.type === 'room') this.roomId = event.roomId;
    if (event.type === 'participants') {
      if (event.myCid && event.myCid !== this.myCid) {
        this.myCids.push(event.myCid);
        if (this.myCids.length > 4) this.myCids.shift();
      }
      this.peerCid = event.participants.find((p) => p.cid !== event.myCid)?.cid ?? null;
    }
  }

  /** Whether `envelope` needs an HMAC before it goes out (else it can go at once, if nothing is queued before it). */
  needsSigning(envelope) { return this.key != null && SIGNED.has(envelope.type); }
  /** Whether `envelope` needs a check before the engine may see it. */
  needsCheck(envelope) { return SIGNED.has(envelope?.type) && (this.key != null || envelope.type === 'verify_failed'); }

  /** Who is who now, to sign with later: `sign(envelope, context)`. */
  context() { return { rid: this.roomId, sender: this.myCid, receiver: this.peerCid }; }

  /**
   * `envelope` with its `auth` and `for` (the cid it was signed for) when it is ours to sign and there is a key;
   * anything else as it is. null for one a keyed link must sign but cannot (nobody to send it to, no fingerprint):
   * unsigned it would end the call as intercepted at the other side, so it is lost instead, as on a dying link.
   */
  async sign(envelope, { rid, sender, receiver } = this.context()) {
    if (!this.needsSigning(envelope)) return envelope;
    if (rid == null || sender == null || receiver == null) return null;
    const payload = envelope.payload ?? {};
    let auth;
    if (envelope.type === 'verify_failed') {
      auth = await verifyFailedAuth({ key: this.key, rid, sender, receiver });
    } else {
      if (typeof payload.sdp !== 'string') return null;
      auth = await fingerprintAuth({ key: this.key, rid, sender, receiver, sdp: payload.sdp });
      if (auth == null) return null;
    }
    return { ...envelope, payload: { ...payload, auth, for: receiver } };
  }

  /**
   * The verdict on a received envelope: 'pass' (to the engine as a message), 'rejected' (an offer or answer the key
   * does not vouch for: `descriptionRejected`) or 'dropped' (not ours to judge: a verify_failed nobody with the key
   * wrote, or a message signed `for` another seat, which changed hands while it was on its way). The sender is who
   * the server says it is (`payload.from`): a server lying about it fails like one that rewrote the SDP.
   */
  async check(envelope) {
    const payload = envelope?.payload ?? {};
    const type = envelope?.type;
    if (type === 'offer' || type === 'answer') {
      // Without a key nothing is checked; a payload without an SDP is dropped by the engine anyway.
      if (this.key == null || typeof payload.sdp !== 'string') return 'pass';
      if (this.roomId == null || typeof payload.from !== 'string') return 'rejected';
      if (typeof payload.for === 'string' && !this.myCids.includes(payload.for)) return 'dropped';
      for (const receiver of [...this.myCids]) {
        const ok = await verifyFingerprintAuth({
          auth: payload.auth, key: this.key, rid: this.roomId, sender: payload.from, receiver, sdp: payload.sdp });
        if (ok) return 'pass';
      }
      return 'rejected';
    }
    if (type === 'verify_failed') {
      if (this.key == null || this.roomId == null || typeof payload.from !== 'string') return 'dropped';
      if (typeof payload.for === 'string' && !this.myCids.includes(payload.for)) return 'dropped';
      for (const receiver of [...this.myCids]) {
        if (await verifyVerifyFailed({ auth: payload.auth, key: this.key, rid: this.roomId, sender: payload.from, receiver })) return 'pass';
      }
      return 'dropped';
    }
    return 'pass';
  }
}

/**
 * The safety code of the call in progress: both sides' fingerprints as their SDPs state them, and the room. Told
 * each description WebRTC took (ours when made, the peer's once applied) and when the peer is gone; `code` is the
 * code to show, null while one side is unknown. (SafetyCodeSource.swift)
 */
export class SafetyCodeSource {
  constructor() {
    this.roomId = null;
    this.local = [];
    this.remote = [];
    this.code = null;
    this.generation = 0;
  }

  /** input: {type: 'room', roomId} | {type: 'localDescription', sdp} | {type: 'remoteDescriptionApplied', sdp} |
   *  {type: 'peerGone'} | {type: 'connectionGone'}. Resolves to the new code when it changed ({code}), else null. Answers come in call order. */
  async handle(input) {
    if (input.type === 'room') this.roomId = input.roomId;
    if (input.type === 'localDescription') this.local = fingerprintsInSdp(input.sdp);
    if (input.type === 'remoteDescriptionApplied') this.remote = fingerprintsInSdp(input.sdp);
    if (input.type === 'peerGone') this.remote = [];
    // Our connection closed or renewed (a new one brings its own certificate): nothing is known until it says.
    if (input.type === 'connectionGone') { this.local = []; this.remote = []; }
    const generation = ++this.generation;
    const { roomId, local, remote } = this;
    const next = roomId != null && local.length > 0 && remote.length > 0 ? await safetyCode({ rid: roomId, local, remote }) : null;
    // A later input's answer supersedes this one.
    if (generation !== this.generation || next === this.code) return null;
    this.code = next;
    return { code: next };
  }
}
