// Why a call does not connect: the facts a call collects (js/runtime/connectivity-facts.js) and the explanation
// made from them (js/ui/connectivity-advice.js). Both pure: time is an argument.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CANNOT_CONNECT_AFTER_MS, diagnose, listTransports } from '../../Sources/DuetWeb/Web/js/ui/connectivity-advice.js';
import {
  ConnectivityFacts, iceServersOf, iceUrlKey, isPublicAddress, parseCandidate, refusedIceServerUrl, relayProtocolOf, summarizeIceServers, turnTransport,
} from '../../Sources/DuetWeb/Web/js/runtime/connectivity-facts.js';

const STUN = { urls: ['stun:198.51.100.1:3478'] };
const turn = (...urls) => ({ urls, username: '1700003600:duet', credential: 'c2VjcmV0' });
const TURN_UDP = 'turn:198.51.100.1:3478?transport=udp';
const TURN_TCP = 'turn:198.51.100.1:3478?transport=tcp';
const TURNS = 'turns:198.51.100.1:5349?transport=tcp';
const host = { type: 'host', protocol: 'udp', relayProtocol: null };
const srflx = { type: 'srflx', protocol: 'udp', relayProtocol: null };
const relay = (relayProtocol) => ({ type: 'relay', protocol: 'udp', relayProtocol });

/** Facts of a call waiting `waitedMs` for media: direct addresses on both sides unless told otherwise. */
function facts({ waitedMs = CANNOT_CONNECT_AFTER_MS, servers = [STUN], status = 'fetched', local = [host, srflx], remote = [host, srflx],
  gatheringComplete = true, relayOnly = false, iceState = 'checking', failed = false } = {}) {
  return {
    nowMs: 100000 + waitedMs, waitingSinceMs: 100000, relayOnly, iceState, failed,
    iceServers: { status, list: servers }, local: { candidates: local, gatheringComplete }, remote: { candidates: remote },
  };
}

test('nothing to explain until media has been missing for CANNOT_CONNECT_AFTER_MS, not 1 ms before', () => {
  assert.equal(CANNOT_CONNECT_AFTER_MS, 10000);
  assert.equal(diagnose(facts({ waitedMs: CANNOT_CONNECT_AFTER_MS - 1 })), null);
  assert.equal(diagnose(facts({ waitedMs: CANNOT_CONNECT_AFTER_MS })).code, 'direct-pending-no-relay');
  assert.equal(diagnose(facts({ waitedMs: CANNOT_CONNECT_AFTER_MS, failed: true })).code, 'direct-failed-no-relay');
  assert.equal(diagnose({ ...facts(), waitingSinceMs: null }), null, 'not waiting (connected, or not both in the call)');
  assert.equal(diagnose(facts({ iceState: 'connected' })), null);
  assert.equal(diagnose(facts({ iceState: 'completed' })), null);
  assert.equal(diagnose(null), null);
});

test('no TURN configured and the direct path failed: direct-failed-no-relay, with what STUN found and what to do', () => {
  const problem = diagnose(facts({ failed: true }));
  assert.equal(problem.code, 'direct-failed-no-relay');
  assert.equal(problem.message, 'No relay server is configured, and a direct connection between your networks failed.');
  assert.deepEqual(problem.tried, [
    'A direct connection, using your device’s own addresses and your network’s public address (found through the STUN server).',
    'A relay server: none is configured on this Duet server.',
    'The other person’s browser offered its device’s own address and its network’s public address.',
    'The connection checks between the two browsers failed. Duet keeps trying.',
  ]);
  assert.match(problem.missing, /relay \(TURN\) server/);
  assert.ok(problem.todo.some((t) => /another network/.test(t)), 'the user can try another network');
  assert.ok(problem.todo.some((t) => /--turn-secret/.test(t) && /--turn-uri/.test(t)), 'the admin is told how to add TURN');
});

test('what STUN did is said as it was: not configured, no answer yet, or no address beyond the device’s own', () => {
  const none = diagnose(facts({ servers: [], status: 'none', local: [host], failed: true }));
  assert.equal(none.code, 'direct-failed-no-relay');
  assert.match(none.tried[0], /No STUN server is configured, so your network’s public address was not looked up\./);
  const silent = diagnose(facts({ local: [host], gatheringComplete: false }));
  assert.match(silent.tried[0], /The STUN server did not answer, so your network’s public address is unknown\./);
  const same = diagnose(facts({ local: [host], gatheringComplete: true }));
  assert.match(same.tried[0], /the STUN server saw no public address other than your device’s own/);
  assert.match(diagnose(facts()).tried.at(-1), /have not succeeded/, 'checking, not failed: says so');
});

