// The call page: binds the DuetCall runtime and the status badge machine to the screen. What is
// shown comes only from engine events, so the page never claims more than the engine knows.
import { DuetCall } from '../runtime/duet-call.js';
import { emptyStats } from '../runtime/peer-connection.js';
import { LocalMedia } from '../runtime/media.js';
import { sessionStore } from '../runtime/session-store.js';
import { TimerTable } from '../runtime/timers.js';
import { StatusBadgeMachine } from './status-badge-machine.js';
import { diagnose } from './connectivity-advice.js';
import { recentRooms } from './recent-rooms.js';
import { $, setScreen, showError, describeFailure, describeEnd } from './call-view.js';

const ROOM_ID = /^[A-Za-z0-9_-]{27}$/;
const roomId = safeDecode(location.pathname.split('/').pop() ?? '');
const options = new URLSearchParams(location.search);
const media = new LocalMedia();
const badge = new StatusBadgeMachine();
const badgeTimers = new TimerTable(() => runBadge({ type: 'timerFired' }));
let call = null;
let connectivityProblem = null;  // what the page shows: why media does not connect (null while fine)
let connectivityTicker = null;
let micOn = true;
let cameraOn = true;

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
  stats: async () => (await call?.stats()) ?? emptyStats(),
  leave: () => call?.leave(),
  end: () => call?.end(),
};

$('share-link').value = `${location.origin}/call/${roomId}`;

if (!ROOM_ID.test(roomId)) {
  showError({ title: 'This link is not a Duet call', text: 'Check that the whole link was copied, or start a new call.', retry: false });
} else if (sessionStore.wasEnded(roomId)) {
  // Reloading the "Call ended" page must not walk back into the call.
  showEnded(sessionStore.wasEnded(roomId));
} else {
  start();
}

function safeDecode(text) {
  try { return decodeURIComponent(text); } catch { return ''; }
}

async function start({ audioOnly = false } = {}) {
  sessionStore.forgetEnded(roomId);
  setScreen('starting');
  try {
    await media.start({ audioOnly });
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
  // A rejoin keeps what the user chose: a muted mic stays muted.
  media.setMicrophoneEnabled(micOn);
  media.setCameraEnabled(cameraOn);
  $('local-video').srcObject = media.stream;
  $('camera').hidden = !media.videoTrack;
  $('switch-camera').hidden = (await media.cameraCount()) < 2;
  recentRooms.remember(roomId);
  joinCall();
}

function joinCall() {
  call?.removeEventListener('change', onChange);
  call?.removeEventListener('ice', onIce);
  call = new DuetCall({
    baseUrl: new URL('/', location.href),
    localMedia: media,
    sseOnly: options.get('transports') === 'sse',
    relayOnly: options.get('relay') === '1',
    resume: sessionStore.load(roomId),
  });
  call.addEventListener('change', onChange);
  call.addEventListener('ice', onIce);
  call.addEventListener('remotestream', ({ detail }) => { $('remote-video').srcObject = detail; });
  // The explanation depends on time (how long media has been missing) as well as on events.
  clearInterval(connectivityTicker);
  connectivityTicker = setInterval(renderConnectivity, 1000);
  call.join(roomId);
}

function onChange({ detail: event }) {
  const state = call.state;
  document.body.dataset.phase = state.phase;
  document.body.dataset.connectionStatus = state.connectionStatus;
  document.body.dataset.transport = state.transport ?? 'none';
  if (event.type === 'phase') runBadge({ type: 'phase', phase: event.phase });
  if (event.type === 'transport') runBadge({ type: 'signaling', up: event.transport !== null });
  if (event.type === 'connectionStatus') runBadge({ type: 'status', status: event.status });
  renderConnectivity();
  if (event.type === 'participants') {
    const peer = event.participants.find((p) => p.cid !== event.myCid);
    runBadge({ type: 'peer', suspended: peer?.connectionStatus === 'suspended' });
    $('end').hidden = !(event.hostCid && event.hostCid === event.myCid);
  }
  renderScreen(event);
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
  if (gist(problem.message) !== gist(before?.message)) announce(`The call is not connecting. ${problem.message}`);
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
  const { phase, failure, endReason } = call.state;
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
}

// MARK: controls
$('mute').addEventListener('click', () => {
  micOn = !micOn;
  media.setMicrophoneEnabled(micOn);
  // A toggle keeps its name and says its state with aria-pressed ("Mute, pressed" = muted).
  $('mute').setAttribute('aria-pressed', String(!micOn));
});
$('camera').addEventListener('click', () => {
  cameraOn = !cameraOn;
  media.setCameraEnabled(cameraOn);
  $('camera').setAttribute('aria-pressed', String(!cameraOn));
});
$('switch-camera').addEventListener('click', async () => {
  try {
    const track = await media.nextCameraTrack();
    if (!track) return;
    await call?.peer.replaceVideoTrack(track);
    media.adoptVideoTrack(track);
  } catch (error) {
    // The call goes on with the camera it had; say why the switch did not happen.
    announce(`Could not switch camera: ${error?.message ?? error}`);
  }
});
$('leave').addEventListener('click', () => call?.leave());
$('starting-leave').addEventListener('click', () => { call?.leave(); if (!call) location.assign('/'); });
$('badge-leave').addEventListener('click', () => call?.leave());
$('end').addEventListener('click', () => call?.end());
$('rejoin').addEventListener('click', () => (call?.state.endReason === 'replaced' ? location.reload() : start({ audioOnly: media.audioOnly })));
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

function announce(text) {
  $('announcer').textContent = text;
}
