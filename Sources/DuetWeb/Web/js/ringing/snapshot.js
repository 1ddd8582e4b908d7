// Join and ring snapshots (issue 31; Serenada's design, plus the call link's key): a still frame of whoever joins or
// calls, encrypted so that the server stores bytes only the room's subscribed devices can open, and cannot replace.
//
// - The picture: AES-256-GCM under a random content key.
// - For each device (its P-256 key, sent when it turned on "Ring me here"): ECDH with a fresh ephemeral key, HKDF-SHA-256
//   (the upload's random salt, info "duet snapshot wrap v1") → a key that seals the content key (AES-256-GCM).
// - Authenticated with the link key: HMAC-SHA-256 (key: HKDF of the link key, info "duet snapshot v1") over the room,
//   what it is for (`join`, or `ring:<callId>`), the time, the picture's IV, its type and the SHA-256 of the
//   ciphertext. The server knows every device's public key, so without this it could encrypt a picture of its own; it
//   cannot make this MAC. A device shows a picture only when the MAC holds, it is for this join or this very ring, and
//   it is at most SNAPSHOT_MAX_AGE_MS old: a link without a key shows none.
// - Sealed only to keys the link's key vouches for: a device MACs its public key (HKDF of the link key, info "duet
//   device key v1") when it subscribes, and a joiner skips any listed key without a valid MAC — a key the server
//   slipped into the list never gets a picture to open.
// Tests/web/snapshot.test.mjs opens snapshots made by Python's `cryptography` (Tests/e2e/push/make_snapshot_vectors.py)
// and the other way round.
import { base64url, fromBase64url } from '../verification/link-key.js';

const WRAP_INFO = new TextEncoder().encode('duet snapshot wrap v1');
const AUTH_INFO = new TextEncoder().encode('duet snapshot v1');
const DEVICE_KEY_INFO = new TextEncoder().encode('duet device key v1');
/** How long a device waits for a snapshot before it rings without the picture. */
export const SNAPSHOT_FETCH_TIMEOUT_MS = 1_500;
export const SNAPSHOT_MAX_AGE_MS = 10 * 60_000; // as long as the server keeps one (SnapshotLimits.lifetimeMs)
export const SNAPSHOT_WIDTH = 320;

/** base64 (Serenada's fields) or base64url, to bytes; null if neither. */
export function bytesOf(text) {
  if (typeof text !== 'string') return null;
  return fromBase64url(text.replace(/=+$/, '').replaceAll('+', '-').replaceAll('/', '_'));
}

/** This device's id in a room's recipient list (PushSubscriptionRecord.recipientId): from its push endpoint. */
export async function recipientId(rid, endpoint) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`duet-recipient|${rid}|${endpoint}`)));
  return base64url(digest).slice(0, 22);
}

/** A new device key pair: the private key cannot be exported (it stays in IndexedDB as a CryptoKey). */
export async function newDeviceKey() {
  const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
  const jwk = await crypto.subtle.exportKey('jwk', pair.publicKey);
  return { privateKey: pair.privateKey, publicJwk: { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y } };
}

