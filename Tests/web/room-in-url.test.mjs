// The room in the signaling URLs (docs/protocol.md, Transports: `?rid=ROOM` on either transport): a call's
// WebSocket is `/ws?rid=ROOM`, its SSE stream and every POST `/sse?sid=SID&rid=ROOM`, URL-encoded, so a proxy in
// front of several nodes (deploy/nginx/duet-cluster.conf: `hash $arg_rid consistent`) sends all of a room's
// connections to one node. A link for no room (the home page's watcher) carries none.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { webSocketUrl, openWebSocketLink } from '../../Sources/DuetWeb/Web/js/runtime/websocket-link.js';
import { sseUrl, createSseLink } from '../../Sources/DuetWeb/Web/js/runtime/sse-link.js';
import { BASE, installFakeSseServer, settle, sseSession } from './support/fake-sse-server.mjs';

const ROOM = 'AbCdEfGhIjKlMnOpQrStUvWx-_0';  // the shape of a real room id: 27 base64url characters
const ODD = 'a b&c=d/e?f#g+h%';               // not a room id, but whatever is given is encoded, never spliced in
const handlers = { onMessage() {}, onClose() {} };

test('the WebSocket URL names the room, URL-encoded, and keeps the scheme of the page', () => {
  assert.equal(webSocketUrl('http://duet.test/', ROOM).href, `ws://duet.test/ws?rid=${ROOM}`);
  assert.equal(webSocketUrl('https://duet.test/', ROOM).href, `wss://duet.test/ws?rid=${ROOM}`);
  const odd = webSocketUrl('https://duet.test/', ODD);
  assert.equal(odd.search, `?rid=${encodeURIComponent(ODD)}`);
  assert.equal(odd.searchParams.get('rid'), ODD, 'decodes back to the same room');
  assert.equal(odd.pathname, '/ws');
  assert.equal(webSocketUrl('http://duet.test/').href, 'ws://duet.test/ws', 'no room, no rid');
  assert.equal(webSocketUrl('http://duet.test/', null).href, 'ws://duet.test/ws');
});

test('the SSE URL names the sid and the room, URL-encoded', () => {
  assert.equal(sseUrl(BASE, 'S-0011223344556677', ROOM).href, `${BASE}sse?sid=S-0011223344556677&rid=${ROOM}`);
  const odd = sseUrl(BASE, 'S-1', ODD);
  assert.equal(odd.search, `?sid=S-1&rid=${encodeURIComponent(ODD)}`);
  assert.equal(odd.searchParams.get('rid'), ODD);
  assert.equal(odd.searchParams.get('sid'), 'S-1');
  assert.equal(sseUrl(BASE, 'S-1').href, `${BASE}sse?sid=S-1`, 'no room, no rid');
});

test('openWebSocketLink connects to /ws?rid= for a room, to /ws without one', async (t) => {
  const RealWebSocket = globalThis.WebSocket;
  const opened = [];
  globalThis.WebSocket = class {
    static OPEN = 1;
    constructor(url) {
      this.url = String(url);
      this.readyState = 1;
      opened.push(this.url);
      setImmediate(() => this.onopen?.());
    }
    send() {}
    close() {}
  };
  t.after(() => { globalThis.WebSocket = RealWebSocket; });
  (await openWebSocketLink('https://duet.test/', handlers, undefined, ODD)).close();
  (await openWebSocketLink('http://duet.test/', handlers)).close();
  assert.deepEqual(opened, [`wss://duet.test/ws?rid=${encodeURIComponent(ODD)}`, 'ws://duet.test/ws']);
});

test('an SSE link for a room sends rid on its stream and on every POST', async (t) => {
  const server = installFakeSseServer(t);
  const { link, opened } = createSseLink(BASE, 'S-0011223344556677', handlers, undefined, ODD);
  await settle();
  server.streams[0].push(': ready\n\n' + sseSession('tok-rid'));
  await opened;
  link.send({ v: 1, type: 'ping', payload: { ts: 1 } });
  link.send({ v: 1, type: 'ping', payload: { ts: 2 } });
  await settle();
  const expected = `${BASE}sse?sid=S-0011223344556677&rid=${encodeURIComponent(ODD)}`;
  assert.equal(server.streams[0].url, expected);
  assert.deepEqual(server.posts.map((p) => p.url), [expected, expected]);
  assert.equal(server.posts[0].sid, 'S-0011223344556677', 'the sid is still read as before');
  link.close();
});

test('an SSE link for no room (the home page) sends no rid', async (t) => {
  const server = installFakeSseServer(t);
  const { link, opened } = createSseLink(BASE, 'S-2', handlers);
  await settle();
  server.streams[0].push(sseSession('tok-none'));
  await opened;
  link.send({ v: 1, type: 'ping', payload: { ts: 1 } });
  await settle();
  assert.equal(server.streams[0].url, `${BASE}sse?sid=S-2`);
  assert.equal(server.posts[0].url, `${BASE}sse?sid=S-2`);
  link.close();
});

// After a drain that named the room's next node (`draining {via}`), every request of the room carries `&via=NODE`
// beside its rid (deploy/nginx/duet-cluster.conf routes it to that node), encoded alike; no room, no via.
test('a drain\'s via rides beside the room on both transports, URL-encoded', async (t) => {
  assert.equal(webSocketUrl('https://duet.test/', ROOM, 'node2').href, `wss://duet.test/ws?rid=${ROOM}&via=node2`);
  const odd = webSocketUrl('https://duet.test/', ROOM, ODD);
  assert.equal(odd.searchParams.get('via'), ODD, 'decodes back to the same node');
  assert.equal(odd.searchParams.get('rid'), ROOM);
  assert.equal(webSocketUrl('http://duet.test/', null, 'node2').href, 'ws://duet.test/ws', 'a via means nothing without its room');
  assert.equal(sseUrl(BASE, 'S-1', ROOM, 'node3').href, `${BASE}sse?sid=S-1&rid=${ROOM}&via=node3`);
  const server = installFakeSseServer(t);
  const { link, opened } = createSseLink(BASE, 'S-3', handlers, undefined, ROOM, 'node3');
  await settle();
  server.streams[0].push(sseSession('tok-via'));
  await opened;
  link.send({ v: 1, type: 'ping', payload: { ts: 1 } });
  await settle();
  const expected = `${BASE}sse?sid=S-3&rid=${ROOM}&via=node3`;
  assert.equal(server.streams[0].url, expected);
  assert.deepEqual(server.posts.map((p) => p.url), [expected], 'every POST of the stream goes where the stream went');
  link.close();
});
