// Verified calls' building blocks in the browser (js/verification/*): the link key, the `auth` of an offer or
// answer, the safety code. The vectors in Tests/fixtures/verification were computed by Python's hmac/hashlib
// (make_vectors.py); DuetClient's VerificationVectorTests checks the same file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { base64url, newLinkKeyText, parseLinkKey } from '../../Sources/DuetWeb/Web/js/verification/link-key.js';
import {
  authMessage, fingerprintAuth, fingerprintsInSdp, verifyFingerprintAuth,
} from '../../Sources/DuetWeb/Web/js/verification/fingerprint-auth.js';
import { safetyCode, safetyDigest } from '../../Sources/DuetWeb/Web/js/verification/safety-code.js';

const vectors = JSON.parse(readFileSync(new URL('../fixtures/verification/vectors.json', import.meta.url), 'utf8'));
const hex = (bytes) => Buffer.from(bytes).toString('hex');

test('the auth vectors: fingerprints, the exact message bytes and the HMAC', async () => {
  assert.equal(vectors.auth.length, 2);
  for (const v of vectors.auth) {
    const key = parseLinkKey(v.key);
    assert.ok(key, v.name);
    const fingerprints = fingerprintsInSdp(v.sdp);
    assert.deepEqual(fingerprints, v.fingerprints, v.name);
    assert.equal(hex(authMessage({ rid: v.rid, sender: v.sender, receiver: v.receiver, fingerprints })), v.messageHex, v.name);
    assert.equal(await fingerprintAuth({ key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: v.sdp }), v.auth, v.name);
    assert.equal(await verifyFingerprintAuth({ auth: v.auth, key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: v.sdp }), true);
  }
});

test('a=fingerprint lines are read as Swift reads them (Tests/fixtures/verification/fingerprint-lines.json)', () => {
  const { cases } = JSON.parse(readFileSync(new URL('../fixtures/verification/fingerprint-lines.json', import.meta.url), 'utf8'));
  assert.ok(cases.length >= 7);
  for (const { lines, expected } of cases) assert.deepEqual(fingerprintsInSdp(lines.join('\r\n')), expected, JSON.stringify(lines));
});

test('auth says no to a swapped fingerprint, a reflected description, another room, another key, or none', async () => {
  const v = vectors.auth[0];
  const key = parseLinkKey(v.key);
  const base = { auth: v.auth, key, rid: v.rid, sender: v.sender, receiver: v.receiver, sdp: v.sdp };
  const swapped = v.sdp.replaceAll(/a=fingerprint:(\S+) (\S+)/g, 'a=fingerprint:$1 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF');
  assert.equal(await verifyFingerprintAuth({ ...base, sdp: swapped }), false, 'a server that rewrote the fingerprints');
  assert.equal(await verifyFingerprintAuth({ ...base, sender: v.receiver, receiver: v.sender }), false, 'sent back to its sender');
  assert.equal(await verifyFingerprintAuth({ ...base, rid: 'another-room' }), false);
  const other = parseLinkKey(newLinkKeyText());
  assert.equal(await verifyFingerprintAuth({ ...base, key: other }), false);
  assert.equal(await verifyFingerprintAuth({ ...base, auth: undefined }), false, 'no auth on a keyed link');
  assert.equal(await verifyFingerprintAuth({ ...base, auth: v.auth.slice(0, -1) }), false);
  const stripped = v.sdp.split('\r\n').filter((l) => !l.startsWith('a=fingerprint')).join('\r\n');
  assert.equal(await fingerprintAuth({ ...base, sdp: stripped }), null, 'nothing to vouch for');
  assert.equal(await verifyFingerprintAuth({ ...base, sdp: stripped }), false);
  // A line added elsewhere in the SDP (not a fingerprint) changes nothing: only the fingerprints are vouched for.
  assert.equal(await verifyFingerprintAuth({ ...base, sdp: `${v.sdp}a=extmap:9 urn:x\r\n` }), true);
});

test('the link key: exactly 43 base64url characters, 32 bytes; anything else refused', () => {
  const text = vectors.auth[0].key;
  assert.deepEqual([...parseLinkKey(text)], Array.from({ length: 32 }, (_, i) => i + 1));
  for (const bad of ['', text.slice(0, 42), `${text}A`, `${text.slice(0, 42)}=`, `${text.slice(0, 42)}+`, text.replace('A', '/'),
    // The last character carries 2 unused bits: a variant with them set decodes to the same bytes and is refused.
    `${text.slice(0, 42)}B`, null, 42]) {
    assert.equal(parseLinkKey(bad), null, String(bad));
  }
  const fresh = newLinkKeyText();
  assert.equal(fresh.length, 43);
  assert.notEqual(fresh, newLinkKeyText());
  assert.equal(base64url(parseLinkKey(fresh)), fresh);
});

test('the safety code vector, and the same code on both ends', async () => {
  const s = vectors.safetyCode;
  assert.equal(hex(await safetyDigest({ rid: s.rid, local: s.local, remote: s.remote })), s.digestHex);
  assert.equal(await safetyCode({ rid: s.rid, local: s.local, remote: s.remote }), s.code);
  assert.equal(await safetyCode({ rid: s.rid, local: s.remote, remote: s.local }), s.code, 'the other end');
  assert.match(s.code, /^\d{6}$/);
});

test('someone in the middle: each end sees a different remote fingerprint, and the codes differ', async () => {
  const s = vectors.safetyCode;
  const middle = ['sha-256 AA:BB'];
  const alice = await safetyCode({ rid: s.rid, local: s.local, remote: middle });
  const bob = await safetyCode({ rid: s.rid, local: s.remote, remote: middle });
  assert.notEqual(alice, bob);
  assert.notEqual(await safetyCode({ rid: 'other', local: s.local, remote: s.remote }), s.code, 'the room is in it');
});
