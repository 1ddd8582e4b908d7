// Mirrors CallEngineTests.swift: auto-rejoin, the outbox, the server's word on the room; plus the web
// additions (session events, resume) and the wire shapes the runtime sends verbatim.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallEngine } from '../../Sources/DuetWeb/Web/js/engine/call-engine.js';
import { TIMER_IDS } from '../../Sources/DuetWeb/Web/js/machines/timers.js';
import { has } from './support/driven.mjs';

const rid = 'R' + 'a'.repeat(26);

function joined(cid, participants, host, epoch, kind = 'fresh') {
  return {
    type: 'message',
    envelope: {
      v: 1, type: 'joined', rid, cid, epoch,
      payload: {
        hostCid: host, participants: participants.map((p) => ({ cid: p, joinedAt: 0, connectionStatus: 'connected' })),
        maxParticipants: 2, reconnect: kind, epoch, reconnectToken: `token-${cid}`, reconnectTokenTTLMs: 1200000,
        turnToken: 'turn', turnTokenExpiresAt: 0, turnTokenTTLMs: 900000,
      },
    },
  };
}
const message = (type, payload, extra = {}) => ({ type: 'message', envelope: { v: 1, type, ...extra, payload } });
const serverError = (code, text = 'x') => message('error', { code, message: text, retryable: false });
const sent = (outputs) => outputs.filter((o) => o.type === 'send').map((o) => o.envelope);
const emitted = (outputs, type) => outputs.filter((o) => o.type === 'emit' && o.event.type === type).map((o) => o.event);

/** Guest in a call with host "C-h". */
function guestInCall(options = {}) {
  const engine = new CallEngine({ jitterSeed: null, ...options });
  assert.ok(has(engine.handle({ type: 'joinRoom', roomId: rid }), { type: 'openTransport', transport: 'ws' }));
  assert.equal(sent(engine.handle({ type: 'transportOpened', transport: 'ws' }))[0].type, 'join');
  engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 2));
  assert.equal(engine.phase, 'inCall');
  return engine;
}

function dropAndReopen(engine) {
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  return engine.handle({ type: 'transportOpened', transport: 'ws' });
}

test('the join envelope has the wire shape of JoinPayload', () => {
  const engine = new CallEngine({ jitterSeed: null });
  engine.handle({ type: 'joinRoom', roomId: rid });
  assert.deepEqual(sent(engine.handle({ type: 'transportOpened', transport: 'ws' })), [
    { v: 1, type: 'join', rid, payload: { capabilities: { trickleIce: true }, device: 'web' } },
  ]);
});

test('auto-rejoin carries reconnectCid and reconnectToken; connected only once ICE says so', () => {
  const engine = guestInCall();
  const down = engine.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.ok(has(down, { type: 'emit', event: { type: 'transport', transport: null } }));
  assert.ok(has(down, { type: 'emit', event: { type: 'connectionStatus', status: 'recovering' } }));
  assert.ok(has(engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' }), { type: 'openTransport', transport: 'ws' }));
  const rejoin = sent(engine.handle({ type: 'transportOpened', transport: 'ws' }))[0];
  assert.equal(rejoin.type, 'join');
  assert.equal(rejoin.rid, rid);
  assert.equal(rejoin.payload.reconnectCid, 'C-g');
  assert.equal(rejoin.payload.reconnectToken, 'token-C-g');
  const back = engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 4, 'reattached'));
  assert.deepEqual(emitted(back, 'connectionStatus'), [], 'ICE has not reported connected yet');
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  assert.equal(engine.connectionStatus, 'connected');
});

test('relays written while down are sent after the rejoin', () => {
  const engine = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle(message('offer', { sdp: 'o', from: 'C-h' }, { rid, epoch: 2 }));
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  assert.deepEqual(sent(engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: 'a' })), [], 'queued, not lost');
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const flushed = sent(engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 4, 'reattached')));
  assert.ok(flushed.some((e) => e.type === 'answer' && e.payload.sdp === 'a' && e.rid === rid));
});

// Found by the sweep (seeds 2477, 7445): descriptions kept while a rejoin was pending were all sent when it came
// back — an offer rolled back meanwhile, and an answer to an offer the peer had already given up.
test('kept descriptions are only the latest, and never a rolled-back offer', () => {
  const engine = guestInCall();
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  engine.handle({ type: 'iceStateChanged', state: 'failed' });
  engine.handle({ type: 'timerFired', timer: 'retryingThreshold' }); // escalation: our ICE restart offer goes out
  assert.ok(sent(engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'r1' })).some((e) => e.type === 'offer'));
  engine.handle({ type: 'timerFired', timer: 'retryEscalation' }); // offer resend
  assert.ok(sent(engine.handle({ type: 'timerFired', timer: 'retryEscalation' })).some((e) => e.type === 'join'), 'a rejoin is pending now');
  engine.handle({ type: 'timerFired', timer: 'offerTimeout' }); // r1 rolled back, restarted
  assert.deepEqual(sent(engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'r2' })), [], 'kept for after the rejoin');
  // The host's late answer to r1 cannot be an answer to r2, which it has not seen.
  const late = engine.handle(message('answer', { sdp: 'answer to r1', from: 'C-h' }, { rid, epoch: 2 }));
  assert.ok(!late.some((o) => o.type === 'engine' && o.command.type === 'setRemoteDescription'), 'a late answer applied to a kept offer');
  // The host's offers cross ours: we yield (r2 rolled back) and answer twice, the second time its newer offer.
  for (const [offer, answer] of [['h1', 'a1'], ['h2', 'a2']]) {
    engine.handle(message('offer', { sdp: offer, from: 'C-h' }, { rid, epoch: 2 }));
    engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
    engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: answer });
  }
  assert.deepEqual(engine.queuedRelayTypes.filter((t) => t !== 'ice'), ['answer']);
  const flushed = sent(engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 2, 'reattached')));
  assert.deepEqual(flushed.filter((e) => e.type === 'offer' || e.type === 'answer').map((e) => e.payload.sdp), ['a2']);
});

