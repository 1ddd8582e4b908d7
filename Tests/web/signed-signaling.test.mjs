// The browser runtime's verified-call half (js/runtime/signed-signaling.js) against the vectors Python computed
// (Tests/fixtures/verification); DuetClient's SignedSignalingTests checks its twin on the same file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseLinkKey } from '../../Sources/DuetWeb/Web/js/verification/link-key.js';
import { verifyFailedMessage } from '../../Sources/DuetWeb/Web/js/verification/fingerprint-auth.js';
import { SafetyCodeSource, SignedSignaling } from '../../Sources/DuetWeb/Web/js/runtime/signed-signaling.js';

const vectors = JSON.parse(readFileSync(new URL('../fixtures/verification/vectors.json', import.meta.url), 'utf8'));
const [offer] = vectors.auth;
const key = parseLinkKey(offer.key);

/** A runtime that has been told, as the engine tells it, that it is `me` in the room with `peer`. */
function told(me, peer, withKey = key) {
  const signing = new SignedSignaling(withKey);
  signing.note({ type: 'room', roomId: offer.rid });
  signing.note({ type: 'participants', participants: [{ cid: peer }, { cid: me }], hostCid: peer, myCid: me });
  return signing;
}

test('an offer is signed with the vector auth, checked on arrival, and refused once tampered, unsigned or unattributed', async () => {
  const alice = told(offer.sender, offer.receiver);
  const envelope = { v: 1, type: 'offer', rid: offer.rid, payload: { sdp: offer.sdp } };
  const signed = await alice.sign(envelope);
  assert.equal(signed.payload.auth, offer.auth);
  assert.equal(envelope.payload.auth, undefined, 'the engine\'s envelope is not changed in place');
  const bob = told(offer.receiver, offer.sender);
  const relayed = { ...signed, payload: { ...signed.payload, from: offer.sender } };
  assert.equal(await bob.check(relayed), 'pass');
  const swapped = relayed.payload.sdp.replaceAll('4A:AD', '4A:AE').replaceAll('4a:ad', '4a:ae');
  assert.equal(await bob.check({ ...relayed, payload: { ...relayed.payload, sdp: swapped } }), 'rejected', 'fingerprint rewritten');
  assert.equal(await bob.check({ ...relayed, payload: { sdp: offer.sdp, from: offer.sender } }), 'rejected', 'no auth');
  assert.equal(await bob.check({ ...relayed, payload: { sdp: offer.sdp, auth: offer.auth } }), 'rejected', 'no from');
  assert.equal(await bob.check({ ...relayed, payload: { ...relayed.payload, from: 'C-someone-else' } }), 'rejected', 'another sender');
  assert.equal(signed.payload.for, offer.receiver, 'says whom it was signed for');
  assert.equal(await alice.check({ ...relayed, payload: { ...relayed.payload, from: offer.receiver } }), 'dropped', 'reflected back: not for her');
  const { for: _, ...unaddressed } = relayed.payload;
  assert.equal(await alice.check({ ...relayed, payload: { ...unaddressed, from: offer.receiver } }), 'rejected', 'reflected back, unaddressed');
  assert.equal(await bob.check({ ...relayed, payload: { ...unaddressed } }), 'pass', 'an older client\'s, without for');
  // Without a key nothing is signed or checked.
  const plain = told(offer.sender, offer.receiver, null);
  assert.deepEqual(await plain.sign(envelope), envelope);
  assert.equal(await plain.check({ ...envelope, payload: { sdp: offer.sdp, from: offer.sender } }), 'pass');
  // ICE candidates and everything else pass untouched.
  assert.equal(alice.needsSigning({ type: 'ice' }), false);
  assert.equal(await bob.check({ type: 'ice', payload: { candidate: null } }), 'pass');
});

test('a description signed for another seat is dropped, not taken for an interception; one that cannot be signed is not sent', async () => {
  const alice = told(offer.sender, offer.receiver);
  const signed = await alice.sign({ v: 1, type: 'offer', rid: offer.rid, payload: { sdp: offer.sdp } });
  // The seat changed hands while it was on its way: Carol (who has the link) gets what Alice signed for Bob.
  const carol = told('C-carol', offer.sender);
  const relayed = { ...signed, payload: { ...signed.payload, from: offer.sender } };
  assert.equal(await carol.check(relayed), 'dropped');
  // Addressed to her but not vouched for: an interception after all.
  assert.equal(await carol.check({ ...relayed, payload: { ...relayed.payload, for: 'C-carol' } }), 'rejected');
  // A verify_failed for someone else is dropped the same way.
  const failed = await alice.sign({ v: 1, type: 'verify_failed', rid: offer.rid, payload: {} });
  assert.equal(await carol.check({ ...failed, payload: { ...failed.payload, from: offer.sender } }), 'dropped');
  // Nobody to sign for (no peer yet) on a keyed link: null, never an unsigned description.
  const alone = told(offer.sender, offer.receiver);
  alone.note({ type: 'participants', participants: [{ cid: offer.sender }], hostCid: offer.sender, myCid: offer.sender });
  assert.equal(await alone.sign({ v: 1, type: 'offer', rid: offer.rid, payload: { sdp: offer.sdp } }), null);
  assert.equal(await alone.sign({ v: 1, type: 'answer', rid: offer.rid, payload: {} }), null, 'no SDP to sign');
});

