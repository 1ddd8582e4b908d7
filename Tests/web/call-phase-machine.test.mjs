// Mirrors Tests/DuetClientTests/CallPhaseMachineTests.swift: one test per transition (seed 000 §2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CALL_PHASES, CallPhaseMachine } from '../../Sources/DuetWeb/Web/js/machines/call-phase-machine.js';

function machineAt(phase) {
  const m = new CallPhaseMachine();
  const steps = {
    idle: [],
    creatingRoom: [{ type: 'startNewCall' }],
    joining: [{ type: 'joinRoom', roomId: 'R' }],
    waiting: [{ type: 'joinRoom', roomId: 'R' }, { type: 'joined', participants: 1 }],
    inCall: [{ type: 'joinRoom', roomId: 'R' }, { type: 'joined', participants: 2 }],
    ending: [{ type: 'joinRoom', roomId: 'R' }, { type: 'joined', participants: 2 }, { type: 'leaveCall' }],
    error: [{ type: 'joinRoom', roomId: 'R' }, { type: 'joinHardTimeout' }],
  }[phase];
  for (const event of steps) m.handle(event);
  assert.equal(m.phase, phase);
  return m;
}
const changed = (phase) => ({ type: 'phaseChanged', phase });

test('phases are the Swift CallPhase cases', () => {
  assert.deepEqual([...CALL_PHASES], ['idle', 'creatingRoom', 'joining', 'waiting', 'inCall', 'ending', 'error']);
});

test('Idle → CreatingRoom : startNewCall()', () => {
  assert.deepEqual(machineAt('idle').handle({ type: 'startNewCall' }), [{ type: 'requestRoomId' }, changed('creatingRoom')]);
});

test('Idle → Joining : joinRoom(roomId)', () => {
  const m = machineAt('idle');
  assert.deepEqual(m.handle({ type: 'joinRoom', roomId: 'abc' }), [{ type: 'startJoin', roomId: 'abc' }, changed('joining')]);
  assert.equal(m.roomId, 'abc');
});

test('CreatingRoom → Joining : room id received; → Error : API failure', () => {
  assert.deepEqual(machineAt('creatingRoom').handle({ type: 'roomIdReceived', roomId: 'new' }),
    [{ type: 'startJoin', roomId: 'new' }, changed('joining')]);
  assert.deepEqual(machineAt('creatingRoom').handle({ type: 'roomIdFailed', reason: '503' }),
    [{ type: 'failed', failure: { kind: 'roomCreationFailed', message: '503' } }, changed('error')]);
});

test('Joining → Waiting (1 participant) / InCall (2 participants)', () => {
  assert.deepEqual(machineAt('joining').handle({ type: 'joined', participants: 1 }), [changed('waiting')]);
  assert.deepEqual(machineAt('joining').handle({ type: 'joined', participants: 2 }), [changed('inCall')]);
});

test('Joining → Error : hard timeout, or the server refuses the join', () => {
  assert.deepEqual(machineAt('joining').handle({ type: 'joinHardTimeout' }),
    [{ type: 'failed', failure: { kind: 'joinTimedOut', message: 'join timed out' } }, changed('error')]);
  assert.deepEqual(machineAt('joining').handle({ type: 'joinRefused', code: 'ROOM_FULL', message: 'full' }),
    [{ type: 'failed', failure: { kind: 'joinRefused', code: 'ROOM_FULL', message: 'full' } }, changed('error')]);
});

test('Waiting ↔ InCall on room_state', () => {
  const waiting = machineAt('waiting');
  assert.deepEqual(waiting.handle({ type: 'roomState', participants: 1 }), []);
  assert.deepEqual(waiting.handle({ type: 'roomState', participants: 2 }), [changed('inCall')]);
  assert.deepEqual(waiting.handle({ type: 'roomState', participants: 2 }), []);
  assert.deepEqual(waiting.handle({ type: 'roomState', participants: 1 }), [changed('waiting')]);
});

test('→ Ending : leave, end, room ended', () => {
  assert.deepEqual(machineAt('waiting').handle({ type: 'leaveCall' }), [{ type: 'teardown', kind: 'leave' }, changed('ending')]);
  assert.deepEqual(machineAt('joining').handle({ type: 'leaveCall' }), [{ type: 'teardown', kind: 'leave' }, changed('ending')]);
  assert.deepEqual(machineAt('inCall').handle({ type: 'endCall' }), [{ type: 'teardown', kind: 'endRoom' }, changed('ending')]);
  assert.deepEqual(machineAt('joining').handle({ type: 'endCall' }), [], 'end only applies once joined');
  assert.deepEqual(machineAt('inCall').handle({ type: 'roomEnded' }), [{ type: 'teardown', kind: 'roomGone' }, changed('ending')]);
  assert.deepEqual(machineAt('joining').handle({ type: 'roomEnded' }), [{ type: 'teardown', kind: 'roomGone' }, changed('ending')]);
});

test('Ending → Idle : cleanup complete; Error → Idle : dismissError()', () => {
  const ending = machineAt('ending');
  assert.deepEqual(ending.handle({ type: 'cleanupComplete' }), [changed('idle')]);
  assert.equal(ending.roomId, null);
  const error = machineAt('error');
  assert.deepEqual(error.failure, { kind: 'joinTimedOut', message: 'join timed out' });
  assert.deepEqual(error.handle({ type: 'dismissError' }), [changed('idle')]);
  assert.equal(error.failure, null);
  assert.equal(error.roomId, null);
});

test('a call in progress never goes to Error', () => {
  for (const phase of ['waiting', 'inCall']) {
    const m = machineAt(phase);
    assert.deepEqual(m.handle({ type: 'joinHardTimeout' }), []);
    assert.deepEqual(m.handle({ type: 'joinRefused', code: 'ROOM_FULL', message: 'x' }), []);
    assert.equal(m.phase, phase);
  }
});

test('events that do not apply change nothing', () => {
  for (const phase of CALL_PHASES) {
    const m = machineAt(phase);
    const before = { ...m };
    const actions = m.handle({ type: 'cleanupComplete' });
    assert.deepEqual(actions, phase === 'ending' ? [changed('idle')] : []);
    if (phase !== 'ending') assert.deepEqual({ ...m }, before);
  }
});

test('Ending → Idle → Joining : a join asked for during cleanup starts right after it (B10)', () => {
  const m = machineAt('ending');
  assert.deepEqual(m.handle({ type: 'joinRoom', roomId: 'next' }), []);
  assert.deepEqual(m.handle({ type: 'cleanupComplete' }), [changed('idle'), { type: 'startJoin', roomId: 'next' }, changed('joining')]);
  assert.equal(m.roomId, 'next');
});
