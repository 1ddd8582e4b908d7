// The browser's ordering of signaling through the link key's HMACs (js/runtime/signed-message-order.js): order
// kept both ways, each failure dropped alone, nothing delivered for a link that has been replaced. A scripted
// signer decides when each HMAC finishes; one test uses the real SignedSignaling with the Python vectors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { SignedMessageOrder } from '../../Sources/DuetWeb/Web/js/runtime/signed-message-order.js';
import { SignedSignaling } from '../../Sources/DuetWeb/Web/js/runtime/signed-signaling.js';
import { parseLinkKey } from '../../Sources/DuetWeb/Web/js/verification/link-key.js';

const SIGNED = new Set(['offer', 'answer', 'verify_failed']);
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A signer whose HMACs finish when the test says: `finish(type, outcome)` settles the oldest of that type. */
function scriptedSigner() {
  const waiting = [];
  let who = { rid: 'R1', sender: 'A', receiver: 'B' };
  const wait = (envelope, kind) => new Promise((resolve, reject) => waiting.push({ envelope, kind, resolve, reject }));
  return {
    waiting,
    setWho(next) { who = next; },
    needsSigning: (envelope) => SIGNED.has(envelope.type),
    needsCheck: (envelope) => SIGNED.has(envelope.type),
    context: () => ({ ...who }),
    sign(envelope, context) { return wait(envelope, 'sign').then(() => ({ ...envelope, payload: { ...envelope.payload, auth: `for ${context.receiver}` } })); },
    check(envelope) { return wait(envelope, 'check'); },
    /** Waits for the chain to reach the next HMAC of that kind, then settles it. */
    async finish(kind, outcome) {
      await settle();
      const index = waiting.findIndex((w) => w.kind === kind);
      assert.notEqual(index, -1, `nothing waits to ${kind}`);
      const [entry] = waiting.splice(index, 1);
      if (outcome instanceof Error) entry.reject(outcome); else entry.resolve(outcome);
    },
  };
}

const offer = { v: 1, type: 'offer', payload: { sdp: 'v=0' } };
const candidate = (n) => ({ v: 1, type: 'ice_candidate', payload: { candidate: `c${n}` } });
const quiet = () => {};

test('an outgoing candidate never overtakes the offer waiting for its HMAC; with nothing pending it goes at once', async () => {
  const signer = scriptedSigner();
  const order = new SignedMessageOrder(signer, () => 1, quiet);
  const sent = [];
  order.outgoing(candidate(0), (e) => sent.push(e.payload.candidate));
  assert.deepEqual(sent, ['c0'], 'nothing pending: sent synchronously');
  order.outgoing(offer, (e) => sent.push(`offer ${e.payload.auth}`));
  order.outgoing(candidate(1), (e) => sent.push(e.payload.candidate));
  await settle();
  assert.deepEqual(sent, ['c0'], 'the candidate waits behind the offer');
  await signer.finish('sign');
  await order.sendsSettled;
  assert.deepEqual(sent, ['c0', 'offer for B', 'c1']);
  order.outgoing(candidate(2), (e) => sent.push(e.payload.candidate));
  assert.deepEqual(sent, ['c0', 'offer for B', 'c1', 'c2'], 'queue drained: sent synchronously again');
});

test('an offer is signed for who was who when it was queued, not when its HMAC finished', async () => {
  const signer = scriptedSigner();
  const order = new SignedMessageOrder(signer, () => 1, quiet);
  const sent = [];
  order.outgoing(offer, (e) => sent.push(e.payload.auth));
  signer.setWho({ rid: 'R1', sender: 'A', receiver: 'C' });
  await signer.finish('sign');
  await order.sendsSettled;
  assert.deepEqual(sent, ['for B']);
});

test('a message that cannot be signed is dropped alone: the next ones still go, in order', async () => {
  const signer = scriptedSigner();
  const warnings = [];
  const order = new SignedMessageOrder(signer, () => 1, (message) => warnings.push(message));
  const sent = [];
  order.outgoing(offer, (e) => sent.push('offer 1'));
  order.outgoing(candidate(1), (e) => sent.push(e.payload.candidate));
  order.outgoing({ ...offer, type: 'answer' }, () => sent.push('answer'));
  await signer.finish('sign', new Error('WebCrypto refused'));
  await settle();
  await signer.finish('sign');
  await order.sendsSettled;
  assert.deepEqual(sent, ['c1', 'answer'], 'the unsigned offer never goes out, the rest do');
  assert.deepEqual(warnings, ['a offer could not be signed']);
  // A send that throws is its own failure too.
  order.outgoing(offer, () => { throw new Error('socket gone'); });
  order.outgoing(candidate(3), (e) => sent.push(e.payload.candidate));
  await signer.finish('sign');
  await order.sendsSettled;
  assert.deepEqual(sent, ['c1', 'answer', 'c3']);
});

test('what was queued for a link that has since been replaced is never sent on the new one', async () => {
  const signer = scriptedSigner();
  let generation = 1;
  const order = new SignedMessageOrder(signer, () => generation, quiet);
  const sent = [];
  order.outgoing(offer, () => sent.push('old offer'));
  order.outgoing(candidate(1), () => sent.push('old c1'));
  generation = 2;
  order.outgoing(candidate(2), (e) => sent.push(e.payload.candidate));
  await signer.finish('sign');
  await order.sendsSettled;
  assert.deepEqual(sent, ['c2'], 'the new link\'s candidate still waited its turn and went');
});

