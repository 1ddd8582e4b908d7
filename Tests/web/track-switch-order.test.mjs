// Screen sharing and device switches both replace the sent video track (js/ui/screen-share.js, js/ui/devices.js).
// They go through one queue (DeviceController.serially): issued together, they run one after the other, the last
// one wins, and no track is left running or sent after it was stopped. Fake devices, tracks and a fake sender whose
// replaceTrack takes a while (as a real one does), so an interleaving would show; no real time passes.
import { test, beforeEach } from 'node:test';
import assert from 'node:assert/strict';

// Browser globals the modules touch, before they are imported.
const listeners = {};
globalThis.document = { querySelectorAll: () => [] };
globalThis.navigator = {
  mediaDevices: {
    addEventListener: (type, fn) => { listeners[type] = fn; },
    enumerateDevices: async () => [
      { kind: 'videoinput', deviceId: 'cam-0', label: 'Camera 0' },
      { kind: 'videoinput', deviceId: 'cam-1', label: 'Camera 1' },
      { kind: 'audioinput', deviceId: 'mic-0', label: 'Microphone 0' },
    ],
    getUserMedia: async ({ audio, video }) => {
      await ticks(1);
      const id = (constraint, fallback) => constraint?.deviceId?.exact ?? fallback;
      return new FakeStream([
        ...(audio ? [new FakeTrack('audio', id(audio, 'mic-0'))] : []),
        ...(video ? [new FakeTrack('video', id(video, 'cam-0'))] : []),
      ]);
    },
    getDisplayMedia: async () => { await ticks(2); return new FakeStream([new FakeTrack('video', 'screen')]); },
  },
};

const { DeviceController } = await import('../../Sources/DuetWeb/Web/js/ui/devices.js');
const { ScreenShare } = await import('../../Sources/DuetWeb/Web/js/ui/screen-share.js');
const { LocalMedia } = await import('../../Sources/DuetWeb/Web/js/runtime/media.js');

async function ticks(n) { for (let i = 0; i < n; i++) await null; }

let created = [];
class FakeTrack {
  constructor(kind, deviceId) {
    Object.assign(this, { kind, deviceId, label: deviceId, enabled: true, readyState: 'live', handlers: {} });
    created.push(this);
  }
  getSettings() { return { deviceId: this.deviceId }; }
  stop() { this.readyState = 'ended'; }
  addEventListener(type, fn) { (this.handlers[type] ??= []).push(fn); }
  end() { this.stop(); for (const fn of this.handlers.ended ?? []) fn(); }  // the browser's "Stop sharing"
}

class FakeStream {
  constructor(tracks) { this.tracks = [...tracks]; }
  getTracks() { return [...this.tracks]; }
  getAudioTracks() { return this.tracks.filter((t) => t.kind === 'audio'); }
  getVideoTracks() { return this.tracks.filter((t) => t.kind === 'video'); }
  addTrack(t) { this.tracks.push(t); }
  removeTrack(t) { this.tracks = this.tracks.filter((x) => x !== t); }
}

// A sender whose replaceTrack takes several turns of the event loop, so other work can run meanwhile.
function fakePc(stream) {
  const sender = {
    track: stream.getVideoTracks()[0],
    sent: [],
    async replaceTrack(track) { await ticks(10); this.track = track; this.sent.push(track); },
  };
  const audioSender = { track: stream.getAudioTracks()[0], async replaceTrack(track) { await ticks(10); this.track = track; } };
  return {
    sender,
    getTransceivers: () => [
      { stopped: false, sender: audioSender, receiver: { track: { kind: 'audio' } }, direction: 'sendrecv' },
      { stopped: false, sender, receiver: { track: { kind: 'video' } }, direction: 'sendrecv' },
    ],
  };
}

async function setup() {
  const media = new LocalMedia();
  await media.start({});
  const pc = fakePc(media.stream);
  const said = [];
  const devices = new DeviceController({ media, pickers: [], getPc: () => pc, mediaElement: {}, announce: (t) => said.push(t), onChange: () => {} });
  await devices.ready();
  const share = new ScreenShare({ media, getPc: () => pc, announce: (t) => said.push(t), onChange: () => {}, serially: (w) => devices.serially(w) });
  return { media, pc, devices, share, said };
}

// Every track made is either stopped or one the call still uses: nothing left running behind its back.
function assertNoLeak(media) {
  const inUse = new Set([media.audioTrack, media.cameraTrack, media.screenTrack].filter(Boolean));
  const running = created.filter((t) => t.readyState === 'live' && !inUse.has(t));
  assert.deepEqual(running.map((t) => t.label), [], 'no stray live track');
}

