// /check: tests, in this browser, what a call needs — signaling over WebSocket and SSE (a throwaway room joined
// and left, exactly as a call does), the server's STUN (a server-reflexive candidate) and TURN over UDP, TCP and TLS
// (a relay candidate each, relay-only), the camera and the microphone. This file measures; what the measurements
// mean and what to do is js/ui/check-verdicts.js. Results: window.duetCheck = {done, results: {id: verdict},
// measurements: {id: what the verdict was made from}, rooms: [the test rooms joined and left]}.
import { openWebSocketLink } from '../runtime/websocket-link.js';
import { openSseLink, newSseSid } from '../runtime/sse-link.js';
import { roomQuery } from '../runtime/room-query.js';
import { iceServersOf, parseCandidate, refusedIceServerUrl, relayProtocolOf, summarizeIceServers } from '../runtime/connectivity-facts.js';
import { RESILIENCE } from '../constants.js';
import {
  CHECKS, CHECK_TIMEOUT_MS, MICROPHONE_SIGNAL_LEVEL, cameraVerdict, microphoneVerdict, signalingVerdict, stunVerdict,
  summarize, turnVerdict,
} from './check-verdicts.js';

const base = new URL('/', location.href);
const MICROPHONE_LISTEN_MS = 5000;
const STATUS_WORDS = { pass: 'Passed', fail: 'Problem', skip: 'Skipped', running: 'Checking…', waiting: 'Waiting' };
const STATUS_MARKS = { pass: '✓', fail: '✗', skip: '–', running: '…', waiting: '·' };

const check = { done: false, results: {}, measurements: {}, rooms: [] };
window.duetCheck = check;
window.duet = { page: 'check' };
const $ = (id) => document.getElementById(id);
const rows = buildRows();
$('check-again').addEventListener('click', () => runAll());
runAll();

// MARK: the page

function buildRows() {
  const list = $('check-list');
  const built = {};
  for (const { id, title } of CHECKS) {
    const item = document.createElement('li');
    item.className = 'check-row';
    item.id = `check-${id}`;
    const heading = document.createElement('h2');
    heading.textContent = title;
    const status = document.createElement('span');
    status.className = 'status';
    const mark = document.createElement('span');
    mark.setAttribute('aria-hidden', 'true');
    const word = document.createElement('span');
    status.append(mark, word);
    const detail = document.createElement('p');
    detail.className = 'detail';
    const todo = document.createElement('p');
    todo.className = 'todo';
    item.append(heading, status, detail, todo);
    list.append(item);
    built[id] = { item, mark, word, detail, todo };
  }
  // The camera row shows a still of what the camera saw; the microphone row a level meter while it listens.
  const still = document.createElement('canvas');
  still.id = 'camera-still';
  still.width = 160;
  still.height = 90;
  still.hidden = true;
  still.setAttribute('aria-label', 'A still from your camera');
  still.setAttribute('role', 'img');
  built.camera.item.append(still);
  const meter = document.createElement('meter');
  meter.id = 'microphone-level';
  meter.min = 0;
  meter.max = 1;
  meter.value = 0;
  meter.hidden = true;
  meter.setAttribute('aria-label', 'Microphone level');
  built.microphone.item.append(meter);
  return built;
}

function show(id, status, detail = '', todo = '') {
  const row = rows[id];
  row.item.dataset.status = status;
  row.mark.textContent = STATUS_MARKS[status];
  row.word.textContent = STATUS_WORDS[status];
  row.detail.textContent = detail;
  const label = document.createElement('strong');
  label.textContent = 'What to do: ';
  row.todo.replaceChildren(...(todo ? [label, todo] : []));
  row.todo.hidden = !todo;
}

function settle(id, verdict, measured = null) {
  check.results[id] = verdict;
  check.measurements[id] = measured;
  show(id, verdict.status, verdict.detail, verdict.todo);
  $('check-summary').textContent = summarize(check.results);
}

async function runAll() {
  $('check-again').disabled = true;
  check.done = false;
  check.results = {};
  check.measurements = {};
  check.rooms = [];
  document.body.dataset.check = 'running';
  for (const { id } of CHECKS) show(id, 'waiting');
  $('check-summary').textContent = summarize(check.results);
  try {
    const servers = await checkSignaling();
    await checkNetworkPaths(servers);
    await checkDevices();
  } catch (error) {
    console.error('the check stopped', error);
  }
  for (const { id } of CHECKS) if (!check.results[id]) settle(id, { status: 'fail', detail: 'This check could not run.', todo: 'Run the checks again.' });
  check.done = true;
  document.body.dataset.check = 'done';
  $('check-again').disabled = false;
}

