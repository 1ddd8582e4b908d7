// A ring's caller name sealed with the call link's key (js/ringing/caller-seal.js, issue 31): opened from seals made
// by Python's `cryptography` (Tests/e2e/push/make_caller_vectors.py), never shown as a name when altered, moved to
// another ring or room, or sealed with another key; an unkeyed link's name is shown as not verified.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { sealCaller, openCaller, cleanName, MAX_SEAL_AGE_MS } from '../../Sources/DuetWeb/Web/js/ringing/caller-seal.js';
import { parseLinkKey, newLinkKeyText } from '../../Sources/DuetWeb/Web/js/verification/link-key.js';

const { cases } = JSON.parse(readFileSync(new URL('../fixtures/ringing/caller-seal.json', import.meta.url), 'utf8'));

test('seals made by an independent implementation open to their name, verified', async () => {
  assert.equal(cases.length, 2);
  for (const v of cases) {
    const opened = await openCaller({ caller: v.caller, rid: v.rid, callId: v.callId, linkKey: parseLinkKey(v.linkKey), nowMs: v.at + 1_000 });
    assert.deepEqual(opened, { name: v.name, verified: true });
  }
});

test('a seal older (or newer) than MAX_SEAL_AGE_MS is a replayed ring: never shown as a name', async () => {
  const v = cases[0];
  const open = (nowMs) => openCaller({ caller: v.caller, rid: v.rid, callId: v.callId, linkKey: parseLinkKey(v.linkKey), nowMs });
  assert.deepEqual(await open(v.at + MAX_SEAL_AGE_MS), { name: v.name, verified: true });
  for (const nowMs of [v.at + MAX_SEAL_AGE_MS + 1, v.at - MAX_SEAL_AGE_MS - 1]) {
    assert.deepEqual(await open(nowMs), { name: null, verified: false, altered: true });
  }
});

test('a seal moved to another ring or room, altered, or opened with another key is never a name', async () => {
  const v = cases[0];
  const key = parseLinkKey(v.linkKey);
  const altered = { ...v.caller, ct: (v.caller.ct[0] === 'A' ? 'B' : 'A') + v.caller.ct.slice(1) };
  const nowMs = v.at + 1_000;
  for (const [caller, rid, callId, linkKey] of [
    [v.caller, v.rid, 'another-call', key], [v.caller, cases[1].rid, v.callId, key], [altered, v.rid, v.callId, key],
    [v.caller, v.rid, v.callId, parseLinkKey(newLinkKeyText())], [{ v: 1, iv: 'short', ct: v.caller.ct }, v.rid, v.callId, key],
  ]) {
    assert.deepEqual(await openCaller({ caller, rid, callId, linkKey, nowMs }), { name: null, verified: false, altered: true });
  }
});

test('a round trip through this implementation, and an unkeyed link says the name is not verified', async () => {
  const linkKey = parseLinkKey(newLinkKeyText());
  const sealed = await sealCaller({ name: '  Mum\u0007 ', rid: 'r', callId: 'c', linkKey });
  assert.equal(typeof sealed.iv, 'string');
  assert.ok(!JSON.stringify(sealed).includes('Mum'), 'the name is not in the clear');
  assert.deepEqual(await openCaller({ caller: sealed, rid: 'r', callId: 'c', linkKey }), { name: 'Mum', verified: true });
  const plain = await sealCaller({ name: 'Mum', rid: 'r', callId: 'c', linkKey: null });
  assert.deepEqual(await openCaller({ caller: plain, rid: 'r', callId: 'c', linkKey: null }), { name: 'Mum', verified: false });
  // A server that writes a plain name into a keyed call's ring: never shown (a keyed call always seals its caller).
  assert.deepEqual(await openCaller({ caller: { v: 1, plain: 'Bank' }, rid: 'r', callId: 'c', linkKey }), { name: null, verified: false, altered: true });
  assert.deepEqual(await openCaller({ caller: null, rid: 'r', callId: 'c', linkKey }), { name: null, verified: false });
  assert.equal(cleanName('x'.repeat(100)).length, 64);
});

test('a ring\'s answer secrets travel sealed, and their commitments are their SHA-256 (what the server checks)', async () => {
  const { createHash } = await import('node:crypto');
  const { newAnswerSecrets } = await import('../../Sources/DuetWeb/Web/js/ringing/caller-seal.js');
  const { secrets, commitments } = await newAnswerSecrets();
  assert.notEqual(secrets.accept, secrets.decline);
  for (const answer of ['accept', 'decline']) {
    const digest = createHash('sha256').update(Buffer.from(secrets[answer], 'base64url')).digest('base64url');
    assert.equal(commitments[answer], digest);
    assert.equal(commitments[answer].length, 43);
  }
  const linkKey = parseLinkKey(newLinkKeyText());
  const sealed = await sealCaller({ name: 'Ann', rid: 'r', callId: 'c', linkKey, answers: secrets });
  assert.ok(!JSON.stringify(sealed).includes(secrets.accept), 'the secrets are not in the clear');
  assert.deepEqual(await openCaller({ caller: sealed, rid: 'r', callId: 'c', linkKey }), { name: 'Ann', verified: true, answers: secrets });
  // Opened with another key: no name, no secrets.
  assert.deepEqual(await openCaller({ caller: sealed, rid: 'r', callId: 'c', linkKey: parseLinkKey(newLinkKeyText()) }), { name: null, verified: false, altered: true });
});
