// The SSE fallback: a streaming fetch for server → client (so the `: ping` comments are visible and a
// silent stream can be declared dead) and one POST per message for client → server.
//
// POST binding (docs/protocol.md, Transports): the first message of every stream is
// `sse_session {postToken}`, and every POST must carry that stream's token in `X-Duet-Post-Token` (else 401).
// It is a transport matter: the link consumes it (the engine never sees it), and the link is open only once it
// has arrived, so nothing is ever posted without the current stream's token. One link is one stream: a
// reconnect is a new link, with the new stream's token; a closed link posts nothing more.
import { RESILIENCE } from '../constants.js';
import { roomQuery } from './room-query.js';

export const POST_TOKEN_HEADER = 'X-Duet-Post-Token';
const SSE_SESSION = 'sse_session';

export function newSseSid() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return 'S-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * `sse?sid=SID`, and `&rid=ROOM` when the link is for a room: the same URL for the stream and every POST, so a
 * proxy routing rooms to nodes by rid (deploy/nginx/duet-cluster.conf) sends them to the node that holds the sid's
 * stream. The server takes rid as a hint only (docs/protocol.md, Transports).
 */
export function sseUrl(baseUrl, sid, roomId = null, via = null) {
  const room = roomQuery(roomId, via);
  return new URL(`sse?sid=${encodeURIComponent(sid)}` + (room ? `&${room}` : ''), baseUrl);
}

/**
 * Resolves with the link once the stream has sent `sse_session`; rejects if the stream is refused, ends, is
 * aborted through `signal`, starts with another message, or sends no `sse_session` within CONNECT_TIMEOUT_MS
 * of answering (a server without the POST binding: its POSTs would all be refused). `onClose` is only called
 * for a link that was open.
 */
export function openSseLink(baseUrl, sid, handlers, signal, roomId = null, via = null) {
  return createSseLink(baseUrl, sid, handlers, signal, roomId, via).opened;
}

