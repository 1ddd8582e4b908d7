// The browser runtime's RTCPeerConnection wrapper (runtime/peer-connection.js), on a fake connection that records
// what was applied and when: a libwebrtc ICE restart offer is sent unapplied and applied with its answer; Firefox
// applies its own at once (PeerConnection.createOffer says why).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PeerConnection } from '../../Sources/DuetWeb/Web/js/runtime/peer-connection.js';

class FakeConnection {
  constructor() {
    this.log = [];
    this.signalingState = 'stable';
    this.localDescription = null;
    this.offers = 0;
  }
  async createOffer({ iceRestart }) {
    this.offers += 1;
    return { type: 'offer', sdp: `offer ${this.offers}${iceRestart ? ' restart' : ''}` };
  }
  async setLocalDescription(description) {
    this.log.push(`local ${description.type}${description.sdp ? `: ${description.sdp}` : ''}`);
    if (description.type === 'rollback') { this.signalingState = 'stable'; return; }
    this.localDescription = description;
    this.signalingState = description.type === 'offer' ? 'have-local-offer' : 'stable';
  }
  async setRemoteDescription(description) {
    this.log.push(`remote ${description.type}: ${description.sdp}`);
    this.signalingState = description.type === 'offer' ? 'have-remote-offer' : 'stable';
  }
}

function peer({ holdsRestartOffer }) {
  const connection = new PeerConnection({ localMedia: {}, onEvent: () => {}, onRemoteStream: () => {}, holdsRestartOffer });
  connection.pc = new FakeConnection();
  return connection;
}

test('libwebrtc: a restart offer is sent unapplied, then applied just before its answer', async () => {
  const p = peer({ holdsRestartOffer: true });
  assert.equal(await p.createOffer(true), 'offer 1 restart');
  assert.deepEqual(p.pc.log, [], 'not applied while the answer is on its way');
  assert.equal(p.pc.signalingState, 'stable');
  await p.setRemoteDescription('answer', 'answer 1');
  assert.deepEqual(p.pc.log, ['local offer: offer 1 restart', 'remote answer: answer 1']);
});

test('libwebrtc: a plain offer is applied at once', async () => {
  const p = peer({ holdsRestartOffer: true });
  await p.createOffer(false);
  assert.deepEqual(p.pc.log, ['local offer: offer 1']);
});

test('Firefox: its restart offer is applied at once', async () => {
  const p = peer({ holdsRestartOffer: false });
  await p.createOffer(true);
  assert.deepEqual(p.pc.log, ['local offer: offer 1 restart']);
  await p.setRemoteDescription('answer', 'answer 1');
  assert.deepEqual(p.pc.log, ['local offer: offer 1 restart', 'remote answer: answer 1']);
});

test('an unapplied restart offer is forgotten by a crossing offer, a rollback, a new offer or a new connection', async () => {
  const crossing = peer({ holdsRestartOffer: true });
  await crossing.createOffer(true);
  await crossing.setRemoteDescription('offer', 'their offer');
  await crossing.setRemoteDescription('answer', 'late answer');
  assert.deepEqual(crossing.pc.log, ['remote offer: their offer', 'remote answer: late answer'], 'ours never applied');

  const rolledBack = peer({ holdsRestartOffer: true });
  await rolledBack.createOffer(true);
  await rolledBack.rollback();
  await rolledBack.setRemoteDescription('answer', 'late answer');
  assert.deepEqual(rolledBack.pc.log, ['remote answer: late answer'], 'nothing to roll back, nothing applied after');

  const again = peer({ holdsRestartOffer: true });
  await again.createOffer(true);
  await again.createOffer(true);
  await again.setRemoteDescription('answer', 'answer 2');
  assert.deepEqual(again.pc.log, ['local offer: offer 2 restart', 'remote answer: answer 2'], 'only the latest offer');

  const renewed = peer({ holdsRestartOffer: true });
  await renewed.createOffer(true);
  const old = renewed.pc;
  renewed.pc = new FakeConnection();
  await renewed.setRemoteDescription('answer', 'answer for the old one');
  assert.deepEqual(old.log, []);
  assert.deepEqual(renewed.pc.log, ['remote answer: answer for the old one'], 'the old connection\'s offer is never applied to the new one');
});
