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
  }

  /**
   * Events: phaseChanged{phase}, ice{health}, signaling{up}, networkChanged, timerFired{timer}.
   * Actions: statusChanged{status}, timer{command}, escalate{step}.
   */
  handle(event) {
    switch (event.type) {
      case 'phaseChanged': {
        const active = event.phase === 'inCall';
        if (active === this.isActive) return [];
        this.isActive = active;
        // Entering or leaving a call starts from `connected`; entering one whose media is not up yet gives
        // it until the retrying threshold to come up.
        const actions = this.#reset();
        if (active && this.ice !== 'connected') {
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
            return this.#degrade();
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
        return this.ice === 'connected' ? this.#restore() : [];
      case 'networkChanged':
        if (!this.isActive) return [];
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
