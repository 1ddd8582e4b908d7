// runtime/sse-link.js and the POST binding (docs/protocol.md, Transports): the stream's first message,
// `sse_session {postToken}`, is the link's, not the engine's; the link opens only with it, and every POST
// carries the token of the link's stream in `X-Duet-Post-Token`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { openSseLink, createSseLink } from '../../Sources/DuetWeb/Web/js/runtime/sse-link.js';
import { BASE, data, installFakeSseServer, settle, sseSession } from './support/fake-sse-server.mjs';

const ping = (ts) => ({ v: 1, type: 'ping', payload: { ts } });
const recorder = () => {
  const seen = { messages: [], closes: [] };
  seen.handlers = { onMessage: (envelope) => seen.messages.push(envelope), onClose: (...why) => seen.closes.push(why) };
  return seen;
};
/** How `promise` has settled so far, without waiting for it. */
const watch = (promise) => {
  const outcome = { state: 'pending' };
  promise.then((value) => Object.assign(outcome, { state: 'resolved', value }), (error) => Object.assign(outcome, { state: 'rejected', error }));
  return outcome;
};

test('the token from sse_session is sent in X-Duet-Post-Token on the next POST', async (t) => {
  const server = installFakeSseServer(t);
  const seen = recorder();
  const opening = openSseLink(BASE, 'S-0011223344556677', seen.handlers);
  await settle();
  server.streams[0].push(': ready\n\n' + sseSession('tok-A_0123456789abcdefghij'));
  const link = await opening;
  link.send(ping(1));
  await settle();
  assert.equal(server.posts.length, 1);
  assert.equal(server.posts[0].sid, 'S-0011223344556677');
  assert.equal(server.posts[0].token, 'tok-A_0123456789abcdefghij');
  assert.deepEqual(server.posts[0].body, ping(1));
  link.close();
});

test('POSTs written before sse_session wait for it, then go out one at a time, in order, with its token', async (t) => {
  const server = installFakeSseServer(t);
  server.holdPosts = true;
  const seen = recorder();
  const { link, opened } = createSseLink(BASE, 'S-1', seen.handlers);
  const open = watch(opened);
  await settle();
  server.streams[0].push(': ready\n\n');
  link.send(ping(1));
  link.send(ping(2));
  link.send(ping(3));
  await settle();
  // `: ready` is not enough: the link is not open and has posted nothing without a token.
  assert.equal(open.state, 'pending');
  assert.equal(server.posts.length, 0);
  server.streams[0].push(sseSession('tok-B'));
  await settle();
  assert.equal(open.state, 'resolved');
  assert.equal(server.posts.length, 1, 'the next POST waits for the one in flight');
  for (let i = 0; i < 3; i += 1) {
    await settle();
    server.posts[i].answer(204);
  }
  await settle();
  assert.deepEqual(server.posts.map((post) => post.body.payload.ts), [1, 2, 3]);
  assert.deepEqual(server.posts.map((post) => post.token), ['tok-B', 'tok-B', 'tok-B']);
  assert.deepEqual(seen.closes, []);
  link.close();
});

test('a reconnect posts with the new stream\'s token; the old link posts nothing more and its stale 401 touches nothing', async (t) => {
  const server = installFakeSseServer(t);
  server.holdPosts = true;
  const first = recorder();
  const opening1 = openSseLink(BASE, 'S-2', first.handlers);
  await settle();
  server.streams[0].push(sseSession('tok-old'));
  const link1 = await opening1;
  link1.send(ping(1));  // in flight when the stream drops
  link1.send(ping(2));  // queued behind it
  await settle();
  server.streams[0].end();
  await settle();
  assert.deepEqual(first.closes, [['closedByServer', undefined]]);

  // The engine reconnects: a new link on the same sid, a new stream, a new token.
  const second = recorder();
  const opening2 = openSseLink(BASE, 'S-2', second.handlers);
  await settle();
  server.streams[1].push(sseSession('tok-new'));
  const link2 = await opening2;
  link2.send(ping(3));
  await settle();
  // The old stream's POST arrives after the new stream took the sid: refused. Not delivered, not success.
  server.posts[0].answer(401);
  await settle();
  server.posts.at(-1).answer(204);
  await settle();
  assert.deepEqual(server.posts.map((post) => [post.body.payload.ts, post.token]), [[1, 'tok-old'], [3, 'tok-new']]);
  assert.equal(first.closes.length, 1, 'the closed link reports nothing more');
  assert.deepEqual(second.closes, []);
  link2.send(ping(4));
  await settle();
  assert.equal(server.posts.at(-1).token, 'tok-new');
  server.posts.at(-1).answer(204);
  link2.close();
});