test('TURN configured but no relay candidate gathered: relay-unreachable, naming the transports, suggesting TLS on 443 when missing', () => {
  const problem = diagnose(facts({ servers: [STUN, turn(TURN_UDP, TURN_TCP)], iceState: 'failed' }));
  assert.equal(problem.code, 'relay-unreachable');
  assert.equal(problem.message, 'Your browser could not reach the relay server (TURN over UDP and TCP), and a direct connection between your networks failed.');
  assert.ok(problem.tried.includes('A relay server (TURN over UDP and TCP): your browser could not reach it.'));
  assert.ok(problem.todo.some((t) => /TLS on port 443/.test(t)));
  const withTls = diagnose(facts({ servers: [STUN, turn(TURN_UDP, TURNS)] }));
  assert.equal(withTls.code, 'relay-unreachable');
  assert.match(withTls.message, /TURN over UDP and TLS/);
  assert.ok(!withTls.todo.some((t) => /TLS on port 443/.test(t)), 'TLS is already offered: not suggested again');
});

test('relay-only: no TURN is relay-only-no-relay; an unreachable relay says the call uses the relay only', () => {
  const none = diagnose(facts({ relayOnly: true, local: [], servers: [STUN] }));
  assert.equal(none.code, 'relay-only-no-relay');
  assert.ok(none.todo.some((t) => /without \?relay=1/.test(t)));
  const unreachable = diagnose(facts({ relayOnly: true, local: [], servers: [turn(TURN_UDP)] }));
  assert.equal(unreachable.code, 'relay-unreachable', 'no local candidate at all is expected relay-only: the relay is what is missing');
  assert.equal(unreachable.message, 'This call goes through a relay server only, and your browser could not reach it (TURN over UDP).');
  assert.ok(!unreachable.tried.some((t) => /direct connection/.test(t)), 'no direct connection was tried');
});

test('this side reached the relay, the other did not: peer-relay-unreachable; both did: relay-failed', () => {
  const servers = [STUN, turn(TURN_UDP, TURN_TCP)];
  const theirs = diagnose(facts({ servers, local: [host, srflx, relay('tcp')] }));
  assert.equal(theirs.code, 'peer-relay-unreachable');
  assert.ok(theirs.tried.includes('A relay server (TURN over UDP and TCP): reached over TCP.'));
  assert.ok(theirs.todo.some((t) => /\/check/.test(t)), 'the other person is pointed to the check page');
  const both = diagnose(facts({ servers, local: [host, relay('udp'), relay(null)], remote: [host, relay(null)] }));
  assert.equal(both.code, 'relay-failed');
  assert.ok(both.tried.includes('A relay server (TURN over UDP and TCP): reached over UDP.'));
  assert.ok(both.tried.some((t) => /offered its device’s own address and a relay address/.test(t)));
});

test('no address on one side is said before anything about relays; a failed server list before everything', () => {
  assert.equal(diagnose(facts({ local: [] })).code, 'no-local-addresses');
  assert.equal(diagnose(facts({ remote: [] })).code, 'no-remote-addresses');
  assert.equal(diagnose(facts({ remote: [], servers: [turn(TURN_UDP)] })).code, 'no-remote-addresses');
  const failed = diagnose(facts({ status: 'failed', servers: [] }));
  assert.equal(failed.code, 'ice-servers-unavailable');
  assert.match(failed.message, /could not get the list of connection servers/);
  // 503: the server has no STUN and no TURN, so there is no relay either.
  assert.equal(diagnose(facts({ status: 'none', servers: [], iceState: 'disconnected' })).code, 'direct-failed-no-relay');
});

