// The /check page's verdicts (js/ui/check-verdicts.js): what each measurement means, and what to do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CHECKS, CHECK_TIMEOUT_MS, MICROPHONE_SIGNAL_LEVEL, cameraVerdict, microphoneVerdict, signalingVerdict, stunVerdict,
  summarize, turnVerdict,
} from '../../Sources/DuetWeb/Web/js/ui/check-verdicts.js';

const fetched = { status: 'fetched' };
const STUN = 'stun:198.51.100.1:3478';
const TURN_UDP = 'turn:198.51.100.1:3478?transport=udp';
const TURNS = 'turns:turn.example.com:443?transport=tcp';

test('the eight checks, in the order the page shows them, with the ids window.duetCheck uses', () => {
  assert.deepEqual(CHECKS.map((c) => c.id), ['websocket', 'sse', 'stun', 'turnUdp', 'turnTcp', 'turnTls', 'camera', 'microphone']);
  assert.equal(CHECK_TIMEOUT_MS, 8000);
});

test('signaling: joined is a pass with the time; a failure says what happened and that SSE is the fallback', () => {
  assert.deepEqual(signalingVerdict('websocket', { joined: true, ms: 41.6 }),
    { status: 'pass', detail: 'Connected and joined a test room over WebSocket in 42 ms.', todo: '' });
  const refused = signalingVerdict('websocket', { joined: false, error: 'websocket refused (1006)' });
  assert.equal(refused.status, 'fail');
  assert.equal(refused.detail, 'Could not connect over WebSocket (websocket refused (1006)).');
  assert.match(refused.todo, /fall back to SSE/);
  const silent = signalingVerdict('sse', { joined: false, timedOut: true });
  assert.equal(silent.detail, 'No answer over SSE within 8 s.');
  assert.match(silent.todo, /If WebSocket works, calls work without SSE/);
});

test('STUN: a server-reflexive address passes and is shown; none configured is a skip with the flag to set', () => {
  assert.deepEqual(stunVerdict(fetched, { urls: [STUN], srflx: ['203.0.113.9'], errors: [], gatheringComplete: false, timedOut: false }), {
    status: 'pass', detail: `Your network’s public address is 203.0.113.9 (found through ${STUN}).`, todo: '' });
  const none = stunVerdict(fetched, { urls: [], srflx: [], errors: [] });
  assert.equal(none.status, 'skip');
  assert.equal(none.detail, 'This Duet server hands out no STUN server.');
  assert.match(none.todo, /--stun-port 3478/);
});

test('STUN: gathering done with no error and no new address is an answer (no NAT); silence or an error is a fail', () => {
  const noNat = stunVerdict(fetched, { urls: [STUN], srflx: [], errors: [], gatheringComplete: true, timedOut: false });
  assert.equal(noNat.status, 'pass');
  assert.match(noNat.detail, /already its public one/);
  const silent = stunVerdict(fetched, { urls: [STUN], srflx: [], errors: [], gatheringComplete: false, timedOut: true });
  assert.equal(silent.status, 'fail');
  assert.equal(silent.detail, `No answer from the STUN server (${STUN}) within 8 s.`);
  assert.match(silent.todo, /UDP/);
  const error = stunVerdict(fetched, { urls: [STUN], srflx: [], errors: [{ url: STUN, code: 701, text: 'STUN host lookup received error.' }], gatheringComplete: true });
  assert.equal(error.status, 'fail', 'an error is no answer, even with gathering complete');
  assert.match(error.detail, /answered 701 “STUN host lookup received error\.”/);
  const otherError = stunVerdict(fetched, { urls: [STUN], srflx: [], errors: [{ url: 'stun:elsewhere', code: 701 }], gatheringComplete: true });
  assert.equal(otherError.status, 'pass', 'only errors of the STUN servers tested count');
});

test('TURN: a relay candidate passes; none configured skips with how to add that transport', () => {
  assert.deepEqual(turnVerdict('turnUdp', fetched, { urls: [TURN_UDP], relays: [{ address: '198.51.100.1', relayProtocol: 'udp', url: TURN_UDP }], errors: [] }),
    { status: 'pass', detail: `Got a relay address (198.51.100.1) over UDP from ${TURN_UDP}.`, todo: '' });
  const noTls = turnVerdict('turnTls', fetched, { urls: [], relays: [], errors: [] });
  assert.deepEqual([noTls.status, noTls.detail], ['skip', 'No TURN over TLS is configured on this Duet server.']);
  assert.match(noTls.todo, /turns:HOST:443\?transport=tcp/);
  assert.match(turnVerdict('turnTcp', fetched, { urls: [], relays: [], errors: [] }).todo, /block UDP/);
  assert.match(turnVerdict('turnUdp', fetched, { urls: [], relays: [], errors: [] }).todo, /--turn-secret/);
});

