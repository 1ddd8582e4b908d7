// Mirrors SignalingLinkMachineTests.swift: WS first, SSE fallback, backoff, connect timeout, ping/pong
// (seed 000 §4 scenarios 1 and 7, §9).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { SignalingLinkMachine } from '../../Sources/DuetWeb/Web/js/machines/signaling-link-machine.js';
import { Driven, has, sched } from './support/driven.mjs';

const link = (options = {}) => new Driven(new SignalingLinkMachine(options));
function connected() {
  const driven = link();
  driven.send({ type: 'connect' });
  driven.send({ type: 'opened', transport: 'ws' });
  return driven;
}
const open = (transport) => ({ type: 'open', transport });

test('connects WebSocket first', () => {
  const driven = link();
  assert.deepEqual(driven.send({ type: 'connect' }), [open('ws'), sched('connectTimeout', RESILIENCE.CONNECT_TIMEOUT_MS)]);
  assert.ok(has(driven.send({ type: 'opened', transport: 'ws' }), { type: 'up', transport: 'ws' }));
  assert.equal(driven.machine.transport, 'ws');
});

test('connect timeout fires at CONNECT_TIMEOUT_MS, not 1 ms before; a WS timeout falls back to SSE at once', () => {
  const driven = link();
  driven.send({ type: 'connect' });
  assert.deepEqual(driven.advance(RESILIENCE.CONNECT_TIMEOUT_MS - 1), []);
  const actions = driven.advance(1);
  assert.ok(has(actions, { type: 'close' }));
  assert.ok(has(actions, open('sse')));
  assert.deepEqual(driven.machine.state, { type: 'connecting', transport: 'sse' });
});

test('WS never connected → SSE; WS unsupported → SSE', () => {
  const fresh = link();
  fresh.send({ type: 'connect' });
  assert.ok(has(fresh.send({ type: 'openFailed', transport: 'ws', failure: 'error' }), open('sse')));

  const worked = connected();
  worked.send({ type: 'closed', reason: 'networkError' });
  assert.ok(has(worked.advance(RESILIENCE.RECONNECT_BACKOFF_BASE_MS), open('ws')));
  assert.ok(has(worked.send({ type: 'openFailed', transport: 'ws', failure: 'unsupported' }), open('sse')));
});

test(`WS_FALLBACK_CONSECUTIVE_FAILURES (${RESILIENCE.WS_FALLBACK_CONSECUTIVE_FAILURES}) WS failures in a row → SSE`, () => {
  const driven = connected();
  driven.send({ type: 'closed', reason: 'networkError' }); // failure 1
  driven.advance(500);
  driven.send({ type: 'openFailed', transport: 'ws', failure: 'error' }); // failure 2
  assert.deepEqual(driven.machine.state, { type: 'waitingToReconnect', next: 'ws' });
  driven.advance(1000);
  const third = driven.send({ type: 'openFailed', transport: 'ws', failure: 'error' }); // failure 3
  assert.ok(has(third, open('sse')));
  assert.equal(driven.machine.consecutiveWebSocketFailures, 3);
});

test('closed-by-server does not count toward the WS fallback', () => {
  const driven = connected();
  driven.send({ type: 'closed', reason: 'closedByServer' });
  assert.equal(driven.machine.consecutiveWebSocketFailures, 0);
  assert.deepEqual(driven.machine.state, { type: 'waitingToReconnect', next: 'ws' });
});

test('backoff: base 500 ms doubling to the 5 s cap, nothing before it ends, reset after a success', () => {
  const driven = link({ sseAvailable: false });
  driven.send({ type: 'connect' });
  const delays = [];
  for (let i = 0; i < 7; i += 1) {
    driven.send({ type: 'openFailed', transport: 'ws', failure: 'error' });
    const delay = driven.remaining('reconnectBackoff');
    delays.push(delay);
    assert.deepEqual(driven.advance(delay - 1), [], 'nothing before the backoff ends');
    assert.ok(has(driven.advance(1), open('ws')));
  }
  assert.deepEqual(delays, [500, 1000, 2000, 4000, 5000, 5000, 5000]);
  assert.equal(delays[0], RESILIENCE.RECONNECT_BACKOFF_BASE_MS);
  assert.equal(Math.max(...delays), RESILIENCE.RECONNECT_BACKOFF_CAP_MS);
  driven.send({ type: 'opened', transport: 'ws' });
  driven.send({ type: 'closed', reason: 'networkError' });
  assert.equal(driven.remaining('reconnectBackoff'), 500);
});

test('pings every PING_INTERVAL_MS; PONG_MISS_THRESHOLD missed pongs force-close and reconnect', () => {
  const driven = connected();
  assert.deepEqual(driven.advance(RESILIENCE.PING_INTERVAL_MS - 1), []);
  assert.deepEqual(driven.advance(1), [{ type: 'sendPing' }, sched('ping', 12000)]);
  driven.send({ type: 'pong' });
  assert.deepEqual(driven.advance(12000)[0], { type: 'sendPing' }, 'answered: keep pinging');
  // Now silence: first miss at the next tick, force-close at the one after.
  assert.deepEqual(driven.advance(12000)[0], { type: 'sendPing' });
  assert.deepEqual(driven.advance(11999), []);
  const closing = driven.advance(1);
  assert.ok(has(closing, { type: 'close' }));
  assert.ok(has(closing, { type: 'down', reason: 'pongTimeout' }));
  assert.deepEqual(driven.machine.state, { type: 'waitingToReconnect', next: 'ws' });
});

test('forced fallback (retrying escalation) switches transport', () => {
  const driven = connected();
  const actions = driven.send({ type: 'forceFallback' });
  assert.deepEqual(actions.slice(0, 3), [{ type: 'close' }, { type: 'timer', command: { type: 'cancel', timer: 'ping' } }, { type: 'down', reason: null }]);
  assert.ok(has(actions, open('sse')));
  driven.send({ type: 'opened', transport: 'sse' });
  assert.equal(driven.machine.transport, 'sse');
});

test('SSE-only (sseOnly) never opens a WebSocket', () => {
  const driven = link({ webSocketAvailable: false });
  assert.ok(has(driven.send({ type: 'connect' }), open('sse')));
  driven.send({ type: 'openFailed', transport: 'sse', failure: 'error' });
  assert.deepEqual(driven.machine.state, { type: 'waitingToReconnect', next: 'sse' });
});

test('stop closes and cancels every timer', () => {
  const driven = connected();
  driven.send({ type: 'stop' });
  assert.equal(driven.deadlines.size, 0);
  assert.deepEqual(driven.advance(100000), []);
  assert.deepEqual(driven.send({ type: 'stop' }), [
    { type: 'timer', command: { type: 'cancel', timer: 'connectTimeout' } },
    { type: 'timer', command: { type: 'cancel', timer: 'reconnectBackoff' } },
    { type: 'timer', command: { type: 'cancel', timer: 'ping' } },
  ], 'already idle: no close');
});

test('jitter keeps reconnects apart but within ± ratio', () => {
  const delay = (seed) => {
    const machine = new SignalingLinkMachine({ sseAvailable: false, jitterSeed: seed });
    machine.handle({ type: 'connect' });
    return machine.handle({ type: 'openFailed', transport: 'ws', failure: 'error' })
      .find((a) => a.type === 'timer' && a.command.timer === 'reconnectBackoff').command.afterMs;
  };
  const a = delay(1);
  const b = delay(2);
  assert.notEqual(a, b);
  for (const value of [a, b]) assert.ok(value >= 400 && value <= 600, `${value}`);
  assert.equal(delay(42), 548, 'the Swift jitter draw for seed 42');
});
