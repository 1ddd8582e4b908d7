// The six digits both people read to each other (SAS-style), from the room and both sides' DTLS fingerprints — each
// side's own certificate and the one in the SDP it received. Nobody in the middle: the same two fingerprints, the same
// code. Someone terminating DTLS in the middle: each side sees a different remote fingerprint, so the codes differ.
// The browser twin of DuetClient's SafetyCode.swift (docs/security.md shows the derivation).
import { appendField, byteOrder, concatBytes } from './fingerprint-auth.js';

const LABEL = new TextEncoder().encode('duet-sas-v1');

// SHA-256("duet-sas-v1" ‖ field(rid) ‖ field(lower side) ‖ field(higher side)); a side is its fingerprints joined
// with "," and the two sides go in byte order, so both ends hash the same bytes.
export async function safetyDigest({ rid, local, remote }, crypto = globalThis.crypto) {
  const sides = [local.join(','), remote.join(',')].sort(byteOrder);
  const parts = [LABEL];
  appendField(parts, rid);
  for (const side of sides) appendField(parts, side);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', concatBytes(parts)));
}

// The digest's first 8 bytes as a big-endian integer, modulo 10⁶, as six digits.
export async function safetyCode({ rid, local, remote }, crypto = globalThis.crypto) {
  const digest = await safetyDigest({ rid, local, remote }, crypto);
  let number = 0n;
  for (const byte of digest.subarray(0, 8)) number = (number << 8n) | BigInt(byte);
  return String(number % 1000000n).padStart(6, '0');
}
