// Mirrors ConnectionStatusMachineTests.swift: connected / recovering / retrying, the 10 s threshold,
// and escalation without end (seed 001).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { ConnectionStatusMachine, ESCALATION_STEPS } from '../../Sources/DuetWeb/Web/js/machines/connection-status-machine.js';
import { Driven, has, sched } from './support/driven.mjs';

function inCall() {
  const driven = new Driven(new ConnectionStatusMachine());
  driven.send({ type: 'phaseChanged', phase: 'inCall' });
  driven.send({ type: 'ice', health: 'connected' });
  return driven;
}
const status = (value) => ({ type: 'statusChanged', status: value });

test('connected → recovering on ICE disconnected, failed, signaling drop or network change', () => {
  for (const event of [
    { type: 'ice', health: 'disconnected' }, { type: 'ice', health: 'failed' },
    { type: 'signaling', up: false }, { type: 'networkChanged' },
  ]) {
    const call = inCall();
    const actions = call.send(event);
    assert.deepEqual(actions, [status('recovering'), sched('retryingThreshold', RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS)]);
    assert.equal(call.machine.status, 'recovering');
  }
});

test('a call whose media never connects escalates at the threshold, not 1 ms before', () => {
  const call = new Driven(new ConnectionStatusMachine());
  const entering = call.send({ type: 'phaseChanged', phase: 'inCall' });
  assert.ok(has(entering, sched('retryingThreshold', RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS)));
  assert.equal(call.machine.status, 'connected');
  assert.deepEqual(call.advance(RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS - 1), []);
  const actions = call.advance(1);
  assert.equal(call.machine.status, 'retrying');
  assert.ok(has(actions, { type: 'escalate', step: 'iceRestart' }));
});

test('media that connects in time cancels the first-media deadline', () => {
  const call = new Driven(new ConnectionStatusMachine());
  call.send({ type: 'phaseChanged', phase: 'inCall' });
  call.advance(3000);
  call.send({ type: 'ice', health: 'connected' });
  assert.deepEqual(call.advance(60000), []);
  assert.equal(call.machine.status, 'connected');
});

test('recovering → retrying at CONNECTION_RETRYING_THRESHOLD_MS, not 1 ms before', () => {
  const call = inCall();
  call.send({ type: 'ice', health: 'disconnected' });
  assert.deepEqual(call.advance(RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS - 1), []);
  assert.equal(call.machine.status, 'recovering');
  const actions = call.advance(1);
  assert.equal(call.machine.status, 'retrying');
  assert.deepEqual(actions[0], status('retrying'));
  assert.ok(has(actions, { type: 'escalate', step: 'iceRestart' }));
});

test('recovering → connected only when ICE and signaling are both back', () => {
  const call = inCall();
  call.send({ type: 'signaling', up: false });
  call.send({ type: 'ice', health: 'disconnected' });
  assert.deepEqual(call.send({ type: 'signaling', up: true }), [], 'ICE still down: not connected');
  assert.ok(has(call.send({ type: 'ice', health: 'connected' }), status('connected')));
  assert.ok(!call.isScheduled('retryingThreshold'));
  call.advance(60000);
  assert.equal(call.machine.status, 'connected');
});

test('retrying → connected when any attempt succeeds', () => {
  const call = inCall();
  call.send({ type: 'ice', health: 'failed' });
  call.advance(10000);
  assert.equal(call.machine.status, 'retrying');
  assert.ok(has(call.send({ type: 'ice', health: 'connected' }), status('connected')));
  assert.ok(!call.isScheduled('retryEscalation'));
});

/** The escalation steps and when they came, over `seconds`. */
function escalations(call, seconds) {
  const steps = [];
  const times = [];
  for (let elapsed = 1000; elapsed <= seconds * 1000; elapsed += 1000) {
    for (const action of call.advance(1000)) {
      if (action.type === 'escalate') {
        steps.push(action.step);
        times.push(elapsed);
      }
    }
  }
  return { steps, times };
}

test('a media-only failure never closes the healthy transport: the cycle skips transportFallback while signaling is up', () => {
  const call = inCall();
  call.send({ type: 'ice', health: 'failed' });
  const { steps, times } = escalations(call, 600);
  assert.deepEqual(steps.slice(0, 7), ['iceRestart', 'offerResend', 'rejoin', 'iceRestart', 'offerResend', 'rejoin', 'iceRestart']);
  assert.ok(!steps.includes('transportFallback'), 'a working transport was closed for a media failure');
  // Pauses 1, 2, 4, 8 s: the skipped turn does not double the pause (it was 16 s after the rejoin).
  assert.deepEqual(times.slice(0, 5), [10000, 11000, 13000, 17000, 25000]);
  // Signaling drops too: the transport is no longer healthy, and falling back is back in the cycle.
  call.send({ type: 'signaling', up: false });
  assert.ok(escalations(call, 120).steps.includes('transportFallback'));
});

