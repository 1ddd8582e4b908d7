// Why media does not connect, in words a person can act on. A pure module: no DOM, no timers, no clock — the
// facts come in (js/runtime/connectivity-facts.js collects them in the call, the /check page measures its own),
// the explanation comes out. Everything said is derived from those facts: which ICE servers the server handed
// out (STUN? TURN over which transports?), which local and remote candidate types were gathered (host, srflx,
// relay and the relay's protocol), and how long ICE has been trying without connecting.
//
// diagnose(facts) answers null while there is nothing to explain, else a problem
//   {code, message, tried: [sentence], missing: sentence | null, todo: [sentence]}
// with one of these codes (also what `duet.connectivityProblem.code` says on the call page):
//   direct-failed-no-relay   no TURN server is configured, and the direct connection between the two networks
//                            failed (whatever STUN found: `tried` says whether a public address was found)
//   relay-only-no-relay      the call is relay-only (?relay=1) but no TURN server is configured
//   relay-unreachable        TURN is configured, but this browser gathered no relay candidate (the relay server
//                            could not be reached over any configured transport), and direct failed
//   peer-relay-unreachable   this browser has a relay candidate, the other browser sent none (their network does
//                            not get through to the relay), and direct failed
//   relay-failed             both browsers have relay candidates and still no connection (the relay does not
//                            relay between its clients: its relay ports or peer permissions)
//   no-local-addresses       this browser gathered no candidate at all (offline, or WebRTC blocked)
//   no-remote-addresses      the other browser has sent no candidate at all
//   ice-servers-unavailable  the list of ICE servers could not be fetched (not a 503: the fetch failed), so only a
//                            direct connection could be tried, and it failed
// The explanation appears once media has not connected for CANNOT_CONNECT_AFTER_MS while it could have (both
// people in the call, signaling up); it is gone as soon as media connects. The engine keeps retrying meanwhile.

import { summarizeIceServers } from '../runtime/connectivity-facts.js';

// Direct connections between reachable networks connect within a second or two, relayed ones within a few.
export const CANNOT_CONNECT_AFTER_MS = 10000;

const TRANSPORT_WORDS = { udp: 'UDP', tcp: 'TCP', tls: 'TLS' };

/** ['udp', 'tls'] → 'UDP and TLS'. */
export function listTransports(transports) {
  return listWords(transports.map((t) => TRANSPORT_WORDS[t] ?? t));
}

/**
 * facts: {
 *   nowMs,
 *   waitingSinceMs,   // since when media could have connected and has not (both in the call, signaling up); null: connected / not applicable
 *   relayOnly,        // ?relay=1
 *   iceServers: {status: 'pending' | 'fetched' | 'none' | 'failed', list: [RTCIceServer]},   // 'none': the server has none (503)
 *   local: {candidates: [{type, protocol, relayProtocol}], gatheringComplete},
 *   remote: {candidates: [{type, protocol}]},
 *   iceState,         // the peer connection's iceConnectionState
 *   failed,           // ICE reached 'failed' in this wait
 * }
 */
