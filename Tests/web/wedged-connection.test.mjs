// Mirrors WedgedConnectionTests.swift (issue 32 point 3): a peer connection that refuses a remote description or a
// rollback is replaced, and the new one offers afresh; a second wedge within the replacement's cooldown waits for its
// end with nothing negotiated on the wedged connection; results and refusals of the replaced connection are its own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { NegotiationMachine } from '../../Sources/DuetWeb/Web/js/machines/negotiation-machine.js';
import { Driven, canc } from './support/driven.mjs';

const described = (name, session, version) => `v=0\r\no=- ${session} ${version} IN IP4 127.0.0.1\r\ns=-\r\na=ice-ufrag:${name}\r\n`;
const REPLACED = [
  { type: 'renewPeerConnection' }, canc('offerTimeout'), canc('iceRestartDelay'),
  { type: 'timer', command: { type: 'schedule', timer: 'iceRestartCooldown', afterMs: RESILIENCE.ICE_RESTART_COOLDOWN_MS } },
  { type: 'iceRestartStarted', reason: 'peerConnectionWedged' }, { type: 'createOffer', iceRestart: false },
];
const applies = (actions, kind, sdp) => actions.some((a) => a.type === 'setRemoteDescription' && a.kind === kind && a.sdp === sdp);

function guestSide(options = {}) {
  const driven = new Driven(new NegotiationMachine(options));
  driven.send({ type: 'peer', present: true, isHost: false, peerEpoch: 1 });
  return driven;
}

/** The replacement's fresh offer (session `ours`) goes out, and the peer's renewed connection (`theirs`) answers it. */
function assertFreshOfferAnswered(side, ours, theirs) {
  side.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', ours, 2) });
  const answer = described('r1', theirs, 2);
  assert.ok(applies(side.send({ type: 'remoteDescription', kind: 'answer', sdp: answer, epoch: 1 }), 'answer', answer));
}

/** A host in a call with the guest's connection "G1", which has just restarted ICE (in the restart's cooldown) and got an answer back. */
function hostAnsweredAfterRestart() {
  const host = new Driven(new NegotiationMachine());
  host.send({ type: 'peer', present: true, isHost: true, peerEpoch: 1 });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('h1', 'H', 2) });
  host.send({ type: 'remoteDescription', kind: 'answer', sdp: described('g1', 'G1', 2), epoch: 1 });
  host.send({ type: 'remoteDescriptionApplied', kind: 'answer' });
  host.send({ type: 'iceStateChanged', state: 'connected' });
  host.send({ type: 'networkOnline' });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('h2', 'H', 3) });
  host.send({ type: 'remoteDescription', kind: 'answer', sdp: described('g2', 'G1', 3), epoch: 1 });
  return host;
}

test('a refused answer (Chromium refusing a DTLS role flipped by Firefox) replaces the connection at once, even in the restart\'s cooldown, and the new one offers afresh', () => {
  const host = hostAnsweredAfterRestart();
  assert.deepEqual(host.send({ type: 'remoteDescriptionFailed', kind: 'answer' }), REPLACED);
  assert.deepEqual(host.send({ type: 'remoteDescription', kind: 'offer', sdp: described('g3', 'G1', 4), epoch: 1 }), [], 'the peer\'s old connection is retired');
  assertFreshOfferAnswered(host, 'H2', 'G2');
});

test('a refused remote offer replaces the connection too: a peer connection that took an offer of ours renews for the new session, and what its old one sends is stale', () => {
  const guest = guestSide();
  guest.advance(RESILIENCE.NON_HOST_FALLBACK_DELAY_MS);
  guest.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('g1', 'G', 2) });
  guest.send({ type: 'remoteDescription', kind: 'answer', sdp: described('h1', 'H', 2), epoch: 1 });
  guest.send({ type: 'remoteDescriptionApplied', kind: 'answer' });
  guest.send({ type: 'remoteDescription', kind: 'offer', sdp: described('h2', 'H', 3), epoch: 1 });
  assert.deepEqual(guest.send({ type: 'remoteDescriptionFailed', kind: 'offer' }), REPLACED);
  assert.deepEqual(guest.send({ type: 'remoteDescription', kind: 'offer', sdp: described('h3', 'H', 4), epoch: 1 }), [],
    'the host\'s old connection, which renews for our new session');
  assertFreshOfferAnswered(guest, 'G2', 'H2');
});

test('the first offer of a peer connection refused: it never took one of ours, so it will not renew — its next offer is taken by the new connection', () => {
  const guest = guestSide();
  guest.send({ type: 'remoteDescription', kind: 'offer', sdp: described('h1', 'H', 2), epoch: 1 });
  assert.deepEqual(guest.send({ type: 'remoteDescriptionFailed', kind: 'offer' }), REPLACED);
  guest.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', 'G2', 2) });
  const restart = described('h2', 'H', 3);
  assert.ok(applies(guest.send({ type: 'remoteDescription', kind: 'offer', sdp: restart, epoch: 1 }), 'offer', restart));
});