/** The link before it is open (`send` queues until the stream's token is known) and its opening. */
export function createSseLink(baseUrl, sid, { onMessage, onClose }, signal, roomId = null, via = null) {
  const url = sseUrl(baseUrl, sid, roomId, via);
  const abort = new AbortController();
  let state = 'opening';  // → 'open' when sse_session arrives → 'closed'
  let postToken = null;   // this stream's, from its sse_session
  let silenceTimer;
  let sessionTimer;
  let resolveOpen;
  let rejectOpen;
  const opened = new Promise((resolve, reject) => { resolveOpen = resolve; rejectOpen = reject; });
  opened.catch(() => {});  // whoever opens sees the failure; nobody else has to
  // POSTs wait for the token; when the link ends without one, they are dropped.
  let releasePosts;
  let postChain = new Promise((resolve) => { releasePosts = resolve; });
  // Messages that follow sse_session at once wait until whoever awaits `opened` has the link.
  let early = [];

  const stop = () => {
    clearTimeout(silenceTimer);
    clearTimeout(sessionTimer);
    abort.abort();
    releasePosts();
  };
  // Before open, the open fails (nobody has the link to be told it closed); after, onClose says why.
  const finish = (reason, detail) => {
    if (state === 'closed') return;
    const wasOpen = state === 'open';
    state = 'closed';
    stop();
    if (wasOpen) onClose(reason, detail);
    else rejectOpen(new Error(`sse stream ended before ${SSE_SESSION} (${detail ?? reason})`));
  };
  const failOpen = (error) => {
    if (state !== 'opening') return;
    state = 'closed';
    stop();
    rejectOpen(error);
  };
  if (signal?.aborted) abort.abort();
  signal?.addEventListener('abort', () => abort.abort());
  const heard = () => {
    clearTimeout(silenceTimer);
    silenceTimer = setTimeout(() => finish('networkError'), RESILIENCE.SSE_SILENCE_TIMEOUT_MS);
  };

  const link = {
    kind: 'sse',
    // POSTs go out one at a time so the server sees them in the order they were written, each with the token
    // of this link's stream.
    send(envelope) {
      if (state === 'closed') throw new Error('sse link is closed');
      const body = JSON.stringify(envelope);
      postChain = postChain.then(async () => {
        if (state !== 'open') return;
        try {
          const response = await fetch(url, {
            method: 'POST', body,
            headers: { 'Content-Type': 'application/json', [POST_TOKEN_HEADER]: postToken },
            signal: AbortSignal.timeout(RESILIENCE.HTTP_REQUEST_TIMEOUT_MS),
          });
          // 401: this sid's current stream is not ours (a reused seated sid not proven, or another stream took
          // the sid, so our token is no longer its token); 410: the server forgot the sid. The message was not
          // taken: the link is closed, never treated as delivered. Anything else unexpected: the link is unusable.
          if (response.status === 401 || response.status === 410) finish('closedByServer', 'sidRejected');
          else if (response.status !== 204 && response.status !== 200) finish('closedByServer');
        } catch {
          finish('networkError');
        }
      });
    },
    async flush(timeoutMs) {
      await Promise.race([postChain, new Promise((r) => setTimeout(r, timeoutMs))]);
    },
    close() {
      if (state === 'closed') return;
      const wasOpen = state === 'open';
      state = 'closed';
      stop();
      if (!wasOpen) rejectOpen(new Error('sse link closed before it opened'));
    },
  };

  const startSession = (envelope) => {
    // A stream has one token, given first; a later sse_session is not signaling either, and changes nothing.
    if (state !== 'opening') return;
    const token = envelope.payload?.postToken;
    if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
      return failOpen(new Error(`${SSE_SESSION} without a usable postToken`));
    }
    postToken = token;
    state = 'open';
    clearTimeout(sessionTimer);
    resolveOpen(link);
    releasePosts();
    // Queued behind the reaction of whoever awaits `opened` (attached before it resolved), so the engine hears
    // `transportOpened` before any message of the stream. No timer: a hidden tab would throttle it.
    opened.then(() => queueMicrotask(() => {
      const pending = early;
      early = null;
      for (const message of pending) if (state === 'open') onMessage(message);
    }));
  };

  (async () => {
    const response = await fetch(url, { headers: { Accept: 'text/event-stream' }, signal: abort.signal, cache: 'no-store' });
    if (!response.ok || !response.body) throw new Error(`sse refused (${response.status})`);
    if (state !== 'opening') return;
    heard();
    // The same bound as the engine's connect timeout, counted from the answer: the engine's own timer (started
    // with the request) goes first when it drives the link; without an engine (the home page) this one does.
    sessionTimer = setTimeout(() => failOpen(new Error(`no ${SSE_SESSION} from the stream`)), RESILIENCE.CONNECT_TIMEOUT_MS);
    // `: close CODE REASON` before the stream ends: what a WebSocket close frame would say (4001: replaced).
    let closeCode = null;
    readStream(response.body, {
      onComment: (text) => {
        heard();
        const match = /^close (\d+)/.exec(text);
        if (match) closeCode = Number(match[1]);
      },
      onData: (data) => {
        heard();
        let envelope;
        try { envelope = JSON.parse(data); } catch { return; }
        if (envelope?.type === SSE_SESSION) return startSession(envelope);
        if (state === 'opening') return failOpen(new Error(`the stream did not start with ${SSE_SESSION}`));
        if (state !== 'open') return;
        if (early) early.push(envelope);
        else onMessage(envelope);
      },
    }).then(() => finish('closedByServer', closeCode === 4001 ? 'replaced' : undefined), () => finish('networkError'));
  })().catch(failOpen);

  return { link, opened };
}

// The event-stream format: lines, `data:` fields joined by newlines, an empty line ends an event.
async function readStream(body, { onComment, onData }) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let newline;
    while ((newline = buffer.search(/\r\n|\n|\r/)) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
      if (line === '') {
        if (data.length) onData(data.join('\n'));
        data = [];
      } else if (line.startsWith(':')) {
        onComment(line.slice(1).trim());
      } else if (line.startsWith('data')) {
        const rest = line.slice(4);
        data.push(rest.startsWith(': ') ? rest.slice(2) : rest.startsWith(':') ? rest.slice(1) : '');
      }
    }
  }
}
