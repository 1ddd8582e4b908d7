// Mirrors TrickleAndTurnTests.swift: candidate cleaning, answerer hold-back, end-of-candidates; TURN
// fetch timeout, 0.8 × TTL refresh, refresh while signaling is down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { TrickleIceMachine, cleanCandidate } from '../../Sources/DuetWeb/Web/js/machines/trickle-ice-machine.js';
import { TurnMachine } from '../../Sources/DuetWeb/Web/js/machines/turn-machine.js';
import { Driven, has } from './support/driven.mjs';

const raw = {
  candidate: 'candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.2 rport 46154 generation 0 ufrag EEtu network-id 3 network-cost 10',
  sdpMid: '0', sdpMLineIndex: 0, usernameFragment: 'EEtu',
};
const END = { type: 'sendEndOfCandidates' };

test('cleaning drops WebRTC extensions and keeps the standard fields in order', () => {
  assert.equal(cleanCandidate(raw.candidate), 'candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.2 rport 46154');
  assert.equal(cleanCandidate('candidate:1 1 tcp 1 10.0.0.1 9 typ host tcptype active'), 'candidate:1 1 tcp 1 10.0.0.1 9 typ host tcptype active');
});

test('the offering side sends cleaned candidates at once, in the IceCandidate wire shape', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offerSent' });
  const actions = driven.send({ type: 'localCandidate', candidate: raw });
  assert.deepEqual(actions[0], {
    type: 'sendCandidate',
    candidate: { candidate: cleanCandidate(raw.candidate), sdpMid: '0', sdpMLineIndex: 0 },
  });
  assert.equal(driven.remaining('endOfCandidates'), RESILIENCE.END_OF_CANDIDATES_TIMEOUT_MS);
});

test('the answering side queues candidates until its answer is sent, then ends if gathering is done', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'answering' });
  assert.deepEqual(driven.send({ type: 'localCandidate', candidate: raw }), []);
  assert.deepEqual(driven.send({ type: 'gatheringComplete' }), []);
  assert.deepEqual(driven.advance(10000), [], 'no end-of-candidates while holding');
  const flushed = driven.send({ type: 'answerSent' });
  assert.equal(flushed.filter((a) => a.type === 'sendCandidate').length, 1);
  assert.deepEqual(flushed.at(-1), END, 'gathering already complete: end follows the flush');
});

test('the offering side holds candidates found before its offer is sent, then sends them with it', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offering' });
  assert.deepEqual(driven.send({ type: 'localCandidate', candidate: raw }), [], 'held while the offer is being made');
  const flushed = driven.send({ type: 'offerSent' });
  assert.equal(flushed.filter((a) => a.type === 'sendCandidate').length, 1);
  assert.equal(driven.send({ type: 'localCandidate', candidate: raw })[0].type, 'sendCandidate', 'then at once');
});

test('gathering that completes while the offer is made ends the generation when the offer is sent', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offering' });
  driven.send({ type: 'localCandidate', candidate: raw });
  assert.deepEqual(driven.send({ type: 'gatheringComplete' }), []);
  const sent = driven.send({ type: 'offerSent' });
  assert.equal(sent.filter((a) => a.type === 'sendCandidate').length, 1);
  assert.deepEqual(sent.at(-1), END, 'end-of-candidates at once, not 3 s later');
});

test('a renewed connection drops what the old one gathered, held or not', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offering' });
  driven.send({ type: 'localCandidate', candidate: raw });
  driven.send({ type: 'connectionRenewed' });
  driven.send({ type: 'offering' });
  assert.deepEqual(driven.send({ type: 'offerSent' }), [], 'nothing of the old connection');
  assert.deepEqual(driven.advance(10000), [], 'and no end-of-candidates for it');
});

test('a description that could not be made releases what waited for it', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offering' });
  driven.send({ type: 'localCandidate', candidate: raw });
  driven.send({ type: 'gatheringComplete' });
  const released = driven.send({ type: 'descriptionFailed' });
  assert.equal(released.filter((a) => a.type === 'sendCandidate').length, 1);
  assert.deepEqual(released.at(-1), END);
  assert.equal(driven.send({ type: 'localCandidate', candidate: raw })[0].type, 'sendCandidate', 'no longer holding');
});

