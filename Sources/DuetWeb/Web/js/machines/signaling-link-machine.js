// Port of SignalingLinkMachine.swift. The signaling connection: WebSocket first, SSE when WebSocket
// cannot work, reconnect with exponential backoff forever, and application-level ping/pong to find
// dead links (000 §4, §9).
//
// Transports: 'ws' | 'sse'. Open failures: 'timeout' (no open within CONNECT_TIMEOUT_MS),
// 'unsupported' (the server or a proxy refused the transport), 'error'.
// Close reasons: 'pongTimeout' | 'closedByServer' | 'networkError'.
// State: {type:'idle'} | {type:'connecting', transport} | {type:'connected', transport}
//      | {type:'waitingToReconnect', next}.
import { RESILIENCE } from '../constants.js';
import { Backoff, cancel, schedule, timerAction } from './timers.js';

export const LINK_TIMERS = Object.freeze(['connectTimeout', 'reconnectBackoff', 'ping']);

export class SignalingLinkMachine {
  /**
   * `webSocketAvailable: false` runs on SSE only (a network known to break WebSockets, or a test).
   * `jitterSeed` null/undefined turns jitter off, as Swift's nil does.
   */
  constructor({ sseAvailable = true, webSocketAvailable = true, jitterSeed = null } = {}) {
    this.state = { type: 'idle' };
    this.webSocketEverConnected = false;
    this.consecutiveWebSocketFailures = 0;
    this.reconnectAttempts = 0;
    this.pingOutstanding = false;
    this.missedPongs = 0;
    this.sseAvailable = sseAvailable;
    this.webSocketAvailable = webSocketAvailable || !sseAvailable;
    this.backoff = new Backoff({
      baseMs: RESILIENCE.RECONNECT_BACKOFF_BASE_MS,
      capMs: RESILIENCE.RECONNECT_BACKOFF_CAP_MS,
      jitterRatio: jitterSeed == null ? 0 : RESILIENCE.BACKOFF_JITTER_RATIO,
      seed: jitterSeed ?? 0,
    });
  }

  /** The transport in use, or null when not connected. */
  get transport() {
    return this.state.type === 'connected' ? this.state.transport : null;
  }

  /**
   * Events: connect, opened{transport}, openFailed{transport, failure}, closed{reason}, pong,
   * forceFallback, stop, timerFired{timer}.
   * Actions: open{transport}, close, sendPing, up{transport}, down{reason|null}, timer{command}.
   */
  handle(event) {
    const state = this.state;
    const timer = event.type === 'timerFired' ? event.timer : null;
    switch (state.type) {
      case 'idle':
        if (event.type === 'connect') return this.#open(this.webSocketAvailable ? 'ws' : 'sse');
        break;
      case 'waitingToReconnect':
        if (event.type === 'connect') return [timerAction(cancel('reconnectBackoff')), ...this.#open(state.next)];
        if (event.type === 'forceFallback') {
          return [timerAction(cancel('reconnectBackoff')), ...this.#open(this.sseAvailable ? 'sse' : 'ws')];
        }
        if (timer === 'reconnectBackoff') return this.#open(state.next);
        break;
      case 'connecting':
        if (event.type === 'opened' && event.transport === state.transport) {
          const transport = event.transport;
          this.state = { type: 'connected', transport };
          this.reconnectAttempts = 0;
          this.pingOutstanding = false;
          this.missedPongs = 0;
          if (transport === 'ws') {
            this.webSocketEverConnected = true;
            this.consecutiveWebSocketFailures = 0;
          }
          return [
            timerAction(cancel('connectTimeout')),
            { type: 'up', transport },
            timerAction(schedule('ping', RESILIENCE.PING_INTERVAL_MS)),
          ];
        }
        if (event.type === 'openFailed' && event.transport === state.transport) {
          return [timerAction(cancel('connectTimeout')), ...this.#failed(event.transport, event.failure)];
        }
        if (timer === 'connectTimeout') return [{ type: 'close' }, ...this.#failed(state.transport, 'timeout')];
        break;
      case 'connected':
        if (event.type === 'pong') {
          this.pingOutstanding = false;
          this.missedPongs = 0;
          return [];
        }
        if (timer === 'ping') {
          if (this.pingOutstanding) this.missedPongs += 1;
          if (this.missedPongs >= RESILIENCE.PONG_MISS_THRESHOLD) {
            return [{ type: 'close' }, ...this.#lost('pongTimeout')];
          }
          this.pingOutstanding = true;
          return [{ type: 'sendPing' }, timerAction(schedule('ping', RESILIENCE.PING_INTERVAL_MS))];
        }
        if (event.type === 'closed') return this.#lost(event.reason);
        if (event.type === 'forceFallback') {
          const other = state.transport === 'ws' ? 'sse' : 'ws';
          if (!((other === 'ws' && this.webSocketAvailable) || (other === 'sse' && this.sseAvailable))) return [];
          return [{ type: 'close' }, timerAction(cancel('ping')), { type: 'down', reason: null }, ...this.#open(other)];
        }
        break;
    }
    if (event.type === 'stop') {
      const wasOpen = state.type !== 'idle';
      this.state = { type: 'idle' };
      return [...(wasOpen ? [{ type: 'close' }] : []), ...LINK_TIMERS.map((id) => timerAction(cancel(id)))];
    }
    return [];
  }

  #open(transport) {
    this.state = { type: 'connecting', transport };
    return [{ type: 'open', transport }, timerAction(schedule('connectTimeout', RESILIENCE.CONNECT_TIMEOUT_MS))];
  }

  /** The connection dropped after it was up: reconnect on the same transport after a backoff. */
  #lost(reason) {
    if (this.state.type !== 'connected') return [];
    const transport = this.state.transport;
    if (transport === 'ws' && reason !== 'closedByServer') this.consecutiveWebSocketFailures += 1;
    return [
      timerAction(cancel('ping')),
      { type: 'down', reason },
      ...this.#scheduleReconnect(this.#nextTransport(transport, null)),
    ];
  }

  #failed(transport, failure) {
    if (transport === 'ws') this.consecutiveWebSocketFailures += 1;
    const next = this.#nextTransport(transport, failure);
    if (transport === 'ws' && next === 'sse') {
      // Fallback is immediate (000 §9 summary: "WS → SSE fallback, Immediate").
      return this.#open('sse');
    }
    return this.#scheduleReconnect(next);
  }

  /**
   * WS never connected, timed out, was unsupported, or failed 3 times in a row → SSE.
   * After SSE fails the cycle starts again from WebSocket (000 §9 flowchart).
   */
  #nextTransport(transport, failure) {
    if (!this.webSocketAvailable) return 'sse';
    if (transport !== 'ws' || !this.sseAvailable) return 'ws';
    if (!this.webSocketEverConnected || failure === 'timeout' || failure === 'unsupported'
      || this.consecutiveWebSocketFailures >= RESILIENCE.WS_FALLBACK_CONSECUTIVE_FAILURES) {
      return 'sse';
    }
    return 'ws';
  }

  #scheduleReconnect(next) {
    this.state = { type: 'waitingToReconnect', next };
    const delay = this.backoff.delay(this.reconnectAttempts);
    this.reconnectAttempts += 1;
    return [timerAction(schedule('reconnectBackoff', delay))];
  }
}
