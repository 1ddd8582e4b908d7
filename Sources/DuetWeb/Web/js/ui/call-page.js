// The call page: binds the DuetCall runtime and the status badge machine to the screen. What is shown of the
// call comes only from engine events, so the page never claims more than the engine knows. The parts around the
// call live in their own modules: the pre-join screen (prejoin.js), devices (devices.js), the other person's
// media state (remote-media-view.js), quality (quality-view.js), screen sharing (screen-share.js), duration,
// title, full screen and wake lock (call-chrome.js) and the keyboard (shortcuts.js). This file wires them.
import { DuetCall } from '../runtime/duet-call.js';
import { emptyStats } from '../runtime/peer-connection.js';
import { LocalMedia } from '../runtime/media.js';
import { devicePreferences, deviceOf } from '../runtime/devices.js';
import { sessionStore } from '../runtime/session-store.js';
import { TimerTable } from '../runtime/timers.js';
import { StatusBadgeMachine } from './status-badge-machine.js';
import { diagnose } from './connectivity-advice.js';
import { savedCalls } from '../ringing/saved-calls.js';
import { deviceId } from '../ringing/device-identity.js';
import { OutgoingRing } from '../ringing/outgoing-ring.js';
import { uploadSnapshot } from '../ringing/snapshot.js';
import { RoomWatch } from '../ringing/room-watch.js';
import { IncomingCalls, sheetElements } from '../ringing/incoming-calls.js';
import { $, setScreen, showError, describeFailure, describeEnd, announce, announcements, setToggle } from './call-view.js';
import { PreJoin } from './prejoin.js';
import { DeviceController } from './devices.js';
import { RemoteMediaView } from './remote-media-view.js';
import { QualityView } from './quality-view.js';
import { ScreenShare } from './screen-share.js';
import { CallChrome } from './call-chrome.js';
import { bindShortcuts } from './shortcuts.js';
import { keyInFragment } from '../verification/link-key.js';
import { fingerprintsInSdp } from '../verification/fingerprint-auth.js';
import { VerificationView } from './verification-view.js';

const ROOM_ID = /^[A-Za-z0-9_-]{27}$/;
const roomId = safeDecode(location.pathname.split('/').pop() ?? '');
// The link's key (#k=), read once: the fragment is the browser's alone (docs/security.md). null: an unkeyed link.
const linkKey = keyInFragment(location.hash);
// WebCrypto exists only on HTTPS (and localhost): elsewhere the key cannot be checked, and the call says so rather
// than claiming a verification it cannot do.
const canVerify = !!globalThis.crypto?.subtle;
const verifyingKey = canVerify ? linkKey?.key ?? null : null;
const verificationView = new VerificationView();
const options = new URLSearchParams(location.search);
const media = new LocalMedia();
const badge = new StatusBadgeMachine();
const badgeTimers = new TimerTable(() => runBadge({ type: 'timerFired' }));
let call = null;
let connectivityProblem = null;  // what the page shows: why media does not connect (null while fine)
let connectivityTicker = null;
// Mic and camera as the person set them: from this browser's last pre-join choice, kept across a rejoin and
// every recovery (the tracks are kept; only the announcement is repeated).
// A reload of a page in the call keeps its own mute and camera (sessionStorage, this tab and room only).
const LOCAL_KEY = 'duet.localMedia';
const remembered = devicePreferences.load();
const local = { audio: remembered.micOn, video: remembered.cameraOn };
try {
  const kept = JSON.parse(sessionStorage.getItem(LOCAL_KEY) ?? 'null');
  if (kept?.roomId === roomId && sessionStore.load(roomId)) Object.assign(local, { audio: kept.audio !== false, video: kept.video !== false });
} catch { /* nothing kept */ }
let announcedLocal = { audio: local.audio, video: local.video, screen: false };
let peerPresent = false;
const remoteSeen = { count: 0, lastAt: null, peerJoinedAt: null, knownAt: null };
const statusLog = [];  // the connection status changes of this page's calls, oldest first (bounded), each with when (epoch ms)
let hadCall = false;  // both people were in this call at some point: the ended screen has a summary to show