async function wrapKey(privateKey, publicKey, salt) {
  const shared = await crypto.subtle.deriveBits({ name: 'ECDH', public: publicKey }, privateKey, 256);
  const material = await crypto.subtle.importKey('raw', shared, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt, info: WRAP_INFO }, material, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

async function macKey(linkKey, info) {
  const material = await crypto.subtle.importKey('raw', linkKey, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info }, material,
    { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign', 'verify']);
}

async function authData({ rid, purpose, at, iv, mime, ciphertext }) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', ciphertext));
  return new TextEncoder().encode(`duet-snapshot|${rid}|${purpose}|${at}|${base64url(iv)}|${mime}|${base64url(digest)}`);
}

function deviceKeyData(rid, jwk) { return new TextEncoder().encode(`duet-device-key|${rid}|${jwk.x}|${jwk.y}`); }

/** A device's MAC of its public key in room `rid` with the link's key (`encKeyAuth` when subscribing). */
export async function deviceKeyAuth({ rid, publicJwk, linkKey }) {
  return base64url(new Uint8Array(await crypto.subtle.sign('HMAC', await macKey(linkKey, DEVICE_KEY_INFO), deviceKeyData(rid, publicJwk))));
}

async function vouched({ rid, recipient, linkKey }) {
  const mac = bytesOf(recipient.keyAuth);
  if (!mac || typeof recipient.publicKey?.x !== 'string' || typeof recipient.publicKey?.y !== 'string') return false;
  return crypto.subtle.verify('HMAC', await macKey(linkKey, DEVICE_KEY_INFO), mac, deviceKeyData(rid, recipient.publicKey));
}

/**
 * The upload body (`POST /api/push/snapshot`) for `image` sealed to `recipients` ([{id, publicKey: JWK, keyAuth}]),
 * for `purpose` (`join` or `ring:<callId>`). With a link key, only recipients whose keyAuth it proves; null if none.
 */
export async function sealSnapshot({ image, mime = 'image/jpeg', rid, purpose, recipients, linkKey, nowMs = Date.now() }) {
  if (linkKey) {
    const checked = await Promise.all(recipients.map((recipient) => vouched({ rid, recipient, linkKey }).catch(() => false)));
    recipients = recipients.filter((_, index) => checked[index]);
    if (recipients.length === 0) return null;
  }
  const content = crypto.getRandomValues(new Uint8Array(32));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const contentKey = await crypto.subtle.importKey('raw', content, 'AES-GCM', false, ['encrypt']);
  const ciphertext = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, contentKey, image));
  const ephemeral = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
  const ephemeralRaw = new Uint8Array(await crypto.subtle.exportKey('raw', ephemeral.publicKey));
  const sealed = [];
  for (const recipient of recipients) {
    const publicKey = await crypto.subtle.importKey('jwk', { kty: 'EC', crv: 'P-256', x: recipient.publicKey.x, y: recipient.publicKey.y, ext: true },
      { name: 'ECDH', namedCurve: 'P-256' }, false, []);
    const wrapIv = crypto.getRandomValues(new Uint8Array(12));
    const wrapped = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv: wrapIv }, await wrapKey(ephemeral.privateKey, publicKey, salt), content));
    sealed.push({ id: recipient.id, wrappedKey: base64url(wrapped), wrappedKeyIv: base64url(wrapIv) });
  }
  const body = {
    ciphertext: base64url(ciphertext), snapshotIv: base64url(iv), snapshotSalt: base64url(salt),
    snapshotEphemeralPubKey: base64url(ephemeralRaw), snapshotMime: mime, snapshotAt: nowMs, snapshotPurpose: purpose, recipients: sealed,
  };
  if (linkKey) {
    const mac = await crypto.subtle.sign('HMAC', await macKey(linkKey, AUTH_INFO), await authData({ rid, purpose, at: nowMs, iv, mime, ciphertext }));
    body.snapshotAuth = base64url(new Uint8Array(mac));
  }
  return body;
}

/**
 * The picture ({image: Uint8Array, mime}) of a snapshot's envelope (`GET …?format=envelope`) for the device with
 * `recipientId` and `privateKey`, or null: not for this device, altered, not authenticated by the link's key, made for
 * another purpose than `purpose` (`join`, `ring:<callId>`), or old.
 */
export async function openSnapshot({ envelope, recipientId: id, privateKey, rid, purpose, linkKey, nowMs = Date.now() }) {
  try {
    if (!envelope || envelope.rid !== rid || !linkKey || typeof envelope.auth !== 'string' || typeof envelope.at !== 'number') return null;
    if (typeof purpose !== 'string' || envelope.purpose !== purpose) return null;
    if (Math.abs(nowMs - envelope.at) > SNAPSHOT_MAX_AGE_MS) return null;
    const mine = (envelope.recipients ?? []).find((r) => r.id === id);
    const [ciphertext, iv, salt, ephemeralRaw, auth] = [envelope.ciphertext, envelope.iv, envelope.salt, envelope.ephemeralPublicKey, envelope.auth].map(bytesOf);
    const [wrapped, wrapIv] = [mine?.wrappedKey, mine?.wrappedKeyIv].map(bytesOf);
    if (!ciphertext || !iv || !salt || !ephemeralRaw || !auth || !wrapped || !wrapIv) return null;
    const mime = String(envelope.mime);
    if (!/^image\/(jpeg|webp|png)$/.test(mime)) return null;
    const genuine = await crypto.subtle.verify('HMAC', await macKey(linkKey, AUTH_INFO), auth, await authData({ rid, purpose, at: envelope.at, iv, mime, ciphertext }));
    if (!genuine) return null;
    const ephemeral = await crypto.subtle.importKey('raw', ephemeralRaw, { name: 'ECDH', namedCurve: 'P-256' }, false, []);
    const content = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: wrapIv }, await wrapKey(privateKey, ephemeral, salt), wrapped);
    const contentKey = await crypto.subtle.importKey('raw', content, 'AES-GCM', false, ['decrypt']);
    return { image: new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, contentKey, ciphertext)), mime };
  } catch {
    return null;
  }
}

