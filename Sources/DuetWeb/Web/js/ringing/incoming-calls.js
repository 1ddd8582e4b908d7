// Incoming calls on any open Duet page that is not in that call (issue 31): listens through a RoomWatch, shows the
// sheet (caller's name, verified or not, ringtone, Accept and Decline), answers, and keeps the history. State for
// automation: window.duet.incoming = {state: 'ringing'|'accepted'|'declined'|'missed'|'answered_elsewhere'|null,
// roomId, callId, name, verified, picture}. `picture`: the caller's snapshot is shown (only on a device it was encrypted
// for, authenticated with the link's key: ringing/snapshot.js).
import { parseLinkKey } from '../verification/link-key.js';
import { openCaller } from './caller-seal.js';
import { snapshotPicture } from './snapshot.js';
import { ringStore } from './ring-store.js';
import { savedCalls, callHistory } from './saved-calls.js';
import { Ringtone } from './ringtone.js';

/** The incoming-call sheet's elements (the same markup in index.html and call.html). */
export function sheetElements(doc) {
  const $ = (id) => doc.getElementById(id);
  return {
    sheet: $('incoming'), title: $('incoming-title'), detail: $('incoming-detail'), badge: $('incoming-badge'), picture: $('incoming-picture'),
    accept: $('incoming-accept'), decline: $('incoming-decline'),
  };
}

const ENDED = { accepted: 'accepted', answered_elsewhere: 'answered_elsewhere', declined: 'declined', cancelled: 'missed', no_answer: 'missed' };

export class IncomingCalls {
  /** watch: a RoomWatch; exceptRoom: the room this page is in (its rings are not for this page); sheet elements. */
  constructor({ watch, exceptRoom = null, elements, announce = () => {}, navigate = (url) => location.assign(url) }) {
    Object.assign(this, { watch, exceptRoom, elements, announce, navigate });
    this.ringtone = new Ringtone();
    this.current = null;
    this.seen = new Set();  // call ids this page rang for (bounded)
    this.expiry = null;
    this.state = { state: null, roomId: null, callId: null, name: null, verified: false };
    elements.accept.addEventListener('click', () => this.answer('accept'));
    elements.decline.addEventListener('click', () => this.answer('decline'));
    elements.sheet.addEventListener('keydown', (event) => {
      if (event.key === 'Escape') { event.preventDefault(); this.answer('decline'); }
    });
  }

  async message(envelope) {
    if (envelope?.type === 'incoming_call') return this.ring(envelope.payload ?? {});
    if (envelope?.type === 'ring_ended') return this.ended(envelope.payload ?? {});
  }

  async ring({ rid, callId, caller, expiresAt, snapshotId }) {
    // A ring for the call this page is in is not news; one already shown (or over) is not shown again.
    if (!rid || !callId || rid === this.exceptRoom || this.seen.has(callId)) return;
    this.seen.add(callId);
    if (this.seen.size > 100) this.seen.delete(this.seen.values().next().value);
    // Current before the name is opened: a ring_ended arriving meanwhile must find it.
    const ring = { rid, callId, expiresAt };
    this.current = ring;
    this.state = { state: 'ringing', roomId: rid, callId, name: null, verified: false };
    const saved = savedCalls.get(rid);
    const linkKey = parseLinkKey(saved?.key ?? '');
    const opened = await openCaller({ caller, rid, callId, linkKey });
    if (this.current !== ring) return;  // ended while the name was being opened
    ring.answers = opened.answers ?? null;  // the secrets that prove this device's answer (caller-seal.js)
    // The ring stops by itself at its end even if the server's word never comes (a lost link): a missed call.
    clearTimeout(this.expiry);
    const left = (Number(expiresAt) || Date.now() + 45_000) - Date.now();
    this.expiry = setTimeout(() => { if (this.current === ring) this.finish('missed'); }, Math.max(0, Math.min(left, 120_000)) + 2_000);
    const callName = saved?.name || null;
    this.state = { state: 'ringing', roomId: rid, callId, name: opened.name, verified: opened.verified, altered: !!opened.altered, picture: false };
    const { sheet, title, detail, badge, picture } = this.elements;
    if (picture) { picture.hidden = true; picture.removeAttribute('src'); }
    if (snapshotId && linkKey && picture) this.showPicture(ring, snapshotId, linkKey);
    title.textContent = opened.verified ? opened.name : 'Incoming call';
    detail.textContent = opened.verified
      ? (callName && callName !== opened.name ? `in “${callName}”` : 'is calling you')
      : `${callName ? `“${callName}”` : 'A saved call'}: ${opened.altered ? 'the caller’s name could not be verified and is not shown' : opened.name ? `says “${opened.name}” (not verified)` : 'someone is calling'}`;
    badge.textContent = opened.verified ? 'Verified caller' : 'Not verified';
    badge.dataset.verified = String(opened.verified);
    sheet.hidden = false;
    document.body.dataset.incoming = 'ringing';
    this.ringtone.start();
    this.elements.accept.focus();
    this.announce(`Incoming call${opened.verified ? ` from ${opened.name}` : ''}. Press Enter to accept, Escape to decline.`);
  }