test('an answer names the offer it answers (`offer`), and one naming an offer rolled back since is never applied (issue 51)', () => {
  const sdp = (session, version) => `v=0\r\no=- ${session} ${version} IN IP4 0.0.0.0\r\ns=-\r\n`;
  const engine = guestInCall();
  engine.handle(message('offer', { sdp: sdp('111', 2), from: 'C-h' }, { rid, epoch: 2 }));
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  const answer = sent(engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: sdp('222', 2) })).find((e) => e.type === 'answer');
  assert.deepEqual(answer.payload, { sdp: sdp('222', 2), offer: '111 2' });
  // Our own offer later, timed out and restarted: the answer to the first never reaches WebRTC, the second's does.
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: sdp('222', 3) });
  engine.handle({ type: 'timerFired', timer: 'offerTimeout' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: sdp('222', 4) });
  const applied = (outputs) => outputs.some((o) => o.type === 'engine' && o.command.type === 'setRemoteDescription');
  assert.ok(!applied(engine.handle(message('answer', { sdp: sdp('111', 3), offer: '222 3', from: 'C-h' }, { rid, epoch: 2 }))));
  assert.ok(applied(engine.handle(message('answer', { sdp: sdp('111', 4), offer: '222 4', from: 'C-h' }, { rid, epoch: 2 }))));
});

test('relays for an earlier peer session are dropped', () => {
  const engine = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle(message('offer', { sdp: 'o' }, { rid, epoch: 2 }));
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: 'a' });
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  // The server restarted meanwhile: the room was recreated.
  const flushed = sent(engine.handle(joined('C-g', ['C-g'], 'C-g', 1, 'recovered')));
  assert.ok(!flushed.some((e) => e.type === 'answer'));
});

test('ROOM_ENDED on a rejoin ends the call', () => {
  const engine = guestInCall();
  dropAndReopen(engine);
  const outputs = engine.handle(serverError('ROOM_ENDED', 'ended'));
  assert.ok(has(outputs, { type: 'emit', event: { type: 'phase', phase: 'ending' } }));
  assert.ok(has(outputs, { type: 'teardown' }));
  assert.ok(has(engine.handle({ type: 'teardownFinished' }), { type: 'emit', event: { type: 'phase', phase: 'idle' } }));
});

test('INVALID_RECONNECT_TOKEN joins fresh and clears the stored session', () => {
  const engine = guestInCall();
  dropAndReopen(engine);
  const outputs = engine.handle(serverError('INVALID_RECONNECT_TOKEN', 'expired'));
  const fresh = sent(outputs)[0];
  assert.equal(fresh.type, 'join');
  assert.equal(fresh.payload.reconnectCid, undefined);
  assert.equal(fresh.payload.reconnectToken, undefined);
  assert.deepEqual(emitted(outputs, 'session'), [{ type: 'session', seat: null }]);
});

test('escalation steps reach the right machines: ICE restart, offer resend, rejoin, transport fallback', () => {
  const engine = guestInCall();
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  engine.handle({ type: 'iceStateChanged', state: 'failed' });
  const retrying = engine.handle({ type: 'timerFired', timer: 'retryingThreshold' });
  assert.ok(has(retrying, { type: 'emit', event: { type: 'escalation', step: 'iceRestart' } }));
  assert.ok(has(retrying, { type: 'engine', command: { type: 'createOffer', iceRestart: true } }), 'the guest may restart when escalating');
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'restart' });
  assert.ok(has(engine.handle({ type: 'timerFired', timer: 'retryEscalation' }), { type: 'emit', event: { type: 'escalation', step: 'offerResend' } }));
  assert.ok(sent(engine.handle({ type: 'timerFired', timer: 'retryEscalation' })).some((e) => e.type === 'join'));
  engine.handle({ type: 'transportClosed', reason: 'networkError' }); // signaling is down too now
  assert.ok(has(engine.handle({ type: 'timerFired', timer: 'retryEscalation' }), { type: 'openTransport', transport: 'sse' }));
});

test('escalating for a media-only failure never closes the working transport', () => {
  const engine = guestInCall();
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  engine.handle({ type: 'iceStateChanged', state: 'failed' });
  engine.handle({ type: 'timerFired', timer: 'retryingThreshold' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'restart' });
  const steps = [];
  for (let i = 0; i < 12; i += 1) {
    const outputs = engine.handle({ type: 'timerFired', timer: 'retryEscalation' });
    assert.ok(!outputs.some((o) => o.type === 'closeTransport' || o.type === 'openTransport'), `escalation ${i + 2} touched the transport`);
    steps.push(...emitted(outputs, 'escalation').map((e) => e.step));
  }
  assert.ok(!steps.includes('transportFallback'));
  assert.deepEqual(steps.slice(0, 4), ['offerResend', 'rejoin', 'iceRestart', 'offerResend']);
});

test('late WebRTC news after the call is ignored', () => {
  const engine = guestInCall();
  engine.handle({ type: 'leave' });
  engine.handle({ type: 'teardownFinished' });
  assert.deepEqual(engine.handle({ type: 'localCandidate', candidate: { candidate: 'c', sdpMid: '0', sdpMLineIndex: 0 } }), []);
  assert.deepEqual(engine.handle({ type: 'iceStateChanged', state: 'closed' }), []);
});