test('candidate lines, TURN URLs and relay protocols are read as the browser writes them', () => {
  assert.deepEqual(parseCandidate('candidate:842163049 1 udp 1677729535 203.0.113.7 46154 typ srflx raddr 10.0.0.2 rport 46154 generation 0 ufrag EEtu network-id 3'),
    { protocol: 'udp', priority: 1677729535, address: '203.0.113.7', port: 46154, type: 'srflx', ufrag: 'EEtu' });
  assert.equal(parseCandidate('a=candidate:1 1 TCP 1518280447 10.0.0.1 9 typ host tcptype active').protocol, 'tcp');
  assert.equal(parseCandidate('a=candidate:1 1 udp 1 10.0.0.1 9 typ relay raddr 0.0.0.0 rport 0').ufrag, null);
  for (const junk of [null, '', 'candidate:1 1 udp', 'hello 1 udp 1 10.0.0.1 9 typ host', 'candidate:1 1 udp 1 10.0.0.1 9 type host']) {
    assert.equal(parseCandidate(junk), null, String(junk));
  }
  assert.equal(turnTransport(TURN_UDP), 'udp');
  assert.equal(turnTransport(TURN_TCP), 'tcp');
  assert.equal(turnTransport('TURN:h:3478?Transport=TCP'), 'tcp');
  assert.equal(turnTransport('turn:h:3478'), 'udp');
  assert.equal(turnTransport(TURNS), 'tls');
  assert.equal(turnTransport('turns:h:443'), 'tls');
  assert.equal(turnTransport('stun:h:3478'), null);
  assert.equal(turnTransport('turn:h:3478?transport=sctp'), null, 'a transport the browser refuses');
  assert.equal(turnTransport('turns:h:5349?transport=udp'), null, 'TLS runs over TCP only');
  assert.deepEqual(summarizeIceServers([STUN, { urls: 'stun:h2' }, turn(TURN_UDP, TURN_TCP), turn(TURNS), null, { urls: [42] }]), {
    stun: ['stun:198.51.100.1:3478', 'stun:h2'], turn: { udp: [TURN_UDP], tcp: [TURN_TCP], tls: [TURNS] },
  });
  assert.deepEqual(summarizeIceServers(undefined), { stun: [], turn: { udp: [], tcp: [], tls: [] } });
  // Chromium 156: relayProtocol 'tcp'/'tls' but null for UDP relays; the URL tells then.
  assert.equal(relayProtocolOf({ relayProtocol: 'tls', url: TURN_UDP }), 'tls');
  assert.equal(relayProtocolOf({ relayProtocol: null, url: TURN_UDP }), 'udp');
  assert.equal(relayProtocolOf({ relayProtocol: null, url: '' }), null);
  assert.equal(listTransports(['udp', 'tcp', 'tls']), 'UDP, TCP and TLS');
  assert.equal(listTransports(['tcp']), 'TCP');
});

// MARK: the facts a call collects

const ufragOffer = (ufrag, candidates = []) => ({ type: 'message', envelope: { type: 'offer', payload: {
  sdp: `v=0\r\na=ice-ufrag:${ufrag}\r\na=ice-pwd:x\r\n${candidates.map((c) => `a=${c}\r\n`).join('')}` } } });
// null: end-of-candidates, as the wire writes it ({candidate: null}).
const iceMessage = (candidate) => ({ type: 'message', envelope: { type: 'ice', payload: { candidate: candidate === null ? null : { candidate, sdpMid: '0' } } } });
const HOST_LINE = (ufrag) => `candidate:1 1 udp 2122260223 10.0.0.2 5000 typ host generation 0 ufrag ${ufrag}`;
const SRFLX_LINE = 'candidate:2 1 udp 1686052607 203.0.113.9 6000 typ srflx raddr 10.0.0.3 rport 6000';
const RELAY_LINE = (ufrag) => `candidate:3 1 udp 41885439 198.51.100.1 7000 typ relay raddr 0.0.0.0 rport 0 generation 0 ufrag ${ufrag}`;

/** A call where both people are in and signaling is up, at time `t`. */
function inCall(t = 1000, options = {}) {
  const collected = new ConnectivityFacts(options);
  collected.newPeerConnection(t);
  collected.event({ type: 'transport', transport: 'ws' }, t);
  collected.event({ type: 'phase', phase: 'inCall' }, t);
  collected.event({ type: 'participants', myCid: 'C-me', participants: [{ cid: 'C-me', connectionStatus: 'connected' }, { cid: 'C-you', connectionStatus: 'connected' }] }, t);
  return collected;
}

