// Port of SDPOrigin.swift. The `o=` line of a session description: the session it belongs to (`sessionId`)
// and its version. Signaling may deliver an older offer after a newer one (an SSE POST duplicated and
// reordered, a resend crossing a newer restart); comparing origins is how the negotiation machine recognises it
// without any extra field on the wire.
//
// What the numbers mean depends on who wrote them. Chromium (and Firefox) keep one random session id per peer
// connection and count the version up with every description they create, offers and answers alike. GStreamer's
// webrtcbin does not: its answer copies the *offer's* `o=` line, and its later offers take that copied session
// id with a version counting its own offers from 0. So a remote description is only ordered by its origin when
// its session id is not one of ours (the negotiation machine keeps those); anything else is never judged stale.

/**
 * `{sessionId, version}` (version a BigInt: it may exceed 2^53), or null with no parseable `o=` line (lines end
 * with CR, LF or CRLF; the version is ASCII digits that fit 64 bits).
 */
export function sdpOrigin(sdp) {
  if (typeof sdp !== 'string') return null;
  const line = sdp.split(/[\r\n]+/).find((l) => l.startsWith('o='));
  if (line == null) return null;
  const fields = line.slice(2).split(' ').filter((f) => f.length > 0);
  if (fields.length < 3 || !/^[0-9]+$/.test(fields[2])) return null;
  const version = BigInt(fields[2]);
  if (version > 0xffffffffffffffffn) return null; // as Swift's UInt64: too big is unparseable
  return { sessionId: fields[1], version };
}

/** Made in the same session before `newer`. */
export function isOlder(origin, newer) {
  return origin.sessionId === newer.sessionId && origin.version < newer.version;
}

/**
 * The name of an offer that its answer carries back (`offer`, next to `sdp`): its `o=` session id and version, as
 * "<sessionId> <version>"; null without a parseable `o=` line.
 */
export function offerName(sdp) {
  const origin = sdpOrigin(sdp);
  return origin == null ? null : `${origin.sessionId} ${origin.version}`;
}