export function dataUrl({ image, mime }) {
  let binary = '';
  for (const byte of image) binary += String.fromCharCode(byte);
  return `data:${mime};base64,${btoa(binary)}`;
}

/** A JPEG of what `video` shows, SNAPSHOT_WIDTH wide, waiting up to `waitMs` for its first frame (a join snapshots
 *  the camera it has just opened); null when it shows nothing by then. */
export async function captureFrame(video, waitMs = 1_500) {
  if (!video) return null;
  if (!video.videoWidth || !video.videoHeight) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, waitMs);
      video.addEventListener('loadeddata', () => { clearTimeout(timer); resolve(); }, { once: true });
    });
  }
  if (!video.videoWidth || !video.videoHeight) return null;
  const canvas = document.createElement('canvas');
  canvas.width = SNAPSHOT_WIDTH;
  canvas.height = Math.round(video.videoHeight * SNAPSHOT_WIDTH / video.videoWidth);
  canvas.getContext('2d').drawImage(video, 0, 0, canvas.width, canvas.height);
  const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/jpeg', 0.7));
  return blob ? new Uint8Array(await blob.arrayBuffer()) : null;
}

function query(rid) { return `roomId=${encodeURIComponent(rid)}&rid=${encodeURIComponent(rid)}`; }

/**
 * Makes and uploads a snapshot of `video` for the room's other devices; resolves its id, or null when there is nobody
 * to show it to, nothing to show, or anything failed (a join or ring never waits on it beyond the engine's timer).
 * `proof`: {deviceId, memberToken} or {cid, reconnectToken}.
 */
export async function uploadSnapshot({ baseUrl, rid, purpose, proof, video, linkKey, nowMs = Date.now() }) {
  try {
    const post = (path, body) => fetch(new URL(`${path}?${query(rid)}`, baseUrl), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
    });
    const listed = await post('api/push/recipients', proof);
    if (!listed.ok) return null;
    const recipients = await listed.json();
    if (!Array.isArray(recipients) || recipients.length === 0) return null;
    const image = await captureFrame(video);
    if (!image) return null;
    const body = await sealSnapshot({ image, rid, purpose, recipients: recipients.slice(0, 20), linkKey, nowMs });
    if (!body) return null;
    const uploaded = await post('api/push/snapshot', { ...body, ...proof });
    return uploaded.ok ? (await uploaded.json()).id ?? null : null;
  } catch {
    return null;
  }
}

/** The picture of snapshot `snapshotId` for this device as a data: URL, or null (see openSnapshot). */
export async function snapshotPicture({ baseUrl, rid, snapshotId, purpose, deviceKey, endpoint, linkKey }) {
  if (!snapshotId || !deviceKey?.privateKey || !endpoint || !linkKey) return null;
  try {
    // Bounded: a ring is never held back by its picture.
    const response = await fetch(new URL(`api/push/snapshot/${encodeURIComponent(snapshotId)}?format=envelope&rid=${encodeURIComponent(rid)}`, baseUrl),
      { signal: AbortSignal.timeout(SNAPSHOT_FETCH_TIMEOUT_MS) });
    if (!response.ok) return null;
    const opened = await openSnapshot({
      envelope: await response.json(), recipientId: await recipientId(rid, endpoint), privateKey: deviceKey.privateKey, rid, purpose, linkKey,
    });
    return opened ? dataUrl(opened) : null;
  } catch {
    return null;
  }
}
