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
//                            failed: ICE reached failed or disconnected (whatever STUN found: `tried` says whether a
//                            public address was found)
//   direct-pending-no-relay  the same while ICE is still checking: the direct connection has not connected yet
//   relay-only-no-relay      the call is relay-only (?relay=1) but no TURN server is configured
//   relay-unreachable        TURN is configured, but this browser gathered no relay candidate (the relay server
//                            could not be reached over any configured transport), and direct failed
//   peer-relay-unreachable   this browser has a relay candidate, the other browser sent none (their network does
//                            not get through to the relay), and direct failed
//   relay-failed             both browsers have relay candidates and still no connection (the relay does not
//                            relay between its clients: its relay ports or peer permissions)
//   no-local-addresses       this browser gathered no candidate at all (offline, or WebRTC blocked)
//   no-remote-addresses      the other browser has sent no candidate at all
//   ice-servers-rejected     the browser refused the ICE server list (a malformed URL: `new RTCPeerConnection`
//                            threw), so no connection could be tried at all
//   ice-servers-unavailable  the list of ICE servers could not be fetched (not a 503: the fetch failed), so only a
//                            direct connection could be tried, and it failed
// The explanation appears once media has not connected for CANNOT_CONNECT_AFTER_MS while it could have (both
// people in the call, signaling up); it is gone as soon as media connects. The engine keeps retrying meanwhile.

import { iceUrlKey, isPublicAddress, summarizeIceServers } from '../runtime/connectivity-facts.js';

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
 *   refused,          // {url, message}: the browser refused the ICE servers (new RTCPeerConnection threw); null: it did not
 *   local: {candidates: [{type, protocol, relayProtocol, address}], gatheringComplete, errors: [{url, code, text}]},   // errors: icecandidateerror
 *   remote: {candidates: [{type, protocol}]},
 *   iceState,         // the peer connection's iceConnectionState
 *   failed,           // ICE reached 'failed' in this wait, or the engine gave up on an ICE attempt (restarted it) that never connected
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
  // Only a direct connection that was given up on (ICE failed or disconnected, or the engine restarted an attempt
  // that never connected) is said to have failed; while the first attempt is still checking, it has not connected yet.
  const directGaveUp = facts.failed || facts.iceState === 'failed' || facts.iceState === 'disconnected';
  const waitedS = Math.round((facts.nowMs - facts.waitingSinceMs) / 1000);
  const context = { facts, servers, turnConfigured, local, remote, localRelays, localRelay, directGaveUp };
  const problem = (code, message, missing, todo) => ({ code, message, tried: tried(context), missing, todo });
  const directFailed = facts.relayOnly ? ''
    : directGaveUp ? ', and a direct connection between your networks failed'
      : `, and a direct connection between your networks has not connected after ${waitedS} s`;
  const relayList = `TURN over ${listTransports(turnConfigured)}`;

  if (facts.refused) {
    const url = facts.refused.url;
    return {
      code: 'ice-servers-rejected',
      message: url
        ? `This Duet server hands out a connection server address your browser refuses: ${url}. No connection can be tried.`
        : `This Duet server hands out connection server addresses your browser refuses${facts.refused.message ? ` (${facts.refused.message})` : ''}. No connection can be tried.`,
      tried: [`Your browser refused the STUN and relay (TURN) server list${facts.refused.message ? `: ${facts.refused.message}` : ''}.`],
      missing: 'A list of STUN and relay (TURN) servers your browser accepts: each address must be a valid stun:, stuns:, turn: or turns: URL.',
      todo: [`Tell whoever runs this Duet server: its --stun-uri or --turn-uri ${url ? `“${url}” ` : ''}is not a URL browsers accept.`],
    };
  }
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
  const relayUnreachable = () => {
    const todo = ['Try another network: a phone’s hotspot often works.'];
    if (!turnConfigured.includes('tls')) todo.push('Whoever runs this Duet server can offer TURN over TLS on port 443 (turns:), which gets through most firewalls.');
    todo.push('Whoever runs this Duet server can check that the TURN server is running and reachable from outside, with the same secret as Duet.');
    return problem('relay-unreachable',
      facts.relayOnly
        ? `This call goes through a relay server only, and your browser could not reach it (${relayList}).`
        : `Your browser could not reach the relay server (${relayList})${directFailed}.`,
      'A way through to the relay server: a firewall or proxy on your network may block it.',
      todo);
  };
  // Relay-only: without a relay candidate here nothing can be sent, whatever the other side does.
  if (facts.relayOnly && !localRelay) return relayUnreachable();
  if (remote.length === 0) {
    return problem('no-remote-addresses',
      'The other person’s browser has not sent any network address for the call.',
      'A network address from the other person’s browser: it may be offline, or block WebRTC (calls).',
      ['Ask the other person to check that they are online, and to open the connection check (/check) on their device.']);
  }
  if (turnConfigured.length === 0) {
    return problem(directGaveUp ? 'direct-failed-no-relay' : 'direct-pending-no-relay',
      directGaveUp
        ? 'No relay server is configured, and a direct connection between your networks failed.'
        : `No relay server is configured, and a direct connection between your networks has not connected after ${waitedS} s.`,
      'A relay (TURN) server. When two networks cannot reach each other directly — strict firewalls, many mobile and company networks — a relay server carries the call.',
      ['Try another network: a phone’s hotspot often works.', ADMIN_TURN]);
  }
  if (!localRelay) return relayUnreachable();
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
function tried({ facts, servers, turnConfigured, local, remote, localRelays, localRelay, directGaveUp }) {
  const lines = [];
  if (!facts.relayOnly) {
    const srflx = local.some((c) => c.type === 'srflx' || c.type === 'prflx');
    const own = local.some((c) => c.type === 'host') ? 'your device’s own addresses' : 'no address of your device';
    const publicHost = local.find((c) => c.type === 'host' && isPublicAddress(c.address));
    // Chromium completes gathering after a STUN request times out too (icecandidateerror 701): only a completed
    // gathering with some STUN server that reported no error proves that STUN answered.
    const stunErrors = new Set((facts.local?.errors ?? []).filter((e) => /^stuns?:/i.test(e.url ?? '')).map((e) => iceUrlKey(e.url)));
    const stunAnswered = facts.local?.gatheringComplete && servers.stun.some((url) => !stunErrors.has(iceUrlKey(url)));
    if (servers.stun.length === 0) {
      lines.push(`A direct connection, using ${own}. No STUN server is configured, so your network’s public address was not looked up.`);
    } else if (srflx) {
      lines.push(`A direct connection, using ${own} and your network’s public address (found through the STUN server).`);
    } else if (stunAnswered) {
      lines.push(`A direct connection, using ${own} (the STUN server saw no public address other than your device’s own).`);
    } else if (publicHost) {
      lines.push(`A direct connection, using ${own}, which include a public address (${publicHost.address}). The STUN server did not answer.`);
    } else {
      lines.push(`A direct connection, using ${own}. The STUN server did not answer, so your network’s public address is unknown.`);
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
  lines.push(directGaveUp
    ? 'The connection checks between the two browsers failed. Duet keeps trying.'
    : 'The connection checks between the two browsers have not succeeded. Duet keeps trying.');
  return lines;
}

function listWords(words) {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

const KIND_WORDS = { host: 'its device’s own address', srflx: 'its network’s public address', prflx: 'its network’s public address', relay: 'a relay address' };