const currentPc = () => call?.peer?.pc ?? null;
const chrome = new CallChrome();
const remoteView = new RemoteMediaView({ announce });
// The stats of whichever peer connection the call has now (a rejoin can make a new one); none yet: an empty report.
const quality = new QualityView({ announce, getStats: async () => (call?.peer?.rawStats ? call.peer.rawStats() : currentPc()?.getStats() ?? null) });
const devices = new DeviceController({
  media,
  pickers: [
    { camera: $('prejoin-camera'), microphone: $('prejoin-microphone'), speaker: $('prejoin-speaker') },
    { camera: $('camera-select'), microphone: $('microphone-select'), speaker: $('speaker-select') },
  ],
  getPc: currentPc,
  mediaElement: $('remote-video'),
  announce,
  onChange: () => publishLocal(),
});
// Screen sharing replaces the video track too: it queues behind (and before) device switches, never beside them.
const screenShare = new ScreenShare({ media, getPc: currentPc, announce, onChange: () => publishLocal(), serially: (work) => devices.serially(work) });
const prejoin = new PreJoin({ media, devices, local, onToggle: (change) => setLocal(change) });
// Ringing (issue 31): this page rings the other person from a saved call, and rings for this browser's other
// saved calls (never for this one).
// A snapshot of this camera for the room's subscribed devices (ringing/snapshot.js), with a join or a ring: only a
// browser that has been in this call may ask for their keys (its member token), and only with the camera on.
// `purpose`: 'join', or 'ring:<callId>' (the picture is shown only with that ring).
function snapshotOfMe(purpose = 'join') {
  const memberToken = savedCalls.get(roomId)?.memberToken;
  if (!memberToken || !localState().video || !verifyingKey) return Promise.resolve(null);
  return uploadSnapshot({
    baseUrl: new URL('/', location.href), rid: roomId, purpose, proof: { deviceId: deviceId(), memberToken }, video: $('local-video'), linkKey: verifyingKey,
  });
}

const outgoingRing = new OutgoingRing({
  roomId, linkKey: verifyingKey, announce, snapshot: snapshotOfMe,
  elements: { button: $('ring-button'), cancel: $('ring-cancel'), status: $('ring-status') },
});
const otherCalls = new RoomWatch({
  baseUrl: new URL('/', location.href), deviceId: deviceId(), forceSse: options.get('transports') === 'sse',
  rooms: () => savedCalls.list().filter((r) => r.roomId !== roomId && r.memberToken).map(({ roomId: rid, memberToken }) => ({ roomId: rid, memberToken })),
  onMessage: (envelope) => incomingCalls.message(envelope),
});
const incomingCalls = new IncomingCalls({
  watch: otherCalls, exceptRoom: roomId, announce,
  elements: sheetElements(document),
});
otherCalls.start();

