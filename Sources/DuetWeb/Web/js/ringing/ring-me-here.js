// "Ring me here" for one saved call (issue 31): registers the service worker, subscribes this browser to Web Push
// with the server's VAPID key, and gives the server the subscription with this device's member token; off, it
// unsubscribes. What the worker needs to show and answer a ring is mirrored to IndexedDB (ring-store.js).
// Each failure says what to do: notifications blocked, no push in this browser, an iPhone that must first add Duet
// to the Home Screen (iOS delivers web push only to installed web apps).
import { savedCalls } from './saved-calls.js';
import { ringStore } from './ring-store.js';
import { fromBase64url } from '../verification/link-key.js';
import { newDeviceKey, deviceKeyAuth } from './snapshot.js';
import { parseLinkKey } from '../verification/link-key.js';

export function pushSupport() {
  const ios = /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === 'MacIntel' && navigator.maxTouchPoints > 1);
  const installed = matchMedia?.('(display-mode: standalone)').matches || navigator.standalone === true;
  if (ios && !installed) {
    return { ok: false, reason: 'ios-not-installed', message: 'On an iPhone or iPad, Duet can ring you only once it is on your Home Screen: tap Share, then “Add to Home Screen”, and open Duet from there.' };
  }
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) {
    return { ok: false, reason: 'unsupported', message: 'This browser cannot receive calls when Duet is closed. Keep this page open to be rung here.' };
  }
  return { ok: true };
}

export async function registerWorker() {
  if (!('serviceWorker' in navigator)) return null;
  return navigator.serviceWorker.register('/sw.js', { type: 'module', scope: '/' });
}

async function vapidKey(baseUrl) {
  const response = await fetch(new URL('api/push/vapid-public-key', baseUrl));
  if (!response.ok) throw new Error(`the server answered ${response.status}`);
  return fromBase64url((await response.json()).publicKey);
}

/** Turns ringing by push on or off for `roomId`; resolves {ok, message}. */
export async function setRingMeHere({ baseUrl, roomId, deviceId, on }) {
  const saved = savedCalls.get(roomId);
  if (!saved) return { ok: false, message: 'This call is not saved in this browser.' };
  if (on && !saved.memberToken) return { ok: false, message: 'Join this call once from this browser first: that is how the server knows this browser may be rung in it.' };
  const support = pushSupport();
  if (on && !support.ok) return support;
  try {
    const registration = await registerWorker();
    await navigator.serviceWorker.ready;
    let subscription = await registration.pushManager.getSubscription();
    if (!on) {
      if (subscription) {
        const response = await fetch(new URL(`api/push/subscribe?roomId=${encodeURIComponent(roomId)}`, baseUrl), {
          method: 'DELETE', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ endpoint: subscription.endpoint }),
        });
        // Still on here until the server has forgotten the endpoint: a toggle showing off while the server rings on
        // would be a surprise. (404: it had forgotten it already.)
        if (!response.ok && response.status !== 404) return { ok: false, message: `The server refused: ${(await response.text()).trim()}` };
      }
      await ringStore.remove(roomId);
      savedCalls.update(roomId, { ringMe: false });
      // The last call rung here: the browser's subscription goes too, so that no push service keeps an endpoint for
      // a browser that asked for nothing (another call still rung here keeps it: one subscription serves them all).
      if (subscription && (await ringStore.rooms()).length === 0) await subscription.unsubscribe();
      return { ok: true };
    }
    const permission = await Notification.requestPermission();
    if (permission !== 'granted') {
      return { ok: false, reason: 'denied', message: 'Notifications are blocked for this site: allow them in the browser’s site settings, then turn this on again.' };
    }
    subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: await vapidKey(baseUrl) });
    const json = subscription.toJSON();
    // The key snapshots of the caller are encrypted to (snapshot.js): one per browser.
    const deviceKey = await ringStore.deviceKey(newDeviceKey);
    // Vouched for with the link's key: a joiner seals its picture only to keys this proves (snapshot.js).
    const linkKey = parseLinkKey(saved.key ?? '');
    const encKeyAuth = linkKey ? await deviceKeyAuth({ rid: roomId, publicJwk: deviceKey.publicJwk, linkKey }) : undefined;
    const response = await fetch(new URL(`api/push/subscribe?roomId=${encodeURIComponent(roomId)}`, baseUrl), {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ endpoint: json.endpoint, keys: json.keys, encPublicKey: deviceKey.publicJwk, encKeyAuth, deviceId, memberToken: saved.memberToken }),
    });
    if (!response.ok) return { ok: false, message: `The server refused: ${(await response.text()).trim()}` };
    // The endpoint names this device in a snapshot's recipients (snapshot.js recipientId).
    await ringStore.put(roomId, { deviceId, memberToken: saved.memberToken, key: saved.key, name: saved.name, endpoint: json.endpoint });
    savedCalls.update(roomId, { ringMe: true });
    return { ok: true };
  } catch (error) {
    return { ok: false, message: `Could not turn ${on ? 'on' : 'off'} ringing here: ${error.message}` };
  }
}