test('a received candidate waits for its offer\'s check; a rejected offer becomes descriptionRejected, in order', async () => {
  const signer = scriptedSigner();
  const order = new SignedMessageOrder(signer, () => 1, quiet);
  const fed = [];
  const feed = (input) => fed.push(`${input.type} ${input.envelope.type}`);
  order.incoming(candidate(0), 1, feed);
  assert.deepEqual(fed, ['message ice_candidate'], 'nothing pending: fed synchronously');
  order.incoming(offer, 1, feed);
  order.incoming(candidate(1), 1, feed);
  await settle();
  assert.deepEqual(fed, ['message ice_candidate']);
  await signer.finish('check', 'rejected');
  await order.receiveChain;
  assert.deepEqual(fed, ['message ice_candidate', 'descriptionRejected offer', 'message ice_candidate']);
});

test('a check that cannot run drops its message, never reports an interception, and the next message still arrives', async () => {
  const signer = scriptedSigner();
  const order = new SignedMessageOrder(signer, () => 1, quiet);
  const fed = [];
  const feed = (input) => fed.push(`${input.type} ${input.envelope.type}`);
  order.incoming(offer, 1, feed);
  order.incoming({ ...offer, type: 'answer' }, 1, feed);
  order.incoming({ v: 1, type: 'verify_failed', payload: {} }, 1, feed);
  order.incoming(candidate(1), 1, feed);
  await signer.finish('check', new Error('WebCrypto refused'));
  await settle();
  await signer.finish('check', 'pass');
  await settle();
  await signer.finish('check', 'dropped');
  await order.receiveChain;
  assert.deepEqual(fed, ['message answer', 'message ice_candidate'], 'the unforgeable verify_failed was dropped too');
  // A feed that throws does not poison the chain.
  order.incoming(offer, 1, () => { throw new Error('engine bug'); });
  order.incoming(candidate(2), 1, feed);
  await signer.finish('check', 'pass');
  await order.receiveChain;
  assert.deepEqual(fed.at(-1), 'message ice_candidate');
});

test('a verdict for a message whose link has been replaced is not fed, whatever it is', async () => {
  const signer = scriptedSigner();
  let generation = 1;
  const order = new SignedMessageOrder(signer, () => generation, quiet);
  const fed = [];
  order.incoming(offer, 1, (input) => fed.push(input.type));
  order.incoming({ ...offer, type: 'answer' }, 1, (input) => fed.push(input.type));
  generation = 2;
  await signer.finish('check', 'rejected');
  await signer.finish('check', 'pass');
  await order.receiveChain;
  assert.deepEqual(fed, []);
});

test('with the real SignedSignaling: a tampered offer is rejected and the candidate behind it still reaches the engine after it', async () => {
  const vectors = JSON.parse(readFileSync(new URL('../fixtures/verification/vectors.json', import.meta.url), 'utf8'));
  const [vector] = vectors.auth;
  const signing = new SignedSignaling(parseLinkKey(vector.key));
  signing.note({ type: 'room', roomId: vector.rid });
  signing.note({ type: 'participants', participants: [{ cid: vector.sender }, { cid: vector.receiver }], hostCid: vector.sender, myCid: vector.receiver });
  const order = new SignedMessageOrder(signing, () => 1, quiet);
  const fed = [];
  const feed = (input) => fed.push(`${input.type} ${input.envelope.type}`);
  const genuine = { v: 1, type: 'offer', rid: vector.rid, payload: { sdp: vector.sdp, auth: vector.auth, from: vector.sender } };
  const tampered = { ...genuine, payload: { ...genuine.payload, sdp: vector.sdp.replaceAll('4A:AD', '4A:AE').replaceAll('4a:ad', '4a:ae') } };
  assert.notEqual(tampered.payload.sdp, vector.sdp, 'the vector has a fingerprint to rewrite');
  order.incoming(genuine, 1, feed);
  order.incoming(candidate(1), 1, feed);
  order.incoming(tampered, 1, feed);
  order.incoming(candidate(2), 1, feed);
  await order.receiveChain;
  assert.deepEqual(fed, ['message offer', 'message ice_candidate', 'descriptionRejected offer', 'message ice_candidate']);
});

test('with the real SignedSignaling and nobody to sign for yet: the offer is not sent unsigned, and what follows still goes', async () => {
  const vectors = JSON.parse(readFileSync(new URL('../fixtures/verification/vectors.json', import.meta.url), 'utf8'));
  const [vector] = vectors.auth;
  const signing = new SignedSignaling(parseLinkKey(vector.key));
  signing.note({ type: 'room', roomId: vector.rid });
  signing.note({ type: 'participants', participants: [{ cid: vector.sender }], hostCid: vector.sender, myCid: vector.sender });
  const warnings = [];
  const order = new SignedMessageOrder(signing, () => 1, (message) => warnings.push(message));
  const sent = [];
  order.outgoing({ v: 1, type: 'offer', rid: vector.rid, payload: { sdp: vector.sdp } }, (e) => sent.push(e.type));
  order.outgoing(candidate(1), (e) => sent.push(e.payload.candidate));
  await order.sendsSettled;
  assert.deepEqual(sent, ['c1']);
  assert.deepEqual(warnings, ['a offer could not be signed: nobody to send it to yet']);
});