test('the wait starts when both are in the call with signaling up, and ends when media connects', () => {
  const collected = inCall(1000);
  assert.equal(collected.waitingSinceMs, 1000);
  collected.input({ type: 'iceStateChanged', state: 'checking' }, 3000);
  assert.equal(collected.waitingSinceMs, 1000, 'checking is still waiting');
  collected.input({ type: 'iceStateChanged', state: 'connected' }, 4000);
  assert.equal(collected.waitingSinceMs, null);
  collected.input({ type: 'iceStateChanged', state: 'disconnected' }, 9000);
  assert.equal(collected.waitingSinceMs, 9000, 'a lost connection starts a new wait');
  collected.input({ type: 'iceStateChanged', state: 'failed' }, 12000);
  assert.equal(collected.snapshot(20000).failed, true);
  collected.input({ type: 'iceStateChanged', state: 'completed' }, 21000);
  assert.deepEqual([collected.waitingSinceMs, collected.failed], [null, false]);
});

test('no wait is counted while signaling is down, alone in the room, or while the other person is suspended', () => {
  const collected = inCall(1000);
  collected.event({ type: 'transport', transport: null }, 2000);
  assert.equal(collected.waitingSinceMs, null, 'signaling down: the badge speaks, not this');
  collected.event({ type: 'transport', transport: 'sse' }, 3000);
  assert.equal(collected.waitingSinceMs, 3000, 'counted afresh from when signaling is back');
  collected.event({ type: 'participants', myCid: 'C-me', participants: [{ cid: 'C-me', connectionStatus: 'connected' }, { cid: 'C-you', connectionStatus: 'suspended' }] }, 4000);
  assert.equal(collected.waitingSinceMs, null, 'their trouble, not a connectivity problem');
  collected.event({ type: 'participants', myCid: 'C-me', participants: [{ cid: 'C-me', connectionStatus: 'connected' }] }, 5000);
  assert.equal(collected.waitingSinceMs, null, 'alone');
  collected.event({ type: 'phase', phase: 'waiting' }, 6000);
  assert.equal(collected.waitingSinceMs, null);
});

test('candidates: after an ICE restart (a new ufrag, ours or theirs) the generation before counts until the new one is complete', () => {
  const collected = inCall();
  collected.localCandidate({ candidate: HOST_LINE('aaaa'), usernameFragment: 'aaaa' });
  collected.localCandidate({ candidate: RELAY_LINE('aaaa'), usernameFragment: 'aaaa', relayProtocol: null, url: TURN_TCP });
  collected.input({ type: 'gatheringComplete' }, 1500);
  assert.deepEqual(collected.snapshot(2000).local, { gatheringComplete: true, errors: [], candidates: [
    { type: 'host', protocol: 'udp', address: '10.0.0.2', relayProtocol: null },
    { type: 'relay', protocol: 'udp', address: '198.51.100.1', relayProtocol: 'tcp' }] });
  // Our ICE restart: the new gathering's first candidate does not yet hide the relay found before.
  collected.localCandidate({ candidate: HOST_LINE('bbbb') });  // the ufrag read from the line itself
  assert.deepEqual(collected.snapshot(2000).local.candidates.map((c) => c.type), ['host', 'relay', 'host']);
  assert.equal(collected.snapshot(2000).local.gatheringComplete, true, 'a gathering of this connection completed');
  collected.input({ type: 'gatheringComplete' }, 2500);
  assert.deepEqual(collected.snapshot(3000).local.candidates.map((c) => c.type), ['host'], 'complete: the new one alone (the relay is gone)');
  collected.localCandidate({ candidate: 'garbage' });
  assert.equal(collected.snapshot(3000).local.candidates.length, 1);

  collected.input(ufragOffer('r1', [SRFLX_LINE]), 3000);
  collected.input(iceMessage(RELAY_LINE('r1')), 3000);
  assert.deepEqual(collected.snapshot(3000).remote.candidates.map((c) => c.type), ['srflx', 'relay'], 'in the SDP and trickled');
  collected.input(ufragOffer('r1'), 3000);
  assert.equal(collected.snapshot(3000).remote.candidates.length, 2, 'same ufrag: same generation');
  collected.input(ufragOffer('r2'), 3000);
  assert.deepEqual(collected.snapshot(3000).remote.candidates.map((c) => c.type), ['srflx', 'relay'], 'their restart: the old ones until they end');
  collected.input(iceMessage(HOST_LINE('r2')), 3000);
  collected.input(iceMessage(null), 3000);
  assert.deepEqual(collected.snapshot(3000).remote.candidates.map((c) => c.type), ['host'], 'their end-of-candidates: the new ones alone');
  collected.newPeerConnection(4000);
  assert.deepEqual([collected.snapshot(4000).local, collected.snapshot(4000).remote],
    [{ candidates: [], gatheringComplete: false, errors: [] }, { candidates: [] }], 'a new peer connection starts from nothing');
});