export function diagnose(facts) {
  if (!facts || facts.waitingSinceMs == null || facts.nowMs - facts.waitingSinceMs < CANNOT_CONNECT_AFTER_MS) return null;
  if (facts.iceState === 'connected' || facts.iceState === 'completed') return null;
  const servers = summarizeIceServers(facts.iceServers?.status === 'fetched' ? facts.iceServers.list : []);
  const turnConfigured = Object.entries(servers.turn).filter(([, urls]) => urls.length).map(([t]) => t);
  const local = facts.local?.candidates ?? [];
  const remote = facts.remote?.candidates ?? [];
  const localRelay = local.some((c) => c.type === 'relay');
  const localRelays = [...new Set(local.filter((c) => c.type === 'relay' && c.relayProtocol).map((c) => c.relayProtocol))];
  const remoteRelay = remote.some((c) => c.type === 'relay');
  const context = { facts, servers, turnConfigured, local, remote, localRelays, localRelay };
  const problem = (code, message, missing, todo) => ({ code, message, tried: tried(context), missing, todo });
  const directFailed = facts.relayOnly ? '' : ', and a direct connection between your networks failed';
  const relayList = `TURN over ${listTransports(turnConfigured)}`;

  if (facts.iceServers?.status === 'failed') {
    return problem('ice-servers-unavailable',
      `Duet could not get the list of connection servers (STUN and relay) from its server${directFailed}.`,
      'The STUN and relay (TURN) servers this Duet server offers: without them only a direct connection can be tried.',
      ['Reload the page: the list is fetched again.', ADMIN_CHECK]);
  }
  if (facts.relayOnly && turnConfigured.length === 0) {
    return problem('relay-only-no-relay',
      'This call is set to go through a relay server only (the link has ?relay=1), but this Duet server has no relay server configured.',
      'A relay (TURN) server.',
      ['Open the link without ?relay=1 to allow a direct connection.', ADMIN_TURN]);
  }
  if (local.length === 0 && !facts.relayOnly) {
    return problem('no-local-addresses',
      'Your browser did not offer any network address for the call.',
      'A network address your browser lets calls use. This device may be offline, or a browser setting or extension may block WebRTC.',
      ['Check that you are online, and that no extension or browser setting blocks WebRTC (calls).', CHECK_PAGE]);
  }
  if (remote.length === 0) {
    return problem('no-remote-addresses',
      'The other person’s browser has not sent any network address for the call.',
      'A network address from the other person’s browser: it may be offline, or block WebRTC (calls).',
      ['Ask the other person to check that they are online, and to open the connection check (/check) on their device.']);
  }
  if (turnConfigured.length === 0) {
    return problem('direct-failed-no-relay',
      'No relay server is configured, and a direct connection between your networks failed.',
      'A relay (TURN) server. When two networks cannot reach each other directly — strict firewalls, many mobile and company networks — a relay server carries the call.',
      ['Try another network: a phone’s hotspot often works.', ADMIN_TURN]);
  }
  if (!localRelay) {
    const todo = ['Try another network: a phone’s hotspot often works.'];
    if (!turnConfigured.includes('tls')) todo.push('Whoever runs this Duet server can offer TURN over TLS on port 443 (turns:), which gets through most firewalls.');
    todo.push('Whoever runs this Duet server can check that the TURN server is running and reachable from outside, with the same secret as Duet.');
    return problem('relay-unreachable',
      facts.relayOnly
        ? `This call goes through a relay server only, and your browser could not reach it (${relayList}).`
        : `Your browser could not reach the relay server (${relayList})${directFailed}.`,
      'A way through to the relay server: a firewall or proxy on your network may block it.',
      todo);
  }
  if (!remoteRelay) {
    return problem('peer-relay-unreachable',
      `Your browser reached the relay server, but the other person’s browser did not${directFailed}.`,
      'The other person’s way through to the relay server: their network may block it.',
      ['Ask the other person to try another network (a phone’s hotspot often works), or to open the connection check (/check) on their device.']);
  }
  return problem('relay-failed',
    'Both browsers reached the relay server, but the connection through it failed.',
    'Traffic relayed between the two of you: the relay server may not be allowed to relay between its own clients.',
    ['Whoever runs this Duet server can check the TURN server’s relay ports and firewall (the relay addresses must be reachable), and that it allows relaying between its clients.',
      'Try another network.']);
}

const ADMIN_TURN = 'Whoever runs this Duet server can add a relay (TURN) server: duet serve --turn-secret … --turn-uri turn:…';
const ADMIN_CHECK = 'If it keeps happening, whoever runs this Duet server can check its logs for /api/turn-credentials.';
const CHECK_PAGE = 'Open the connection check (/check): it tests this device and network one step at a time.';

/** What was tried, one line each: the direct path (with what STUN found), the relay, the other side, ICE. */
function tried({ facts, servers, turnConfigured, local, remote, localRelays, localRelay }) {
  const lines = [];
  if (!facts.relayOnly) {
    const srflx = local.some((c) => c.type === 'srflx' || c.type === 'prflx');
    const own = local.some((c) => c.type === 'host') ? 'your device’s own addresses' : 'no address of your device';
    if (servers.stun.length === 0) {
      lines.push(`A direct connection, using ${own}. No STUN server is configured, so your network’s public address was not looked up.`);
    } else if (srflx) {
      lines.push(`A direct connection, using ${own} and your network’s public address (found through the STUN server).`);
    } else if (!facts.local?.gatheringComplete) {
      lines.push(`A direct connection, using ${own}. The STUN server did not answer, so your network’s public address is unknown.`);
    } else {
      lines.push(`A direct connection, using ${own} (the STUN server saw no public address other than your device’s own).`);
    }
  }
  if (turnConfigured.length) {
    const reached = !localRelay ? 'your browser could not reach it' : localRelays.length ? `reached over ${listTransports(localRelays)}` : 'reached';
    lines.push(`A relay server (TURN over ${listTransports(turnConfigured)}): ${reached}.`);
  } else if (facts.iceServers?.status === 'fetched' || facts.iceServers?.status === 'none') {
    lines.push('A relay server: none is configured on this Duet server.');
  }
  if (remote.length) {
    const kinds = [...new Set(remote.map((c) => KIND_WORDS[c.type]).filter(Boolean))];
    lines.push(kinds.length
      ? `The other person’s browser offered ${listWords(kinds)}.`
      : `The other person’s browser offered ${remote.length === 1 ? 'one address' : `${remote.length} addresses`}.`);
  }
  lines.push(facts.failed
    ? 'The connection checks between the two browsers failed. Duet keeps trying.'
    : 'The connection checks between the two browsers have not succeeded. Duet keeps trying.');
  return lines;
}

function listWords(words) {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

const KIND_WORDS = { host: 'its device’s own address', srflx: 'its network’s public address', prflx: 'its network’s public address', relay: 'a relay address' };
