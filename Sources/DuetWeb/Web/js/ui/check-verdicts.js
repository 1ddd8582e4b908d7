// The /check page's verdicts: what each measurement means and what to do about it. Pure (no DOM, no timers, no
// WebRTC): js/ui/check-page.js measures in the browser and hands the facts here. Each verdict is
// {status: 'pass' | 'fail' | 'skip', detail, todo} — detail says what happened, todo what the user (or whoever runs
// the server) can do; todo is '' when there is nothing to do.

import { iceUrlKey } from '../runtime/connectivity-facts.js';

// Every network measurement gives up after this long, and says so.
export const CHECK_TIMEOUT_MS = 8000;

export const CHECKS = Object.freeze([
  { id: 'websocket', title: 'Signaling over WebSocket' },
  { id: 'sse', title: 'Signaling over SSE (the fallback)' },
  { id: 'stun', title: 'Your public address (STUN)' },
  { id: 'turnUdp', title: 'Relay over UDP (TURN)' },
  { id: 'turnTcp', title: 'Relay over TCP (TURN)' },
  { id: 'turnTls', title: 'Relay over TLS (TURNS)' },
  { id: 'camera', title: 'Camera' },
  { id: 'microphone', title: 'Microphone' },
]);

const seconds = (ms) => `${Math.round(ms / 1000)} s`;
const pass = (detail, todo = '') => ({ status: 'pass', detail, todo });
const fail = (detail, todo) => ({ status: 'fail', detail, todo });
const skip = (detail, todo = '') => ({ status: 'skip', detail, todo });

/**
 * kind: 'websocket' | 'sse'; m: {joined, ms, timedOut, error}: a throwaway room was joined over that transport
 * (`joined` arrived) in `ms`, or not (timed out, or `error`).
 */
export function signalingVerdict(kind, m) {
  const name = kind === 'websocket' ? 'WebSocket' : 'SSE';
  if (m.joined) return pass(`Connected and joined a test room over ${name} in ${Math.round(m.ms)} ms.`);
  const what = m.timedOut ? `No answer over ${name} within ${seconds(CHECK_TIMEOUT_MS)}.` : `Could not connect over ${name}${m.error ? ` (${m.error})` : ''}.`;
  return fail(what, kind === 'websocket'
    ? 'Calls fall back to SSE by themselves (next row). If that fails too, a proxy or firewall between you and this server blocks it: try another network, or ask whoever runs this Duet server to let WebSocket (Upgrade) requests through to it.'
    : 'If WebSocket works, calls work without SSE. If both fail, a proxy or firewall between you and this server blocks it: try another network, or ask whoever runs this Duet server to check its proxy.');
}

/**
 * The ICE server list every STUN and TURN row depends on. servers: {status: 'fetched' | 'none' | 'failed', error};
 * answers the verdict to give every such row when the list is not there, else null.
 */
function serverListProblem(servers) {
  if (servers.status === 'failed') {
    return skip(`Not tested: the list of STUN and relay servers could not be fetched${servers.error ? ` (${servers.error})` : ''}.`,
      'Make the signaling rows above pass first: the list comes with joining a call.');
  }
  return null;
}

/**
 * m: {urls: [stun url], results: [{url, srflx: [address], errors: [{url, code, text, refused}], gatheringComplete,
 * timedOut}]}: one peer connection per STUN URL gathered (until complete, or for CHECK_TIMEOUT_MS), so a STUN
 * server that does not answer is not hidden behind one that does. (Also taken: one result for all the URLs,
 * {urls, srflx, errors, gatheringComplete, timedOut}.)
 * A server-reflexive candidate proves the STUN server answered. Chromium drops one that repeats the device's own
 * address (no NAT on the way); its gathering then completes quickly with no error, which is also an answer.
 * An error with `refused`: this browser refused the URL itself (new RTCPeerConnection threw).
 */