test('a signature uses who was who when it was queued, not when the HMAC finished', async () => {
  const alice = told(offer.sender, offer.receiver);
  const context = alice.context();
  alice.note({ type: 'participants', participants: [{ cid: offer.sender }], hostCid: offer.sender, myCid: offer.sender });
  const signed = await alice.sign({ type: 'offer', payload: { sdp: offer.sdp } }, context);
  assert.equal(signed.payload.auth, offer.auth);
});

test('verify_failed: the vector message and auth; a forged or keyless one is dropped', async () => {
  const v = vectors.verifyFailed;
  assert.equal(Buffer.from(verifyFailedMessage(v)).toString('hex'), v.messageHex);
  const bob = told(v.sender, v.receiver);
  const signed = await bob.sign({ v: 1, type: 'verify_failed', rid: v.rid, payload: {} });
  assert.equal(signed.payload.auth, v.auth);
  const alice = told(v.receiver, v.sender);
  assert.equal(await alice.check({ type: 'verify_failed', payload: { auth: v.auth, from: v.sender } }), 'pass');
  assert.equal(await alice.check({ type: 'verify_failed', payload: { auth: v.auth.replace(/^./, 'A'), from: v.sender } }), 'dropped');
  assert.equal(await alice.check({ type: 'verify_failed', payload: { from: v.sender } }), 'dropped');
  assert.equal(await told(v.receiver, v.sender, null).check({ type: 'verify_failed', payload: { auth: v.auth, from: v.sender } }), 'dropped');
});

test('the safety code: the vector code once both sides are known, none before, none after the peer left', async () => {
  const c = vectors.safetyCode;
  const [offerVector, answerVector] = vectors.auth;
  const source = new SafetyCodeSource();
  assert.equal(await source.handle({ type: 'room', roomId: c.rid }), null);
  assert.equal(await source.handle({ type: 'localDescription', sdp: offerVector.sdp }), null, 'only our side known');
  assert.deepEqual(await source.handle({ type: 'remoteDescriptionApplied', sdp: answerVector.sdp }), { code: c.code });
  assert.equal(await source.handle({ type: 'remoteDescriptionApplied', sdp: answerVector.sdp }), null, 'unchanged: not said again');
  assert.deepEqual(await source.handle({ type: 'peerGone' }), { code: null });
  // The other side works out the same code from the same two descriptions.
  const other = new SafetyCodeSource();
  await other.handle({ type: 'room', roomId: c.rid });
  await other.handle({ type: 'localDescription', sdp: answerVector.sdp });
  assert.deepEqual(await other.handle({ type: 'remoteDescriptionApplied', sdp: offerVector.sdp }), { code: c.code });
});

test('a description signed for our previous seat is still ours; a closed or renewed connection forgets the code', async () => {
  const bob = told(offer.receiver, offer.sender);
  bob.note({ type: 'participants', participants: [{ cid: offer.sender }, { cid: 'C-bob-new' }], hostCid: offer.sender, myCid: 'C-bob-new' });
  assert.equal(bob.myCid, 'C-bob-new');
  const relayed = { type: 'offer', payload: { sdp: offer.sdp, auth: offer.auth, from: offer.sender } };
  assert.equal(await bob.check(relayed), 'pass');
  assert.equal(await told('C-carol', offer.sender).check(relayed), 'rejected', 'someone else\'s seat is not ours');

  const [offerVector, answerVector] = vectors.auth;
  const source = new SafetyCodeSource();
  await source.handle({ type: 'room', roomId: vectors.safetyCode.rid });
  await source.handle({ type: 'localDescription', sdp: offerVector.sdp });
  await source.handle({ type: 'remoteDescriptionApplied', sdp: answerVector.sdp });
  assert.deepEqual(await source.handle({ type: 'connectionGone' }), { code: null });
  assert.equal(await source.handle({ type: 'remoteDescriptionApplied', sdp: answerVector.sdp }), null, 'our side is not known again yet');
});
