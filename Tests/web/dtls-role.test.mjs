// The DTLS role an established connection keeps across its offers (runtime/dtls-role.js, issue 51 point 3), and the
// offer PeerConnection sends with it (only with keepsDtlsRole: off by default, docs/call-engine.md says why).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { establishedDtlsRole, offerKeepingDtlsRole } from '../../Sources/DuetWeb/Web/js/runtime/dtls-role.js';
import { PeerConnection } from '../../Sources/DuetWeb/Web/js/runtime/peer-connection.js';

const sdp = (setup) => [
  'v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'a=group:BUNDLE 0 1',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'a=mid:0', `a=setup:${setup}`, 'a=ice-ufrag:abcd',
  'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=mid:1', `a=setup:${setup}`, 'a=ice-ufrag:abcd', '',
].join('\r\n');

test('an answerer holds the role its answer named; an offerer the other one than the answer it took', () => {
  assert.equal(establishedDtlsRole({ type: 'answer', sdp: sdp('active') }, { type: 'offer', sdp: sdp('actpass') }), 'active');
  assert.equal(establishedDtlsRole({ type: 'answer', sdp: sdp('passive') }, { type: 'offer', sdp: sdp('actpass') }), 'passive');
  assert.equal(establishedDtlsRole({ type: 'offer', sdp: sdp('actpass') }, { type: 'answer', sdp: sdp('active') }), 'passive');
  assert.equal(establishedDtlsRole({ type: 'offer', sdp: sdp('actpass') }, { type: 'answer', sdp: sdp('passive') }), 'active');
});

test('no role before a first negotiation, nor from descriptions that name none', () => {
  assert.equal(establishedDtlsRole(null, null), null);
  assert.equal(establishedDtlsRole(undefined, undefined), null);
  assert.equal(establishedDtlsRole({ type: 'offer', sdp: sdp('actpass') }, null), null, 'an offer not answered yet');
  assert.equal(establishedDtlsRole({ type: 'answer', sdp: sdp('actpass') }, null), null, 'an answer cannot hold actpass');
  assert.equal(establishedDtlsRole({ type: 'answer', sdp: 'v=0\r\n' }, null), null);
});

test('the offer sent names the held role on every section, and nothing else changes', () => {
  const offer = sdp('actpass');
  const sent = offerKeepingDtlsRole(offer, 'active');
  assert.equal(sent, sdp('active'));
  assert.equal(offerKeepingDtlsRole(offer, 'passive'), sdp('passive'));
  assert.equal(offerKeepingDtlsRole(offer, null), offer, 'a new connection offers actpass');
  assert.equal(offerKeepingDtlsRole(offer, 'actpass'), offer);
  assert.equal(offerKeepingDtlsRole(offer.replaceAll('\r\n', '\n'), 'active'), sdp('active').replaceAll('\r\n', '\n'));
});

class FakeConnection {
  constructor(currentLocalDescription, currentRemoteDescription) {
    Object.assign(this, { currentLocalDescription, currentRemoteDescription, localDescription: null, applied: [] });
  }
  async createOffer() { return { type: 'offer', sdp: sdp('actpass') }; }
  async setLocalDescription(description) { this.applied.push(description.sdp); this.localDescription = description; }
  async setRemoteDescription() {}
}

/** A restart offer of a DTLS client says active, of a server passive; the offer applied stays actpass. */
async function restartOffersNameTheHeldRole(holdsRestartOffer) {
  const p = new PeerConnection({ localMedia: {}, onEvent: () => {}, onRemoteStream: () => {}, holdsRestartOffer, keepsDtlsRole: true });
  // Chromium under a Firefox host: Chromium answered `active` (the client).
  p.pc = new FakeConnection({ type: 'answer', sdp: sdp('active') }, { type: 'offer', sdp: sdp('actpass') });
  assert.equal(await p.createOffer(true), sdp('active'));
  await p.setRemoteDescription('answer', sdp('passive'));
  assert.deepEqual(p.pc.applied, [sdp('actpass')]);
  // The host that offered first and took an `active` answer is the server.
  p.pc = new FakeConnection({ type: 'offer', sdp: sdp('actpass') }, { type: 'answer', sdp: sdp('active') });
  assert.equal(await p.createOffer(true), sdp('passive'));
  // A new connection.
  p.pc = new FakeConnection(null, null);
  assert.equal(await p.createOffer(false), sdp('actpass'));
}

test('libwebrtc (restart offer held until its answer): the offer sent names the held role', () => restartOffersNameTheHeldRole(true));
test('Firefox (restart offer applied at once): the offer sent names the held role', () => restartOffersNameTheHeldRole(false));

test('off by default: the offer goes as the browser made it (actpass), whatever role is held', async () => {
  const p = new PeerConnection({ localMedia: {}, onEvent: () => {}, onRemoteStream: () => {}, holdsRestartOffer: true });
  p.pc = new FakeConnection({ type: 'answer', sdp: sdp('active') }, { type: 'offer', sdp: sdp('actpass') });
  assert.equal(await p.createOffer(true), sdp('actpass'));
});