test('retrying escalates forever in order, with pauses 1 s, 2 s, 4 s, 8 s, 16 s (cap)', () => {
  assert.deepEqual([...ESCALATION_STEPS], ['iceRestart', 'offerResend', 'rejoin', 'transportFallback']);
  const call = inCall();
  call.send({ type: 'signaling', up: false });
  const steps = [];
  const times = [];
  let elapsed = 0;
  for (let i = 0; i < 4000; i += 1) { // well past an hour, 1 s at a time
    const actions = call.advance(1000);
    elapsed += 1000;
    for (const action of actions) {
      if (action.type === 'escalate') {
        steps.push(action.step);
        times.push(elapsed);
      }
    }
  }
  assert.deepEqual(steps.slice(0, 8), [
    'iceRestart', 'offerResend', 'rejoin', 'transportFallback', 'iceRestart', 'offerResend', 'rejoin', 'transportFallback',
  ]);
  assert.deepEqual(times.slice(0, 7), [10000, 11000, 13000, 17000, 25000, 41000, 57000]);
  assert.ok(times.at(-1) > 3900000, 'still escalating after an hour: there is no failed state');
  assert.equal(call.machine.status, 'retrying');
});

test('leaving the call from retrying stops everything', () => {
  const call = inCall();
  call.send({ type: 'ice', health: 'failed' });
  call.advance(12000);
  const actions = call.send({ type: 'phaseChanged', phase: 'ending' });
  assert.ok(has(actions, status('connected')));
  assert.equal(call.deadlines.size, 0);
  assert.deepEqual(call.advance(100000), []);
});

test('only an inCall phase drives the status', () => {
  const waiting = new Driven(new ConnectionStatusMachine());
  waiting.send({ type: 'phaseChanged', phase: 'waiting' });
  assert.deepEqual(waiting.send({ type: 'ice', health: 'failed' }), []);
  assert.deepEqual(waiting.send({ type: 'signaling', up: false }), []);
  assert.deepEqual(waiting.send({ type: 'networkChanged' }), []);
  assert.equal(waiting.machine.status, 'connected');
});

test("the peer away: its media's loss is not ours — no recovering, no escalation; ICE judged again when it is back", () => {
  const call = inCall();
  call.send({ type: 'peerSuspended', suspended: true });
  for (const event of [{ type: 'ice', health: 'disconnected' }, { type: 'ice', health: 'failed' }, { type: 'networkChanged' }]) {
    assert.deepEqual(call.send(event), [], JSON.stringify(event));
  }
  assert.deepEqual(call.advance(60_000), [], 'nothing escalates towards a peer that cannot answer');
  assert.equal(call.machine.status, 'connected');
  assert.ok(has(call.send({ type: 'peerSuspended', suspended: false }), status('recovering')));
  call.advance(RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS);
  assert.equal(call.machine.status, 'retrying');
});

test('the peer going away ends an ICE-only recovery, never one of our own signaling', () => {
  const ours = inCall();
  ours.send({ type: 'signaling', up: false });
  assert.deepEqual(ours.send({ type: 'peerSuspended', suspended: true }), []);
  assert.equal(ours.machine.status, 'recovering');
  assert.ok(has(ours.send({ type: 'signaling', up: true }), status('connected')), 'our link back is enough while it is away');

  const theirs = inCall();
  theirs.send({ type: 'ice', health: 'disconnected' });
  theirs.advance(12_000);
  assert.equal(theirs.machine.status, 'retrying');
  assert.ok(has(theirs.send({ type: 'peerSuspended', suspended: true }), status('connected')));
  assert.deepEqual(theirs.advance(100_000), [], 'the escalation stopped');
});

test('a call entered with the peer away waits for it; back with media not up (a new connection checking), it recovers', () => {
  const driven = new Driven(new ConnectionStatusMachine());
  driven.send({ type: 'peerSuspended', suspended: true });
  driven.send({ type: 'phaseChanged', phase: 'inCall' });
  assert.deepEqual(driven.advance(60_000), []);
  assert.ok(has(driven.send({ type: 'peerSuspended', suspended: false }), status('recovering')));
  assert.ok(has(driven.advance(RESILIENCE.CONNECTION_RETRYING_THRESHOLD_MS), status('retrying')));
});