test('replaced (close 4001): the call stops without a goodbye, says so with the seat to take back, and never reconnects', () => {
  const engine = guestInCall();
  const outputs = engine.handle({ type: 'replaced' });
  assert.deepEqual(outputs[0], { type: 'emit', event: { type: 'replaced', seat: { roomId: rid, cid: 'C-g', reconnectToken: 'token-C-g' } } });
  assert.deepEqual(sent(outputs), [], 'no leave: the seat belongs to the connection that replaced us');
  assert.ok(!outputs.some((o) => o.type === 'httpLeave' || o.type === 'openTransport'));
  // Media stops first, through the WebRTC queue; then the runtime closes the rest.
  const close = outputs.findIndex((o) => o.type === 'engine' && o.command.type === 'close');
  assert.deepEqual(outputs.slice(close, close + 3), [
    { type: 'engine', command: { type: 'close' } }, { type: 'teardown' }, { type: 'emit', event: { type: 'phase', phase: 'ending' } },
  ]);
  assert.deepEqual(outputs.at(-1), { type: 'emit', event: { type: 'session', seat: null } }, 'the engine forgets the seat');
  assert.ok(has(engine.handle({ type: 'teardownFinished' }), { type: 'emit', event: { type: 'phase', phase: 'idle' } }));
  assert.deepEqual(engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' }), [], 'nothing is left running to reconnect');
  assert.deepEqual(engine.handle({ type: 'replaced' }), [], 'a stale 4001 after the call changes nothing');
});

test('offline: no ICE restart and no reconnect; an unhealthy call shows recovering at once, a healthy one nothing', () => {
  const engine = guestInCall();
  engine.handle({ type: 'iceStateChanged', state: 'connected' });
  assert.deepEqual(engine.handle({ type: 'networkOffline' }), [], 'a working call is not degraded by a hint');
  engine.handle({ type: 'iceStateChanged', state: 'disconnected' });
  const offline = engine.handle({ type: 'networkOffline' });
  assert.ok(!offline.some((o) => (o.type === 'engine' && o.command.type === 'createOffer') || o.type === 'openTransport'));
  assert.equal(engine.connectionStatus, 'recovering');
});

test('a rejoin refused for another reason (RATE_LIMITED) drops the transport and rejoins after the backoff; relays go out then', () => {
  const engine = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'o' }); // kept for after the rejoin
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  assert.equal(sent(engine.handle({ type: 'transportOpened', transport: 'ws' }))[0].type, 'join');
  const limited = message('error', { code: 'RATE_LIMITED', message: 'slow down', retryable: true });
  const refused = engine.handle(limited);
  assert.deepEqual(refused[0], { type: 'closeTransport' });
  assert.ok(refused.some((o) => o.type === 'timer' && o.command.type === 'schedule' && o.command.timer === 'reconnectBackoff'));
  assert.deepEqual(engine.queuedRelayTypes, ['offer'], 'the offer still waits for a rejoin');
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  assert.equal(sent(engine.handle({ type: 'transportOpened', transport: 'ws' }))[0].type, 'join');
  const back = engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 2, 'reattached'));
  assert.ok(sent(back).some((e) => e.type === 'offer'));
  assert.deepEqual(engine.handle(limited), [], 'outside a rejoin the same error changes nothing');
});

test('a rejoin refused for good (INVALID_ROOM_ID, not retryable) ends the call instead of knocking forever', () => {
  const engine = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const outputs = engine.handle(serverError('INVALID_ROOM_ID', 'unknown room'));
  assert.ok(has(outputs, { type: 'emit', event: { type: 'phase', phase: 'ending' } }));
  assert.ok(!outputs.some((o) => o.type === 'timer' && o.command.type === 'schedule' && o.command.timer === 'reconnectBackoff'));
});

test('leaving with signaling down leaves over HTTP', () => {
  const engine = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  const outputs = engine.handle({ type: 'leave' });
  assert.ok(has(outputs, { type: 'httpLeave', request: { rid, cid: 'C-g', reconnectToken: 'token-C-g' } }));
  assert.ok(!outputs.some((o) => o.type === 'send'));
});

test('the host ending the call with signaling down ends it over HTTP (`end`); a guest ending it leaves', () => {
  const host = hostInCall();
  host.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.ok(has(host.handle({ type: 'end' }), { type: 'httpLeave', request: { rid, cid: 'C-h', reconnectToken: 'token-C-h', end: true } }));
  const guest = guestInCall();
  guest.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.ok(has(guest.handle({ type: 'end' }), { type: 'httpLeave', request: { rid, cid: 'C-g', reconnectToken: 'token-C-g', end: undefined } }));
});

test('teardown says goodbye (leave has no rid), cancels every timer, and clears the session', () => {
  const engine = guestInCall();
  const outputs = engine.handle({ type: 'leave' });
  assert.deepEqual(sent(outputs), [{ v: 1, type: 'leave', payload: {} }]);
  assert.ok(!outputs.some((o) => o.type === 'closeTransport'), 'teardown closes the transport after the goodbye');
  const cancelled = outputs.filter((o) => o.type === 'timer' && o.command.type === 'cancel').map((o) => o.command.timer);
  for (const id of TIMER_IDS) assert.ok(cancelled.includes(id), id);
  assert.deepEqual(outputs.filter((o) => o.type === 'teardown').length, 1);
  assert.deepEqual(emitted(outputs, 'session'), [{ type: 'session', seat: null }]);
  assert.equal(engine.cid, null);
  assert.deepEqual(engine.participants, []);
});

