// Seed 001's status badge as a pure value: "Reconnecting…" only after RECONNECTING_BADGE_DEBOUNCE_MS of
// trouble (a blip stays invisible), "Taking longer than usual…" plus "Leave call" in retrying, "The other
// person is reconnecting…" while the peer is suspended and our own signaling is fine (their trouble, not
// ours), "Connecting…" until media has connected — never "Connected" before it is. Trouble also counts on
// the waiting screen (signaling down). The debounce is a timer action: the page owns the clock, tests own
// time. The Swift engine's StatusBadgeMachine is the same machine.
import { RESILIENCE } from '../constants.js';

export const BADGE_TIMER = 'reconnectingBadge';

export class StatusBadgeMachine {
  constructor() {
    this.phase = 'idle';
    this.status = 'connected';
    this.peerSuspended = false;
    this.signalingUp = false;
    this.mediaConnected = false;
    this.everConnected = false;
    this.troubled = false;
    this.debounced = false;  // the current trouble has lasted long enough to be shown
    this.badge = hidden();
  }

  // event: {type:'phase', phase} | {type:'status', status} | {type:'peer', suspended} |
  //        {type:'signaling', up} | {type:'media', connected} | {type:'timerFired'}
  handle(event) {
    switch (event.type) {
      case 'phase':
        if (event.phase !== this.phase && (event.phase === 'inCall' || this.phase === 'inCall')) this.everConnected = false;
        this.phase = event.phase;
        break;
      case 'status': this.status = event.status; break;
      case 'peer': this.peerSuspended = event.suspended; break;
      case 'signaling': this.signalingUp = event.up; break;
      case 'media':
        this.mediaConnected = event.connected;
        if (event.connected && this.phase === 'inCall') this.everConnected = true;
        break;
      case 'timerFired':
        if (this.troubled) this.debounced = true;
        break;
    }
    const actions = [];
    const troubled = this.isTroubled();
    if (troubled && !this.troubled) {
      this.debounced = false;
      actions.push({ type: 'scheduleTimer', timer: BADGE_TIMER, afterMs: RESILIENCE.RECONNECTING_BADGE_DEBOUNCE_MS });
    }
    if (!troubled && this.troubled) {
      this.debounced = false;
      actions.push({ type: 'cancelTimer', timer: BADGE_TIMER });
    }
    this.troubled = troubled;
    const next = this.derive();
    if (!sameBadge(next, this.badge)) {
      this.badge = next;
      actions.push({ type: 'show', badge: next });
    }
    return actions;
  }

  isTroubled() {
    if (this.phase === 'inCall') return this.status === 'recovering';
    return this.phase === 'waiting' && !this.signalingUp;
  }

  derive() {
    const theirs = this.signalingUp && this.peerSuspended;
    if (this.phase === 'waiting') return this.troubled && this.debounced ? reconnecting() : hidden();
    if (this.phase !== 'inCall') return hidden();
    if (theirs && this.status !== 'connected') return peerReconnecting();
    if (this.status === 'retrying') {
      return { kind: 'retrying', text: this.everConnected ? 'Reconnecting…' : 'Connecting…', detail: 'Taking longer than usual…', offerLeave: true };
    }
    if (this.status === 'recovering') return this.debounced ? reconnecting() : { kind: 'pending', text: '', detail: null, offerLeave: false };
    if (this.peerSuspended) return peerReconnecting();
    if (!this.mediaConnected) return { kind: 'connecting', text: 'Connecting…', detail: null, offerLeave: false };
    return { kind: 'connected', text: 'Connected', detail: null, offerLeave: false };
  }
}

function hidden() { return { kind: 'hidden', text: '', detail: null, offerLeave: false }; }
function reconnecting() { return { kind: 'reconnecting', text: 'Reconnecting…', detail: null, offerLeave: false }; }
function peerReconnecting() { return { kind: 'peerReconnecting', text: 'The other person is reconnecting…', detail: null, offerLeave: false }; }
function sameBadge(a, b) { return a.kind === b.kind && a.text === b.text && a.detail === b.detail; }
