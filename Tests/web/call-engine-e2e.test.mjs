// Two CallEngines wired to a fake relay and fake media: a call is set up, survives a dropped
// transport, and survives a page reload through `resume`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, FakeMedia, FakeRelay, World } from './support/fake-call.mjs';

function setUp() {
  const world = new World();
  const relay = new FakeRelay(world);
  const media = new FakeMedia();
  return { world, relay, media };
}

/** Alice creates a room, Bob joins it; both end up in a connected call. */
function startCall() {
  const scene = setUp();
  const { world, relay, media } = scene;
  const alice = new Client(world, relay, media, 'alice');
  const bob = new Client(world, relay, media, 'bob');
  alice.input({ type: 'startNewCall' });
  world.advance(100);
  assert.equal(alice.engine.phase, 'waiting');
  const roomId = alice.engine.roomId;
  assert.ok(roomId);
  bob.input({ type: 'joinRoom', roomId });
  world.advance(100);
  return { ...scene, alice, bob, roomId };
}

function assertConnectedCall(a, b) {
  for (const client of [a, b]) {
    assert.equal(client.engine.phase, 'inCall', `${client.name} phase`);
    assert.equal(client.engine.connectionStatus, 'connected', `${client.name} status`);
    assert.equal(client.engine.iceState, 'connected', `${client.name} ICE`);
    assert.equal(client.engine.transport, 'ws', `${client.name} transport`);
  }
}

test('two engines reach inCall: the host offers, candidates trickle both ways, media connects', () => {
  const { alice, bob, roomId } = startCall();
  assertConnectedCall(alice, bob);
  assert.equal(alice.engine.hostCid, alice.engine.cid, 'the creator hosts');
  assert.equal(bob.engine.hostCid, alice.engine.cid);
  assert.equal(bob.engine.roomId, roomId);
  assert.equal(alice.engine.participants.length, 2);
  assert.deepEqual(alice.eventsOf('phase').map((e) => e.phase), ['creatingRoom', 'joining', 'waiting', 'inCall']);
  assert.deepEqual(bob.eventsOf('phase').map((e) => e.phase), ['joining', 'inCall']);
  assert.equal(alice.sentOf('offer').length, 1, 'only the host offered');
  assert.equal(bob.sentOf('offer').length, 0);
  assert.equal(bob.sentOf('answer').length, 1);
  // Candidates arrive cleaned, followed by end-of-candidates.
  assert.deepEqual(bob.peer.remoteCandidates, [
    { candidate: 'candidate:1 1 udp 2122260223 10.0.0.1 5000 typ host', sdpMid: '0', sdpMLineIndex: 0 }, null,
  ]);
  assert.deepEqual(alice.peer.remoteCandidates, [
    { candidate: 'candidate:1 1 udp 2122260223 10.0.0.2 5000 typ host', sdpMid: '0', sdpMLineIndex: 0 }, null,
  ]);
  assert.deepEqual(bob.sentOf('join')[0].payload, { capabilities: { trickleIce: true }, device: 'web' });
  const session = bob.lastSession();
  assert.deepEqual(session, { type: 'session', seat: { roomId, cid: bob.engine.cid, reconnectToken: bob.engine.reconnectToken } });
  assert.match(session.seat.reconnectToken, /^token-C-/);
});

test('a dropped transport reconnects after the backoff and reattaches the same seat; media is not renegotiated', () => {
  const { world, alice, bob } = startCall();
  const cid = bob.engine.cid;
  const offersBefore = alice.commandsOf('createOffer').length + bob.commandsOf('createOffer').length;
  bob.dropTransport();
  world.settle();
  assert.equal(bob.engine.connectionStatus, 'recovering');
  assert.equal(bob.engine.transport, null);
  assert.equal(bob.timers.get('reconnectBackoff').at - world.now, 500, 'RECONNECT_BACKOFF_BASE_MS');
  assert.equal(alice.engine.participants.find((p) => p.cid === cid).connectionStatus, 'suspended');
  world.advance(499);
  assert.equal(bob.engine.transport, null, 'not before the backoff ends');
  world.advance(1);
  const rejoin = bob.sentOf('join').at(-1);
  assert.equal(rejoin.payload.reconnectCid, cid);
  assert.match(rejoin.payload.reconnectToken, /^token-/);
  world.advance(100);
  assertConnectedCall(alice, bob);
  assert.equal(bob.engine.cid, cid, 'same seat');
  assert.equal(alice.engine.participants.find((p) => p.cid === cid).connectionStatus, 'connected');
  assert.deepEqual(bob.eventsOf('transport').map((e) => e.transport), ['ws', null, 'ws']);
  assert.deepEqual(bob.eventsOf('connectionStatus').map((e) => e.status), ['recovering', 'connected']);
  assert.deepEqual(alice.eventsOf('connectionStatus'), [], 'the host never saw its own call degrade');
  assert.equal(alice.commandsOf('createOffer').length + bob.commandsOf('createOffer').length, offersBefore, 'no renegotiation');
  assert.equal(bob.lastSeat().cid, cid);
  assert.equal(bob.lastSeat().reconnectToken, bob.engine.reconnectToken, 'the refreshed token is handed to storage');
});

test('a reloaded page resumes its seat: the join carries reconnectCid/token and the host restarts ICE', () => {
  const { world, relay, media, alice, bob, roomId } = startCall();
  const session = bob.lastSeat();
  bob.kill(); // page reload
  world.settle();
  assert.equal(alice.engine.connectionStatus, 'recovering', 'media dropped with the page');
  world.advance(300);
  const reloaded = new Client(world, relay, media, 'bob2', {
    resume: { roomId: session.roomId, cid: session.cid, reconnectToken: session.reconnectToken },
  });
  reloaded.input({ type: 'joinRoom', roomId });
  world.settle();
  const join = reloaded.sentOf('join')[0];
  assert.deepEqual(join, {
    v: 1, type: 'join', rid: roomId,
    payload: { capabilities: { trickleIce: true }, reconnectCid: session.cid, reconnectToken: session.reconnectToken, device: 'web' },
  });
  world.advance(100);
  assert.equal(reloaded.engine.cid, session.cid, 'the same seat came back');
  assert.equal(relay.rooms.get(roomId).seats.length, 2, 'no third seat');
  assert.ok(alice.eventsOf('iceRestart').length > 0, 'the host renegotiated ICE for the returning peer');
  assertConnectedCall(alice, reloaded);
});

test('resume with a stale token: INVALID_RECONNECT_TOKEN, then a fresh join', () => {
  const { world, relay, media, alice, bob, roomId } = startCall();
  bob.input({ type: 'leave' });
  world.advance(100);
  assert.equal(bob.engine.phase, 'idle');
  assert.deepEqual(bob.lastSession(), { type: 'session', seat: null }, 'teardown clears the stored seat');
  assert.equal(alice.engine.phase, 'waiting');
  const stale = new Client(world, relay, media, 'bob2', { resume: { roomId, cid: 'C-00000000000000ff', reconnectToken: 'nope' } });
  stale.input({ type: 'joinRoom', roomId });
  world.advance(100);
  const joins = stale.sentOf('join');
  assert.equal(joins[0].payload.reconnectCid, 'C-00000000000000ff');
  assert.equal(joins[1].payload.reconnectCid, undefined, 'joined fresh');
  assert.equal(joins[1].payload.reconnectToken, undefined);
  assert.notEqual(stale.engine.cid, 'C-00000000000000ff');
  assertConnectedCall(alice, stale);
});