window.duet = {
  page: 'call',
  get phase() { return call?.state.phase ?? 'idle'; },
  get connectionStatus() { return call?.state.connectionStatus ?? 'connected'; },
  get iceConnectionState() { return call?.iceConnectionState ?? 'new'; },
  get transport() { return call?.state.transport ?? null; },
  get cid() { return call?.state.cid ?? null; },
  get hostCid() { return call?.state.hostCid ?? null; },
  get roomId() { return roomId; },
  get participants() { return call?.state.participants ?? []; },
  get badge() { return badge.badge; },
  get screen() { return document.body.dataset.screen; },
  get failure() { return call?.state.failure ?? null; },
  get endReason() { return call?.state.endReason ?? null; },
  // Why media cannot connect, as shown: null while fine, else {code, message, tried, missing, todo}
  // (codes: js/ui/connectivity-advice.js).
  get connectivityProblem() { return connectivityProblem; },
  get timers() { return call?.scheduledTimers ?? []; },
  // Why each ICE restart of this call happened, oldest first.
  get iceRestarts() { return call?.state.iceRestarts ?? []; },
  // How the server answered each join of this page: 'fresh', 'reattached' or 'recovered'.
  get reconnects() { return call?.state.reconnects ?? []; },
  // The node the last drain handed this room to (`draining {via}`), named on its requests; null: none.
  get via() { return call?.engine.via ?? null; },
  stats: async () => (await call?.stats()) ?? emptyStats(),
  leave: () => call?.leave(),
  end: () => call?.end(),
  // The other person's {audio, video, screen} as they last announced it (null until known).
  get remote() { const m = call?.state.remoteMedia; return m ? { audio: !!m.audio, video: !!m.video, screen: !!m.screen } : null; },
  // {level: 'good'|'fair'|'poor'|null, mos, rttMs, lossPct, jitterMs}: level null before the first reading.
  get quality() { return quality.quality; },
  // What this page announces of its own media: {audio, video, screen}.
  get local() { return { ...announcedLocal }; },
  // The devices in use ({deviceId, label}; speaker: its id, null for the default), the end-of-call summary,
  // the call's duration and the wake lock's state ('held', 'released', 'unsupported', 'refused', 'none').
  get devices() {
    return { camera: deviceOf(media.cameraTrack), microphone: deviceOf(media.audioTrack), speaker: devices.speakerId };
  },
  get summary() { return quality.lastSummary; },
  get durationS() { return chrome.durationS; },
  get wakeLock() { return chrome.wakeLockState; },
  get prejoin() { return prejoin.open; },
  // The DTLS fingerprints of this side's certificate and of the other side's, as the descriptions carry them
  // (verification/fingerprint-auth.js normalizes them): what the safety code is made of.
  get localFingerprints() { return fingerprintsInSdp(currentPc()?.localDescription?.sdp ?? ''); },
  get remoteFingerprints() { return fingerprintsInSdp(currentPc()?.remoteDescription?.sdp ?? ''); },
  // The ICE usernames the current descriptions carry ({local, remote}: each a sorted list, one per distinct
  // a=ice-ufrag) and the connection's signaling state: an ICE restart is through when both sides' sets changed and
  // each side's remote is the other's local (tests tell a finished restart from media going on over the old path).
  get ice() {
    const pc = currentPc();
    const ufrags = (sdp) => [...new Set([...(sdp ?? '').matchAll(/^a=ice-ufrag:(\S+)/gm)].map((m) => m[1]))].sort();
    return { local: ufrags(pc?.localDescription?.sdp), remote: ufrags(pc?.remoteDescription?.sdp), signalingState: pc?.signalingState ?? null };
  },
  // The live connection's current descriptions as WebRTC holds them ({local, remote}: SDP text, null before one):
  // diagnosis of what each side agreed (bundling, candidates, DTLS roles), beside `ice` and `paths`.
  get descriptions() {
    const pc = currentPc();
    return { local: pc?.localDescription?.sdp ?? null, remote: pc?.remoteDescription?.sdp ?? null };
  },
  // How many of the other side's descriptions WebRTC applied in this call (0 before it starts).
  get remoteDescriptionsApplied() { return call?.remoteDescriptionsApplied ?? 0; },
  // Every WebRTC command this call performed (the last 200): {t, pc, type, kind?, origin?, ufrag?, ok, error?}.
  get rtcLog() { return (call?.rtcLog ?? []).map((entry) => ({ ...entry })); },
  // The live connection's paths as its own stats tell them (diagnosis, issue 51): each candidate pair with its
  // state, whether it is the transport's selected one, and what went each way on it; each outbound stream's packets.
  paths: async () => {
    const pc = currentPc();
    if (!pc) return null;
    const report = await pc.getStats();
    const selected = new Set();
    report.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) selected.add(s.selectedCandidatePairId); });
    const where = (id) => { const c = report.get(id); return c ? `${c.candidateType} ${c.address ?? c.ip}:${c.port}` : id; };
    const pairs = [];
    const outbound = [];
    report.forEach((s) => {
      if (s.type === 'candidate-pair' && (s.packetsSent || s.packetsReceived || s.nominated || s.selected)) {
        pairs.push({ local: where(s.localCandidateId), remote: where(s.remoteCandidateId), state: s.state, nominated: !!s.nominated,
          selected: selected.has(s.id) || !!s.selected, sent: s.packetsSent ?? null, received: s.packetsReceived ?? null });
      }
      if (s.type === 'outbound-rtp') outbound.push({ kind: s.kind, packetsSent: s.packetsSent });
    });
    return { signalingState: pc.signalingState, iceConnectionState: pc.iceConnectionState, pairs, outbound };
  },
  // 'verified' (every description applied was proven by the link's key), 'unverified' (no key, or nothing proven
  // yet) or 'intercepted' (the call was ended: someone may be in the middle); the six-digit safety code shown.
  get verification() { return call?.state.verification ?? (sessionStore.wasEnded(roomId) === 'intercepted' ? 'intercepted' : 'unverified'); },
  get safetyCode() { return call?.state.safetyCode ?? null; },
  // What the live region said, oldest first (bounded; js/ui/announce-queue.js).
  get announcements() { return announcements(); },
  // The ring this page made: {state: 'ringing'|'accepted'|'declined'|'no_answer'|'cancelled'|'unreachable',
  // devices, callId}, null before any (issue 31); an incoming call for another saved call (as on the home page).
  get ring() { return outgoingRing.state; },
  get incoming() { return { ...incomingCalls.state }; },
  deviceId: deviceId(),
  // How the other person's media state reached this page: remoteMedia events so far, when the last came, when the
  // current peer joined and when their state was first known (performance.now() ms; null: not yet). Tests use it
  // to tell a state newly told from one that was already there.
  get remoteSeen() { return { ...remoteSeen }; },
  // Every media_state message this call received, over either transport: {count, last: [{n, from, audio, video,
  // screen}]} (the last 20; n counts from 1; a new call on this page starts again from 0).
  get mediaStatesReceived() {
    const seen = call?.mediaStatesReceived ?? { count: 0, last: [] };
    return { count: seen.count, last: seen.last.map((m) => ({ ...m })) };
  },
  // Every connection status change, with the phase it happened in (the last 100): what a test compares the quality
  // summary's reconnects with.
  get statusLog() { return statusLog.map((entry) => ({ ...entry })); },
  // The ids of the tracks the peer connection sends now ({audio, video}; null: none): what replaceTrack left there,
  // which is what the other person gets (the local preview shows the stream, not the senders).
  get sending() {
    const senders = currentPc()?.getSenders() ?? [];
    const of = (kind) => senders.find((sender) => sender.track?.kind === kind)?.track?.id ?? null;
    return { audio: of('audio'), video: of('video') };
  },
};

