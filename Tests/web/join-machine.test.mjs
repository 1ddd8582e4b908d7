// Mirrors JoinMachineTests.swift: snapshot 2 s, push endpoint 250 ms, kickstart 1.2 s, recovery 4 s,
// hard timeout 15 s.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { JoinMachine } from '../../Sources/DuetWeb/Web/js/machines/join-machine.js';
import { Driven, has } from './support/driven.mjs';

function join(options = {}, open = false) {
  const driven = new Driven(new JoinMachine());
  if (open) driven.send({ type: 'signalingOpened' });
  driven.send({ type: 'start', options });
  return driven;
}
const sendJoin = (snapshotId = null, pushEndpoint = null) => ({ type: 'sendJoin', snapshotId, pushEndpoint });
const ensure = { type: 'ensureSignalingConnection' };

test('join sent at once when signaling is open, with the recovery timer', () => {
  const driven = new Driven(new JoinMachine());
  driven.send({ type: 'signalingOpened' });
  assert.ok(has(driven.send({ type: 'start', options: {} }), sendJoin()));
  assert.equal(driven.remaining('joinRecovery'), RESILIENCE.JOIN_RECOVERY_MS);
  assert.equal(driven.remaining('joinHardTimeout'), RESILIENCE.JOIN_HARD_TIMEOUT_MS);
});

test('snapshot prepare waits at most SNAPSHOT_PREPARE_TIMEOUT_MS', () => {
  const driven = join({ prepareSnapshot: true }, true);
  assert.ok(!has(driven.advance(RESILIENCE.SNAPSHOT_PREPARE_TIMEOUT_MS - 1), sendJoin()));
  assert.ok(has(driven.advance(1), sendJoin()));
});

test('a ready snapshot is sent with the join', () => {
  const driven = join({ prepareSnapshot: true }, true);
  assert.ok(has(driven.send({ type: 'snapshotReady', snapshotId: 'snap-1' }), sendJoin('snap-1')));
});

test('push endpoint waits at most JOIN_PUSH_ENDPOINT_WAIT_MS', () => {
  const driven = join({ pushSupported: true }, true);
  assert.deepEqual(driven.advance(RESILIENCE.JOIN_PUSH_ENDPOINT_WAIT_MS - 1), []);
  assert.ok(has(driven.advance(1), sendJoin()));
  const fast = join({ pushSupported: true }, true);
  assert.ok(has(fast.send({ type: 'pushEndpointReady', endpoint: 'https://push/1' }), sendJoin(null, 'https://push/1')));
});

test('kickstart: signaling not started after JOIN_CONNECT_KICKSTART_MS → ensureSignalingConnection, once', () => {
  // A snapshot that never comes keeps the join from asking for signaling itself.
  const driven = join({ prepareSnapshot: true });
  assert.ok(!has(driven.advance(RESILIENCE.JOIN_CONNECT_KICKSTART_MS - 1), ensure));
  assert.ok(has(driven.advance(1), ensure));
  assert.ok(!has(driven.advance(500), ensure));
  assert.deepEqual(driven.machine.handle({ type: 'timerFired', timer: 'joinKickstart' }), [], 'a second kickstart does nothing');
});

test('kickstart does nothing when signaling is already open', () => {
  const driven = join({ prepareSnapshot: true }, true);
  assert.ok(!has(driven.advance(1200), ensure));
});

test('recovery: no ack JOIN_RECOVERY_MS after sending → re-send join', () => {
  const driven = join({}, true);
  assert.deepEqual(driven.advance(RESILIENCE.JOIN_RECOVERY_MS - 1), []);
  assert.ok(has(driven.advance(1), sendJoin()));
});

test('recovery with signaling down → ensureSignalingConnection, join sent when it opens', () => {
  const driven = join({}, true);
  driven.send({ type: 'signalingClosed' });
  assert.ok(has(driven.advance(4000), ensure));
  assert.ok(has(driven.send({ type: 'signalingOpened' }), sendJoin()));
});

test('recovery after an ack that did not move the phase → promote', () => {
  const machine = new JoinMachine();
  machine.handle({ type: 'signalingOpened' });
  machine.handle({ type: 'start', options: {} });
  machine.handle({ type: 'acknowledged' });
  assert.deepEqual(machine.handle({ type: 'timerFired', timer: 'joinRecovery' }), [{ type: 'promote' }]);
});

test('hard timeout: still joining at JOIN_HARD_TIMEOUT_MS → fail; not 1 ms before', () => {
  const driven = join({ prepareSnapshot: true });
  assert.ok(!has(driven.advance(RESILIENCE.JOIN_HARD_TIMEOUT_MS - 1), { type: 'fail' }));
  assert.ok(has(driven.advance(1), { type: 'fail' }));
  assert.equal(driven.deadlines.size, 0);
});

test('an ack clears every join timer', () => {
  const driven = join({}, true);
  driven.send({ type: 'acknowledged' });
  assert.equal(driven.deadlines.size, 0);
  assert.deepEqual(driven.advance(60000), []);
});
