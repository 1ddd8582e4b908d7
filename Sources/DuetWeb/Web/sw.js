// Duet's service worker (issue 31): shows a ring when no Duet page is open, with Accept and Decline; closes it when
// the ring ends elsewhere (a missed call, or answered on another device); the seed's join alert. Served at /sw.js so
// that its scope is the whole site. What it needs of a call (the link's key to open the caller's sealed name, the
// member token to answer) is in IndexedDB, put there by the page when "Ring me here" was turned on.
import { openCaller } from './js/ringing/caller-seal.js';
import { ringStore } from './js/ringing/ring-store.js';
import { parseLinkKey } from './js/verification/link-key.js';
import { snapshotPicture } from './js/ringing/snapshot.js';

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => event.waitUntil(onPush(event.data)));
self.addEventListener('notificationclick', (event) => event.waitUntil(onNotificationAction(event.notification, event.action)));

async function onPush(data) {
  let message = null;
  try { message = data?.json() ?? null; } catch { message = null; }
  // Every push must show something (userVisibleOnly): one this worker does not understand says so plainly.
  // Every text shown is this worker's own: the server's title and body are never displayed (a server could write
  // "Mum is calling" into them; only a name sealed with the link's key is shown as a caller).
  if (!message || typeof message !== 'object') return self.registration.showNotification('Duet', { body: 'Something happened in one of your calls.' });
  const rid = /^[A-Za-z0-9_-]{27}$/.test(String(message.roomId)) ? message.roomId : null;
  switch (message.kind) {
    case 'ring': return rid ? showRing({ ...message, roomId: rid }) : undefined;
    case 'ring_end': return rid ? endRing({ ...message, roomId: rid }) : undefined;
    case 'join': {
      const saved = rid ? await ringStore.get(rid).catch(() => undefined) : undefined;
      const picture = rid ? await pictureOf(rid, message.snapshotId, saved, 'join') : null;
      return self.registration.showNotification('Duet', {
        body: `Someone joined ${saved?.name ? `“${saved.name}”` : 'one of your calls'}`, tag: `join-${rid}`, data: { kind: 'join', rid, picture: !!picture },
        ...(picture ? { image: picture, icon: picture } : {}),
      });
    }
    default: return self.registration.showNotification('Duet', { body: 'Something happened in one of your calls.' });
  }
}

// The snapshot of who joined or calls (js/ringing/snapshot.js): shown only when it opens with this browser's key and
// the link's key proves it came from the call; otherwise the notification has no picture.
async function pictureOf(rid, snapshotId, saved, purpose) {
  if (typeof snapshotId !== 'string' || !saved?.key) return null;
  const deviceKey = await ringStore.deviceKey().catch(() => undefined);
  return snapshotPicture({
    baseUrl: self.location.origin + '/', rid, snapshotId, purpose, deviceKey, endpoint: saved.endpoint, linkKey: parseLinkKey(saved.key),
  });
}

async function showRing({ roomId: rid, callId, caller, expiresAt, snapshotId }) {
  // A join alert for the same room is superseded by the ring.
  (await self.registration.getNotifications({ tag: `join-${rid}` })).forEach((n) => n.close());
  const saved = await ringStore.get(rid).catch(() => undefined);
  const opened = await openCaller({ caller, rid, callId, linkKey: parseLinkKey(saved?.key ?? '') });
  const callName = saved?.name || 'a saved call';
  // Past its time (a push delivered late): not a ring any more.
  if (typeof expiresAt === 'number' && expiresAt < Date.now()) return missed(rid, callId, opened);
  // A Duet page in view (home or a call: both have the incoming sheet) rings with its own sheet: a notification as
  // well would be the same call twice. Any other page of the site (a 404, the connection check) rings nothing itself.
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  if (windows.some((client) => client.visibilityState === 'visible' && ringsItself(client.url))) return undefined;
  const picture = await pictureOf(rid, snapshotId, saved, `ring:${callId}`);
  return self.registration.showNotification(opened.verified ? opened.name : 'Incoming call', {
    ...(picture ? { image: picture, icon: picture } : {}),
    body: opened.verified ? `Calling you in ${callName}` : `In ${callName} (caller not verified)`,
    tag: callId, renotify: true, requireInteraction: true, vibrate: [400, 200, 400, 200, 400],
    actions: [{ action: 'accept', title: 'Accept' }, { action: 'decline', title: 'Decline' }],
    data: { kind: 'ring', rid, callId, name: opened.verified ? opened.name : null, picture: !!picture, answers: opened.answers ?? null },
  });
}

