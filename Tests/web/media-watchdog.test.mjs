// Mirrors MediaWatchdogMachineTests in MediaWatchdogTests.swift (the machine's own rules; the engine's use of it is
// held to the Swift engine's by the differential replay): inbound packets that stop while ICE says connected are a
// stall, and only growth ends it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { MediaWatchdogMachine, STALL_SAMPLES } from '../../Sources/DuetWeb/Web/js/machines/media-watchdog-machine.js';

function connected() {
  const machine = new MediaWatchdogMachine();
  assert.deepEqual(machine.handle({ type: 'ice', connected: true }), [
    { type: 'timer', command: { type: 'schedule', timer: 'mediaSample', afterMs: RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS } },
  ]);
  return machine;
}

/** One timer firing and one reading per entry; the types of the readings' actions. */
function feed(machine, readings) {
  const actions = [];
  for (const packets of readings) {
    assert.deepEqual(machine.handle({ type: 'timerFired', timer: 'mediaSample' })[0], { type: 'sample' });
    actions.push(...machine.handle({ type: 'sampled', packets }));
  }
  return actions.map((action) => action.type);
}

const flat = (value, count) => Array(count).fill(value);

function stalled() {
  const machine = connected();
  assert.deepEqual(feed(machine, [10, 20, ...flat(20, STALL_SAMPLES)]), ['stalled']);
  return machine;
}

test('packets that stop for the stall timeout are a stall, and growth is recovery', () => {
  const machine = connected();
  assert.deepEqual(feed(machine, [50, 100]), []);
  assert.deepEqual(feed(machine, flat(100, STALL_SAMPLES - 1)), [], 'one reading short');
  assert.deepEqual(feed(machine, [100]), ['stalled']);
  assert.deepEqual(feed(machine, [100]), [], 'said once');
  assert.deepEqual(feed(machine, [150]), ['flowing']);
  assert.equal(STALL_SAMPLES, 5);
});

test('a peer that never sent anything is no stall unless it says it sends; no report is no evidence', () => {
  const silent = connected();
  assert.deepEqual(feed(silent, flat(0, 12)), []);
  silent.handle({ type: 'peerSends', sends: true });
  assert.deepEqual(feed(silent, flat(0, STALL_SAMPLES)), ['stalled']);
  const machine = connected();
  feed(machine, [1, 2]);
  assert.deepEqual(feed(machine, flat(null, 10)), []);
});

test('only growth ends a stall', () => {
  const machine = stalled();
  assert.deepEqual(machine.handle({ type: 'ice', connected: false }), [{ type: 'timer', command: { type: 'cancel', timer: 'mediaSample' } }]);
  assert.deepEqual(machine.handle({ type: 'timerFired', timer: 'mediaSample' }), []);
  assert.deepEqual(machine.handle({ type: 'sampled', packets: 99 }), []);
  machine.handle({ type: 'ice', connected: true });
  assert.deepEqual(feed(machine, [20, 20, 20]), [], 'a new baseline and flat readings are no growth');
  machine.handle({ type: 'renegotiated' });
  assert.deepEqual(feed(machine, [20, 20]), []);
  assert.deepEqual(feed(machine, [3, 3]), [], "a new connection's counters are no growth");
  assert.equal(machine.stalled, true);
  assert.deepEqual(feed(machine, [4]), ['flowing']);
});

test('a renegotiation starts the count again', () => {
  const machine = connected();
  assert.deepEqual(feed(machine, [5, 9, ...flat(9, STALL_SAMPLES - 1)]), []);
  assert.deepEqual(machine.handle({ type: 'renegotiated' }), []);
  assert.deepEqual(feed(machine, flat(9, STALL_SAMPLES)), [], 'counted afresh: the first is a baseline');
  assert.deepEqual(feed(machine, [9]), ['stalled']);
});

test('a new connection must carry something before it can stall', () => {
  const machine = connected();
  feed(machine, [500, 600]);
  assert.deepEqual(feed(machine, flat(0, STALL_SAMPLES + 2)), []);
  assert.deepEqual(feed(machine, [7, ...flat(7, STALL_SAMPLES)]), ['stalled']);
});

test('a reset forgets the stall but not what the connection carried', () => {
  const machine = stalled();
  assert.deepEqual(machine.handle({ type: 'reset' }), []);
  assert.equal(machine.stalled, false);
  assert.deepEqual(feed(machine, flat(20, STALL_SAMPLES + 1)), ['stalled']);
});