// MARK: signaling

/** Both transports, one after the other; the ICE servers come with the first join that works. */
async function checkSignaling() {
  let servers = { status: 'failed', error: 'no transport could join' };
  for (const kind of ['websocket', 'sse']) {
    show(kind, 'running');
    const measured = await joinOver(kind, servers.status === 'failed');
    if (measured.servers) servers = measured.servers;
    settle(kind, signalingVerdict(kind, measured), { ...measured, servers: undefined });
  }
  return servers;
}

/**
 * Joins a fresh room over `kind` as a call does (room id, `join`, `joined`), fetches the ICE servers with the
 * `joined` TURN token while the seat exists (when `fetchServers`), then leaves with `leave` and closes.
 */
async function joinOver(kind, fetchServers) {
  const started = performance.now();
  const abort = new AbortController();
  let settleJoin;
  const joined = new Promise((resolve, reject) => { settleJoin = { resolve, reject }; });
  joined.catch(() => {});  // a join that never comes is reported through the timeout or the close
  abort.signal.addEventListener('abort', () => settleJoin.reject(new Error('abandoned')));
  const handlers = {
    onMessage(envelope) {
      if (envelope?.type === 'joined') settleJoin.resolve(envelope);
      if (envelope?.type === 'error') settleJoin.reject(new Error(`the server answered ${envelope.payload?.code ?? 'an error'}`));
    },
    onClose() { settleJoin.reject(new Error('the connection closed')); },
  };
  const attempt = (async () => {
    const roomId = await newRoomId(abort.signal);
    check.rooms.push(roomId);
    // Its throwaway room in the URL, as a call's links have theirs (a cluster's proxy routes on it).
    const link = await (kind === 'websocket'
      ? openWebSocketLink(base, handlers, abort.signal, roomId)
      : openSseLink(base, newSseSid(), handlers, abort.signal, roomId));
    try {
      link.send({ v: 1, type: 'join', rid: roomId, payload: { capabilities: { trickleIce: true }, device: 'web-check' } });
      const answer = await joined;
      const ms = performance.now() - started;
      // The TURN token is good only while its seat exists: the list is fetched before leaving.
      const servers = fetchServers ? await fetchIceServers(answer.payload?.turnToken, roomId, abort.signal) : null;
      return { joined: true, ms, servers };
    } finally {
      // Leave properly, as a call does (also after a timeout: the seat must not linger).
      try { link.send({ v: 1, type: 'leave', payload: {} }); } catch { /* closed already: the server evicts the seat in time */ }
      await link.flush(RESILIENCE.GOODBYE_FLUSH_TIMEOUT_MS);
      link.close();
    }
  })();
  attempt.catch(() => {});  // after a timeout its late failure is no news
  try {
    return await withTimeout(attempt);
  } catch (error) {
    abort.abort();
    return { joined: false, timedOut: error?.timedOut === true, error: error?.timedOut ? null : String(error?.message ?? error) };
  }
}

async function newRoomId(signal) {
  const response = await fetch(new URL('api/room-id', base), { method: 'POST', signal });
  if (!response.ok) throw new Error(`a test room could not be made: the server answered ${response.status}`);
  return (await response.json()).roomId;
}

/** {status: 'fetched', list} (503: the server has no STUN and no TURN: an empty list) or {status: 'failed', error}. */
async function fetchIceServers(token, roomId, signal) {
  try {
    if (!token) throw new Error('joined carried no TURN token');
    // Its room in the URL too: in a cluster only the node holding the seat answers for its token.
    const url = new URL(`api/turn-credentials?token=${encodeURIComponent(token)}&${roomQuery(roomId)}`, base);
    const response = await fetch(url, { signal });
    if (response.status === 503) return { status: 'fetched', list: [] };
    if (!response.ok) throw new Error(`the server answered ${response.status}`);
    const iceServers = iceServersOf(await response.json());  // also an older server's {uris, username, password}
    if (!iceServers) throw new Error('the answer has no iceServers');
    return { status: 'fetched', list: iceServers };
  } catch (error) {
    return { status: 'failed', error: String(error?.message ?? error) };
  }
}

// MARK: STUN and TURN