test('TURN: a 401 names the secret; other errors and timeouts say what failed, TLS also names the certificate', () => {
  const refused = turnVerdict('turnUdp', fetched, { urls: [TURN_UDP], relays: [], errors: [{ url: TURN_UDP, code: 401, text: 'Unauthorized.' }] });
  assert.equal(refused.status, 'fail');
  assert.match(refused.detail, /refused the credentials \(401\)/);
  assert.match(refused.todo, /static-auth-secret/);
  const tlsError = { url: TURNS, code: 701, text: 'Failed to establish connection' };
  const tls = turnVerdict('turnTls', fetched, { urls: [TURNS], relays: [], errors: [tlsError, { ...tlsError }, { ...tlsError }] });
  assert.equal(tls.detail, `Could not get a relay address over TLS: ${TURNS} answered 701 “Failed to establish connection”.`, 'once per interface: said once');
  assert.match(tls.todo, /certificate/);
  const silent = turnVerdict('turnUdp', fetched, { urls: [TURN_UDP], relays: [], errors: [], timedOut: true });
  assert.equal(silent.detail, `No relay address over UDP within 8 s (${TURN_UDP}).`);
});

test('STUN and TURN rows are skipped, saying why, when the server list could not be had', () => {
  const failed = { status: 'failed', error: 'the server answered 401' };
  for (const verdict of [stunVerdict(failed, { urls: [], srflx: [], errors: [] }), turnVerdict('turnTcp', failed, { urls: [], relays: [], errors: [] })]) {
    assert.equal(verdict.status, 'skip');
    assert.match(verdict.detail, /could not be fetched \(the server answered 401\)/);
    assert.match(verdict.todo, /signaling rows above/);
  }
});

