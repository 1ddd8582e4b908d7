import { roomQuery } from './room-query.js';

// One WebSocket signaling connection. It only reports what happened; when to retry or fall back
// to SSE is the engine's decision (SignalingLinkMachine), so nothing here reconnects by itself.

// `/ws?rid=ROOM` when the link is for a room (docs/protocol.md, Transports): the server takes it as a hint, a proxy in
// front of several nodes routes on it (deploy/nginx/duet-cluster.conf hashes it), so both people of a call reach
// the same node. A link for no room (the home page's watcher) has none. `via`: the node a drain named (room-query.js).
export function webSocketUrl(baseUrl, roomId = null, via = null) {
  const query = roomQuery(roomId, via);
  const url = new URL(query ? `ws?${query}` : 'ws', baseUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  return url;
}

export function openWebSocketLink(baseUrl, { onMessage, onClose }, signal, roomId = null, via = null) {
  const url = webSocketUrl(baseUrl, roomId, via);
  return new Promise((resolve, reject) => {
    let opened = false;
    let closed = false;
    const socket = new WebSocket(url);
    const link = {
      kind: 'ws',
      send(envelope) {
        if (socket.readyState !== WebSocket.OPEN) throw new Error('websocket is not open');
        socket.send(JSON.stringify(envelope));
      },
      // Resolves once what was queued has left (bufferedAmount drained) or the bound passes.
      async flush(timeoutMs) {
        const until = performance.now() + timeoutMs;
        while (socket.readyState === WebSocket.OPEN && socket.bufferedAmount > 0 && performance.now() < until) {
          await new Promise((r) => setTimeout(r, 20));
        }
      },
      close() {
        closed = true;
        try { socket.close(1000); } catch { /* already closing */ }
      },
    };
    signal?.addEventListener('abort', () => { if (!opened) { closed = true; socket.close(); reject(new Error('abandoned')); } });
    socket.onopen = () => { opened = true; resolve(link); };
    socket.onmessage = (event) => {
      if (closed) return;
      let envelope;
      try { envelope = JSON.parse(event.data); } catch { return; }  // not ours to crash on
      onMessage(envelope);
    };
    socket.onclose = (event) => {
      if (!opened) { reject(new Error(`websocket refused (${event.code})`)); return; }
      if (closed) return;
      closed = true;
      // 1001/1012 (going away / restart) are the server's decision; the rest is the network. 4001: our seat
      // was taken over with our own token, by another tab or device — reconnecting would only take it back.
      if (event.code === 4001) { onClose('closedByServer', 'replaced'); return; }
      const byServer = [1000, 1001, 1008, 1009, 1012].includes(event.code);
      onClose(byServer ? 'closedByServer' : 'networkError');
    };
  });
}