async function checkNetworkPaths(servers) {
  const list = servers.list ?? [];
  const summary = summarizeIceServers(list);
  show('stun', 'running');
  for (const id of ['turnUdp', 'turnTcp', 'turnTls']) show(id, 'running');
  const stun = (async () => {
    const urls = [...new Set(summary.stun)];
    if (servers.status !== 'fetched' || !urls.length) return settle('stun', stunVerdict(servers, { urls, srflx: [], errors: [] }));
    // One peer connection per STUN URL: a STUN server that does not answer is not hidden behind one that does.
    const results = await Promise.all(urls.map(async (url) => {
      const found = await gather({ iceServers: [{ urls: [url] }] }, (c) => c.type === 'srflx');
      return {
        url, srflx: found.candidates.filter((c) => c.type === 'srflx').map((c) => c.address),
        errors: found.errors, gatheringComplete: found.gatheringComplete, timedOut: found.timedOut,
      };
    }));
    const measured = {
      urls, results, srflx: results.flatMap((r) => r.srflx), errors: results.flatMap((r) => r.errors),
      gatheringComplete: results.every((r) => r.gatheringComplete), timedOut: results.some((r) => r.timedOut),
    };
    settle('stun', stunVerdict(servers, measured), measured);
  })();
  const turns = Object.entries({ turnUdp: 'udp', turnTcp: 'tcp', turnTls: 'tls' }).map(async ([id, transport]) => {
    const urls = summary.turn[transport];
    if (servers.status !== 'fetched' || !urls.length) return settle(id, turnVerdict(id, servers, { urls, relays: [], errors: [] }));
    // One relay-only peer connection per URL, so each relay candidate is known to come from that URL.
    const attempts = await Promise.all(urls.map((url) => {
      const entry = list.find((s) => (Array.isArray(s.urls) ? s.urls : [s.urls]).includes(url));
      return gather({ iceServers: [{ urls: [url], username: entry?.username, credential: entry?.credential }], iceTransportPolicy: 'relay' },
        (c) => c.type === 'relay');
    }));
    const measured = {
      urls,
      relays: attempts.flatMap((a) => a.candidates.filter((c) => c.type === 'relay')),
      errors: attempts.flatMap((a) => a.errors),
      timedOut: attempts.every((a) => a.timedOut),
    };
    settle(id, turnVerdict(id, servers, measured), measured);
  });
  await Promise.all([stun, ...turns]);
}

/**
 * Gathers candidates of a peer connection with `configuration` until `enough(candidate)`, gathering completes, or
 * CHECK_TIMEOUT_MS pass: {candidates: [{type, protocol, address, relayProtocol, url}], errors, gatheringComplete, timedOut}.
 */
async function gather(configuration, enough) {
  const found = { candidates: [], errors: [], gatheringComplete: false, timedOut: false };
  let pc;
  try {
    pc = new RTCPeerConnection(configuration);
  } catch (error) {
    // The browser refuses the configuration itself (a malformed URL): said as such, naming the URL.
    const urls = (configuration.iceServers ?? []).flatMap((s) => (Array.isArray(s.urls) ? s.urls : [s.urls]));
    const url = refusedIceServerUrl(configuration.iceServers, error) || (urls.length === 1 ? urls[0] : '');
    found.errors.push({ url, code: 0, text: String(error?.message ?? error), refused: true });
    return found;
  }
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  pc.onicecandidate = ({ candidate }) => {
    const parsed = candidate?.candidate ? parseCandidate(candidate.candidate) : null;
    if (!parsed) return;
    const entry = { type: parsed.type, protocol: parsed.protocol, address: parsed.address,
      relayProtocol: parsed.type === 'relay' ? relayProtocolOf(candidate) : null, url: candidate.url || null };
    found.candidates.push(entry);
    if (enough(entry)) finish();
  };
  pc.onicecandidateerror = (event) => found.errors.push({ url: event.url, code: event.errorCode, text: event.errorText });
  pc.onicegatheringstatechange = () => {
    if (pc.iceGatheringState !== 'complete') return;
    found.gatheringComplete = true;
    finish();
  };
  const timer = setTimeout(() => { found.timedOut = !found.gatheringComplete; finish(); }, CHECK_TIMEOUT_MS);
  try {
    pc.createDataChannel('check');
    await pc.setLocalDescription(await pc.createOffer());
    await finished;
  } catch (error) {
    found.errors.push({ url: '', code: 0, text: String(error?.message ?? error) });
  } finally {
    clearTimeout(timer);
    pc.close();
  }
  return found;
}

// MARK: camera and microphone