test('sse_session is consumed by the link, never delivered as a signaling message', async (t) => {
  const server = installFakeSseServer(t);
  const order = [];
  const handlers = { onMessage: (envelope) => order.push(envelope.type), onClose: () => order.push('closed') };
  const opening = openSseLink(BASE, 'S-3', handlers);
  opening.then(() => order.push('opened'));
  await settle();
  // What follows sse_session in the same read reaches the engine only after the link was handed over.
  server.streams[0].push(': ready\n\n' + sseSession('tok-C') + data({ v: 1, type: 'pong', payload: { ts: 1 } }));
  const link = await opening;
  await settle();
  server.streams[0].push(sseSession('tok-again') + data({ v: 1, type: 'joined', payload: {} }));
  await settle();
  assert.deepEqual(order, ['opened', 'pong', 'joined']);
  link.send(ping(2));
  await settle();
  assert.equal(server.posts[0].token, 'tok-C', 'a stream has one token, its first');
  link.close();
});

test('a stream that never sends sse_session (an old server) fails the open after CONNECT_TIMEOUT_MS', async (t) => {
  const server = installFakeSseServer(t);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const seen = recorder();
  const { link, opened } = createSseLink(BASE, 'S-4', seen.handlers);
  const open = watch(opened);
  link.send(ping(1));
  await settle();
  server.streams[0].push(': ready\n\n: ping\n\n');
  await settle();
  t.mock.timers.tick(RESILIENCE.CONNECT_TIMEOUT_MS - 1);
  await settle();
  assert.equal(open.state, 'pending');
  t.mock.timers.tick(1);
  await settle();
  assert.equal(open.state, 'rejected');
  assert.match(open.error.message, /sse_session/);
  assert.equal(server.streams[0].aborted, true, 'the stream is given up');
  assert.equal(server.posts.length, 0);
  assert.deepEqual(seen.closes, [], 'a link that never opened is not reported closed');
  assert.throws(() => link.send(ping(2)));
});

test('a stream whose first message is not sse_session fails the open at once', async (t) => {
  const server = installFakeSseServer(t);
  const seen = recorder();
  const open = watch(openSseLink(BASE, 'S-5', seen.handlers));
  await settle();
  server.streams[0].push(': ready\n\n' + data({ v: 1, type: 'pong', payload: { ts: 1 } }));
  await settle();
  assert.equal(open.state, 'rejected');
  assert.equal(server.streams[0].aborted, true);
  assert.deepEqual(seen.messages, []);
  assert.deepEqual(seen.closes, []);
});

test('giving up on the open while waiting for sse_session (the engine\'s connect timeout) fails it quietly', async (t) => {
  const server = installFakeSseServer(t);
  const seen = recorder();
  const abort = new AbortController();
  const open = watch(openSseLink(BASE, 'S-6', seen.handlers, abort.signal));
  await settle();
  server.streams[0].push(': ready\n\n');
  await settle();
  abort.abort();
  await settle();
  assert.equal(open.state, 'rejected');
  assert.equal(server.streams[0].aborted, true);
  assert.deepEqual(seen.closes, []);
});

test('a POST refused 401 with the current token closes the link as sidRejected; what was queued behind it is dropped', async (t) => {
  const server = installFakeSseServer(t);
  server.holdPosts = true;
  const seen = recorder();
  const opening = openSseLink(BASE, 'S-7', seen.handlers);
  await settle();
  server.streams[0].push(sseSession('tok-D'));
  const link = await opening;
  link.send(ping(1));
  link.send(ping(2));
  await settle();
  server.posts[0].answer(401);
  await settle();
  assert.deepEqual(seen.closes, [['closedByServer', 'sidRejected']]);
  assert.equal(server.posts.length, 1);
  assert.equal(server.streams[0].aborted, true);
  assert.throws(() => link.send(ping(3)));
});

test('a stream ended with `: close 4001 replaced` closes the link as replaced; `4003 superseded` as any server close (reconnect)', async (t) => {
  for (const [comment, detail] of [[': close 4001 replaced', 'replaced'], [': close 4003 superseded', undefined]]) {
    const server = installFakeSseServer(t);
    const seen = recorder();
    const opening = openSseLink(BASE, 'S-4', seen.handlers);
    await settle();
    server.streams.at(-1).push(sseSession('tok-C'));
    await opening;
    server.streams.at(-1).push(`${comment}\n\n`);
    server.streams.at(-1).end();
    await settle();
    assert.deepEqual(seen.closes, [['closedByServer', detail]], comment);
  }
});