// Shared and copied with its key: whoever gets the link joins the same verified call.
$('share-link').value = `${location.origin}/call/${roomId}${linkKey?.text ? `#k=${linkKey.text}` : ''}`;

if (!ROOM_ID.test(roomId)) {
  showError({ title: 'This link is not a Duet call', text: 'Check that the whole link was copied, or start a new call.', retry: false });
} else if (linkKey?.damaged) {
  // Not joined without its key: a link stripped or cut short must not become a call nobody can verify.
  showError({ title: 'This link is damaged', text: 'The end of the link (after #k=) is cut short or altered. Ask for the link again, or start a new call.', retry: false });
} else if (sessionStore.wasEnded(roomId) === 'intercepted') {
  // A reload after an interception shows it again, and never walks back into the call.
  verificationView.showIntercepted();
  renderTitle();
} else if (sessionStore.wasEnded(roomId)) {
  // Reloading the "Call ended" page must not walk back into the call.
  showEnded(sessionStore.wasEnded(roomId));
} else {
  start();
}

function safeDecode(text) {
  try { return decodeURIComponent(text); } catch { return ''; }
}

// Pre-join is skipped where nobody is there to look at it: a page going back to the seat it holds (a reload
// mid-call, Rejoin), `?prejoin=0`, or automation that set sessionStorage['duet.prejoin'] = 'skip' before
// loading (Tests/e2e/browser/cdp.py does for every page it opens unless asked for the pre-join screen).
function skipPrejoin() {
  if (options.get('prejoin') === '0') return true;
  try { if (sessionStorage.getItem('duet.prejoin') === 'skip') return true; } catch { /* no storage: show it */ }
  return !!sessionStore.load(roomId);
}

async function start({ audioOnly = false, showPrejoin = !skipPrejoin() } = {}) {
  sessionStore.forgetEnded(roomId);
  setScreen('starting');
  try {
    await media.start({ audioOnly, ...(await devices.startingChoice()) });
  } catch (error) {
    const permission = error.kind === 'permission' || error.kind === 'notFound' || error.kind === 'inUse';
    showError({
      title: error.kind === 'permission' ? 'Camera and microphone are blocked' : 'Camera or microphone unavailable',
      text: `${error.message} ${error.kind === 'permission' ? 'Allow access in the browser’s site settings, then try again — or join with audio only.' : ''}`,
      audioOnly: permission && !audioOnly,
      retry: true,
    });
    return;
  }
  await devices.ready();
  // A rejoin keeps what the user chose: a muted mic stays muted.
  setLocal({}, { announce: false });
  $('local-video').srcObject = media.stream;
  $('camera').hidden = !media.cameraTrack;
  $('switch-camera').hidden = (await media.cameraCount()) < 2;
  $('share-screen').hidden = !screenShare.available;
  if (showPrejoin) {
    await prejoin.show();
    // What was chosen on the pre-join screen is what the next call link starts with in this browser.
    devices.remember({ micOn: local.audio, cameraOn: local.video });
    setScreen('starting');
  }
  savedCalls.remember(roomId, linkKey?.text ?? null);
  joinCall();
}

