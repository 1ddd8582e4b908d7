// The call link's secret: 256 random bits in the link's fragment (`/call/ROOM#k=<base64url>`), which the browser
// never sends to a server. The browser twin of DuetClient's LinkKey.swift. docs/security.md says what it protects.

export const LINK_KEY_BYTES = 32;
export const LINK_KEY_TEXT_LENGTH = 43;  // 32 bytes in base64url without padding

export function base64url(bytes) {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

export function fromBase64url(text) {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/') + '='.repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

// The key's bytes, or null unless `text` is exactly 43 base64url characters that decode to 32 bytes and encode back
// the same: a key cut short or altered in copying is refused, never used as a weaker one.
export function parseLinkKey(text) {
  if (typeof text !== 'string' || text.length !== LINK_KEY_TEXT_LENGTH) return null;
  const bytes = fromBase64url(text);
  if (!bytes || bytes.length !== LINK_KEY_BYTES || base64url(bytes) !== text) return null;
  return bytes;
}

// The key of a link's fragment (`#k=<key>`, among `&`-separated parts): {key: bytes, text} for a whole key, null
// when there is none (older links, typed room ids: not verified), or {damaged: true} when `k=` is not a whole key
// (a link cut short or altered): never joined as an unverified call, which is what stripping the key would want.
export function keyInFragment(hash) {
  const fragment = String(hash ?? '').replace(/^#/, '');
  const part = fragment.split('&').find((p) => p.startsWith('k='));
  if (part === undefined) return null;
  const text = part.slice(2);
  const key = parseLinkKey(text);
  return key ? { key, text } : { damaged: true };
}

// A fresh key from the browser's secure generator, as the link writes it.
export function newLinkKeyText(crypto = globalThis.crypto) {
  return base64url(crypto.getRandomValues(new Uint8Array(LINK_KEY_BYTES)));
}
