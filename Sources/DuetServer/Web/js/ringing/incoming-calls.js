// Incoming calls on any open Duet page that is not in that call (issue 31): listens through a RoomWatch, shows the
// sheet (caller's name, verified or not, ringtone, Accept and Decline), answers, and keeps the history. State for
// automation: window.duet.incoming = {state: 'ringing'|'accepted'|'declined'|'missed'|'answered_elsewhere'|null,
// roomId, callId, name, verified, devices}.
import { parseLinkKey } from '../verification/link-key.js';
import { openCaller } from './caller-seal.js';
import { savedCalls, callHistory } from './saved-calls.js';
import { Ringtone } from './ringtone.js';

const ENDED = { accepted: 'accepted', answered_elsewhere: 'answered_elsewhere', declined: 'declined', cancelled: 'missed', no_answer: 'missed' };

export class IncomingCalls {
  /** watch: a RoomWatch; exceptRoom: the room this page is in (its rings are not for this page); sheet elements. */
  constructor({ watch, exceptRoom = null, elements, announce = () => {}, navigate = (url) => location.assign(url) }) {
    Object.assign(this, { watch, exceptRoom, elements, announce, navigate });
    this.ringtone = new Ringtone();
    this.current = null;
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

  async ring({ rid, callId, caller, expiresAt }) {
    // A ring for the call this page is in is not news; one that is already showing is not shown twice.
    if (!rid || !callId || rid === this.exceptRoom || this.current?.callId === callId) return;
    const saved = savedCalls.get(rid);
    const linkKey = parseLinkKey(saved?.key ?? '');
    const opened = await openCaller({ caller, rid, callId, linkKey });
    this.current = { rid, callId, expiresAt };
    const callName = saved?.name || null;
    this.state = { state: 'ringing', roomId: rid, callId, name: opened.name, verified: opened.verified, altered: !!opened.altered };
    const { sheet, title, detail, badge } = this.elements;
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

  answer(answer) {
    const ring = this.current;
    if (!ring) return;
    this.watch.send({ v: 1, type: 'ring_answer', rid: ring.rid, payload: { rid: ring.rid, callId: ring.callId, answer } });
    const saved = savedCalls.get(ring.rid);
    if (answer === 'decline') {
      this.finish('declined');
      return;
    }
    this.finish('accepted');
    this.navigate(`/call/${ring.rid}${location.search}${saved?.key ? `#k=${saved.key}` : ''}`);
  }

  ended({ rid, callId, reason }) {
    if (!this.current || this.current.callId !== callId || this.current.rid !== rid) return;
    const outcome = ENDED[reason] ?? 'missed';
    if (outcome === 'accepted') return;  // our own accept: already on the way to the call
    this.finish(outcome);
    this.announce(outcome === 'answered_elsewhere' ? 'Answered on another device.' : outcome === 'missed' ? 'Missed call.' : 'Call declined.');
  }

  finish(outcome) {
    const ring = this.current;
    this.current = null;
    this.ringtone.stop();
    this.elements.sheet.hidden = true;
    document.body.dataset.incoming = outcome;
    this.state = { ...this.state, state: outcome };
    const historyOutcome = outcome === 'accepted' ? 'answered' : outcome;
    callHistory.record({ roomId: ring.rid, callId: ring.callId, direction: 'incoming', outcome: historyOutcome, name: this.state.verified ? this.state.name : null });
  }
}