beforeEach(() => { created = []; });

test('a camera switch and a share started together: the share is sent, the new camera waits aside', async () => {
  const { media, pc, devices, share } = await setup();
  const switched = devices.useCamera('cam-1');
  const shared = share.start();
  await Promise.all([switched, shared]);
  assert.equal(pc.sender.track.label, 'screen');
  assert.equal(media.cameraTrack.label, 'cam-1');
  assert.deepEqual(pc.sender.sent.map((t) => t.label), ['cam-1', 'screen'], 'in the order asked, one at a time');
  assertNoLeak(media);
  await share.stop();
  assert.equal(pc.sender.track, media.cameraTrack, 'stopping sends the camera chosen meanwhile');
  assert.equal(pc.sender.track.label, 'cam-1');
  assert.equal(pc.sender.track.readyState, 'live');
  assertNoLeak(media);
});

test('a share started and a camera switch together: the last one (the switch) happens behind the share', async () => {
  const { media, pc, devices, share } = await setup();
  const shared = share.start();
  const switched = devices.useCamera('cam-1');
  await Promise.all([shared, switched]);
  assert.equal(pc.sender.track.label, 'screen', 'the screen stays what is sent');
  assert.equal(media.cameraTrack.label, 'cam-1');
  assertNoLeak(media);
});

test('stopping a share and switching the camera together never send a stopped camera', async () => {
  const { media, pc, devices, share } = await setup();
  await share.start();
  const stopped = share.stop();
  const switched = devices.useCamera('cam-1');
  await Promise.all([stopped, switched]);
  assert.equal(media.sharingScreen, false);
  assert.equal(pc.sender.track, media.cameraTrack);
  assert.equal(pc.sender.track.label, 'cam-1');
  assert.equal(pc.sender.track.readyState, 'live', 'the sent camera is running');
  assert.deepEqual(pc.sender.sent.map((t) => t.label), ['screen', 'cam-0', 'cam-1']);
  assertNoLeak(media);
});

test('the browser ending the share while a switch is queued: the camera comes back, the switch follows', async () => {
  const { media, pc, devices, share } = await setup();
  await share.start();
  const switched = devices.useCamera('cam-1');
  media.screenTrack.end();
  await switched;
  await devices.busy;
  assert.equal(media.sharingScreen, false);
  assert.equal(media.cameraTrack.label, 'cam-1', 'the switch happened');
  assert.equal(pc.sender.track, media.cameraTrack);
  assert.equal(pc.sender.track.readyState, 'live');
  assertNoLeak(media);
});

test('two quick presses of Share screen are a start and a stop; an old share ending later stops nothing', async () => {
  const { media, pc, devices, share } = await setup();
  await Promise.all([share.toggle(), share.toggle()]);
  assert.equal(media.sharingScreen, false);
  assert.equal(pc.sender.track.label, 'cam-0');
  await share.toggle();
  const first = media.screenTrack;
  assert.equal(pc.sender.track, first, 'a share');
  await share.toggle();
  await share.toggle();
  assert.equal(media.sharingScreen, true, 'a second share');
  assert.notEqual(media.screenTrack, first);
  first.end();  // the first share's track, stopped long ago, says it ended (again)
  await devices.busy;  // whatever that queued has run
  assert.equal(media.sharingScreen, true, 'the newer share goes on');
  assert.equal(pc.sender.track, media.screenTrack, 'and is still what the other person gets');
  await share.toggle();
  assertNoLeak(media);
});

test('the screen picker opens at once, on the press, even while a camera switch is under way', async () => {
  // The browser needs the click that asked for the picker, and a picker left open must not hold the queue.
  const { pc, devices, share } = await setup();
  const original = navigator.mediaDevices.getDisplayMedia;
  let switchDoneWhenPickerOpened = null;
  navigator.mediaDevices.getDisplayMedia = (...args) => {
    switchDoneWhenPickerOpened = pc.sender.sent.length > 0;
    return original(...args);
  };
  try {
    const switched = devices.useCamera('cam-1');
    const shared = share.start();
    assert.equal(switchDoneWhenPickerOpened, false, 'the picker opened before the switch finished');
    await Promise.all([switched, shared]);
    assert.deepEqual(pc.sender.sent.map((t) => t.label), ['cam-1', 'screen'], 'sending still in the order asked');
  } finally {
    navigator.mediaDevices.getDisplayMedia = original;
  }
});
