import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StatusBadgeMachine, BADGE_TIMER } from '../../Sources/DuetWeb/Web/js/ui/status-badge-machine.js';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';

function inCall({ media = true } = {}) {
  const machine = new StatusBadgeMachine();
  machine.handle({ type: 'signaling', up: true });
  machine.handle({ type: 'phase', phase: 'inCall' });
  if (media) machine.handle({ type: 'media', connected: true });
  return machine;
}
const shown = (actions) => actions.filter((a) => a.type === 'show').map((a) => a.badge.kind);

test('recovering schedules the debounce and shows no "Reconnecting…" until it fires', () => {
  const machine = inCall();
  const actions = machine.handle({ type: 'status', status: 'recovering' });
  assert.deepEqual(actions.find((a) => a.type === 'scheduleTimer'),
    { type: 'scheduleTimer', timer: BADGE_TIMER, afterMs: RESILIENCE.RECONNECTING_BADGE_DEBOUNCE_MS });
  assert.equal(machine.badge.kind, 'pending');
  assert.deepEqual(shown(machine.handle({ type: 'timerFired' })), ['reconnecting']);
  assert.equal(machine.badge.text, 'Reconnecting…');
});

test('a blip shorter than the debounce never shows the badge', () => {
  const machine = inCall();
  machine.handle({ type: 'status', status: 'recovering' });
  const back = machine.handle({ type: 'status', status: 'connected' });
  assert.ok(back.some((a) => a.type === 'cancelTimer' && a.timer === BADGE_TIMER));
  assert.deepEqual(shown(machine.handle({ type: 'timerFired' })), []);  // a late firing changes nothing
  assert.equal(machine.badge.kind, 'connected');
});

test('retrying shows the sub-text and the inline Leave call at once', () => {
  const machine = inCall();
  machine.handle({ type: 'status', status: 'recovering' });
  machine.handle({ type: 'status', status: 'retrying' });
  assert.equal(machine.badge.kind, 'retrying');
  assert.equal(machine.badge.text, 'Reconnecting…');
  assert.equal(machine.badge.detail, 'Taking longer than usual…');
  assert.equal(machine.badge.offerLeave, true);
});

test('never "Connected" before media has connected; a call that never connects says Connecting, not Reconnecting', () => {
  const machine = inCall({ media: false });
  assert.equal(machine.badge.kind, 'connecting');
  assert.equal(machine.badge.text, 'Connecting…');
  machine.handle({ type: 'status', status: 'retrying' });
  assert.equal(machine.badge.text, 'Connecting…');
  machine.handle({ type: 'status', status: 'connected' });
  machine.handle({ type: 'media', connected: true });
  assert.equal(machine.badge.kind, 'connected');
  machine.handle({ type: 'media', connected: false });
  assert.equal(machine.badge.kind, 'connecting', 'ICE not connected is not "Connected"');
});

test('a suspended peer is their trouble while our signaling is up; with our signaling down it is ours', () => {
  const machine = inCall();
  machine.handle({ type: 'peer', suspended: true });
  assert.equal(machine.badge.kind, 'peerReconnecting');
  assert.equal(machine.badge.text, 'The other person is reconnecting…');
  machine.handle({ type: 'status', status: 'recovering' });
  machine.handle({ type: 'status', status: 'retrying' });
  assert.equal(machine.badge.kind, 'peerReconnecting', 'our media died because theirs did');
  machine.handle({ type: 'signaling', up: false });
  assert.equal(machine.badge.kind, 'retrying');
  machine.handle({ type: 'signaling', up: true });
  machine.handle({ type: 'peer', suspended: false });
  machine.handle({ type: 'status', status: 'connected' });
  assert.equal(machine.badge.kind, 'connected');
});

test('waiting with signaling down shows Reconnecting… after the debounce', () => {
  const machine = new StatusBadgeMachine();
  machine.handle({ type: 'signaling', up: true });
  machine.handle({ type: 'phase', phase: 'waiting' });
  assert.equal(machine.badge.kind, 'hidden');
  const down = machine.handle({ type: 'signaling', up: false });
  assert.ok(down.some((a) => a.type === 'scheduleTimer'));
  assert.equal(machine.badge.kind, 'hidden');
  assert.deepEqual(shown(machine.handle({ type: 'timerFired' })), ['reconnecting']);
  assert.deepEqual(shown(machine.handle({ type: 'signaling', up: true })), ['hidden']);
});

test('outside a call there is no badge', () => {
  const machine = new StatusBadgeMachine();
  machine.handle({ type: 'status', status: 'recovering' });
  machine.handle({ type: 'timerFired' });
  assert.equal(machine.badge.kind, 'hidden');
  machine.handle({ type: 'phase', phase: 'inCall' });
  machine.handle({ type: 'phase', phase: 'idle' });
  assert.equal(machine.badge.kind, 'hidden');
});
