// Keeping the DTLS role of an established connection across its offers (issue 51 point 3).
//
// Every offer says `a=setup:actpass` (JSEP), and an answerer may then pick either role. Firefox re-picks `active` in
// every answer to an ICE restart, whatever role it held: under a Firefox host (Firefox offered, Chromium answered
// `active`, so Firefox is the DTLS server), Chromium's restart offer came back with Firefox now the client, and
// Chromium refuses to change the role of a live transport ("Failed to set SSL role for the transport"): its connection
// was wedged and replaced, the call silent for a second or two (issue 32). The offer we send therefore names the role
// this side already holds (`a=setup:active` or `passive`: RFC 8842, updating RFC 5763, lets an offer say either for an
// existing association); the answerer must take the other one, and nothing changes. The offer applied locally stays as the
// browser made it (`actpass` is compatible with either answer). A connection not yet negotiated offers `actpass`.
// Off by default (PeerConnection's keepsDtlsRole): kept in place, that restart meets libwebrtc pairing its new ports
// with Firefox's old-generation candidates, which Firefox's old ICE stream answers — Firefox hears nothing for ~4 s in
// 8 runs of 12, where the refusal and a new connection heal in about 1 s (docs/call-engine.md).

/** The `a=setup` value of an SDP (the first: bundled sections share one transport), or null. */
function setupOf(sdp) {
  return /^a=setup:(actpass|active|passive)\r?$/m.exec(sdp ?? '')?.[1] ?? null;
}

const OPPOSITE = { active: 'passive', passive: 'active' };

/**
 * The DTLS role ('active': client, 'passive': server) this side holds on the connection's last negotiated
 * descriptions (`currentLocalDescription`, `currentRemoteDescription`), or null before a first negotiation: an
 * answerer holds the role its answer named, an offerer the other one than its peer's answer named.
 */
export function establishedDtlsRole(currentLocal, currentRemote) {
  if (currentLocal?.type === 'answer') return OPPOSITE[setupOf(currentLocal.sdp)] ? setupOf(currentLocal.sdp) : null;
  if (currentLocal?.type === 'offer' && currentRemote?.type === 'answer') return OPPOSITE[setupOf(currentRemote.sdp)] ?? null;
  return null;
}

/** The offer to send: `sdp` with `a=setup:actpass` replaced by `role` on every section, or as it is without a role. */
export function offerKeepingDtlsRole(sdp, role) {
  if (!OPPOSITE[role]) return sdp;
  return sdp.replace(/^a=setup:actpass(?=\r?$)/gm, `a=setup:${role}`);
}