// The pages with the incoming sheet: `/` and `/call/<room id>` (WebClientRoutes.swift serves them; anything else of
// the site is a 404 or the connection check).
function ringsItself(url) {
  const path = new URL(url).pathname;
  return path === '/' || /^\/call\/[A-Za-z0-9_-]{27}$/.test(path);
}

async function endRing({ roomId: rid, callId, reason }) {
  const shown = await self.registration.getNotifications({ tag: callId });
  const name = shown[0]?.data?.name ?? null;
  shown.forEach((notification) => notification.close());
  if (reason === 'answered_elsewhere' || reason === 'accepted') {
    ringStore.noteSeen({ roomId: rid, callId, outcome: 'answered_elsewhere', name }).catch(() => {});
    return self.registration.showNotification('Answered on another device', { tag: callId, silent: true, data: { kind: 'ended', rid } });
  }
  if (reason === 'declined') return self.registration.showNotification('Call declined', { tag: callId, silent: true, data: { kind: 'ended', rid } });
  return missed(rid, callId, { name });
}

function missed(rid, callId, { name }) {
  ringStore.noteSeen({ roomId: rid, callId, outcome: 'missed', name: name ?? null }).catch(() => {});
  return self.registration.showNotification(name ? `Missed call from ${name}` : 'Missed call', {
    body: 'Open Duet to call back.', tag: callId, data: { kind: 'missed', rid, callId },
  });
}

async function answer(rid, callId, answer, secret) {
  const saved = await ringStore.get(rid).catch(() => undefined);
  if (!saved?.memberToken) return false;
  try {
    // ?rid=: a cluster's proxy sends it to the node that holds the room (and the ring).
    const response = await fetch(`/api/ring/answer?rid=${encodeURIComponent(rid)}`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ rid, callId, answer, deviceId: saved.deviceId, memberToken: saved.memberToken, ...(secret ? { secret } : {}) }),
    });
    return response.ok;
  } catch {
    return false;
  }
}

async function openCall(rid) {
  const saved = await ringStore.get(rid).catch(() => undefined);
  const url = `/call/${rid}${saved?.key ? `#k=${saved.key}` : ''}`;
  const open = (await self.clients.matchAll({ type: 'window', includeUncontrolled: true }))
    .find((client) => new URL(client.url).pathname === `/call/${rid}`);
  if (open) return open.focus();
  return self.clients.openWindow(url);
}

// What a click on a notification (or one of its buttons) does. Named on `self` so that a test driving the worker
// through the DevTools protocol runs this very code for a notification it found (headless Chromium has no way to
// click one).
async function onNotificationAction(notification, action) {
  notification.close();
  const { kind, rid, callId } = notification.data ?? {};
  if (!rid) return;
  if (kind === 'ring' && action === 'decline') {
    await ringStore.noteSeen({ roomId: rid, callId, outcome: 'declined', name: notification.data?.name ?? null }).catch(() => {});
    return answer(rid, callId, 'decline', notification.data?.answers?.decline);
  }
  if (kind === 'ring') {
    await ringStore.noteSeen({ roomId: rid, callId, outcome: 'answered', name: notification.data?.name ?? null }).catch(() => {});
    // Accepting stops the other devices at once; joining would too, a moment later.
    await answer(rid, callId, 'accept', notification.data?.answers?.accept);
  }
  return openCall(rid);
}
self.duetNotificationAction = async (tag, action) => {
  const [notification] = await self.registration.getNotifications({ tag });
  if (!notification) return false;
  await onNotificationAction(notification, action);
  return true;
};