test('the ICE server list: fetched, none (503), or failed — a later failure keeps what is known', () => {
  const fetched = new ConnectivityFacts();
  assert.equal(fetched.snapshot(0).iceServers.status, 'pending');
  fetched.iceServersFetched([STUN]);
  fetched.iceServersFailed();
  assert.deepEqual(fetched.snapshot(0).iceServers, { status: 'fetched', list: [STUN] });
  const none = new ConnectivityFacts();
  none.iceServersNone();
  none.iceServersFailed();
  assert.equal(none.snapshot(0).iceServers.status, 'none');
  const failed = new ConnectivityFacts();
  failed.iceServersFailed();
  assert.equal(failed.snapshot(0).iceServers.status, 'failed');
});

test('a whole call from the facts it collected: explained after the wait, gone when media connects', () => {
  const collected = inCall(1000);
  collected.iceServersFetched([STUN]);
  collected.localCandidate({ candidate: HOST_LINE('aaaa') });
  collected.input(ufragOffer('r1'), 1100);
  collected.input(iceMessage(HOST_LINE('r1')), 1200);
  collected.input({ type: 'iceStateChanged', state: 'checking' }, 1200);
  assert.equal(diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS - 1)), null);
  const problem = diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS));
  assert.equal(problem.code, 'direct-pending-no-relay', 'ICE still checking: not said to have failed');
  assert.equal(problem.message, 'No relay server is configured, and a direct connection between your networks has not connected after 10 s.');
  assert.match(problem.tried[0], /STUN server did not answer/, 'gathering never completed');
  collected.input({ type: 'iceStateChanged', state: 'failed' }, 12000);
  const failed = diagnose(collected.snapshot(12000));
  assert.equal(failed.code, 'direct-failed-no-relay');
  assert.equal(failed.message, 'No relay server is configured, and a direct connection between your networks failed.');
  collected.input({ type: 'iceStateChanged', state: 'connected' }, 30000);
  assert.equal(diagnose(collected.snapshot(30001)), null);
  const relayOnly = inCall(1000, { relayOnly: true });
  relayOnly.iceServersFetched([turn(TURN_UDP)]);
  relayOnly.input(iceMessage(RELAY_LINE('r1')), 1000);
  assert.equal(diagnose(relayOnly.snapshot(1000 + CANNOT_CONNECT_AFTER_MS)).code, 'relay-unreachable');
});

test('ICE still checking: nothing is said to have failed, only that it has not connected after N s', () => {
  const checking = diagnose(facts({ waitedMs: 14000, servers: [STUN, turn(TURN_UDP)] }));
  assert.equal(checking.code, 'relay-unreachable');
  assert.equal(checking.message, 'Your browser could not reach the relay server (TURN over UDP), and a direct connection between your networks has not connected after 14 s.');
  assert.ok(!checking.tried.some((t) => /failed/.test(t)), checking.tried.join('\n'));
  const failed = diagnose(facts({ waitedMs: 14000, servers: [STUN, turn(TURN_UDP)], iceState: 'failed' }));
  assert.match(failed.message, /a direct connection between your networks failed\.$/);
  assert.match(failed.tried.at(-1), /failed\. Duet keeps trying/);
});

test('relay-only with no relay candidate on this side is this side’s relay problem, even when the other side sent nothing', () => {
  const problem = diagnose(facts({ relayOnly: true, local: [], remote: [], servers: [turn(TURN_UDP)] }));
  assert.equal(problem.code, 'relay-unreachable');
  assert.equal(problem.message, 'This call goes through a relay server only, and your browser could not reach it (TURN over UDP).');
  // With a relay here, nothing from them is theirs.
  assert.equal(diagnose(facts({ relayOnly: true, local: [relay('udp')], remote: [], servers: [turn(TURN_UDP)] })).code, 'no-remote-addresses');
});

