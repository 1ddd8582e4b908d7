// Mirrors MediaStateEngineTests.swift: the browser engine says its media state after every join and on a change,
// and takes the peer's from relays and room_state. (The differential replay checks the two engines step by step.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CallEngine } from '../../Sources/DuetWeb/Web/js/engine/call-engine.js';

const rid = 'R' + 'a'.repeat(26);
const muted = { audio: false, video: true, screen: false };
const initial = { audio: true, video: true, screen: false };
const person = (cid, media) => ({ cid, joinedAt: 0, connectionStatus: 'connected', ...(media ? { media } : {}) });
const message = (type, payload, extra = {}) => ({ type: 'message', envelope: { v: 1, type, rid, ...extra, payload } });
const joined = (cid, participants, epoch, reconnect = 'fresh') => message('joined', {
  hostCid: 'C-h', participants, maxParticipants: 2, reconnect, epoch, reconnectToken: `token-${cid}`,
  reconnectTokenTTLMs: 1200000, turnToken: 'turn', turnTokenExpiresAt: 0, turnTokenTTLMs: 900000,
}, { cid, epoch });
const roomState = (participants, epoch) => message('room_state', { hostCid: 'C-h', participants, epoch }, { epoch });
const statesSent = (outputs) => outputs.filter((o) => o.type === 'send' && o.envelope.type === 'media_state').map((o) => o.envelope.payload);
const remoteEvents = (outputs) => outputs.filter((o) => o.type === 'emit' && o.event.type === 'remoteMedia').map((o) => o.event.media);

function guestInCall(options = {}) {
  const engine = new CallEngine({ jitterSeed: null, ...options });
  engine.handle({ type: 'joinRoom', roomId: rid });
  engine.handle({ type: 'transportOpened', transport: 'ws' });
  const out = engine.handle(joined('C-g', [person('C-h'), person('C-g')], 2));
  return { engine, out };
}

test('the state given at the start is sent with the join, as {v, type, rid, payload}', () => {
  const { out } = guestInCall({ localMedia: muted });
  assert.deepEqual(out.filter((o) => o.type === 'send' && o.envelope.type === 'media_state').map((o) => o.envelope),
    [{ v: 1, type: 'media_state', rid, payload: muted }]);
});

test('a change is sent once, a repeat is not', () => {
  const { engine } = guestInCall();
  assert.deepEqual(statesSent(engine.handle({ type: 'localMediaChanged', media: muted })), [muted]);
  assert.deepEqual(statesSent(engine.handle({ type: 'localMediaChanged', media: { ...muted } })), []);
});

test('a change while signaling is down goes out with the rejoin acknowledgement', () => {
  const { engine } = guestInCall();
  engine.handle({ type: 'transportClosed', reason: 'networkError' });
  assert.deepEqual(statesSent(engine.handle({ type: 'localMediaChanged', media: muted })), []);
  engine.handle({ type: 'timerFired', timer: 'reconnectBackoff' });
  assert.deepEqual(statesSent(engine.handle({ type: 'transportOpened', transport: 'ws' })), []);
  assert.deepEqual(statesSent(engine.handle(joined('C-g', [person('C-h'), person('C-g')], 4, 'recovered'))), [muted]);
});

test("the peer's state comes from relays and room_state; an unknowing server keeps it; another peer resets it", () => {
  const { engine, out } = guestInCall();
  assert.deepEqual(remoteEvents(out), []);
  assert.deepEqual(remoteEvents(engine.handle(message('media_state', { ...muted, from: 'C-h' }))), [muted]);
  assert.deepEqual(engine.remoteMedia, muted);
  assert.deepEqual(engine.handle(message('media_state', { ...initial, from: 'C-x' })), []);
  engine.handle(roomState([person('C-h'), person('C-g')], 1));
  assert.deepEqual(engine.remoteMedia, muted);
  assert.deepEqual(remoteEvents(engine.handle(roomState([person('C-h', initial), person('C-g')], 2))), [initial]);
  assert.deepEqual(remoteEvents(engine.handle(roomState([person('C-n'), person('C-g')], 3))), [null]);
  assert.equal(engine.remoteMedia, null);
});

test('a malformed state is ignored; a participant with a malformed media makes the room_state ignored, as in Swift', () => {
  const { engine } = guestInCall();
  assert.deepEqual(engine.handle(message('media_state', { audio: false, video: 'off', screen: false, from: 'C-h' })), []);
  assert.equal(engine.remoteMedia, null);
  assert.deepEqual(engine.handle(roomState([person('C-h', { audio: 1, video: true, screen: false }), person('C-g')], 2)), []);
});

test('leaving tells the page the peer state is gone; a new peer is told before the participants', () => {
  const { engine } = guestInCall();
  engine.handle(roomState([person('C-h', muted), person('C-g')], 3));
  const out = engine.handle(roomState([person('C-n'), person('C-g')], 4));
  const reset = out.findIndex((o) => o.type === 'emit' && o.event.type === 'remoteMedia' && o.event.media === null);
  const participants = out.findIndex((o) => o.type === 'emit' && o.event.type === 'participants');
  assert.ok(reset >= 0 && reset < participants, JSON.stringify(out.map((o) => o.event?.type ?? o.type)));
  engine.handle(roomState([person('C-h', muted), person('C-g')], 5));
  assert.deepEqual(remoteEvents(engine.handle({ type: 'leave' })), [null]);
  assert.equal(engine.remoteMedia, null);
});