// The previous call's stream must not replace this call's: the listener goes with the call it was added to.
function onRemoteStream({ detail }) { remoteView.attach(detail); }

function joinCall() {
  announcedLocal = localState();  // the new call's first media_state
  call?.removeEventListener('change', onChange);
  call?.removeEventListener('ice', onIce);
  call?.removeEventListener('remotestream', onRemoteStream);
  const resume = sessionStore.load(roomId);
  call = new DuetCall({
    baseUrl: new URL('/', location.href),
    localMedia: media,
    sseOnly: options.get('transports') === 'sse',
    relayOnly: options.get('relay') === '1',
    resume,
    mediaState: { ...announcedLocal },
    linkKey: verifyingKey,
    deviceId: deviceId(),
    quietJoin: options.get('ring') === '1',
    keepsDtlsRole: options.get('keep-dtls-role') === '1',
    // A join about to ring sends no join alert, so no join snapshot: the ring takes its own. Nor does a seat coming
    // back after a reload (it is no news), which must not wait for one.
    prepareSnapshot: options.get('ring') === '1' || resume || !savedCalls.get(roomId)?.memberToken ? null : () => snapshotOfMe('join'),
  });
  outgoingRing.attach(call);
  call.addEventListener('change', onChange);
  call.addEventListener('ice', onIce);
  call.addEventListener('remotestream', onRemoteStream);
  // The explanation depends on time (how long media has been missing) as well as on events.
  clearInterval(connectivityTicker);
  connectivityTicker = setInterval(renderConnectivity, 1000);
  peerPresent = false;
  chrome.reset();
  // The engine sends our media state once joined and again after every rejoin; it must know it before the first.
  publishLocal();
  call.join(roomId);
}

// MARK: own media: mic, camera, screen — the buttons, the pre-join toggles and what the other person is told
function setLocal(change, { announce: say = true } = {}) {
  Object.assign(local, change);
  media.setMicrophoneEnabled(local.audio);
  media.setCameraEnabled(local.video);
  try { sessionStorage.setItem(LOCAL_KEY, JSON.stringify({ roomId, audio: local.audio, video: local.video })); } catch {}
  if (say && 'audio' in change) announce(local.audio ? 'Microphone on.' : 'Microphone muted.');
  if (say && 'video' in change) announce(local.video ? 'Camera on.' : 'Camera off.');
  publishLocal();
}

// What the other person is told: the microphone and camera as set (and there at all), and the screen share.
function localState() {
  return { audio: local.audio && !!media.audioTrack, video: local.video && !!media.cameraTrack, screen: media.sharingScreen };
}

function publishLocal() {
  announcedLocal = localState();
  // Mute and Stop camera keep their names and say their state with aria-pressed ("Mute, pressed" = muted); their
  // titles say what a click does now. Share screen changes its name instead, so it has no aria-pressed (a screen
  // reader would read "Stop sharing, pressed").
  setToggle($('mute'), { pressed: !local.audio, title: local.audio ? 'Mute (M)' : 'Unmute (M)' });
  setToggle($('camera'), { pressed: !local.video, title: local.video ? 'Turn camera off (V)' : 'Turn camera on (V)' });
  setToggle($('share-screen'), { active: media.sharingScreen, name: media.sharingScreen ? 'Stop sharing' : 'Share screen',
    title: media.sharingScreen ? 'Stop sharing (S)' : 'Share screen (S)' });
  if (media.stream && $('local-video').srcObject !== media.stream) $('local-video').srcObject = media.stream;
  document.body.dataset.localAudio = String(announcedLocal.audio);
  document.body.dataset.localVideo = String(announcedLocal.video);
  document.body.dataset.localScreen = String(announcedLocal.screen);
  if (prejoin.open) prejoin.render();
  devices.render();
  renderTitle();
  // DuetCall sends it as media_state (and again after each rejoin); an engine without it just does not tell.
  if (typeof call?.setLocalMediaState === 'function') {
    try { call.setLocalMediaState({ ...announcedLocal }); } catch (error) { console.warn('media state', error); }
  }
}