test('STUN that timed out (icecandidateerror 701) is not taken for "no NAT", even though gathering completed', () => {
  const stunUrl = STUN.urls[0];
  const timedOut = diagnose({ ...facts({ local: [host] }),
    local: { candidates: [host], gatheringComplete: true, errors: [{ url: stunUrl, code: 701, text: 'STUN binding request timed out.' }] } });
  assert.match(timedOut.tried[0], /The STUN server did not answer, so your network’s public address is unknown\./);
  assert.ok(!/no public address other than/.test(timedOut.tried[0]));
  // The URL as the browser reports it may name the default port the configuration left out.
  const noPort = { ...facts({ local: [host], servers: [{ urls: 'stun:stun.example.org' }] }) };
  noPort.local = { candidates: [host], gatheringComplete: true, errors: [{ url: 'stun:stun.example.org:3478', code: 701, text: '' }] };
  assert.match(diagnose(noPort).tried[0], /STUN server did not answer/);
  // An error from the TURN server says nothing about STUN.
  const turnError = { ...facts({ local: [host], servers: [STUN, turn(TURN_UDP)], iceState: 'failed' }) };
  turnError.local = { candidates: [host], gatheringComplete: true, errors: [{ url: TURN_UDP, code: 701, text: '' }] };
  assert.match(diagnose(turnError).tried[0], /the STUN server saw no public address other than your device’s own/);
  // One of two STUN servers answered: that is an answer.
  const two = { ...facts({ local: [host], servers: [STUN, { urls: 'stun:198.51.100.2:3478' }] }) };
  two.local = { candidates: [host], gatheringComplete: true, errors: [{ url: 'stun:198.51.100.2:3478', code: 701, text: '' }] };
  assert.match(diagnose(two).tried[0], /saw no public address other than/);
  // A public host address: no NAT indeed, whatever STUN did.
  const publicHost = { ...facts() };
  publicHost.local = { candidates: [{ ...host, address: '203.0.113.50' }], gatheringComplete: true, errors: [{ url: stunUrl, code: 701, text: '' }] };
  assert.match(diagnose(publicHost).tried[0], /include a public address \(203\.0\.113\.50\)\. The STUN server did not answer\./);
});

test('icecandidateerror events are collected per gathering, and reach the explanation', () => {
  const collected = inCall(1000);
  collected.iceServersFetched([STUN]);
  collected.localCandidateError({ url: STUN.urls[0], errorCode: 701, errorText: 'STUN binding request timed out.' });
  collected.localCandidate({ candidate: HOST_LINE('aaaa') });
  collected.localCandidateError({ url: STUN.urls[0], errorCode: 701, errorText: 'again' });
  collected.input({ type: 'gatheringComplete' }, 1500);
  collected.input(ufragOffer('r1'), 1100);
  collected.input(iceMessage(HOST_LINE('r1')), 1200);
  assert.deepEqual(collected.snapshot(2000).local.errors.map((e) => [e.url, e.code]), [[STUN.urls[0], 701], [STUN.urls[0], 701]],
    'an error before the first candidate belongs to the same gathering');
  const problem = diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS));
  assert.match(problem.tried[0], /The STUN server did not answer/);
  // An ICE restart whose gathering completes without errors: STUN answered this time.
  collected.localCandidate({ candidate: HOST_LINE('bbbb') });
  collected.input({ type: 'gatheringComplete' }, 3000);
  assert.deepEqual(collected.snapshot(3000).local.errors, []);
  assert.match(diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS)).tried[0], /saw no public address other than/);
  collected.newPeerConnection(20000);
  assert.deepEqual(collected.snapshot(20000).local.errors, []);
});