test('the peer connection left behind (it took no offer of ours) is retired once the peer answers ours from another: a late copy of the offer that wedged us is then stale (issue 51, duet call seed 2268)', () => {
  const wedging = described('h1', 'H', 2);
  const guest = guestSide();
  guest.send({ type: 'remoteDescription', kind: 'offer', sdp: wedging, epoch: 1 });
  assert.deepEqual(guest.send({ type: 'remoteDescriptionFailed', kind: 'offer' }), REPLACED);
  // The peer renewed all the same, and its new connection answers our fresh offer.
  assertFreshOfferAnswered(guest, 'G2', 'H2');
  guest.send({ type: 'remoteDescriptionApplied', kind: 'answer' });
  assert.deepEqual(guest.send({ type: 'remoteDescription', kind: 'offer', sdp: wedging, epoch: 1 }), [],
    'a copy of the offer that wedged us, from the connection the peer left');
  assert.deepEqual(guest.send({ type: 'remoteDescription', kind: 'offer', sdp: described('h2', 'H', 3), epoch: 1 }), []);
  const restart = described('h3', 'H2', 3);
  assert.ok(applies(guest.send({ type: 'remoteDescription', kind: 'offer', sdp: restart, epoch: 1 }), 'offer', restart), 'the new one\'s restart is taken');

  // The same connection of the peer's answering our fresh offer: it goes on, and is not retired.
  const same = guestSide();
  same.send({ type: 'remoteDescription', kind: 'offer', sdp: wedging, epoch: 1 });
  same.send({ type: 'remoteDescriptionFailed', kind: 'offer' });
  same.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', 'G2', 2) });
  const answer = described('r1', 'H', 3);
  assert.ok(applies(same.send({ type: 'remoteDescription', kind: 'answer', sdp: answer, epoch: 1 }), 'answer', answer));
  same.send({ type: 'remoteDescriptionApplied', kind: 'answer' });
  const again = described('h4', 'H', 4);
  assert.ok(applies(same.send({ type: 'remoteDescription', kind: 'offer', sdp: again, epoch: 1 }), 'offer', again));
});

test('a webrtcbin guest (restarts only as host) replaces a wedged connection and offers afresh', () => {
  const guest = guestSide({ restartsOnlyAsHost: true });
  guest.send({ type: 'remoteDescription', kind: 'offer', sdp: described('h1', 'H', 2), epoch: 1 });
  assert.deepEqual(guest.send({ type: 'remoteDescriptionFailed', kind: 'offer' }), REPLACED);
});

test('a failed rollback replaces the connection; a failed rollback of the connection just replaced does not replace the new one', () => {
  const host = hostAnsweredAfterRestart();
  host.send({ type: 'remoteDescriptionApplied', kind: 'answer' });
  host.advance(RESILIENCE.ICE_RESTART_COOLDOWN_MS);
  host.send({ type: 'requestIceRestart' });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('h3', 'H', 4) });
  const timedOut = host.advance(RESILIENCE.OFFER_TIMEOUT_MS);
  assert.ok(timedOut.some((a) => a.type === 'rollback'));
  assert.deepEqual(host.send({ type: 'rollbackFailed' }), REPLACED);
  assert.deepEqual(host.send({ type: 'localDescriptionFailed' }), []);
  assert.deepEqual(host.send({ type: 'rollbackFailed' }), [], 'the replaced connection\'s rollback');
  assert.equal(host.machine.renewalPending, false);
});

test('a second wedge within the replacement\'s cooldown waits for its end; nothing is negotiated on the wedged connection meanwhile', () => {
  const host = hostAnsweredAfterRestart();
  host.send({ type: 'remoteDescriptionFailed', kind: 'answer' });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', 'H2', 2) });
  host.send({ type: 'remoteDescription', kind: 'answer', sdp: described('r1', 'G2', 2), epoch: 1 });
  assert.deepEqual(host.send({ type: 'remoteDescriptionFailed', kind: 'answer' }), [], 'within the replacement\'s cooldown');
  assert.equal(host.machine.renewalPending, true);
  assert.deepEqual(host.send({ type: 'requestIceRestart' }), [], 'no restart on a wedged connection');
  assert.deepEqual(host.send({ type: 'requestOfferResend' }), [], 'no offer resent from a wedged connection');
  assert.deepEqual(host.send({ type: 'remoteDescription', kind: 'offer', sdp: described('r2', 'G2', 3), epoch: 1 }), [],
    'no description handed to a wedged connection');
  assert.deepEqual(host.advance(RESILIENCE.ICE_RESTART_COOLDOWN_MS - 1), []);
  assert.deepEqual(host.advance(1), REPLACED);
});

test('the peer leaving with a replacement waiting: replaced now, no rollback asked of it, no offer to nobody', () => {
  const host = hostAnsweredAfterRestart();
  host.send({ type: 'remoteDescriptionFailed', kind: 'answer' });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', 'H2', 2) });
  host.send({ type: 'remoteDescription', kind: 'answer', sdp: described('r1', 'G2', 2), epoch: 1 });
  host.send({ type: 'remoteDescriptionFailed', kind: 'answer' });
  const left = host.send({ type: 'peer', present: false, isHost: true, peerEpoch: 1 });
  assert.deepEqual(left[0], { type: 'renewPeerConnection' });
  assert.ok(!left.some((a) => a.type === 'rollback' || a.type === 'createOffer'));
  assert.equal(host.machine.renewalPending, false);
});

test('an offer of the replacement that times out while another wedge waits: replaced at once, not restarted on the wedged one', () => {
  const host = hostAnsweredAfterRestart();
  host.send({ type: 'remoteDescriptionFailed', kind: 'answer' });
  host.send({ type: 'localDescriptionReady', kind: 'offer', sdp: described('n1', 'H2', 2) });
  host.send({ type: 'rollbackFailed' });
  assert.equal(host.machine.renewalPending, true);
  assert.deepEqual(host.advance(RESILIENCE.OFFER_TIMEOUT_MS), [canc('iceRestartCooldown'), ...REPLACED]);
});