test('the reconnect token is renewed at half its TTL, so it outlives the server seat hold', () => {
  const engine = new CallEngine({ jitterSeed: null });
  engine.handle({ type: 'joinRoom', roomId: rid });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const outputs = engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 2));
  assert.ok(has(outputs, { type: 'timer', command: { type: 'schedule', timer: 'reconnectTokenRefresh', afterMs: 600000 } }));
  assert.deepEqual(emitted(outputs, 'session'), [{ type: 'session', seat: { roomId: rid, cid: 'C-g', reconnectToken: 'token-C-g' } }]);
  assert.deepEqual(sent(engine.handle({ type: 'timerFired', timer: 'reconnectTokenRefresh' })),
    [{ v: 1, type: 'reconnect-token-refresh', payload: {} }]);
  const refreshed = engine.handle(message('reconnect-token-refreshed', { reconnectToken: 't2', reconnectTokenTTLMs: 1200000 }));
  assert.ok(has(refreshed, { type: 'timer', command: { type: 'schedule', timer: 'reconnectTokenRefresh', afterMs: 600000 } }));
  assert.deepEqual(emitted(refreshed, 'session'), [{ type: 'session', seat: { roomId: rid, cid: 'C-g', reconnectToken: 't2' } }]);
  assert.equal(engine.reconnectToken, 't2');
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.deepEqual(engine.handle({ type: 'timerFired', timer: 'reconnectTokenRefresh' }),
    [{ type: 'timer', command: { type: 'schedule', timer: 'reconnectTokenRefresh', afterMs: 5000 } }], 'signaling down: try again soon');
});

test("end() from the guest leaves (only the host can end the room); the host's end() ends it", () => {
  assert.deepEqual(sent(guestInCall().handle({ type: 'end' })).map((e) => e.type), ['leave']);
  const host = new CallEngine({ jitterSeed: null });
  host.handle({ type: 'joinRoom', roomId: rid });
  host.handle({ type: 'transportOpened', transport: 'ws' });
  host.handle(joined('C-h', ['C-h', 'C-g'], 'C-h', 2));
  assert.deepEqual(sent(host.handle({ type: 'end' })).map((e) => e.type), ['end_room']);
});

test('a refused join fails with the server code, and leaves nothing behind for the next attempt', () => {
  const engine = new CallEngine({ jitterSeed: null });
  engine.handle({ type: 'joinRoom', roomId: rid });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const refused = engine.handle(serverError('ROOM_FULL', 'full'));
  assert.deepEqual(emitted(refused, 'failure'), [{ type: 'failure', failure: { kind: 'joinRefused', code: 'ROOM_FULL', message: 'full' } }]);
  assert.ok(has(refused, { type: 'closeTransport' }));
  assert.ok(has(refused, { type: 'engine', command: { type: 'close' } }));
  assert.equal(engine.phase, 'error');
  engine.handle({ type: 'dismissError' });
  engine.handle({ type: 'joinRoom', roomId: rid });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const outputs = engine.handle(joined('C-g', ['C-h', 'C-g'], 'C-h', 2));
  assert.ok(has(outputs, { type: 'fetchTurnCredentials', token: 'turn' }), 'TURN works again on the next join');
});

test('the join hard timeout fails the call with joinTimedOut', () => {
  const engine = new CallEngine({ jitterSeed: null });
  engine.handle({ type: 'joinRoom', roomId: rid });
  const outputs = engine.handle({ type: 'timerFired', timer: 'joinHardTimeout' });
  assert.deepEqual(emitted(outputs, 'failure')[0].failure.kind, 'joinTimedOut');
  assert.equal(engine.phase, 'error');
});

test('draining: reconnect after the delay the server asked for', () => {
  const engine = guestInCall();
  const outputs = engine.handle(message('draining', { reconnectAfterMs: 3000 }));
  assert.deepEqual(outputs[0], { type: 'closeTransport' });
  assert.ok(has(outputs, { type: 'timer', command: { type: 'schedule', timer: 'reconnectBackoff', afterMs: 3000 } }));
  // The first room of a drain is told 0: it goes at once, not after the backoff's 400–600 ms (issue 53).
  const first = guestInCall();
  assert.ok(has(first.handle(message('draining', { reconnectAfterMs: 0 })),
    { type: 'timer', command: { type: 'schedule', timer: 'reconnectBackoff', afterMs: 0 } }));
});

