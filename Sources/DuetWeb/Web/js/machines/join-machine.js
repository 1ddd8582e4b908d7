// Port of JoinMachine.swift. The join attempt's timers (000 §5/§6 scenario 8, §9 summary): snapshot
// ≤ 2 s, push endpoint ≤ 250 ms, kickstart at 1.2 s, recovery at 4 s after sending `join`, hard
// timeout at 15 s.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

/**
 * JoinMachine.Options: `prepareSnapshot` — the app prepares a join snapshot (e.g. a preview frame
 * id); `pushSupported` — the app can get a push endpoint to include in `join`.
 */
export function joinOptions({ prepareSnapshot = false, pushSupported = false } = {}) {
  return { prepareSnapshot, pushSupported };
}

/** Stages: idle, preparingSnapshot, awaitingPushEndpoint, readyToSend, sent, acknowledged, failed. */
export class JoinMachine {
  constructor() {
    this.stage = 'idle';
    this.options = joinOptions();
    this.snapshotId = null;
    this.pushEndpoint = null;
    this.signalingOpen = false;
    this.kickstarted = false;
  }

  /**
   * Events: start{options}, snapshotReady{snapshotId}, pushEndpointReady{endpoint}, signalingOpened,
   * signalingClosed, acknowledged (`joined` arrived), cancel, timerFired{timer}.
   * Actions: prepareSnapshot, requestPushEndpoint, ensureSignalingConnection,
   * sendJoin{snapshotId, pushEndpoint}, promote (ack received but the phase is still joining: move it
   * on), fail, timer{command}.
   */
  handle(event) {
    const stage = this.stage;
    const timer = event.type === 'timerFired' ? event.timer : null;

    if (event.type === 'start' && (stage === 'idle' || stage === 'failed' || stage === 'acknowledged')) {
      this.options = joinOptions(event.options);
      this.snapshotId = null;
      this.pushEndpoint = null;
      this.kickstarted = false;
      const timers = [
        timerAction(schedule('joinHardTimeout', RESILIENCE.JOIN_HARD_TIMEOUT_MS)),
        timerAction(schedule('joinKickstart', RESILIENCE.JOIN_CONNECT_KICKSTART_MS)),
      ];
      if (this.options.prepareSnapshot) {
        this.stage = 'preparingSnapshot';
        return [
          ...timers,
          { type: 'prepareSnapshot' },
          timerAction(schedule('snapshotPrepare', RESILIENCE.SNAPSHOT_PREPARE_TIMEOUT_MS)),
        ];
      }
      return [...timers, ...this.#afterSnapshot()];
    }
    if (stage === 'preparingSnapshot' && event.type === 'snapshotReady') {
      this.snapshotId = event.snapshotId ?? null;
      return [timerAction(cancel('snapshotPrepare')), ...this.#afterSnapshot()];
    }
    if (stage === 'preparingSnapshot' && timer === 'snapshotPrepare') return this.#afterSnapshot();
    if (stage === 'awaitingPushEndpoint' && event.type === 'pushEndpointReady') {
      this.pushEndpoint = event.endpoint ?? null;
      return [timerAction(cancel('pushEndpointWait')), ...this.#trySend()];
    }
    if (stage === 'awaitingPushEndpoint' && timer === 'pushEndpointWait') return this.#trySend();
    if (event.type === 'signalingOpened') {
      this.signalingOpen = true;
      return stage === 'readyToSend' || stage === 'sent' ? this.#send() : [];
    }
    if (event.type === 'signalingClosed') {
      this.signalingOpen = false;
      if (stage === 'sent') this.stage = 'readyToSend'; // re-sent once the link is back
      return [];
    }
    if (timer === 'joinKickstart'
      && (stage === 'preparingSnapshot' || stage === 'awaitingPushEndpoint' || stage === 'readyToSend')) {
      if (this.signalingOpen || this.kickstarted) return [];
      this.kickstarted = true;
      return [{ type: 'ensureSignalingConnection' }];
    }
    if (timer === 'joinRecovery' && (stage === 'sent' || stage === 'readyToSend')) {
      return this.signalingOpen ? this.#send() : [{ type: 'ensureSignalingConnection' }];
    }
    if (timer === 'joinRecovery' && stage === 'acknowledged') return [{ type: 'promote' }];
    if (timer === 'joinHardTimeout' && (stage === 'preparingSnapshot' || stage === 'awaitingPushEndpoint'
      || stage === 'readyToSend' || stage === 'sent')) {
      this.stage = 'failed';
      return [{ type: 'fail' }, ...this.#cancelAll()];
    }
    if (event.type === 'acknowledged' && (stage === 'sent' || stage === 'readyToSend')) {
      this.stage = 'acknowledged';
      return this.#cancelAll();
    }
    if (event.type === 'cancel') {
      this.stage = 'idle';
      return this.#cancelAll();
    }
    return [];
  }

  #afterSnapshot() {
    if (this.options.pushSupported) {
      this.stage = 'awaitingPushEndpoint';
      return [
        { type: 'requestPushEndpoint' },
        timerAction(schedule('pushEndpointWait', RESILIENCE.JOIN_PUSH_ENDPOINT_WAIT_MS)),
      ];
    }
    return this.#trySend();
  }

  #trySend() {
    this.stage = 'readyToSend';
    return this.signalingOpen ? this.#send() : [{ type: 'ensureSignalingConnection' }];
  }

  #send() {
    this.stage = 'sent';
    return [
      { type: 'sendJoin', snapshotId: this.snapshotId, pushEndpoint: this.pushEndpoint },
      timerAction(schedule('joinRecovery', RESILIENCE.JOIN_RECOVERY_MS)),
    ];
  }

  #cancelAll() {
    return ['joinKickstart', 'joinRecovery', 'joinHardTimeout', 'snapshotPrepare', 'pushEndpointWait']
      .map((id) => timerAction(cancel(id)));
  }
}