test('a browser that refuses the ICE servers (new RTCPeerConnection threw): ice-servers-rejected, naming the URL', () => {
  const collected = inCall(1000);
  const list = [STUN, turn('turn:bad host:3478')];
  collected.iceServersFetched(list);
  collected.newPeerConnection(1000);
  collected.iceServersRefused(list, new SyntaxError("Failed to construct 'RTCPeerConnection': 'turn:bad host:3478' is not a valid URL."));
  collected.input(ufragOffer('r1'), 1100);
  collected.input(iceMessage(HOST_LINE('r1')), 1200);
  const problem = diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS));
  assert.equal(problem.code, 'ice-servers-rejected');
  assert.match(problem.message, /hands out a connection server address your browser refuses: turn:bad host:3478\./);
  assert.ok(problem.todo.some((t) => /Tell whoever runs this Duet server/.test(t) && t.includes('turn:bad host:3478')));
  assert.ok(!/did not offer any network address/.test(problem.message));
  // A message that names no URL: the first malformed one.
  assert.equal(refusedIceServerUrl([STUN, { urls: ['turn:ok:3478', 'turn:x:99999999?transport=sctp'] }], new Error('invalid')), 'turn:x:99999999?transport=sctp');
  assert.equal(refusedIceServerUrl([{ urls: 'htp://nope' }], null), 'htp://nope');
  assert.equal(refusedIceServerUrl([STUN], new Error('something else')), '');
  // Accepted again (a later configuration, or a new peer connection): the problem is gone.
  collected.iceServersAccepted();
  assert.notEqual(diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS)).code, 'ice-servers-rejected');
  collected.iceServersRefused(list, new Error('x'));
  collected.newPeerConnection(13000);
  assert.equal(collected.snapshot(13000).refused, null);
});

test('public addresses, and ICE URLs compared as the browser reports them', () => {
  for (const a of ['203.0.113.5', '8.8.8.8', '2a00:1450::1', '[2a00:1450::1]']) assert.equal(isPublicAddress(a), true, a);
  for (const a of ['10.0.0.1', '172.16.0.1', '172.31.255.1', '192.168.1.1', '127.0.0.1', '169.254.1.1', '100.64.0.1',
    'fe80::1', 'fd00::1', '::1', 'abcd-1234.local', '', undefined]) assert.equal(isPublicAddress(a), false, String(a));
  assert.equal(iceUrlKey('STUN:Example.org'), 'stun:example.org:3478');
  assert.equal(iceUrlKey('stun:example.org:3478'), 'stun:example.org:3478');
  assert.equal(iceUrlKey('turns:example.org?transport=tcp'), 'turns:example.org:5349');
  assert.equal(iceUrlKey('stun:[2001:db8::1]:3479'), 'stun:[2001:db8::1]:3479');
});

test('an older server’s TURN answer ({uris, username, password}) still gives ICE servers', () => {
  assert.deepEqual(iceServersOf({ iceServers: [STUN], ttl: 60 }), [STUN]);
  assert.deepEqual(iceServersOf({ uris: [TURN_UDP, TURN_TCP], username: 'u', password: 'p', ttl: 60 }),
    [{ urls: [TURN_UDP, TURN_TCP], username: 'u', credential: 'p' }]);
  assert.equal(iceServersOf({ uris: [], username: 'u', password: 'p' }), null);
  assert.equal(iceServersOf({ ttl: 60 }), null);
  assert.equal(iceServersOf(null), null);
});

test('an ICE attempt the engine gave up on (restarted by its escalation) counts as failed; a network change does not', () => {
  const collected = inCall(1000);
  collected.iceServersFetched([STUN]);
  collected.localCandidate({ candidate: HOST_LINE('aaaa') });
  collected.input(ufragOffer('r1'), 1100);
  collected.input(iceMessage(HOST_LINE('r1')), 1200);
  collected.input({ type: 'iceStateChanged', state: 'checking' }, 1200);
  collected.event({ type: 'iceRestart', reason: 'networkChange' }, 5000);
  assert.equal(diagnose(collected.snapshot(1000 + CANNOT_CONNECT_AFTER_MS)).code, 'direct-pending-no-relay');
  collected.event({ type: 'iceRestart', reason: 'escalation' }, 21000);
  collected.input({ type: 'iceStateChanged', state: 'checking' }, 21100);
  const problem = diagnose(collected.snapshot(22000));
  assert.equal(problem.code, 'direct-failed-no-relay');
  assert.equal(problem.message, 'No relay server is configured, and a direct connection between your networks failed.');
  collected.input({ type: 'iceStateChanged', state: 'connected' }, 23000);
  assert.equal(collected.failed, false, 'connected: a new wait starts afresh');
});