test('end-of-candidates when gathering completes, once', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offerSent' });
  driven.send({ type: 'localCandidate', candidate: raw });
  assert.ok(has(driven.send({ type: 'gatheringComplete' }), END));
  assert.ok(!has(driven.send({ type: 'gatheringComplete' }), END), 'once');
});

test('end-of-candidates END_OF_CANDIDATES_TIMEOUT_MS after the last candidate, not 1 ms before; each candidate restarts the wait', () => {
  const driven = new Driven(new TrickleIceMachine());
  driven.send({ type: 'offerSent' });
  driven.send({ type: 'localCandidate', candidate: raw });
  driven.advance(2000);
  driven.send({ type: 'localCandidate', candidate: raw });
  assert.deepEqual(driven.advance(RESILIENCE.END_OF_CANDIDATES_TIMEOUT_MS - 1), []);
  assert.ok(has(driven.advance(1), END));
});

test('TURN fetch is given TURN_FETCH_TIMEOUT_MS, then the fallback servers are used', () => {
  const driven = new Driven(new TurnMachine());
  assert.deepEqual(driven.send({ type: 'token', token: 't1', ttlMs: 900000 })[0], { type: 'fetchCredentials', token: 't1' });
  assert.deepEqual(driven.advance(RESILIENCE.TURN_FETCH_TIMEOUT_MS - 1), []);
  assert.ok(has(driven.advance(1), { type: 'applyFallbackServers' }));
});

test('fetched credentials are applied and refreshed at TURN_REFRESH_TRIGGER_RATIO × TTL, not before', () => {
  const driven = new Driven(new TurnMachine());
  driven.send({ type: 'token', token: 't1', ttlMs: 900000 });
  assert.ok(has(driven.send({ type: 'fetched', ttlSeconds: 3600 }), { type: 'applyFetchedServers' }));
  const refreshAt = 900000 * RESILIENCE.TURN_REFRESH_TRIGGER_RATIO;
  assert.equal(refreshAt, 720000);
  assert.deepEqual(driven.advance(refreshAt - 1), []);
  assert.ok(has(driven.advance(1), { type: 'sendTurnRefresh' }));
  // The refreshed token is fetched and applied to the live connection.
  assert.deepEqual(driven.send({ type: 'token', token: 't2', ttlMs: 900000 })[0], { type: 'fetchCredentials', token: 't2' });
  assert.ok(has(driven.send({ type: 'fetched', ttlSeconds: 3600 }), { type: 'applyFetchedServers' }));
});

test('credentials shorter-lived than the token are refreshed at 0.8 × their own TTL', () => {
  const driven = new Driven(new TurnMachine());
  driven.send({ type: 'token', token: 't1', ttlMs: 900000 });
  driven.send({ type: 'fetched', ttlSeconds: 100 });
  assert.equal(driven.remaining('turnRefresh'), 80000);
});

test('the refresh timer runs while signaling is down and renews the credentials over HTTP', () => {
  const driven = new Driven(new TurnMachine());
  driven.send({ type: 'token', token: 't1', ttlMs: 900000 });
  driven.send({ type: 'fetched', ttlSeconds: 3600 });
  driven.send({ type: 'signaling', up: false });
  const actions = driven.advance(720000);
  assert.ok(has(actions, { type: 'fetchCredentials', token: 't1' }));
  assert.ok(!has(actions, { type: 'sendTurnRefresh' }));
  assert.equal(driven.remaining('turnRefresh'), 180000, 'retried at a quarter of the refresh delay');
});

test('a failed refresh keeps the working credentials; stop silences the machine', () => {
  const driven = new Driven(new TurnMachine());
  driven.send({ type: 'token', token: 't1', ttlMs: 900000 });
  driven.send({ type: 'fetched', ttlSeconds: 3600 });
  driven.send({ type: 'token', token: 't2', ttlMs: 900000 });
  const failed = driven.send({ type: 'fetchFailed' });
  assert.ok(has(failed, { type: 'timer', command: { type: 'cancel', timer: 'turnFetchTimeout' } }));
  assert.ok(!has(failed, { type: 'applyFallbackServers' }));
  driven.send({ type: 'stop' });
  assert.deepEqual(driven.send({ type: 'token', token: 't3', ttlMs: 900000 }), []);
});
