// The SSE fallback: a streaming fetch for server → client (so the `: ping` comments are visible and a
// silent stream can be declared dead) and one POST per message for client → server.
import { RESILIENCE } from '../constants.js';

export function newSseSid() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return 'S-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export function openSseLink(baseUrl, sid, { onMessage, onClose }, signal) {
  const url = new URL(`sse?sid=${encodeURIComponent(sid)}`, baseUrl);
  const abort = new AbortController();
  let closed = false;
  let silenceTimer;
  let postChain = Promise.resolve();

  const finish = (reason, detail) => {
    if (closed) return;
    closed = true;
    clearTimeout(silenceTimer);
    abort.abort();
    onClose(reason, detail);
  };
  signal?.addEventListener('abort', () => abort.abort());
  const heard = () => {
    clearTimeout(silenceTimer);
    silenceTimer = setTimeout(() => finish('networkError'), RESILIENCE.SSE_SILENCE_TIMEOUT_MS);
  };

  const link = {
    kind: 'sse',
    // POSTs go out one at a time so the server sees them in the order they were written.
    send(envelope) {
      if (closed) throw new Error('sse link is closed');
      const body = JSON.stringify(envelope);
      postChain = postChain.then(async () => {
        if (closed) return;
        try {
          const response = await fetch(url, {
            method: 'POST', body, headers: { 'Content-Type': 'application/json' },
            signal: AbortSignal.timeout(RESILIENCE.HTTP_REQUEST_TIMEOUT_MS),
          });
          // 401/410: this sid's stream is not (or no longer) ours; anything else unexpected: the link is unusable.
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
      closed = true;
      clearTimeout(silenceTimer);
      abort.abort();
    },
  };

  return (async () => {
    const response = await fetch(url, { headers: { Accept: 'text/event-stream' }, signal: abort.signal, cache: 'no-store' });
    if (!response.ok || !response.body) throw new Error(`sse refused (${response.status})`);
    heard();
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
        if (!closed) onMessage(envelope);
      },
    }).then(() => finish('closedByServer', closeCode === 4001 ? 'replaced' : undefined), () => finish('networkError'));
    return link;
  })();
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
