// Port of SDPOrigin.swift. The `o=` line of a session description: which peer connection made it
// (`sessionId`) and how many descriptions it had made by then (`version`, RFC 3264 §8 / JSEP §5.2.1 — Chromium
// and GStreamer's webrtcbin keep the id and count up). Signaling may deliver an older offer after a newer one
// (an SSE POST duplicated and reordered, a resend crossing a newer restart); comparing origins is how the
// negotiation machine recognises it without any extra field on the wire.

/** `{sessionId, version}` (version a BigInt: it may exceed 2^53), or null with no parseable `o=` line. */
export function sdpOrigin(sdp) {
  if (typeof sdp !== 'string') return null;
  const line = sdp.split(/\r\n|\r|\n/).find((l) => l.startsWith('o='));
  if (line == null) return null;
  const fields = line.slice(2).split(' ').filter((f) => f.length > 0);
  if (fields.length < 3 || !/^[0-9]+$/.test(fields[2])) return null;
  const version = BigInt(fields[2]);
  if (version > 0xffffffffffffffffn) return null; // as Swift's UInt64: too big is unparseable
  return { sessionId: fields[1], version };
}

/** Made by the same peer connection before `newer`. */
export function isOlder(origin, newer) {
  return origin.sessionId === newer.sessionId && origin.version < newer.version;
}
