// Home: start a call; your calls (named, with who is in them now, Call, Ring me here); the history of calls on this
// browser; and incoming calls while the page is open (issue 31).
import { RESILIENCE } from '../constants.js';
import { newLinkKeyText } from '../verification/link-key.js';
import { savedCalls, callHistory, myName } from '../ringing/saved-calls.js';
import { deviceId } from '../ringing/device-identity.js';
import { RoomWatch } from '../ringing/room-watch.js';
import { IncomingCalls, sheetElements } from '../ringing/incoming-calls.js';
import { setRingMeHere, pushSupport, registerWorker } from '../ringing/ring-me-here.js';
import { ringStore } from '../ringing/ring-store.js';

const base = new URL('/', location.href);
const $ = (id) => document.getElementById(id);
const startButton = $('start');
const startError = $('start-error');
const occupancy = new Map();
const forceSse = new URLSearchParams(location.search).get('transports') === 'sse';
const me = deviceId();

function announce(text) { $('announcer').textContent = text; }

const watch = new RoomWatch({
  baseUrl: base, deviceId: me, forceSse,
  rooms: () => savedCalls.list().map(({ roomId, memberToken }) => ({ roomId, memberToken })),
  onMessage(envelope) {
    if (envelope.type === 'room_statuses') for (const [rid, n] of Object.entries(envelope.payload ?? {})) occupancy.set(rid, n);
    if (envelope.type === 'room_status_update') occupancy.set(envelope.payload.rid, envelope.payload.count);
    if (['room_statuses', 'room_status_update'].includes(envelope.type)) render();
    incoming.message(envelope);
  },
});
const incoming = new IncomingCalls({
  watch, announce,
  elements: sheetElements(document),
});

window.duet = {
  page: 'home',
  occupancy: () => Object.fromEntries(occupancy),
  deviceId: me,
  // {state: 'ringing'|'accepted'|'declined'|'missed'|'answered_elsewhere'|null, roomId, callId, name, verified}
  get incoming() { return { ...incoming.state }; },
  get history() { return callHistory.list(); },
  get calls() { return savedCalls.list().map(({ roomId, name, ringMe }) => ({ roomId, name, ringMe })); },
};

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

const nameInput = $('my-name');
nameInput.value = myName.get();
nameInput.addEventListener('change', () => myName.set(nameInput.value));

function callLink({ roomId, key }, query = '') {
  const search = new URLSearchParams(location.search);  // ?transports / ?relay carry over
  if (query) search.set('ring', '1');
  const text = search.toString();
  return `/call/${roomId}${text ? `?${text}` : ''}${key ? `#k=${key}` : ''}`;
}

function describe(n) { return n === undefined ? '…' : n === 0 ? 'empty' : n === 1 ? '1 person waiting' : `${n} people in the call`; }

function render() {
  const rooms = savedCalls.list();
  $('recent').hidden = rooms.length === 0;
  $('recent-list').replaceChildren(...rooms.map((room) => {
    const item = document.createElement('li');
    item.className = 'saved-call';
    item.dataset.roomId = room.roomId;
    const label = room.name || `Call from ${new Date(room.at).toLocaleString()}`;
    const link = document.createElement('a');
    link.href = callLink(room);
    link.textContent = label;
    const count = document.createElement('span');
    count.className = 'occupancy';
    count.textContent = describe(occupancy.get(room.roomId));
    const call = document.createElement('a');
    call.className = 'button primary';
    call.href = callLink(room, 'ring');
    call.textContent = 'Call';
    call.setAttribute('aria-label', `Call ${label}`);
    const rename = document.createElement('button');
    rename.type = 'button';
    rename.textContent = 'Name';
    rename.setAttribute('aria-label', `Name ${label}`);
    rename.addEventListener('click', () => {
      const name = prompt('Name this call (for example, who it is with):', room.name);
      if (name !== null) savedCalls.rename(room.roomId, name);
    });
    const ring = document.createElement('label');
    ring.className = 'ring-me';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.checked = room.ringMe;
    box.disabled = !room.memberToken;
    box.addEventListener('change', async () => {
      box.disabled = true;
      const result = await setRingMeHere({ baseUrl: base, roomId: room.roomId, deviceId: me, on: box.checked });
      $('ring-me-status').textContent = result.ok ? (box.checked ? `${label}: this browser will ring, even when Duet is closed.` : `${label}: ringing here is off.`) : result.message;
      if (!result.ok) box.checked = !box.checked;
      box.disabled = false;
    });
    ring.append(box, ' Ring me here');
    if (!room.memberToken) ring.title = 'Join this call once from this browser first';
    item.append(link, count, call, rename, ring);
    return item;
  }));
  renderHistory();
}

const OUTCOMES = {
  answered: 'Incoming, answered', missed: 'Missed call', declined: 'Declined', answered_elsewhere: 'Answered on another device',
  accepted: 'Outgoing, answered', no_answer: 'Outgoing, no answer', cancelled: 'Outgoing, cancelled', unreachable: 'Outgoing, could not ring',
};

function renderHistory() {
  const rows = callHistory.list();
  $('history').hidden = rows.length === 0;
  const names = new Map(savedCalls.list().map((r) => [r.roomId, r.name]));
  $('history-list').replaceChildren(...rows.map((row) => {
    const item = document.createElement('li');
    item.className = `history-${row.direction} history-${row.outcome}`;
    item.dataset.outcome = row.outcome;
    item.dataset.direction = row.direction;
    const who = names.get(row.roomId) || row.name || 'A saved call';
    const duration = row.durationMs ? ` · ${Math.round(row.durationMs / 1000)} s` : '';
    item.textContent = `${OUTCOMES[row.outcome] ?? row.outcome} · ${who} · ${new Date(row.at).toLocaleString()}${duration}`;
    return item;
  }));
}

// Calls the service worker rang, missed or answered while no page was open join the history.
callHistory.absorbWorkerHistory(() => ringStore.takeSeen());
savedCalls.onChange(() => { render(); watch.refresh(); });
addEventListener('storage', () => { render(); watch.refresh(); });
render();
watch.start();
// The worker shows rings when no page is open; registering it is what makes Duet installable.
if (pushSupport().ok || 'serviceWorker' in navigator) registerWorker()?.catch(() => {});
