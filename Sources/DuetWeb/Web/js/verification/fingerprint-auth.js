// Authenticated DTLS fingerprints (docs/protocol.md, "Verified calls"): every offer and answer on a keyed link
// carries `auth = base64url(HMAC-SHA256(k, message))`, where `message` binds the room, who sent it to whom and the
// fingerprints its SDP commits to. The browser twin of DuetClient's FingerprintAuth.swift; both check the vectors in
// Tests/fixtures/verification (computed by a third implementation, Python's hmac). WebCrypto is asynchronous, so the
// runtime computes and checks `auth`, never the pure engine.
import { base64url } from './link-key.js';

const encoder = new TextEncoder();
const LABEL = encoder.encode('duet-fp-v1');

const byteOrder = (a, b) => {
  const x = encoder.encode(a);
  const y = encoder.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
};

// Every distinct `a=fingerprint` of the SDP (session or media level), normalized as `<algorithm lowercased> <value
// uppercased>`, sorted by their UTF-8 bytes. One grammar with FingerprintAuth.swift: spaces and tabs separate and
// surround the two parts, nothing else does; a line without both parts is skipped.
export function fingerprintsInSdp(sdp) {
  const found = new Set();
  for (const raw of String(sdp ?? '').split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (!line.startsWith('a=fingerprint:')) continue;
    const match = /^([^ \t]+)[ \t]+(.*)$/.exec(line.slice('a=fingerprint:'.length).replace(/^[ \t]+/, ''));
    const value = match?.[2].replace(/[ \t]+$/, '');
    if (value) found.add(`${match[1].toLowerCase()} ${value.toUpperCase()}`);
  }
  return [...found].sort(byteOrder);
}

// A field: its UTF-8 length as a big-endian u16, then its bytes (lengths over 65,535 clamped, as in Swift).
function pushField(parts, text) {
  const bytes = encoder.encode(text);
  parts.push(u16(bytes.length), bytes);
}

function u16(value) {
  const clamped = Math.min(Math.max(value, 0), 0xffff);
  return Uint8Array.of(clamped >> 8, clamped & 0xff);
}

export function concatBytes(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

// "duet-fp-v1" ‖ field(rid) ‖ field(sender cid) ‖ field(receiver cid) ‖ u16(count) ‖ field(fingerprint)…
export function authMessage({ rid, sender, receiver, fingerprints }) {
  const parts = [LABEL];
  for (const text of [rid, sender, receiver]) pushField(parts, text);
  parts.push(u16(fingerprints.length));
  for (const fingerprint of fingerprints) pushField(parts, fingerprint);
  return concatBytes(parts);
}

export { pushField as appendField, byteOrder };

// base64url(HMAC-SHA256(key, message)). key: the link key's bytes.
async function hmacText(key, message, crypto) {
  const hmacKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return base64url(new Uint8Array(await crypto.subtle.sign('HMAC', hmacKey, message)));
}

// Whether a received `auth` is the expected one (null: nothing to expect), compared without an early exit.
function sameAuth(auth, expected) {
  if (typeof auth !== 'string' || expected === null || expected.length !== auth.length) return false;
  let difference = 0;
  for (let i = 0; i < auth.length; i += 1) difference |= auth.charCodeAt(i) ^ expected.charCodeAt(i);
  return difference === 0;
}

// The `auth` of a description, or null when its SDP has no fingerprint to vouch for. key: the link key's bytes.
export async function fingerprintAuth({ key, rid, sender, receiver, sdp }, crypto = globalThis.crypto) {
  const fingerprints = fingerprintsInSdp(sdp);
  if (fingerprints.length === 0) return null;
  return hmacText(key, authMessage({ rid, sender, receiver, fingerprints }), crypto);
}

// Whether `auth` vouches for the SDP from sender to receiver in the room. A missing auth, or an SDP without
// fingerprints, is not vouched for.
export async function verifyFingerprintAuth({ auth, key, rid, sender, receiver, sdp }, crypto = globalThis.crypto) {
  if (typeof auth !== 'string') return false;
  return sameAuth(auth, await fingerprintAuth({ key, rid, sender, receiver, sdp }, crypto));
}

const VERIFY_FAILED_LABEL = encoder.encode('duet-vf-v1');

// "duet-vf-v1" ‖ field(rid) ‖ field(sender cid) ‖ field(receiver cid): what a `verify_failed` commits to.
export function verifyFailedMessage({ rid, sender, receiver }) {
  const parts = [VERIFY_FAILED_LABEL];
  for (const text of [rid, sender, receiver]) pushField(parts, text);
  return concatBytes(parts);
}

// The `auth` of a `verify_failed`: only someone with the link's key can say a call was intercepted, so a server
// cannot make a page show the interception screen (it can still drop the call, as it always could).
export async function verifyFailedAuth({ key, rid, sender, receiver }, crypto = globalThis.crypto) {
  return hmacText(key, verifyFailedMessage({ rid, sender, receiver }), crypto);
}

export async function verifyVerifyFailed({ auth, key, rid, sender, receiver }, crypto = globalThis.crypto) {
  if (typeof auth !== 'string') return false;
  return sameAuth(auth, await verifyFailedAuth({ key, rid, sender, receiver }, crypto));
}