export function stunVerdict(servers, m) {
  const listProblem = serverListProblem(servers);
  if (listProblem) return listProblem;
  if (!m.urls.length) {
    return skip('This Duet server hands out no STUN server.',
      'Calls between different networks need one to find each side’s public address. Whoever runs this Duet server can turn on its built-in STUN server (duet serve --stun-port 3478, UDP) or name one (--stun-uri).');
  }
  const results = Array.isArray(m.results) && m.results.length
    ? m.results.map((r) => ({ ...r, urls: [r.url] }))
    : [{ urls: m.urls, srflx: m.srflx ?? [], errors: m.errors ?? [], gatheringComplete: m.gatheringComplete, timedOut: m.timedOut }];
  const outcomes = results.map(stunOutcome);
  const working = outcomes.filter((o) => o.kind === 'srflx' || o.kind === 'answered');
  const broken = outcomes.filter((o) => o.kind !== 'srflx' && o.kind !== 'answered');
  const found = outcomes.find((o) => o.kind === 'srflx');
  const foundThrough = found && `Your network’s public address is ${found.srflx[0]} (found through ${outcomes.filter((o) => o.kind === 'srflx').map((o) => o.urls.join(', ')).join(', ')}).`;
  const refused = broken.filter((o) => o.kind === 'refused');
  const todo = refused.length
    ? `Tell whoever runs this Duet server: ${listOf(refused.map((o) => o.urls.join(', ')))} ${refused.length === 1 ? 'is not a STUN URL' : 'are not STUN URLs'} browsers accept (check --stun-uri).`
    : `${working.length ? 'Calls use the STUN servers that answer, but ' : ''}${working.length ? 'your' : 'Your'} network may block UDP to ${working.length ? 'the others' : 'it'}. Calls can still work through a relay (the TURN rows below). Whoever runs this Duet server can check that its STUN port (UDP 3478 by default) is reachable from outside.`;
  if (outcomes.length === 1) {
    const [o] = outcomes;
    if (o.kind === 'srflx') return pass(foundThrough);
    if (o.kind === 'answered') return pass(`The STUN server answered (${o.urls.join(', ')}): your device’s address is already its public one, with no address translation on the way.`);
    if (o.kind === 'refused') return fail(`This browser refuses the STUN server address ${o.urls.join(', ')}${o.refused.text ? ` (${o.refused.text})` : ''}.`, todo);
    if (o.kind === 'error') return fail(`The STUN server could not be reached: ${describeErrors(o.errors)}.`, todo);
    return fail(`No answer from the STUN server (${o.urls.join(', ')}) within ${seconds(CHECK_TIMEOUT_MS)}.`, todo);
  }
  const each = outcomes.map((o) => {
    const url = o.urls.join(', ');
    switch (o.kind) {
      case 'srflx': return `${url} found your network’s public address, ${o.srflx[0]}.`;
      case 'answered': return `${url} answered: your device’s address is already its public one.`;
      case 'refused': return `This browser refuses ${url}${o.refused.text ? ` (${o.refused.text})` : ''}.`;
      case 'error': return `${url} could not be reached: ${describeErrors(o.errors)}.`;
      default: return `No answer from ${url} within ${seconds(CHECK_TIMEOUT_MS)}.`;
    }
  });
  if (!broken.length) return pass(`${foundThrough ? `${foundThrough} ` : ''}Each STUN server answered: ${each.join(' ')}`);
  return fail(`${broken.length === outcomes.length ? 'No STUN server works' : `${broken.length} of ${outcomes.length} STUN servers do not work`}: ${each.join(' ')}`, todo);
}

/** What one STUN gathering showed: {kind: 'srflx' | 'answered' | 'refused' | 'error' | 'silent', urls, srflx, errors, refused}. */
function stunOutcome(r) {
  const keys = new Set(r.urls.map(iceUrlKey));
  const errors = (r.errors ?? []).filter((e) => e.refused || keys.has(iceUrlKey(e.url)));
  const refused = errors.find((e) => e.refused) ?? null;
  const kind = refused ? 'refused'
    : r.srflx?.length ? 'srflx'
      : r.gatheringComplete && !errors.length ? 'answered'
        : errors.length ? 'error' : 'silent';
  return { kind, urls: r.urls, srflx: r.srflx ?? [], errors, refused };
}

