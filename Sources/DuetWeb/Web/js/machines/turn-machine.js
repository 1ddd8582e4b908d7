// Port of TurnMachine.swift. TURN credentials: fetched with a 2 s limit (falling back to the configured
// STUN servers, or none), refreshed at 0.8 × TTL on a timer that keeps running while signaling is down,
// and applied to the live peer connection each time.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

export class TurnMachine {
  constructor() {
    this.token = null;
    this.tokenTTLMs = 0;
    this.fetching = false;
    this.haveCredentials = false;
    this.signalingUp = true;
    this.stopped = false;
  }

  /**
   * Events: token{token, ttlMs} (from `joined` or `turn-refreshed`), fetched{ttlSeconds}, fetchFailed,
   * signaling{up}, stop, timerFired{timer}.
   * Actions: fetchCredentials{token}, applyFetchedServers (the runtime holds the servers),
   * applyFallbackServers (STUN or nothing), sendTurnRefresh, timer{command}.
   */
  handle(event) {
    if (this.stopped && event.type !== 'stop') return [];
    switch (event.type) {
      case 'token':
        this.token = event.token;
        this.tokenTTLMs = event.ttlMs;
        return [...this.#fetch(), timerAction(schedule('turnRefresh', refreshDelay(event.ttlMs)))];
      case 'fetched': {
        if (!this.fetching) return [];
        this.fetching = false;
        this.haveCredentials = true;
        // Credentials may expire before the token does: refresh for whichever comes first.
        const credentialRefresh = refreshDelay(event.ttlSeconds * 1000);
        const actions = [timerAction(cancel('turnFetchTimeout')), { type: 'applyFetchedServers' }];
        if (credentialRefresh < refreshDelay(this.tokenTTLMs)) {
          actions.push(timerAction(schedule('turnRefresh', credentialRefresh)));
        }
        return actions;
      }
      case 'fetchFailed':
        return this.#fetchFailed();
      case 'signaling':
        this.signalingUp = event.up;
        return [];
      case 'timerFired':
        if (event.timer === 'turnFetchTimeout') return this.#fetchFailed();
        if (event.timer !== 'turnRefresh') return [];
        // Signaling up: get a fresh token. Down: the current token still has 20 % of its life —
        // renew the credentials with it so they do not lapse during the outage.
        if (this.signalingUp) {
          return [{ type: 'sendTurnRefresh' }, timerAction(schedule('turnRefresh', refreshDelay(this.tokenTTLMs)))];
        }
        return [
          ...this.#fetch(),
          timerAction(schedule('turnRefresh', Math.max(1000, Math.trunc(refreshDelay(this.tokenTTLMs) / 4)))),
        ];
      case 'stop':
        this.stopped = true;
        return [timerAction(cancel('turnRefresh')), timerAction(cancel('turnFetchTimeout'))];
      default:
        return [];
    }
  }

  #fetchFailed() {
    if (!this.fetching) return [];
    this.fetching = false;
    // Keep working credentials if we have them; otherwise run without TURN until the next refresh.
    return [timerAction(cancel('turnFetchTimeout')), ...(this.haveCredentials ? [] : [{ type: 'applyFallbackServers' }])];
  }

  #fetch() {
    if (this.token == null) return [];
    this.fetching = true;
    return [
      { type: 'fetchCredentials', token: this.token },
      timerAction(schedule('turnFetchTimeout', RESILIENCE.TURN_FETCH_TIMEOUT_MS)),
    ];
  }
}

/** `Int64(Double(ttlMs) * TURN_REFRESH_TRIGGER_RATIO)`: truncated like Swift's conversion. */
function refreshDelay(ttlMs) {
  return Math.trunc(ttlMs * RESILIENCE.TURN_REFRESH_TRIGGER_RATIO);
}