// Mirrors CallEngineTests.drainingVia (issue 53: both clients of a room reach the node the drain named).
test('draining names the room\'s next node: connects go through it until two fail in a row, a drain says otherwise, or the call ends', () => {
  const draining = (via, afterMs = 0) => message('draining', via === undefined ? { reconnectAfterMs: afterMs } : { reconnectAfterMs: afterMs, via });
  const opens = (outputs) => outputs.filter((o) => o.type === 'openTransport');
  const viaOpen = (via) => (via == null ? { type: 'openTransport', transport: 'ws' } : { type: 'openTransport', transport: 'ws', via });
  const fire = (engine, timer) => engine.handle({ type: 'timerFired', timer });
  const engine = guestInCall();
  engine.handle(draining('node2'));
  assert.equal(engine.via, 'node2');
  assert.deepEqual(opens(fire(engine, 'reconnectBackoff')), [viaOpen('node2')]);
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.deepEqual(opens(fire(engine, 'reconnectBackoff')), [viaOpen('node2')]);
  engine.handle({ type: 'transportOpenFailed', transport: 'ws', failure: 'error' });
  assert.equal(engine.via, 'node2');
  assert.deepEqual(opens(fire(engine, 'reconnectBackoff')), [viaOpen('node2')]);
  assert.deepEqual(opens(engine.handle({ type: 'transportOpenFailed', transport: 'ws', failure: 'error' })),
    [{ type: 'openTransport', transport: 'sse' }], 'by the room alone: no via field at all, as the Swift trace form');
  assert.equal(engine.via, null);
  // Connects that never answer count too, and one that opens starts the count again.
  const slow = guestInCall();
  slow.handle(draining('node3'));
  assert.deepEqual(opens(fire(slow, 'reconnectBackoff')), [viaOpen('node3')]);
  let next = opens(fire(slow, 'connectTimeout'));
  assert.equal(slow.via, 'node3', 'one connect that never answered');
  assert.equal(next[0]?.via, 'node3', 'the link\'s own next try (SSE) still goes through node3');
  slow.handle({ type: 'transportOpened', transport: next[0].transport });
  slow.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.equal(opens(fire(slow, 'reconnectBackoff'))[0]?.via, 'node3');
  next = opens(fire(slow, 'connectTimeout'));
  assert.equal(slow.via, 'node3', 'one failure since the last open');
  if (next.length === 0) next = opens(fire(slow, 'reconnectBackoff'));
  assert.equal(next[0]?.via, 'node3');
  fire(slow, 'connectTimeout');
  assert.equal(slow.via, null);
  const released = guestInCall();
  released.handle(draining('node2'));
  fire(released, 'reconnectBackoff');
  released.handle({ type: 'transportOpened', transport: 'ws' });
  released.handle(draining(null));
  assert.deepEqual(opens(fire(released, 'reconnectBackoff')), [viaOpen(null)]);
  const hostile = guestInCall();
  assert.ok(has(hostile.handle(message('draining', { reconnectAfterMs: 3000, via: 7 })),
    { type: 'timer', command: { type: 'schedule', timer: 'reconnectBackoff', afterMs: 0 } }));
  assert.equal(hostile.via, null);
  // A delay no Int64 holds fails Swift's decoding of the whole payload: no delay, no via.
  const huge = guestInCall();
  assert.ok(has(huge.handle(message('draining', { reconnectAfterMs: 1e19, via: 'node2' })),
    { type: 'timer', command: { type: 'schedule', timer: 'reconnectBackoff', afterMs: 0 } }));
  assert.equal(huge.via, null);
  // '\ud800' (a lone surrogate JSON.parse lets through) would make encodeURIComponent throw in the runtime.
  for (const name of ['', 'node 2', 'node2&rid=x', 'n'.repeat(65), 'nöde', '\ud800']) {
    const odd = guestInCall();
    assert.ok(has(odd.handle(draining(name, 300)), { type: 'timer', command: { type: 'schedule', timer: 'reconnectBackoff', afterMs: 300 } }));
    assert.equal(odd.via, null, JSON.stringify(name));
  }
  const fine = guestInCall();
  fine.handle(draining('node-3.eu_west~1'));
  assert.equal(fine.via, 'node-3.eu_west~1');
  const ended = guestInCall();
  ended.handle(draining('node2'));
  ended.handle({ type: 'leave' });
  assert.equal(ended.via, null);
});

// Mirrors CallEngineTests.candidatesNeverPrecedeTheirOffer. Found in CI: webrtcbin reports candidates before it hands
// the offer back, so duet call sent its first ones before its offer and an aiortc peer dropped them.
test('our candidates never precede the offer they belong to, the first one or an ICE restart\'s', () => {
  const host = new CallEngine({ jitterSeed: null });
  host.handle({ type: 'joinRoom', roomId: rid });
  host.handle({ type: 'transportOpened', transport: 'ws' });
  const candidate = { candidate: 'candidate:1 1 udp 1 10.0.0.1 9 typ host', sdpMid: '0', sdpMLineIndex: 0 };
  const types = (outputs) => sent(outputs).map((e) => e.type);
  assert.ok(has(host.handle(joined('C-h', ['C-h', 'C-g'], 'C-h', 2)), { type: 'engine', command: { type: 'createOffer', iceRestart: false } }));
  assert.deepEqual(types(host.handle({ type: 'localCandidate', candidate })), [], 'held while the offer is made');
  assert.deepEqual(types(host.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'o' })), ['offer', 'ice']);
  host.handle(message('answer', { sdp: 'a' }, { epoch: 2 }));
  host.handle({ type: 'remoteDescriptionApplied', kind: 'answer' });
  host.handle({ type: 'iceStateChanged', state: 'connected' });
  assert.ok(has(host.handle({ type: 'networkOnline' }), { type: 'engine', command: { type: 'createOffer', iceRestart: true } }));
  assert.deepEqual(types(host.handle({ type: 'localCandidate', candidate })), [], 'the restart\'s candidates wait for its offer');
  assert.deepEqual(types(host.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'r' })), ['offer', 'ice']);
  assert.deepEqual(types(host.handle({ type: 'localCandidate', candidate })), ['ice'], 'then at once');
});

test('ping and end-of-candidates have their wire shapes', () => {
  const engine = guestInCall();
  assert.deepEqual(sent(engine.handle({ type: 'timerFired', timer: 'ping' })), [{ v: 1, type: 'ping', payload: { ts: 0 } }]);
  engine.handle(message('offer', { sdp: 'o' }, { epoch: 2 }));
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  engine.handle({ type: 'localCandidate', candidate: { candidate: 'candidate:1 1 udp 1 10.0.0.1 9 typ host generation 0', sdpMid: null, sdpMLineIndex: 0, usernameFragment: 'u' } });
  engine.handle({ type: 'gatheringComplete' });
  const answer = sent(engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: 'a' }));
  assert.deepEqual(answer, [
    { v: 1, type: 'answer', rid, payload: { sdp: 'a' } },
    { v: 1, type: 'ice', rid, payload: { candidate: { candidate: 'candidate:1 1 udp 1 10.0.0.1 9 typ host', sdpMLineIndex: 0 } } },
    { v: 1, type: 'ice', rid, payload: { candidate: null } },
  ]);
});