function onChange({ detail: event }) {
  const state = call.state;
  document.body.dataset.phase = state.phase;
  document.body.dataset.connectionStatus = state.connectionStatus;
  document.body.dataset.transport = state.transport ?? 'none';
  if (event.type === 'phase') runBadge({ type: 'phase', phase: event.phase });
  if (event.type === 'transport') runBadge({ type: 'signaling', up: event.transport !== null });
  if (event.type === 'connectionStatus') runBadge({ type: 'status', status: event.status });
  if (event.type === 'connectionStatus') {
    statusLog.push({ status: event.status, phase: state.phase, at: Date.now() });
    if (statusLog.length > 100) statusLog.shift();
  }
  // The quality tracker decides what counts (sampling in the call, reconnects): the same rule as DuetClient's.
  if (event.type === 'phase' || event.type === 'connectionStatus') quality.noteCall({ phase: state.phase, connectionStatus: state.connectionStatus });
  renderConnectivity();
  if (event.type === 'participants') {
    const peer = event.participants.find((p) => p.cid !== event.myCid);
    runBadge({ type: 'peer', suspended: peer?.connectionStatus === 'suspended' });
    $('end').hidden = !(event.hostCid && event.hostCid === event.myCid);
    // Joins and leaves are said; a suspended peer is still there (the badge says they are reconnecting).
    const present = !!peer;
    if (present && !peerPresent) remoteSeen.peerJoinedAt = performance.now();
    if (present !== peerPresent && ['waiting', 'inCall'].includes(state.phase)) announce(present ? 'The other person joined the call.' : 'The other person left the call.');
    peerPresent = present;
    remoteView.show(state.remoteMedia ?? null, { peerPresent });
  }
  if (event.type === 'remoteMedia') {
    remoteSeen.count += 1;
    remoteSeen.lastAt = performance.now();
    remoteSeen.knownAt = event.media ? (remoteSeen.knownAt ?? remoteSeen.lastAt) : null;
    remoteView.show(event.media ?? state.remoteMedia ?? null, { peerPresent });
  }
  if (event.type === 'phase') onPhase(state.phase);
  if (event.type === 'verification' || event.type === 'safetyCode' || event.type === 'phase') {
    verificationView.render(state, { keyed: !!verifyingKey, reason: linkKey?.key && !canVerify ? 'Not verified (this page is not on HTTPS)' : null });
  }
  renderScreen(event);
}

// Duration, quality and the wake lock follow the call: from the first moment both are in it until it ends.
function onPhase(phase) {
  if (phase === 'inCall') {
    hadCall = true;
    chrome.callStarted();
    void quality.start();
  }
  if (phase === 'waiting' || phase === 'inCall') chrome.inCall(true);
  if (phase === 'idle' || phase === 'error') {
    const summary = quality.stop();
    chrome.callEnded();
    if (phase === 'idle' && hadCall) quality.showSummary(summary, chrome.durationS);
    else $('call-summary').hidden = true;
    hadCall = false;
    closeSheets();
    if (media.sharingScreen) media.endScreen();
  }
}

function onIce({ detail: state }) {
  runBadge({ type: 'media', connected: state === 'connected' || state === 'completed' });
  renderConnectivity();
}

// Why media does not connect: shown calmly under the badge while the engine keeps retrying, gone once media
// connects. Only a change re-renders; only a new problem is announced, so a screen reader hears it once.
function renderConnectivity() {
  let problem = null;
  try {
    problem = call && call.state.phase === 'inCall' ? diagnose(call.connectivity.snapshot(Date.now())) : null;
  } catch (error) {
    console.warn('connectivity advice', error);  // an explanation that fails must not take the call page with it
  }
  if (sameProblem(problem, connectivityProblem)) return;
  const before = connectivityProblem;
  connectivityProblem = problem;
  document.body.dataset.connectivityProblem = problem?.code ?? '';
  $('connectivity').hidden = !problem;
  if (!problem) return;
  $('connectivity-message').textContent = problem.message;
  $('connectivity-tried').replaceChildren(...problem.tried.map(listItem));
  $('connectivity-missing').textContent = problem.missing ?? '';
  $('connectivity-todo').replaceChildren(...problem.todo.map(listItem));
  // Said once per problem: details that change underneath (what was tried, how many seconds it has been) are
  // there to read, not announced.
  const gist = (message) => message?.replace(/\d+ s\b/g, 'N s');
  // A newer explanation replaces an older one not yet read out (topic): only the latest is worth hearing.
  if (gist(problem.message) !== gist(before?.message)) announce(`The call is not connecting. ${problem.message}`, { topic: 'connectivity' });
}