test('camera: a live track with a picture passes; each getUserMedia error has its own advice', () => {
  assert.deepEqual(cameraVerdict({ label: 'fake_device_0', live: true, width: 640, height: 480 }),
    { status: 'pass', detail: 'The camera “fake_device_0” works: 640×480.', todo: '' });
  assert.equal(cameraVerdict({ label: 'c', live: true, width: 0, height: 0 }).status, 'fail');
  assert.equal(cameraVerdict({ label: 'c', live: false, width: 640, height: 480 }).status, 'fail');
  const advice = (name) => cameraVerdict({ error: { name } });
  assert.match(advice('NotAllowedError').detail, /not allowed to use your camera/);
  assert.match(advice('NotAllowedError').todo, /site settings/);
  assert.match(advice('NotFoundError').detail, /No camera was found/);
  assert.match(advice('NotReadableError').todo, /Close other apps/);
  assert.match(advice('NoMediaDevices').todo, /https:\/\//);
  assert.match(advice('WeirdError').detail, /WeirdError/);
  assert.ok(['NotAllowedError', 'NotFoundError', 'NotReadableError', 'NoMediaDevices', 'WeirdError'].every((n) => advice(n).status === 'fail'));
});

test('microphone: passes only with sound heard; silence, no level and errors fail with what to do', () => {
  const heard = microphoneVerdict({ label: 'mic', live: true, measured: true, peakLevel: 0.52, listenedMs: 1000 });
  assert.deepEqual(heard, { status: 'pass', detail: 'The microphone “mic” works: sound was heard (peak level 52 %).', todo: '' });
  const quiet = microphoneVerdict({ label: 'mic', live: true, measured: true, peakLevel: MICROPHONE_SIGNAL_LEVEL - 0.001, listenedMs: 5000 });
  assert.equal(quiet.status, 'fail');
  assert.equal(quiet.detail, 'The microphone “mic” is on, but no sound reached it in 5 s.');
  assert.match(quiet.todo, /not muted/);
  assert.equal(microphoneVerdict({ label: 'mic', live: true, measured: true, peakLevel: MICROPHONE_SIGNAL_LEVEL, listenedMs: 1000 }).status, 'pass');
  assert.match(microphoneVerdict({ label: 'mic', live: true, measured: false, peakLevel: 0 }).todo, /Run the checks again/);
  assert.match(microphoneVerdict({ error: { name: 'NotAllowedError' } }).detail, /not allowed to use your microphone/);
});

test('the summary counts what is done, then problems, then skips', () => {
  const all = (status) => Object.fromEntries(CHECKS.map((c) => [c.id, { status }]));
  assert.equal(summarize({}), 'Checking… 0 of 8 done.');
  assert.equal(summarize({ websocket: { status: 'pass' } }), 'Checking… 1 of 8 done.');
  assert.equal(summarize(all('pass')), 'Everything works: calls should connect from this device and network.');
  assert.equal(summarize({ ...all('pass'), turnTls: { status: 'skip' } }), 'No problems found; one check was skipped: see below.');
  assert.equal(summarize({ ...all('pass'), turnTls: { status: 'skip' }, turnTcp: { status: 'fail' } }), 'One problem found: see what to do below.');
  assert.equal(summarize({ ...all('fail') }), '8 problems found: see what to do below.');
});

test('STUN per URL: a silent STUN server is not hidden behind one that answers; each URL’s result is said', () => {
  const OTHER = 'stun:stun.example.org:3478';
  const results = [
    { url: STUN, srflx: [], errors: [{ url: STUN, code: 701, text: 'STUN binding request timed out.' }], gatheringComplete: true, timedOut: false },
    { url: OTHER, srflx: ['203.0.113.9'], errors: [], gatheringComplete: false, timedOut: false },
  ];
  const mixed = stunVerdict(fetched, { urls: [STUN, OTHER], results });
  assert.equal(mixed.status, 'fail');
  assert.match(mixed.detail, /^1 of 2 STUN servers do not work: /);
  assert.ok(mixed.detail.includes(`${STUN} could not be reached: ${STUN} answered 701`), mixed.detail);
  assert.ok(mixed.detail.includes(`${OTHER} found your network’s public address, 203.0.113.9.`), mixed.detail);
  assert.match(mixed.todo, /Calls use the STUN servers that answer/);
  const silent = stunVerdict(fetched, { urls: [STUN, OTHER], results: [
    { url: STUN, srflx: [], errors: [], gatheringComplete: false, timedOut: true },
    { url: OTHER, srflx: [], errors: [], gatheringComplete: true, timedOut: false }] });
  assert.equal(silent.status, 'fail');
  assert.ok(silent.detail.includes(`No answer from ${STUN} within 8 s.`) && silent.detail.includes(`${OTHER} answered`), silent.detail);
  const both = stunVerdict(fetched, { urls: [STUN, OTHER], results: [
    { url: STUN, srflx: ['203.0.113.9'], errors: [], gatheringComplete: true },
    { url: OTHER, srflx: [], errors: [], gatheringComplete: true }] });
  assert.equal(both.status, 'pass');
  assert.match(both.detail, new RegExp(`^Your network’s public address is 203\\.0\\.113\\.9 \\(found through ${STUN}\\)\\. Each STUN server answered`));
  const none = stunVerdict(fetched, { urls: [STUN, OTHER], results: results.map((r) => ({ ...r, srflx: [], timedOut: true, errors: [] , gatheringComplete: false })) });
  assert.match(none.detail, /^No STUN server works: /);
  // One URL measured on its own reads as before.
  assert.deepEqual(stunVerdict(fetched, { urls: [STUN], results: [{ url: STUN, srflx: ['203.0.113.9'], errors: [], gatheringComplete: true }] }),
    { status: 'pass', detail: `Your network’s public address is 203.0.113.9 (found through ${STUN}).`, todo: '' });
});

test('a URL the browser refuses (new RTCPeerConnection threw) is said as such, not as no answer', () => {
  const BAD = 'stun:bad host:3478';
  const refusedError = { url: BAD, code: 0, text: "Failed to construct 'RTCPeerConnection': 'stun:bad host:3478' is not a valid URL.", refused: true };
  const stun = stunVerdict(fetched, { urls: [BAD], results: [{ url: BAD, srflx: [], errors: [refusedError], gatheringComplete: false, timedOut: false }] });
  assert.equal(stun.status, 'fail');
  assert.match(stun.detail, /^This browser refuses the STUN server address stun:bad host:3478 \(/);
  assert.ok(!/No answer/.test(stun.detail));
  assert.match(stun.todo, /Tell whoever runs this Duet server: stun:bad host:3478 is not a STUN URL browsers accept/);
  const BAD_TURN = 'turn:bad host:3478?transport=udp';
  const turn = turnVerdict('turnUdp', fetched, { urls: [BAD_TURN], relays: [], errors: [{ ...refusedError, url: BAD_TURN }], timedOut: false });
  assert.equal(turn.status, 'fail');
  assert.match(turn.detail, /^This browser refuses the TURN server address turn:bad host:3478\?transport=udp/);
  assert.match(turn.todo, /--turn-uri/);
  // Even when the URL is not known, a refusal is not "no answer".
  const unnamed = turnVerdict('turnUdp', fetched, { urls: [TURN_UDP], relays: [], errors: [{ ...refusedError, url: '' }], timedOut: false });
  assert.match(unnamed.detail, /^This browser refuses the TURN server address/);
});
