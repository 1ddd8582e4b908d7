// Port of CallPhaseMachine.swift. The phase of a call, as the seeds' diagram (000 §2): it drives what
// the user sees and which recovery mechanisms run.
//
// `idle → creatingRoom → joining → waiting ↔ inCall → ending → idle`, and `error`.
//
// Failures (CallFailure) are `{kind, code?, message}`:
//   {kind:'roomCreationFailed', message: reason}
//   {kind:'joinTimedOut', message: 'join timed out'}
//   {kind:'joinRefused', code: 'ROOM_FULL' | 'INVALID_ROOM_ID' | 'ROOM_ENDED' | …, message}
// Only joining can fail; a call in progress never does.

export const CALL_PHASES = Object.freeze(['idle', 'creatingRoom', 'joining', 'waiting', 'inCall', 'ending', 'error']);

/**
 * Teardown kinds: send `leave`, send `end_room` (host), the room is already gone (just clean up), the seat was
 * taken over (say nothing), or a verified call's check failed (`intercepted`, with `tellPeer`: say `verify_failed`
 * first, then leave).
 */
export const TEARDOWN = Object.freeze({
  leave: 'leave', endRoom: 'endRoom', roomGone: 'roomGone', replaced: 'replaced', intercepted: 'intercepted',
});

export const CallFailure = Object.freeze({
  roomCreationFailed: (reason) => ({ kind: 'roomCreationFailed', message: reason }),
  joinTimedOut: () => ({ kind: 'joinTimedOut', message: 'join timed out' }),
  joinRefused: (code, message) => ({ kind: 'joinRefused', code, message }),
});

export class CallPhaseMachine {
  constructor() {
    this.phase = 'idle';
    this.roomId = null;
    this.failure = null;
    // A join asked for while the previous call is still being cleaned up: started right after (B10, "rejoin
    // races local cleanup" — never dropped).
    this.joinAfterCleanup = null;
  }

  /**
   * Events: startNewCall, joinRoom{roomId}, roomIdReceived{roomId}, roomIdFailed{reason},
   * joined{participants}, joinRefused{code, message}, joinHardTimeout, roomState{participants},
   * leaveCall, endCall, roomEnded, cleanupComplete, dismissError, replaced, intercepted {tellPeer}.
   * Actions: requestRoomId, startJoin{roomId}, phaseChanged{phase}, teardown{kind}, failed{failure}.
   */
  handle(event) {
    const phase = this.phase;
    switch (event.type) {
      case 'startNewCall':
        if (phase === 'idle') return this.#move('creatingRoom', [{ type: 'requestRoomId' }]);
        break;
      case 'joinRoom':
        if (phase === 'idle') {
          this.roomId = event.roomId;
          return this.#move('joining', [{ type: 'startJoin', roomId: event.roomId }]);
        }
        if (phase === 'ending') this.joinAfterCleanup = event.roomId;
        break;
      case 'roomIdReceived':
        if (phase === 'creatingRoom') {
          this.roomId = event.roomId;
          return this.#move('joining', [{ type: 'startJoin', roomId: event.roomId }]);
        }
        break;
      case 'roomIdFailed':
        if (phase === 'creatingRoom') return this.#fail(CallFailure.roomCreationFailed(event.reason));
        break;
      case 'joined':
        if (phase === 'joining') return this.#move(event.participants >= 2 ? 'inCall' : 'waiting');
        break;
      case 'joinHardTimeout':
        if (phase === 'joining') return this.#fail(CallFailure.joinTimedOut());
        break;
      case 'joinRefused':
        if (phase === 'joining') return this.#fail(CallFailure.joinRefused(event.code, event.message));
        break;
      case 'roomState':
        if (phase === 'waiting' && event.participants >= 2) return this.#move('inCall');
        if (phase === 'inCall' && event.participants < 2) return this.#move('waiting');
        break;
      case 'leaveCall':
        if (phase === 'joining' || phase === 'waiting' || phase === 'inCall') {
          return this.#move('ending', [{ type: 'teardown', kind: TEARDOWN.leave }]);
        }
        break;
      case 'endCall':
        if (phase === 'waiting' || phase === 'inCall') {
          return this.#move('ending', [{ type: 'teardown', kind: TEARDOWN.endRoom }]);
        }
        break;
      case 'roomEnded':
        // `room_ended`, or the server says the room is gone (`ROOM_ENDED` on a rejoin).
        if (phase === 'waiting' || phase === 'inCall' || phase === 'joining') {
          return this.#move('ending', [{ type: 'teardown', kind: TEARDOWN.roomGone }]);
        }
        break;
      case 'replaced':
        // Another connection proved this seat (close 4001): it is theirs now; stop without a goodbye.
        if (phase === 'joining' || phase === 'waiting' || phase === 'inCall') {
          return this.#move('ending', [{ type: 'teardown', kind: TEARDOWN.replaced }]);
        }
        break;
      case 'intercepted':
        // A description failed its check here (`tellPeer`) or at the peer: someone may be in the middle. End the
        // call and do not retry.
        if (phase === 'joining' || phase === 'waiting' || phase === 'inCall') {
          return this.#move('ending', [{ type: 'teardown', kind: TEARDOWN.intercepted, tellPeer: event.tellPeer === true }]);
        }
        break;
      case 'cleanupComplete':
        if (phase === 'ending') {
          this.roomId = null;
          const idle = this.#move('idle');
          const next = this.joinAfterCleanup;
          if (next == null) return idle;
          this.joinAfterCleanup = null;
          return [...idle, ...this.handle({ type: 'joinRoom', roomId: next })];
        }
        break;
      case 'dismissError':
        if (phase === 'error') {
          this.failure = null;
          this.roomId = null;
          return this.#move('idle');
        }
        break;
    }
    return [];
  }

  #move(next, actions = []) {
    this.phase = next;
    return [...actions, { type: 'phaseChanged', phase: next }];
  }

  #fail(failure) {
    this.failure = failure;
    return this.#move('error', [{ type: 'failed', failure }]);
  }
}