function sameProblem(a, b) {
  if (!a || !b) return a === b;
  return a.code === b.code && a.message === b.message && a.missing === b.missing
    && a.tried.join('\n') === b.tried.join('\n') && a.todo.join('\n') === b.todo.join('\n');
}

function listItem(text) {
  const item = document.createElement('li');
  item.textContent = text;
  return item;
}

function renderScreen(event) {
  const { phase, failure, endReason, verification } = call.state;
  // Nothing replaces the interception screen: not the ended screen, not a rejoin.
  if (verification === 'intercepted') {
    if (document.body.dataset.screen !== 'intercepted') {
      stopMedia();
      sessionStore.markEnded(roomId, 'intercepted');
      verificationView.showIntercepted();
      renderTitle();
    }
    return;
  }
  switch (phase) {
    case 'creatingRoom':
    case 'joining': return setScreen('starting');
    case 'waiting': return setScreen('waiting');
    case 'inCall': return setScreen('in-call');
    case 'error': {
      if (event.type !== 'phase') return;
      stopMedia();  // no live camera behind an error screen
      const gone = failure?.code === 'ROOM_ENDED' || failure?.code === 'INVALID_ROOM_ID';
      return showError({ ...describeFailure(failure), retry: !gone });
    }
    case 'idle':
      if (event.type === 'phase') {
        stopMedia();
        const final = endReason === 'ended' || endReason === 'roomEnded' || endReason === 'expired';
        if (final) sessionStore.markEnded(roomId, endReason);
        showEnded(final ? endReason : endReason ?? 'left');
      }
  }
}

function stopMedia() {
  // Nothing left to explain once the call is over: the ticker stops with it (a rejoin starts a new one).
  clearInterval(connectivityTicker);
  connectivityTicker = null;
  media.stop();
  $('local-video').srcObject = null;
  $('remote-video').srcObject = null;
  remoteView.show(null, { peerPresent: false });
}

// A room that ended for good offers no Rejoin: there is nothing to go back to.
function showEnded(reason) {
  $('ended-text').textContent = describeEnd(reason);
  $('rejoin').hidden = reason === 'ended' || reason === 'roomEnded' || reason === 'expired';
  $('rejoin').textContent = reason === 'replaced' ? 'Use here' : 'Rejoin';
  document.body.dataset.endReason = reason;
  setScreen('ended');
}

function runBadge(event) {
  for (const action of badge.handle(event)) {
    if (action.type === 'scheduleTimer') badgeTimers.schedule(action.timer, action.afterMs);
    if (action.type === 'cancelTimer') badgeTimers.cancel(action.timer);
    if (action.type === 'show') renderBadge(action.badge);
  }
}

function renderBadge(view) {
  // The live region stays in the document and only its text changes, so screen readers announce it.
  const element = $('badge');
  element.dataset.kind = view.kind;
  element.classList.toggle('empty', view.kind === 'hidden' || view.kind === 'pending');
  document.body.dataset.badge = view.kind;
  $('badge-text').textContent = view.text;
  $('badge-detail').textContent = view.detail ?? '';
  $('badge-leave').hidden = !view.offerLeave;
  renderTitle();
}

// The tab says what the call is doing: Reconnecting… or In call 3:21 (muted) can be read without switching tabs.
function renderTitle() {
  const screen = document.body.dataset.screen;
  const kind = badge.badge?.kind;
  const words = {
    prejoin: 'Ready to join', starting: 'Joining…', waiting: 'Waiting for the other person', ended: 'Call ended',
    error: $('error-title').textContent, intercepted: 'This call may be intercepted',
  };
  let text = words[screen] ?? '';
  if (screen === 'in-call') {
    const status = { reconnecting: 'Reconnecting…', retrying: 'Taking longer than usual…', connecting: 'Connecting…',
      peerReconnecting: 'The other person is reconnecting…' }[kind];
    text = status ?? `In call ${$('duration').textContent}`;
  }
  if ((screen === 'in-call' || screen === 'waiting') && !local.audio) text += ' (muted)';
  chrome.setTitle(text);
}
chrome.onTick = renderTitle;
new MutationObserver(renderTitle).observe(document.body, { attributes: true, attributeFilter: ['data-screen'] });

