// Port of ConnectionStatusMachine.swift. Seed 001: how healthy an active call is. No `failed` state:
// from `retrying` the engine keeps escalating until the server says the room is gone or the user leaves.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

export const CONNECTION_STATUSES = Object.freeze(['connected', 'recovering', 'retrying']);

/** The escalation cycle while `retrying` (EscalationStep.allCases order). */
export const ESCALATION_STEPS = Object.freeze(['iceRestart', 'offerResend', 'rejoin', 'transportFallback']);

/**
 * IceHealth: 'connected' (connected/completed), 'pending' (new/checking: not degraded, not yet
 * proven), 'disconnected', 'failed'.
 */
export class ConnectionStatusMachine {
  constructor() {
    this.status = 'connected';
    /** Only an `inCall` phase drives transitions. */
    this.isActive = false;
    this.ice = 'pending';
    this.signalingUp = true;
    this.escalationCount = 0;
    // Steps actually taken in this retrying spell: the pause grows with these, not with turns skipped.
    this.stepsTaken = 0;
    /** In a call whose media has not connected yet: nothing was lost, but a call whose ICE never connects
     *  (a dead TURN server, no usable candidates) must escalate like one that dropped. */
    this.awaitingFirstMedia = false;
    /** While the peer is suspended, media and ICE to it are down because it is away: its trouble, not ours
     *  (the badge says "The other person is reconnecting…"). Our status then speaks of our own signaling only,
     *  and nothing escalates towards a peer that cannot answer (a relay to it fails); ICE is judged again when
     *  it is back. */
    this.peerSuspended = false;
  }

  /**
   * Events: phaseChanged{phase}, ice{health}, signaling{up}, peerSuspended{suspended}, networkChanged,
   * timerFired{timer}.
   * Actions: statusChanged{status}, timer{command}, escalate{step}.
   */
  handle(event) {
    switch (event.type) {
      case 'phaseChanged': {
        const active = event.phase === 'inCall';
        if (active === this.isActive) return [];
        this.isActive = active;
        if (!active) this.peerSuspended = false; // the peer left with the call (its next one is told afresh)
        // Entering or leaving a call starts from `connected`; entering one whose media is not up yet gives
        // it until the retrying threshold to come up (from the peer's return, if it is away).
        const actions = this.#reset();
        if (active && this.ice !== 'connected' && !this.peerSuspended) {
          this.awaitingFirstMedia = true;
          actions.push(timerAction(schedule('retryingThreshold', RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS)));
        }
        return actions;
      }
      case 'ice':
        this.ice = event.health;
        if (!this.isActive) return [];
        switch (event.health) {
          case 'disconnected':
          case 'failed':
            return this.peerSuspended ? [] : this.#degrade();
          case 'connected':
            if (this.awaitingFirstMedia && this.status === 'connected') {
              this.awaitingFirstMedia = false;
              return [timerAction(cancel('retryingThreshold'))];
            }
            return this.signalingUp ? this.#restore() : [];
          default:
            return [];
        }
      case 'signaling':
        this.signalingUp = event.up;
        if (!this.isActive) return [];
        if (!event.up) return this.#degrade();
        return this.ice === 'connected' || this.peerSuspended ? this.#restore() : [];
      case 'peerSuspended':
        if (event.suspended === this.peerSuspended) return [];
        this.peerSuspended = event.suspended;
        if (!this.isActive) return [];
        // Away: whatever ICE-only trouble (or wait for first media) we had is dropped; our signaling's stays.
        if (event.suspended) {
          return this.signalingUp && (this.status !== 'connected' || this.awaitingFirstMedia) ? this.#reset() : [];
        }
        // Back: its media is judged again from where ICE is; not connected (down, or a new connection still
        // checking) is media to recover from now.
        return this.ice === 'connected' ? [] : this.#degrade();
      case 'networkChanged':
        // Our path moved; with the peer away there is no media to restart until it is back (then ICE is judged).
        if (!this.isActive || this.peerSuspended) return [];
        return this.#degrade();
      case 'timerFired':
        if (event.timer === 'retryingThreshold') {
          if (!this.isActive || !(this.status === 'recovering' || this.awaitingFirstMedia)) return [];
          this.awaitingFirstMedia = false;
          this.status = 'retrying';
          this.escalationCount = 0;
          this.stepsTaken = 0;
          return [{ type: 'statusChanged', status: 'retrying' }, ...this.#escalate()];
        }
        if (event.timer === 'retryEscalation') {
          if (!this.isActive || this.status !== 'retrying') return [];
          return this.#escalate();
        }
        return [];
      default:
        return [];
    }
  }

  #degrade() {
    if (this.status !== 'connected') return [];
    this.status = 'recovering';
    return [
      { type: 'statusChanged', status: 'recovering' },
      timerAction(schedule('retryingThreshold', RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS)),
    ];
  }

  #restore() {
    if (this.status === 'connected') return [];
    return this.#reset();
  }

  #reset() {
    const changed = this.status !== 'connected';
    this.status = 'connected';
    this.escalationCount = 0;
    this.stepsTaken = 0;
    this.awaitingFirstMedia = false;
    return [
      ...(changed ? [{ type: 'statusChanged', status: 'connected' }] : []),
      timerAction(cancel('retryingThreshold')),
      timerAction(cancel('retryEscalation')),
    ];
  }

  /** One step of the cycle now, the next after an exponentially growing pause. */
  #escalate() {
    // A healthy transport is never closed for a media-only failure (a dead TURN server or UDP path would flip
    // WS↔SSE every cycle and show the peer "reconnecting"): its turn passes to the next step.
    if (ESCALATION_STEPS[this.escalationCount % ESCALATION_STEPS.length] === 'transportFallback' && this.signalingUp) {
      this.escalationCount += 1;
    }
    const step = ESCALATION_STEPS[this.escalationCount % ESCALATION_STEPS.length];
    const pause = this.stepsTaken >= 20
      ? RESILIENCE.RETRY_ESCALATION_CAP_MS
      : Math.min(RESILIENCE.RETRY_ESCALATION_CAP_MS, RESILIENCE.RETRY_ESCALATION_BASE_MS * 2 ** this.stepsTaken);
    this.escalationCount += 1;
    this.stepsTaken += 1;
    return [{ type: 'escalate', step }, timerAction(schedule('retryEscalation', pause))];
  }
}
