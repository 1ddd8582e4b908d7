// This browser's id for itself (issue 31): 16 random bytes, base64url, kept in localStorage. Sent in `join`
// (deviceId), it gets a member token back: the proof that this browser has been in that call, with which it listens
// for rings and answers them later. It names a browser, not a person, and is never shown.
import { base64url } from '../verification/link-key.js';

const KEY = 'duet.deviceId';

export function deviceId() {
  let id = null;
  try { id = localStorage.getItem(KEY); } catch { /* storage refused: a fresh id per page */ }
  if (typeof id === 'string' && /^[A-Za-z0-9_-]{16,64}$/.test(id)) return id;
  id = base64url(crypto.getRandomValues(new Uint8Array(16)));
  try { localStorage.setItem(KEY, id); } catch { /* ignore */ }
  return id;
}
