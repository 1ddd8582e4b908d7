// Home: start a call, and see who is in the rooms you were in (live, through watch_rooms).
import { RESILIENCE } from '../constants.js';
import { recentRooms } from './recent-rooms.js';
import { openWebSocketLink } from '../runtime/websocket-link.js';
import { openSseLink, newSseSid } from '../runtime/sse-link.js';
import { newLinkKeyText } from '../verification/link-key.js';

const base = new URL('/', location.href);
const startButton = document.getElementById('start');
const startError = document.getElementById('start-error');
const occupancy = new Map();
const forceSse = new URLSearchParams(location.search).get('transports') === 'sse';

window.duet = { page: 'home', occupancy: () => Object.fromEntries(occupancy) };

startButton.addEventListener('click', async () => {
  startButton.disabled = true;
  startError.hidden = true;
  try {
    const response = await fetch(new URL('api/room-id', base), { method: 'POST', signal: AbortSignal.timeout(RESILIENCE.HTTP_REQUEST_TIMEOUT_MS) });
    if (!response.ok) throw new Error(response.status === 503 ? 'The server is restarting. Try again in a moment.' : `The server answered ${response.status}.`);
    const { roomId } = await response.json();
    // The new call's key goes in the fragment, which the browser never sends to a server (docs/security.md).
    location.assign(`/call/${roomId}${location.search}#k=${newLinkKeyText()}`);
  } catch (error) {
    startError.textContent = `Could not start a call: ${error.message}`;
    startError.hidden = false;
    startButton.disabled = false;
  }
});

function render() {
  const rooms = recentRooms.list();
  const section = document.getElementById('recent');
  section.hidden = rooms.length === 0;
  const list = document.getElementById('recent-list');
  list.replaceChildren(...rooms.map(({ roomId, at, key }) => {
    const item = document.createElement('li');
    const link = document.createElement('a');
    link.href = `/call/${roomId}${location.search}${key ? `#k=${key}` : ''}`;  // ?transports / ?relay carry over
    link.textContent = `Call from ${new Date(at).toLocaleString()}`;
    const count = document.createElement('span');
    count.className = 'occupancy';
    const n = occupancy.get(roomId);
    count.textContent = n === undefined ? '…' : n === 0 ? 'empty' : n === 1 ? '1 person waiting' : `${n} people in the call`;
    item.append(link, count);
    return item;
  }));
}

// Occupancy is a nicety: if signaling is down, the list still works and retries quietly.
async function watch(attempt = 0) {
  const rids = recentRooms.list().map((r) => r.roomId);
  if (rids.length === 0) return;
  const handlers = {
    onMessage(envelope) {
      if (envelope.type === 'room_statuses') for (const [rid, n] of Object.entries(envelope.payload ?? {})) occupancy.set(rid, n);
      if (envelope.type === 'room_status_update') occupancy.set(envelope.payload.rid, envelope.payload.count);
      render();
    },
    onClose() { retry(attempt); },
  };
  try {
    // Same rule as a call's signaling: SSE when forced, or after WebSocket failed repeatedly.
    const useSse = forceSse || attempt >= RESILIENCE.WS_FALLBACK_CONSECUTIVE_FAILURES;
    const link = await (useSse ? openSseLink(base, newSseSid(), handlers) : openWebSocketLink(base, handlers));
    link.send({ v: 1, type: 'watch_rooms', payload: { rids } });
    attempt = 0;  // a working link starts the backoff (and the WebSocket preference) afresh
  } catch {
    retry(attempt);
  }
}

function retry(attempt) {
  const delay = Math.min(RESILIENCE.RECONNECT_BACKOFF_BASE_MS * 2 ** attempt, RESILIENCE.RECONNECT_BACKOFF_CAP_MS);
  setTimeout(() => watch(attempt + 1), delay);
}

render();
watch();