function listOf(words) {
  return words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;
}

const TURN_TRANSPORTS = { turnUdp: 'udp', turnTcp: 'tcp', turnTls: 'tls' };
const TURN_ADVICE = {
  udp: 'Without a relay, calls between networks that cannot reach each other directly do not connect. Whoever runs this Duet server can add one: duet serve --turn-secret … --turn-uri "turn:HOST:3478?transport=udp".',
  tcp: 'TURN over TCP helps on networks that block UDP. Whoever runs this Duet server can add it: --turn-uri "turn:HOST:3478?transport=tcp".',
  tls: 'TURN over TLS (ideally on port 443) gets through most firewalls and proxies. Whoever runs this Duet server can add it: --turn-uri "turns:HOST:443?transport=tcp", with a certificate browsers trust.',
};
const TRANSPORT_NAME = { udp: 'UDP', tcp: 'TCP', tls: 'TLS' };

/**
 * id: 'turnUdp' | 'turnTcp' | 'turnTls'; m: {urls: [turn url of that transport], relays: [{address, relayProtocol,
 * url}], errors: [{url, code, text}], timedOut}: one relay-only peer connection per URL gathered; a relay
 * candidate proves the relay server was reached over that transport and took the credentials.
 */
export function turnVerdict(id, servers, m) {
  const transport = TURN_TRANSPORTS[id];
  const name = TRANSPORT_NAME[transport];
  const listProblem = serverListProblem(servers);
  if (listProblem) return listProblem;
  if (!m.urls.length) return skip(`No TURN over ${name} is configured on this Duet server.`, TURN_ADVICE[transport]);
  const relay = m.relays[0];
  if (relay) return pass(`Got a relay address (${relay.address}) over ${name} from ${relay.url ?? m.urls[0]}.`);
  const errors = m.errors.filter((e) => e.refused || m.urls.includes(e.url));
  const refused = errors.filter((e) => e.refused);
  if (refused.length) {
    const urls = [...new Set(refused.map((e) => e.url).filter(Boolean))];
    return fail(`This browser refuses the TURN server address ${urls.length ? listOf(urls) : `(${m.urls.join(', ')})`}${refused[0].text ? ` (${refused[0].text})` : ''}.`,
      `Tell whoever runs this Duet server: ${urls.length ? listOf(urls) : 'its TURN server address'} is not a TURN URL browsers accept (check --turn-uri).`);
  }
  if (errors.some((e) => e.code === 401)) {
    return fail(`The relay server refused the credentials (401) at ${errors.find((e) => e.code === 401).url}.`,
      'Whoever runs this Duet server: coturn’s static-auth-secret must be the same as duet serve --turn-secret.');
  }
  if (errors.length) {
    return fail(`Could not get a relay address over ${name}: ${describeErrors(errors)}.`, transport === 'tls'
      ? 'A firewall may block it, or this browser does not trust the relay server’s certificate: it must be valid for the name in the turns: URL and come from an authority browsers trust. Whoever runs this Duet server can check both.'
      : `A firewall may block ${name} to the relay server. Try another network; whoever runs this Duet server can check that the TURN server is running and reachable from outside.`);
  }
  return fail(`No relay address over ${name} within ${seconds(CHECK_TIMEOUT_MS)} (${m.urls.join(', ')}).`,
    `A firewall may block ${name} to the relay server, or the relay server is down. Try another network; whoever runs this Duet server can check that the TURN server is running and reachable from outside.`);
}

function describeErrors(errors) {
  // The browser reports the same failure once per local network interface: each is said once.
  return [...new Set(errors.map((e) => `${e.url} answered ${e.code}${e.text ? ` “${e.text}”` : ''}`))].join('; ');
}