  /** The caller's snapshot on the sheet, once it is fetched and opened (the sheet rings without waiting for it). */
  async showPicture(ring, snapshotId, linkKey) {
    // Only a browser rung by push in this call ("Ring me here") has a key the snapshot was sealed to.
    const [deviceKey, kept] = await Promise.all([ringStore.deviceKey().catch(() => undefined), ringStore.get(ring.rid).catch(() => undefined)]);
    const url = await snapshotPicture({
      baseUrl: this.watch.baseUrl, rid: ring.rid, snapshotId, purpose: `ring:${ring.callId}`, deviceKey, endpoint: kept?.endpoint, linkKey,
    });
    if (!url || this.current !== ring) return;
    this.elements.picture.src = url;
    this.elements.picture.alt = this.state.verified ? `${this.state.name}, as they call` : 'The caller, as they call';
    this.elements.picture.hidden = false;
    this.state = { ...this.state, picture: true };
  }

  answer(answer) {
    const ring = this.current;
    if (!ring) return;
    const secret = ring.answers?.[answer];
    this.watch.send({ v: 1, type: 'ring_answer', rid: ring.rid, payload: { rid: ring.rid, callId: ring.callId, answer, ...(secret ? { secret } : {}) } });
    const saved = savedCalls.get(ring.rid);
    // Also over HTTP, with ?rid=: in a cluster this page's watcher may be on another node than the room, and the
    // room's node is where the answer counts (nginx routes by rid). A second answer changes nothing.
    if (saved?.memberToken && this.watch.deviceId) {
      fetch(new URL(`api/ring/answer?rid=${encodeURIComponent(ring.rid)}`, this.watch.baseUrl), {
        method: 'POST', headers: { 'Content-Type': 'application/json' }, keepalive: true,
        body: JSON.stringify({ rid: ring.rid, callId: ring.callId, answer, deviceId: this.watch.deviceId, memberToken: saved.memberToken, ...(secret ? { secret } : {}) }),
      }).catch(() => {});
    }
    if (answer === 'decline') {
      this.finish('declined');
      return;
    }
    this.finish('accepted');
    this.navigate(`/call/${ring.rid}${location.search}${saved?.key ? `#k=${saved.key}` : ''}`);
  }

  ended({ rid, callId, reason }) {
    if (!this.current || this.current.callId !== callId || this.current.rid !== rid) return;
    // This page still rings, so it did not answer: an accept that counted for this device (its answer reached the
    // server over HTTP first, or from another tab of this browser) was made elsewhere.
    const outcome = reason === 'accepted' ? 'answered_elsewhere' : ENDED[reason] ?? 'missed';
    this.finish(outcome);
    this.announce(outcome === 'answered_elsewhere' ? 'Answered on another device.' : outcome === 'missed' ? 'Missed call.' : 'Call declined.');
  }

  finish(outcome) {
    const ring = this.current;
    if (!ring) return;
    this.current = null;
    clearTimeout(this.expiry);
    this.ringtone.stop();
    this.elements.sheet.hidden = true;
    document.body.dataset.incoming = outcome;
    this.state = { ...this.state, state: outcome };
    const historyOutcome = outcome === 'accepted' ? 'answered' : outcome;
    callHistory.record({ roomId: ring.rid, callId: ring.callId, direction: 'incoming', outcome: historyOutcome, name: this.state.verified ? this.state.name : null });
  }
}
