// Seed 001's status badge as a pure value: "Reconnecting…" only after RECONNECTING_BADGE_DEBOUNCE_MS
// in recovering (a blip stays invisible), "Taking longer than usual…" plus "Leave call" in retrying,
// "<peer> is reconnecting…" while the other side is suspended. The debounce is a timer action, so the
// page's runtime owns the clock and tests own time.
import { RESILIENCE } from '../constants.js';

export const BADGE_TIMER = 'reconnectingBadge';

export class StatusBadgeMachine {
  constructor() {
    this.inCall = false;
    this.status = 'connected';
    this.peerSuspended = false;
    this.debounced = false;  // recovering has lasted long enough to be shown
    this.badge = hidden();
  }

  // event: {type:'phase', phase} | {type:'status', status} | {type:'peer', suspended} | {type:'timerFired'}
  handle(event) {
    const actions = [];
    switch (event.type) {
      case 'phase':
        this.inCall = event.phase === 'inCall';
        if (!this.inCall) { this.debounced = false; actions.push({ type: 'cancelTimer', timer: BADGE_TIMER }); }
        break;
      case 'status':
        if (event.status === this.status) break;
        if (event.status === 'recovering' && this.status === 'connected') {
          this.debounced = false;
          actions.push({ type: 'scheduleTimer', timer: BADGE_TIMER, afterMs: RESILIENCE.RECONNECTING_BADGE_DEBOUNCE_MS });
        }
        if (event.status === 'connected') { this.debounced = false; actions.push({ type: 'cancelTimer', timer: BADGE_TIMER }); }
        this.status = event.status;
        break;
      case 'peer':
        this.peerSuspended = event.suspended;
        break;
      case 'timerFired':
        if (this.status === 'recovering') this.debounced = true;
        break;
    }
    const next = this.derive();
    if (!sameBadge(next, this.badge)) {
      this.badge = next;
      actions.push({ type: 'show', badge: next });
    }
    return actions;
  }

  derive() {
    if (!this.inCall) return hidden();
    if (this.status === 'retrying') {
      return { kind: 'retrying', text: 'Reconnecting…', detail: 'Taking longer than usual…', offerLeave: true };
    }
    if (this.status === 'recovering') {
      // Never claim "connected" while recovering, even before the badge is allowed to show.
      return this.debounced ? { kind: 'reconnecting', text: 'Reconnecting…', detail: null, offerLeave: false } : { kind: 'pending', text: '', detail: null, offerLeave: false };
    }
    if (this.peerSuspended) return { kind: 'peerReconnecting', text: 'is reconnecting…', detail: null, offerLeave: false };
    return { kind: 'connected', text: 'Connected', detail: null, offerLeave: false };
  }
}

function hidden() { return { kind: 'hidden', text: '', detail: null, offerLeave: false }; }
function sameBadge(a, b) { return a.kind === b.kind && a.text === b.text && a.detail === b.detail; }