async function checkDevices() {
  show('camera', 'running');
  show('microphone', 'running');
  const { video, audio, videoError, audioError } = await openDevices();
  try {
    const measure = async (id, verdict, error, measuring) => {
      const measured = error ? { error: { name: error.name, message: error.message } } : await measuring();
      settle(id, verdict(measured), measured);
    };
    await Promise.all([
      measure('camera', cameraVerdict, videoError, () => watchCamera(video)),
      measure('microphone', microphoneVerdict, audioError, () => listen(audio)),
    ]);
  } finally {
    // The camera light goes off as soon as its check is done.
    video?.stop();
    audio?.stop();
  }
}

/** Both devices at once (one permission prompt); when that fails, each alone, so each row names its own problem. */
async function openDevices() {
  if (!navigator.mediaDevices?.getUserMedia) {
    const error = { name: 'NoMediaDevices' };
    return { videoError: error, audioError: error };
  }
  try {
    const stream = await navigator.mediaDevices.getUserMedia({ video: true, audio: true });
    return { video: stream.getVideoTracks()[0], audio: stream.getAudioTracks()[0] };
  } catch {
    const one = async (constraints) => {
      try { return { track: (await navigator.mediaDevices.getUserMedia(constraints)).getTracks()[0] }; } catch (error) { return { error }; }
    };
    const video = await one({ video: true });
    const audio = await one({ audio: true });
    return { video: video.track, videoError: video.error, audio: audio.track, audioError: audio.error };
  }
}

/** The camera's track and its first picture: its size, and a still of it in the row. */
async function watchCamera(track) {
  const element = document.createElement('video');
  element.muted = true;
  element.playsInline = true;
  element.srcObject = new MediaStream([track]);
  const deadline = performance.now() + CHECK_TIMEOUT_MS;
  // play() waits for a first frame: a camera that gives none must not hold the check past its deadline.
  try { await Promise.race([element.play(), sleep(CHECK_TIMEOUT_MS)]); } catch { /* the size is what counts */ }
  while (!(element.videoWidth > 0) && track.readyState === 'live' && performance.now() < deadline) await sleep(50);
  const measured = { label: track.label || 'camera', live: track.readyState === 'live', width: element.videoWidth, height: element.videoHeight };
  if (measured.width > 0) {
    await sleep(300);  // a few frames in: the first can be dark while the camera adjusts
    const still = $('camera-still');
    still.getContext('2d').drawImage(element, 0, 0, still.width, still.height);
    still.hidden = false;
  }
  element.srcObject = null;
  return measured;
}

/** Listens to the microphone for up to MICROPHONE_LISTEN_MS (less once sound is heard): the loudest RMS level. */
async function listen(track) {
  const measured = { label: track.label || 'microphone', live: track.readyState === 'live', peakLevel: 0, measured: false, listenedMs: 0 };
  let context;
  try {
    context = new AudioContext();
    if (context.state !== 'running') await Promise.race([context.resume(), sleep(1000)]);
    if (context.state !== 'running') return measured;
    const analyser = context.createAnalyser();
    analyser.fftSize = 2048;
    context.createMediaStreamSource(new MediaStream([track])).connect(analyser);
    const samples = new Float32Array(analyser.fftSize);
    const meter = $('microphone-level');
    meter.hidden = false;
    measured.measured = true;
    // A quiet room says nothing: the user is asked to speak while the check listens.
    show('microphone', 'running', 'Listening — say something.');
    const started = performance.now();
    for (;;) {
      await sleep(50);
      analyser.getFloatTimeDomainData(samples);
      let sum = 0;
      for (const s of samples) sum += s * s;
      const level = Math.sqrt(sum / samples.length);
      measured.peakLevel = Math.max(measured.peakLevel, level);
      meter.value = Math.min(1, level * 2);
      measured.listenedMs = performance.now() - started;
      const heard = measured.peakLevel >= MICROPHONE_SIGNAL_LEVEL && measured.listenedMs >= 1000;
      if (heard || measured.listenedMs >= MICROPHONE_LISTEN_MS || track.readyState !== 'live') break;
    }
    measured.live = track.readyState === 'live';
    meter.value = measured.peakLevel >= MICROPHONE_SIGNAL_LEVEL ? Math.min(1, measured.peakLevel * 2) : 0;
    return measured;
  } catch (error) {
    console.warn('the microphone level could not be measured', error);
    return measured;
  } finally {
    void context?.close();
  }
}

// MARK: helpers

function sleep(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }

/** `promise`, or a rejection `{timedOut: true}` after CHECK_TIMEOUT_MS. */
function withTimeout(promise) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject({ timedOut: true }), CHECK_TIMEOUT_MS); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