test('remote ICE: malformed payloads are ignored, end-of-candidates passes through as null', () => {
  const engine = guestInCall();
  engine.handle(message('offer', { sdp: 'o' }, { epoch: 2 }));
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  assert.deepEqual(engine.handle(message('ice', { from: 'C-h' }, { epoch: 2 })), []);
  assert.deepEqual(engine.handle(message('ice', { candidate: { sdpMid: '0' } }, { epoch: 2 })), []);
  assert.deepEqual(engine.handle(message('ice', { candidate: null }, { epoch: 2 })),
    [{ type: 'engine', command: { type: 'addRemoteCandidates', candidates: [null] } }]);
});

test('W3C signaling states map onto the Swift SignalingState; others are ignored', () => {
  const engine = guestInCall();
  engine.handle({ type: 'signalingStateChanged', state: 'have-local-offer' });
  assert.equal(engine.negotiation.signalingState, 'haveLocalOffer');
  engine.handle({ type: 'signalingStateChanged', state: 'have-remote-pranswer' });
  assert.equal(engine.negotiation.signalingState, 'haveLocalOffer');
  engine.handle({ type: 'signalingStateChanged', state: 'stable' });
  assert.equal(engine.negotiation.signalingState, 'stable');
});

test('connection states count like ICE states; unknown states are ignored', () => {
  const engine = guestInCall();
  engine.handle({ type: 'connectionStateChanged', state: 'connected' });
  assert.equal(engine.iceState, 'connected');
  const degraded = engine.handle({ type: 'connectionStateChanged', state: 'disconnected' });
  assert.ok(has(degraded, { type: 'emit', event: { type: 'connectionStatus', status: 'recovering' } }));
  engine.handle({ type: 'connectionStateChanged', state: 'connecting' });
  assert.equal(engine.iceState, 'checking');
  assert.deepEqual(engine.handle({ type: 'iceStateChanged', state: 'bogus' }), []);
  assert.equal(engine.iceState, 'checking');
});

test('resume: the first join of that room proves the old seat; another room does not', () => {
  const resume = { roomId: rid, cid: 'C-old', reconnectToken: 'tok-old' };
  const engine = new CallEngine({ jitterSeed: null, resume });
  const start = engine.handle({ type: 'joinRoom', roomId: rid });
  assert.deepEqual(emitted(start, 'session'), [{ type: 'session', seat: resume }]);
  const join = sent(engine.handle({ type: 'transportOpened', transport: 'ws' }))[0];
  assert.deepEqual(join.payload, { capabilities: { trickleIce: true }, reconnectCid: 'C-old', reconnectToken: 'tok-old', device: 'web' });
  const back = engine.handle(joined('C-old', ['C-h', 'C-old'], 'C-h', 7, 'reattached'));
  assert.equal(engine.phase, 'inCall');
  assert.deepEqual(emitted(back, 'session'), [{ type: 'session', seat: { roomId: rid, cid: 'C-old', reconnectToken: 'token-C-old' } }]);

  const other = new CallEngine({ jitterSeed: null, resume: { ...resume, roomId: 'R' + 'b'.repeat(26) } });
  other.handle({ type: 'joinRoom', roomId: rid });
  assert.equal(sent(other.handle({ type: 'transportOpened', transport: 'ws' }))[0].payload.reconnectCid, undefined);
});

test('jitter: a given seed reproduces the Swift draw, null turns it off, no seed still stays in range', () => {
  const delay = (options) => {
    const engine = new CallEngine(options);
    engine.handle({ type: 'joinRoom', roomId: rid });
    engine.handle({ type: 'transportOpened', transport: 'ws' });
    engine.handle(joined('C-g', ['C-g'], 'C-g', 1));
    const outputs = engine.handle({ type: 'transportClosed', reason: 'networkError' });
    return outputs.find((o) => o.type === 'timer' && o.command.timer === 'reconnectBackoff').command.afterMs;
  };
  assert.equal(delay({ jitterSeed: 42 }), 548);
  assert.equal(delay({ jitterSeed: 42n }), 548);
  assert.equal(delay({ jitterSeed: null }), 500);
  const random = delay({});
  assert.ok(random >= 400 && random <= 600, `${random}`);
});

/** Host "C-h" in a call with guest "C-g": its offer answered, ICE connected. */
function hostInCall() {
  const host = new CallEngine({ jitterSeed: null });
  host.handle({ type: 'joinRoom', roomId: rid });
  host.handle({ type: 'transportOpened', transport: 'ws' });
  host.handle(joined('C-h', ['C-h', 'C-g'], 'C-h', 2));
  host.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'o' });
  host.handle(message('answer', { sdp: 'a' }, { epoch: 2 }));
  host.handle({ type: 'remoteDescriptionApplied', kind: 'answer' });
  host.handle({ type: 'iceStateChanged', state: 'connected' });
  return host;
}

/** `room_state` with host "C-h" connected and guest "C-g" as `status` says. */
const roomState = (status, epoch) => message('room_state', {
  hostCid: 'C-h', epoch,
  participants: [{ cid: 'C-h', joinedAt: 0, connectionStatus: 'connected' }, { cid: 'C-g', joinedAt: 0, connectionStatus: status }],
}, { epoch });

