// The calls this browser has been in (issue 31), kept in localStorage and never sent: the room, the link's key, the
// name the person gave it ("Mum"), the member token the server gave this browser there, and whether this browser
// wants to be rung there ("Ring me here"). Plus the history of every call: incoming, outgoing, missed, declined.
// The service worker cannot read localStorage: what it needs is mirrored to IndexedDB (ring-store.js).
import { parseLinkKey } from '../verification/link-key.js';
import { cleanName } from './caller-seal.js';

const CALLS = 'duet.recentRooms';
const HISTORY = 'duet.callHistory';
const MY_NAME = 'duet.myName';
const MAX_CALLS = 20;
const MAX_HISTORY = 100;

function read(key, fallback) {
  try { return JSON.parse(localStorage.getItem(key) ?? 'null') ?? fallback; } catch { return fallback; }
}
function write(key, value) {
  try { localStorage.setItem(key, JSON.stringify(value)); } catch { /* storage full or refused: the call goes on */ }
  listeners.forEach((listener) => listener());
}
const listeners = new Set();

export const savedCalls = {
  list() {
    const rows = read(CALLS, []);
    return (Array.isArray(rows) ? rows : []).filter((r) => typeof r?.roomId === 'string').map((r) => ({
      roomId: r.roomId, at: Number(r.at) || 0, key: parseLinkKey(r.key) ? r.key : null,
      name: typeof r.name === 'string' ? cleanName(r.name) : '', memberToken: typeof r.memberToken === 'string' ? r.memberToken : null,
      ringMe: r.ringMe === true,
    }));
  },
  get(roomId) { return this.list().find((r) => r.roomId === roomId) ?? null; },
  // keyText: the link's key as written in it, or null for a link without one. Newest first.
  remember(roomId, keyText = null) {
    const old = this.get(roomId);
    const rest = this.list().filter((r) => r.roomId !== roomId);
    write(CALLS, [{ ...(old ?? {}), roomId, at: Date.now(), key: keyText ?? old?.key ?? null }, ...rest].slice(0, MAX_CALLS));
  },
  update(roomId, change) {
    write(CALLS, this.list().map((r) => (r.roomId === roomId ? { ...r, ...change } : r)));
  },
  rename(roomId, name) { this.update(roomId, { name: cleanName(name) }); },
  forget(roomId) { write(CALLS, this.list().filter((r) => r.roomId !== roomId)); },
  onChange(listener) { listeners.add(listener); return () => listeners.delete(listener); },
};

// What this browser calls itself in the rings it makes (sealed with each link's key).
export const myName = {
  get() { return cleanName(read(MY_NAME, '')); },
  set(name) { write(MY_NAME, cleanName(name)); },
};

// {roomId, callId, direction: 'incoming'|'outgoing', outcome, at, durationMs?, name?}. Outcomes: incoming
// 'answered', 'missed', 'declined', 'answered_elsewhere'; outgoing 'accepted', 'declined', 'no_answer',
// 'cancelled', 'unreachable'. One entry per call id and direction: a later outcome replaces an earlier one.
export const callHistory = {
  list() {
    const rows = read(HISTORY, []);
    return Array.isArray(rows) ? rows.filter((r) => typeof r?.roomId === 'string' && typeof r?.outcome === 'string') : [];
  },
  record(entry) {
    const rest = this.list().filter((r) => !(r.callId === entry.callId && r.direction === entry.direction));
    write(HISTORY, [{ at: Date.now(), ...entry }, ...rest].sort((a, b) => b.at - a.at).slice(0, MAX_HISTORY));
  },
  // What the service worker saw while no page was open (ring-store.js), moved into the history.
  async absorbWorkerHistory(takeSeen) {
    let seen = [];
    try { seen = await takeSeen(); } catch { return; }
    for (const entry of seen) if (typeof entry?.roomId === 'string' && typeof entry?.callId === 'string') this.record(entry);
  },
  // The call that followed an answered ring: how long it lasted.
  finish(callId, durationMs) {
    write(HISTORY, this.list().map((r) => (r.callId === callId ? { ...r, durationMs } : r)));
  },
};
