// Join and ring snapshots (js/ringing/snapshot.js, issue 31): snapshots sealed by Python's `cryptography`
// (Tests/e2e/push/make_snapshot_vectors.py) open to their picture on the device they were sealed for; a snapshot
// altered, moved to another room, opened by another device, not proven by the link's key, or old shows nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sealSnapshot, openSnapshot, recipientId, newDeviceKey, bytesOf, deviceKeyAuth, SNAPSHOT_MAX_AGE_MS } from '../../Sources/DuetWeb/Web/js/ringing/snapshot.js';
import { parseLinkKey, newLinkKeyText } from '../../Sources/DuetWeb/Web/js/verification/link-key.js';

const { cases } = JSON.parse(readFileSync(new URL('../fixtures/ringing/snapshot.json', import.meta.url), 'utf8'));

const privateKeyOf = (jwk) => crypto.subtle.importKey('jwk', { ...jwk, ext: true }, { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
const image = (v) => Uint8Array.from(Buffer.from(v.image, 'base64'));

async function open(v, changes = {}) {
  return openSnapshot({
    envelope: v.envelope, recipientId: v.recipientId, privateKey: await privateKeyOf(v.privateJwk), rid: v.rid, purpose: v.purpose,
    linkKey: parseLinkKey(v.linkKey), nowMs: v.envelope.at + 1_000, ...changes,
  });
}

test('the recipient id is the server\'s (PushSubscriptionRecord.recipientId, the same SHA-256 as Python\'s)', async () => {
  for (const v of cases) assert.equal(await recipientId(v.rid, v.endpoint), v.recipientId);
});

test('snapshots sealed by an independent implementation open to their picture on their device', async () => {
  assert.equal(cases.length, 2);
  for (const v of cases) assert.deepEqual(await open(v), { image: image(v), mime: 'image/jpeg' });
});

test('a device\'s key MAC is the one an independent implementation makes (encKeyAuth)', async () => {
  for (const v of cases) assert.equal(await deviceKeyAuth({ rid: v.rid, publicJwk: v.publicJwk, linkKey: parseLinkKey(v.linkKey) }), v.keyAuth);
});

test('altered, moved, for another device or purpose, without the link key, unproven or old: no picture', async () => {
  const v = cases[0];
  const flip = (text) => (text[5] === 'A' ? text.slice(0, 5) + 'B' : text.slice(0, 5) + 'A') + text.slice(6);
  const other = await newDeviceKey();
  for (const changes of [
    { envelope: { ...v.envelope, ciphertext: flip(v.envelope.ciphertext) } },
    { envelope: { ...v.envelope, auth: flip(v.envelope.auth) } },
    { envelope: { ...v.envelope, at: v.envelope.at + 1 } },
    { envelope: { ...v.envelope, auth: undefined } },
    { envelope: { ...v.envelope, rid: cases[1].rid }, rid: cases[1].rid },
    { recipientId: 'someone-else', privateKey: other.privateKey },
    { privateKey: other.privateKey },
    { linkKey: null },
    { linkKey: parseLinkKey(newLinkKeyText()) },
    { nowMs: v.envelope.at + SNAPSHOT_MAX_AGE_MS + 1 },
    { purpose: 'ring:another-call' },
    { purpose: 'join' },
    { envelope: { ...v.envelope, purpose: 'join' }, purpose: 'join' },
    { purpose: undefined },
  ]) {
    assert.equal(await open(v, changes), null, JSON.stringify(Object.keys(changes)));
  }
});

test('a round trip through this implementation, for two devices, in the layout the server checks', async () => {
  const linkKey = parseLinkKey(newLinkKeyText());
  const [a, b, slipped] = [await newDeviceKey(), await newDeviceKey(), await newDeviceKey()];
  const picture = new Uint8Array([0xff, 0xd8, 1, 2, 3]);
  const vouched = async (id, key) => ({ id, publicKey: key.publicJwk, keyAuth: await deviceKeyAuth({ rid: 'r', publicJwk: key.publicJwk, linkKey }) });
  // A key the server slipped into the list (no MAC, or another key's MAC) is never sealed to.
  const recipients = [await vouched('a', a), await vouched('b', b), { id: 'evil', publicKey: slipped.publicJwk },
    { id: 'evil2', publicKey: slipped.publicJwk, keyAuth: (await vouched('a', a)).keyAuth }];
  const body = await sealSnapshot({ image: picture, rid: 'r', purpose: 'join', linkKey, nowMs: 5, recipients });
  assert.deepEqual(body.recipients.map((r) => r.id), ['a', 'b']);
  assert.equal(await sealSnapshot({ image: picture, rid: 'r', purpose: 'join', linkKey, recipients: recipients.slice(2) }), null, 'nobody vouched for: no snapshot');
  assert.equal(bytesOf(body.snapshotIv).length, 12);
  assert.equal(bytesOf(body.snapshotEphemeralPubKey).length, 65);
  for (const r of body.recipients) assert.equal(bytesOf(r.wrappedKey).length, 48);
  const envelope = { rid: 'r', mime: body.snapshotMime, ciphertext: body.ciphertext, iv: body.snapshotIv, salt: body.snapshotSalt,
    ephemeralPublicKey: body.snapshotEphemeralPubKey, auth: body.snapshotAuth, at: body.snapshotAt, purpose: body.snapshotPurpose, recipients: body.recipients };
  for (const [id, key] of [['a', a], ['b', b]]) {
    assert.deepEqual(await openSnapshot({ envelope, recipientId: id, privateKey: key.privateKey, rid: 'r', purpose: 'join', linkKey, nowMs: 6 }), { image: picture, mime: 'image/jpeg' });
  }
  // Without a link key nothing proves where it came from: sealed, but never shown.
  const unkeyed = await sealSnapshot({ image: picture, rid: 'r', purpose: 'join', linkKey: null, recipients: [{ id: 'a', publicKey: a.publicJwk }] });
  assert.equal(unkeyed.snapshotAuth, undefined);
});