// MARK: controls
$('mute').addEventListener('click', () => setLocal({ audio: !local.audio }));
$('camera').addEventListener('click', () => setLocal({ video: !local.video }));
$('switch-camera').addEventListener('click', () => devices.nextCamera());
$('share-screen').addEventListener('click', () => screenShare.toggle());
$('devices').addEventListener('click', () => toggleSheet('devices-panel', 'devices'));
$('devices-close').addEventListener('click', () => closeSheets());
$('quality-close').addEventListener('click', () => $('quality').focus());
$('quality').addEventListener('click', () => {
  // quality-view.js opens its own panel; only one sheet is open at a time.
  if (!$('quality-panel').hidden) toggleSheet('devices-panel', 'devices', false);
});
$('leave').addEventListener('click', () => call?.leave());
$('starting-leave').addEventListener('click', () => { call?.leave(); if (!call) location.assign('/'); });
$('badge-leave').addEventListener('click', () => call?.leave());
$('end').addEventListener('click', () => call?.end());
$('rejoin').addEventListener('click', () => (call?.state.endReason === 'replaced' ? location.reload() : start({ audioOnly: media.audioOnly, showPrejoin: false })));
$('error-retry').addEventListener('click', () => {
  if (call?.state.phase === 'error') call.dismissError();
  start({ audioOnly: media.audioOnly });
});
$('error-audio-only').addEventListener('click', () => start({ audioOnly: true }));
$('copy-link').addEventListener('click', async () => {
  try {
    await navigator.clipboard.writeText($('share-link').value);
    $('copy-status').textContent = 'Copied';
  } catch {
    $('share-link').select();
    $('copy-status').textContent = 'Press Ctrl+C (or ⌘C) to copy';
  }
});

function toggleSheet(id, buttonId, open = $(id).hidden) {
  if (open) closeSheets();
  $(id).hidden = !open;
  $(buttonId).setAttribute('aria-expanded', String(open));
  if (open) $(id).querySelector('select, button')?.focus();
}

function closeSheets() {
  // Focus inside a sheet that closes goes back to the button that opened it, not to nowhere.
  const focused = document.activeElement;
  const returnTo = $('quality-panel').contains(focused) ? $('quality') : $('devices-panel').contains(focused) ? $('devices') : null;
  if (!$('quality-panel').hidden) quality.togglePanel(false);
  $('devices-panel').hidden = true;
  $('devices').setAttribute('aria-expanded', 'false');
  returnTo?.focus();
}

addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && (!$('quality-panel').hidden || !$('devices-panel').hidden)) closeSheets();
});

// m and v work on the pre-join screen and in the call; the rest only once in it.
const live = () => ['waiting', 'in-call'].includes(document.body.dataset.screen);
const chooses = () => live() || document.body.dataset.screen === 'prejoin';
bindShortcuts({
  dialog: $('help-dialog'),
  list: $('help-keys'),
  opener: $('help'),
  shortcuts: [
    { key: 'm', label: 'Mute or unmute the microphone', available: chooses, run: () => setLocal({ audio: !local.audio }) },
    { key: 'v', label: 'Turn the camera off or on', available: () => chooses() && !!media.cameraTrack, run: () => setLocal({ video: !local.video }) },
    { key: 'c', label: 'Switch to the next camera', available: () => live() && !$('switch-camera').hidden, run: () => devices.nextCamera() },
    { key: 's', label: 'Share the screen, or stop sharing', available: () => live() && screenShare.available, run: () => screenShare.toggle() },
    { key: 'd', label: 'Choose camera, microphone and speaker', available: live, run: () => toggleSheet('devices-panel', 'devices') },
    { key: 'i', label: 'Show or hide call quality details', available: live, run: () => { toggleSheet('devices-panel', 'devices', false); quality.togglePanel(); } },
    { key: 'f', label: 'Full screen', available: () => live() && document.fullscreenEnabled, run: () => chrome.toggleFullscreen() },
    { key: 'p', label: 'Picture in picture', available: () => live() && !$('pip').hidden, run: () => chrome.togglePictureInPicture() },
    { key: '?', label: 'Show these shortcuts', available: () => true, run: () => $('help').click() },
    { key: 'Escape', keyLabel: 'Esc', label: 'Close a panel or this list', listOnly: true, run: () => {} },
  ],
});

