// What a ring says of the caller (a name), sealed with the call link's key (issue 31): the server relays bytes it can
// neither read nor forge. AES-256-GCM with a key derived from the link key (HKDF-SHA-256, info "duet caller v1"),
// the room and the call id as additional data, so a sealed name cannot be replayed into another room or ring.
// A link without a key rings too: its caller is then shown as unverified (`{plain}`), never as a proven name.
// The seal also carries a secret per answer, whose SHA-256 the ring gives the server (`answers`): an answer counts
// only with its secret, which only devices with the link's key can read (RingAnswerCommitments in docs/protocol.md).
import { base64url, fromBase64url } from '../verification/link-key.js';

const INFO = new TextEncoder().encode('duet caller v1');
export const MAX_NAME_LENGTH = 64;
// A seal says when it was made; one older than this (or from the future by as much) is a replayed ring, not a call:
// its name is not shown. Rings last 45 s; the rest is for device clocks that disagree (RingLimits.callerSealMaxAgeMs).
export const MAX_SEAL_AGE_MS = 5 * 60_000;

async function sealingKey(linkKey) {
  const material = await crypto.subtle.importKey('raw', linkKey, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: INFO }, material,
    { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

function associated(rid, callId) { return new TextEncoder().encode(`duet-caller|${rid}|${callId}`); }

export function cleanName(name) {
  return String(name ?? '').replace(/[\u0000-\u001f\u007f]/g, ' ').trim().slice(0, MAX_NAME_LENGTH);
}

// Fresh answer secrets for a ring: {secrets: {accept, decline}} to seal, {commitments} (their SHA-256) for the server.
export async function newAnswerSecrets() {
  const secrets = { accept: base64url(crypto.getRandomValues(new Uint8Array(16))), decline: base64url(crypto.getRandomValues(new Uint8Array(16))) };
  const hash = async (text) => base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', fromBase64url(text))));
  return { secrets, commitments: { accept: await hash(secrets.accept), decline: await hash(secrets.decline) } };
}

// The `caller` of a `ring`: {v:1, iv, ct} with a key, {v:1, plain} without one. `answers`: the ring's answer secrets.
export async function sealCaller({ name, rid, callId, linkKey, nowMs = Date.now(), answers = null }) {
  const clean = cleanName(name);
  if (!linkKey) return { v: 1, plain: clean };
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = new TextEncoder().encode(JSON.stringify({ name: clean, at: nowMs, ...(answers ? { answers } : {}) }));
  const ct = new Uint8Array(await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: associated(rid, callId) }, await sealingKey(linkKey), data));
  return { v: 1, iv: base64url(iv), ct: base64url(ct) };
}

// {name, verified, answers?}: verified only when the link's key opened it and it is fresh; `answers` are the secrets
// to answer with, when the caller sealed them. A sealed caller that does not open
// (altered, or sealed for another ring), or that is older than MAX_SEAL_AGE_MS (a replayed ring), is never shown as a
// name: {name: null, verified: false, altered: true}.
export async function openCaller({ caller, rid, callId, linkKey, nowMs = Date.now() }) {
  if (!caller || typeof caller !== 'object') return { name: null, verified: false };
  // A call with a key always seals its caller: a plain name in one is the server's (or anyone's) word, never shown.
  if (typeof caller.plain === 'string') return linkKey ? { name: null, verified: false, altered: true } : { name: cleanName(caller.plain) || null, verified: false };
  const iv = fromBase64url(String(caller.iv ?? ''));
  const ct = fromBase64url(String(caller.ct ?? ''));
  if (!linkKey || !iv || iv.length !== 12 || !ct) return { name: null, verified: false, altered: !!linkKey };
  try {
    const data = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: associated(rid, callId) }, await sealingKey(linkKey), ct);
    const opened = JSON.parse(new TextDecoder().decode(data));
    const name = cleanName(opened.name);
    if (!name || typeof opened.at !== 'number' || Math.abs(nowMs - opened.at) > MAX_SEAL_AGE_MS) return { name: null, verified: false, altered: true };
    const answers = opened.answers;
    const sealedAnswers = typeof answers?.accept === 'string' && typeof answers?.decline === 'string' ? { accept: answers.accept, decline: answers.decline } : null;
    return { name, verified: true, ...(sealedAnswers ? { answers: sealedAnswers } : {}) };
  } catch {
    return { name: null, verified: false, altered: true };
  }
}