test('the peer returning from suspension with our media down triggers an ICE restart', () => {
  const host = hostInCall();
  host.handle(roomState('suspended', 3));
  host.handle({ type: 'iceStateChanged', state: 'disconnected' });
  const back = host.handle(roomState('connected', 4));
  assert.ok(has(back, { type: 'emit', event: { type: 'iceRestart', reason: 'escalation' } }));
  assert.ok(has(back, { type: 'engine', command: { type: 'createOffer', iceRestart: true } }));
});

test('the peer away (suspended): no restart offered to it and our status stays connected; back with media down, restarted', () => {
  const host = hostInCall();
  host.handle(roomState('suspended', 3));
  const away = [host.handle({ type: 'iceStateChanged', state: 'disconnected' })];
  for (const timer of ['iceRestartDelay', 'retryingThreshold', 'retryEscalation']) away.push(host.handle({ type: 'timerFired', timer }));
  const outputs = away.flat();
  assert.ok(!outputs.some((o) => o.type === 'engine' && o.command.type === 'createOffer'), JSON.stringify(outputs));
  assert.ok(!outputs.some((o) => o.type === 'emit' && o.event.type === 'connectionStatus'), JSON.stringify(outputs));
  assert.equal(host.connectionStatus, 'connected');
  const back = host.handle(roomState('connected', 4));
  assert.ok(has(back, { type: 'engine', command: { type: 'createOffer', iceRestart: true } }));
  assert.equal(host.connectionStatus, 'recovering');
});

/** Host "C-h" with guest "C-g", media flowing; the server restarts and the host is the first one back. */
function hostAloneAfterAServerRestart() {
  const host = hostInCall();
  dropAndReopen(host);
  host.handle(joined('C-h', ['C-h'], 'C-h', 1, 'recovered'));
  assert.equal(host.phase, 'waiting');
  return host;
}
const twoConnected = (guest, epoch) => message('room_state', {
  hostCid: 'C-h', epoch, participants: ['C-h', guest].map((cid) => ({ cid, joinedAt: 0, connectionStatus: 'connected' })),
}, { epoch });
const offers = (outputs) => outputs.filter((o) => o.type === 'engine' && o.command.type === 'createOffer').map((o) => o.command.iceRestart);

test('the same peer back in a room rebuilt after a server restart, media up: a plain offer, no ICE restart', () => {
  const host = hostAloneAfterAServerRestart();
  const back = host.handle(twoConnected('C-g', 2));
  assert.equal(host.phase, 'inCall');
  assert.deepEqual(offers(back), [false]);
  assert.deepEqual(emitted(back, 'iceRestart'), []);
});

test('the same peer back after a server restart with our media down, or another peer: an ICE restart', () => {
  const down = hostAloneAfterAServerRestart();
  down.handle({ type: 'iceStateChanged', state: 'disconnected' });
  const back = down.handle(twoConnected('C-g', 2));
  assert.deepEqual(offers(back), [true]);
  assert.deepEqual(emitted(back, 'iceRestart'), [{ type: 'iceRestart', reason: 'signalingReconnect' }]);
  const other = hostAloneAfterAServerRestart();
  assert.deepEqual(offers(other.handle(twoConnected('C-x', 2))), [true], 'a new seat is a new session');
});

test('a join with a kept seat never times out: a call coming back keeps trying (B5)', () => {
  const engine = new CallEngine({ jitterSeed: null, resume: { roomId: rid, cid: 'C-old', reconnectToken: 'tok-old' } });
  engine.handle({ type: 'joinRoom', roomId: rid });
  const outputs = engine.handle({ type: 'timerFired', timer: 'joinHardTimeout' });
  assert.equal(emitted(outputs, 'failure').length, 0);
  assert.equal(engine.phase, 'joining');
});