/** What getUserMedia's error means, for a camera ('camera') or a microphone ('microphone'). */
function deviceError(device, error) {
  const noun = device === 'camera' ? 'camera' : 'microphone';
  switch (error?.name) {
    case 'NotAllowedError':
    case 'SecurityError':
      return fail(`Duet is not allowed to use your ${noun}.`,
        `Allow the ${noun} for this site in the browser’s site settings (the icon next to the address), then run the check again.`);
    case 'NotFoundError':
    case 'OverconstrainedError':
      return fail(`No ${noun} was found.`, `Connect a ${noun}, or check that it is switched on in your system settings, then run the check again.`);
    case 'NotReadableError':
    case 'AbortError':
      return fail(`The ${noun} could not start: another app may be using it, or the system blocks it.`,
        `Close other apps that use the ${noun} (another call, say), then run the check again.`);
    case 'NoMediaDevices':
      return fail(`This browser offers no ${noun} on this page: it needs a secure page (https://).`,
        'Open Duet over https:// (or on localhost). Whoever runs this Duet server can put a TLS proxy in front of it.');
    default:
      return fail(`The ${noun} could not start (${error?.name ?? error}).`, 'Run the check again; if it keeps failing, restart the browser.');
  }
}

/** m: {error?, label, live, width, height}: the camera's track (live, with a picture of width × height), or its error. */
export function cameraVerdict(m) {
  if (m.error) return deviceError('camera', m.error);
  if (!m.live) return fail('The camera started and then stopped.', 'Another app may have taken it: close it, then run the check again.');
  if (!(m.width > 0)) return fail(`The camera “${m.label}” is on, but no picture arrived within ${seconds(CHECK_TIMEOUT_MS)}.`, 'Check for a privacy shutter or switch, then run the check again.');
  return pass(`The camera “${m.label}” works: ${m.width}×${m.height}.`);
}

// Chromium 156's fake microphone beeps at about 0.5 RMS; a quiet room reads under 0.003. Speech is far above this.
export const MICROPHONE_SIGNAL_LEVEL = 0.01;

/**
 * m: {error?, label, live, peakLevel (the loudest RMS heard, 0…1), measured (the level could be read),
 * listenedMs}: the microphone's track and what it heard.
 */
export function microphoneVerdict(m) {
  if (m.error) return deviceError('microphone', m.error);
  if (!m.live) return fail('The microphone started and then stopped.', 'Another app may have taken it: close it, then run the check again.');
  if (!m.measured) {
    return fail(`The microphone “${m.label}” is on, but this browser would not let the page measure its level.`,
      'Press “Run the checks again”: a click lets the page listen.');
  }
  if (m.peakLevel < MICROPHONE_SIGNAL_LEVEL) {
    return fail(`The microphone “${m.label}” is on, but no sound reached it in ${seconds(m.listenedMs)}.`,
      'Say something while the check runs. Check that the microphone is not muted (a switch on the headset or the keyboard) and that the right one is chosen in your system settings, then run the check again.');
  }
  return pass(`The microphone “${m.label}” works: sound was heard (peak level ${Math.round(m.peakLevel * 100)} %).`);
}

/** One line for the top of the page. */
export function summarize(results) {
  const all = CHECKS.map((c) => results[c.id]).filter(Boolean);
  const failed = all.filter((r) => r.status === 'fail').length;
  const skipped = all.filter((r) => r.status === 'skip').length;
  if (all.length < CHECKS.length) return `Checking… ${all.length} of ${CHECKS.length} done.`;
  if (failed) return `${failed === 1 ? 'One problem' : `${failed} problems`} found: see what to do below.`;
  if (skipped) return `No problems found; ${skipped === 1 ? 'one check was' : `${skipped} checks were`} skipped: see below.`;
  return 'Everything works: calls should connect from this device and network.';
}
