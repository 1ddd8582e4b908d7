// A fake of the server's SSE transport behind `globalThis.fetch`, for runtime/sse-link.js: each
// `GET /sse?sid=` gets a stream the test writes into (`push`, `end`); each `POST /sse?sid=` is recorded with
// its `X-Duet-Post-Token` (and its full URL, `url`, as every stream's) and answered 204 (or `postStatus`), or held until the test answers it (`holdPosts`).

const encoder = new TextEncoder();

export const BASE = 'http://duet.test/';

/** `data: <sse_session envelope>` and the blank line that ends the event. */
export const sseSession = (postToken) => data({ v: 1, type: 'sse_session', ts: 1, payload: { postToken } });
export const data = (envelope) => `data: ${JSON.stringify(envelope)}\n\n`;

/** Lets the streams, the link's reads and its POST chain run (real macrotask turns; not mocked timers). */
export async function settle(turns = 10) {
  for (let i = 0; i < turns; i += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** Installs the fake for the test `t` (restored when it ends). */
export function installFakeSseServer(t) {
  const realFetch = globalThis.fetch;
  const server = { streams: [], posts: [], holdPosts: false, postStatus: 204 };
  globalThis.fetch = async (input, init = {}) => {
    const url = new URL(String(input));
    if (url.pathname !== '/sse') throw new Error(`unexpected fetch ${url}`);
    const sid = url.searchParams.get('sid');
    if ((init.method ?? 'GET') === 'GET') {
      let controller;
      const body = new ReadableStream({ start(c) { controller = c; } });
      const stream = {
        sid, url: url.href, aborted: false,
        push(text) { controller.enqueue(encoder.encode(text)); },
        end() { controller.close(); },
      };
      init.signal?.addEventListener('abort', () => {
        stream.aborted = true;
        try { controller.error(init.signal.reason); } catch { /* already ended */ }
      });
      server.streams.push(stream);
      return { ok: true, status: 200, body };
    }
    let answer;
    const answered = new Promise((resolve) => { answer = (status) => resolve({ ok: status >= 200 && status < 300, status }); });
    const post = {
      sid,
      url: url.href,
      token: new Headers(init.headers).get('X-Duet-Post-Token'),
      body: JSON.parse(init.body),
      answer,
    };
    server.posts.push(post);
    if (!server.holdPosts) answer(server.postStatus);
    return answered;
  };
  t.after(() => { globalThis.fetch = realFetch; });
  return server;
}