// Verified calls (issue 19): the same steps as Tests/DuetClientTests/Verification/VerificationEngineTests.swift.
test('verified calls: a keyed link verifies applied descriptions, ends as intercepted on a rejected one, and never retries', () => {
  const offer = (epoch = 2) => ({ v: 1, type: 'offer', rid, cid: 'C-g', epoch, payload: { sdp: 'v=0 offer', from: 'C-h', auth: 'forged' } });
  const sentTypes = (outputs) => sent(outputs).map((e) => e.type);

  // Keyed: an applied description is verified, said once.
  let engine = guestInCall({ keyedLink: true });
  assert.ok(has(engine.handle({ type: 'message', envelope: offer() }), { type: 'engine', command: { type: 'setRemoteDescription', kind: 'offer', sdp: 'v=0 offer' } }));
  assert.deepEqual(emitted(engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' }), 'verification'), [{ type: 'verification', value: 'verified' }]);
  engine.handle({ type: 'localDescriptionReady', kind: 'answer', sdp: 'v=0 answer' });
  assert.deepEqual(emitted(engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' }), 'verification'), []);
  // Nobody on the other side: nothing proven any more.
  assert.deepEqual(emitted(engine.handle(message('room_state', { hostCid: 'C-h', participants: [{ cid: 'C-g', joinedAt: 0, connectionStatus: 'connected' }], epoch: 3 }, { rid, epoch: 3 })), 'verification'),
    [{ type: 'verification', value: 'unverified' }]);

  // Plain link: never verified; a rejection or a verify_failed changes nothing.
  engine = guestInCall();
  engine.handle({ type: 'message', envelope: offer() });
  assert.deepEqual(emitted(engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' }), 'verification'), []);
  assert.deepEqual(engine.handle({ type: 'descriptionRejected', envelope: offer() }), []);
  assert.deepEqual(engine.handle(message('verify_failed', { auth: 'x', from: 'C-h' }, { rid, epoch: 2 })), []);
  assert.equal(engine.phase, 'inCall');

  // Rejected: verify_failed, then leave; intercepted before the phase changes; kept; nothing restarts.
  engine = guestInCall({ keyedLink: true });
  const out = engine.handle({ type: 'descriptionRejected', envelope: offer() });
  assert.ok(!out.some((o) => o.type === 'engine' && o.command.type === 'setRemoteDescription'));
  assert.deepEqual(sentTypes(out), ['verify_failed', 'leave']);
  const verdict = out.findIndex((o) => o.type === 'emit' && o.event.type === 'verification' && o.event.value === 'intercepted');
  const ending = out.findIndex((o) => o.type === 'emit' && o.event.type === 'phase' && o.event.phase === 'ending');
  assert.ok(verdict >= 0 && verdict < ending);
  assert.ok(has(out, { type: 'teardown' }));
  engine.handle({ type: 'teardownFinished' });
  assert.equal(engine.phase, 'idle');
  assert.equal(engine.verification, 'intercepted');
  // No retry into the same trap: every timer of the call is cancelled, and nothing reconnects.
  for (const timer of TIMER_IDS) assert.ok(has(out, { type: 'timer', command: { type: 'cancel', timer } }), timer);
  assert.deepEqual(engine.handle({ type: 'transportClosed', reason: 'networkError' }), []);
  assert.deepEqual(engine.handle({ type: 'networkOnline' }), []);

  // A rejected answer to our offer ends the call too.
  engine = guestInCall({ keyedLink: true });
  engine.handle({ type: 'timerFired', timer: 'nonHostFallback' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'v=0 our offer' });
  const answer = { v: 1, type: 'answer', rid, epoch: 2, payload: { sdp: 'v=0 answer', from: 'C-h' } };
  assert.deepEqual(sentTypes(engine.handle({ type: 'descriptionRejected', envelope: answer })), ['verify_failed', 'leave']);

  // Rejections that would have been dropped anyway end nothing.
  engine = guestInCall({ keyedLink: true });
  assert.deepEqual(engine.handle({ type: 'descriptionRejected', envelope: offer(1) }), []);
  assert.deepEqual(engine.handle({ type: 'descriptionRejected', envelope: { v: 1, type: 'ice', rid, epoch: 2, payload: { candidate: null } } }), []);
  engine.handle({ type: 'timerFired', timer: 'nonHostFallback' });
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'v=0 kept offer' });
  assert.deepEqual(engine.queuedRelayTypes, ['offer']);
  assert.deepEqual(engine.handle({ type: 'descriptionRejected', envelope: { v: 1, type: 'answer', rid, epoch: 2, payload: { sdp: 'old' } } }), []);
  assert.equal(engine.phase, 'inCall');

  // A certificate mismatch (duet call's runtime) is about an applied description: it ends the call even while our
  // offer waits in the outbox, when a rejected answer would be dropped; without a key it changes nothing.
  engine = guestInCall({ keyedLink: true });
  engine.handle({ type: 'timerFired', timer: 'nonHostFallback' });
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  engine.handle({ type: 'localDescriptionReady', kind: 'offer', sdp: 'v=0 kept offer' });
  assert.deepEqual(engine.queuedRelayTypes, ['offer']);
  const mismatch = engine.handle({ type: 'certificateMismatch' });
  assert.deepEqual(emitted(mismatch, 'verification'), [{ type: 'verification', value: 'intercepted' }]);
  assert.ok(mismatch.some((o) => o.type === 'httpLeave'));
  assert.equal(engine.phase, 'ending');
  engine = guestInCall();
  assert.deepEqual(engine.handle({ type: 'certificateMismatch' }), []);
  assert.equal(engine.phase, 'inCall');

  // The peer's (proven) verify_failed: leave without answering; an earlier peer session's is ignored.
  engine = guestInCall({ keyedLink: true });
  const told = engine.handle(message('verify_failed', { auth: 'proven', from: 'C-h' }, { rid, epoch: 2 }));
  assert.deepEqual(sentTypes(told), ['leave']);
  assert.deepEqual(emitted(told, 'verification'), [{ type: 'verification', value: 'intercepted' }]);
  engine = guestInCall({ keyedLink: true });
  assert.deepEqual(engine.handle(message('verify_failed', { auth: 'old' }, { rid, epoch: 1 })), []);
});

test('verified calls: nothing late takes the interception back, and a new peer is not verified by the old one', () => {
  const offer = { v: 1, type: 'offer', rid, cid: 'C-g', epoch: 2, payload: { sdp: 'v=0 offer', from: 'C-h', auth: 'x' } };
  const twoOf = (other, epoch) => message('room_state', { hostCid: 'C-h', participants: [other, 'C-g'].map((cid) => ({ cid, joinedAt: 0, connectionStatus: 'connected' })), epoch }, { rid, epoch });
  const engine = guestInCall({ keyedLink: true });
  engine.handle({ type: 'message', envelope: offer });
  engine.handle({ type: 'remoteDescriptionApplied', kind: 'offer' });
  assert.deepEqual(emitted(engine.handle(twoOf('C-x', 3)), 'verification'), [{ type: 'verification', value: 'unverified' }]);

  const caught = guestInCall({ keyedLink: true });
  caught.handle({ type: 'descriptionRejected', envelope: offer });
  caught.handle(twoOf('C-x', 3));
  caught.handle({ type: 'remoteDescriptionApplied', kind: 'answer' });
  assert.equal(caught.verification, 'intercepted');
  caught.handle({ type: 'teardownFinished' });
  assert.deepEqual(emitted(caught.handle({ type: 'joinRoom', roomId: rid }), 'verification'), [{ type: 'verification', value: 'unverified' }]);
});
