// Mirrors MediaWatchdogTests.swift (the machine's own rules; the engine's use of it is held to the Swift engine's by
// the differential replay): media that stops while ICE says connected is a stall, growth again is recovery.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RESILIENCE } from '../../Sources/DuetServer/Web/js/constants.js';
import { MediaWatchdogMachine, STALL_SAMPLES } from '../../Sources/DuetServer/Web/js/machines/media-watchdog-machine.js';

const sample = (packets, videoFrames = 0) => ({ packets, videoFrames });

function connected() {
  const machine = new MediaWatchdogMachine();
  assert.deepEqual(machine.handle({ type: 'ice', connected: true }), [
    { type: 'timer', command: { type: 'schedule', timer: 'mediaSample', afterMs: RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS } },
  ]);
  return machine;
}

/** One timer firing and one sample per entry; the actions of the samples. */
function feed(machine, samples) {
  const actions = [];
  for (const counted of samples) {
    assert.deepEqual(machine.handle({ type: 'timerFired', timer: 'mediaSample' })[0], { type: 'sample' });
    actions.push(...machine.handle({ type: 'sampled', sample: counted }));
  }
  return actions.map((action) => action.type);
}

test('packets that stop for the stall timeout are a stall, and growth is recovery', () => {
  const machine = connected();
  assert.deepEqual(feed(machine, [sample(50, 5), sample(100, 10)]), []);
  assert.deepEqual(feed(machine, Array(STALL_SAMPLES - 1).fill(sample(100, 10))), [], 'one sample short of the timeout');
  assert.deepEqual(feed(machine, [sample(100, 10)]), ['stalled']);
  assert.deepEqual(feed(machine, [sample(100, 10)]), [], 'said once');
  assert.deepEqual(feed(machine, [sample(150, 20)]), ['flowing']);
  assert.equal(STALL_SAMPLES * RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS, RESILIENCE.MEDIA_STALL_TIMEOUT_MS);
});

test('video frames that stop are a stall only when the camera is on and frames came before', () => {
  const samples = [sample(0, 0), sample(10, 5)];
  for (let i = 1; i <= STALL_SAMPLES; i++) samples.push(sample(10 + i * 10, 5));
  const camera = connected();
  camera.handle({ type: 'peerMedia', media: { audio: true, video: true, screen: false } });
  assert.deepEqual(feed(camera, samples), ['stalled']);
  const cameraOff = connected();
  cameraOff.handle({ type: 'peerMedia', media: { audio: true, video: false, screen: false } });
  assert.deepEqual(feed(cameraOff, samples), []);
  const neverVideo = connected();
  neverVideo.handle({ type: 'peerMedia', media: { audio: true, video: true, screen: false } });
  assert.deepEqual(feed(neverVideo, [0, 1, 2, 3, 4, 5, 6].map((i) => sample(i * 10, 0))), []);
});

test('a peer that sends nothing is no stall; no report is no evidence', () => {
  const silentPeer = connected();
  silentPeer.handle({ type: 'peerMedia', media: { audio: false, video: false, screen: false } });
  assert.deepEqual(feed(silentPeer, Array(8).fill(sample(7))), []);
  assert.deepEqual(feed(connected(), Array(10).fill(null)), []);
});

test('counters that go back are a new baseline, not growth', () => {
  const machine = connected();
  feed(machine, [sample(500, 50)]);
  assert.deepEqual(feed(machine, Array(STALL_SAMPLES + 1).fill(sample(3))), ['stalled']);
});

test('a renegotiation starts the count again but keeps a stall already said', () => {
  const machine = connected();
  const quiet = Array(STALL_SAMPLES - 1).fill(sample(5));
  assert.deepEqual(feed(machine, quiet), []);
  assert.deepEqual(machine.handle({ type: 'renegotiated' }), []);
  assert.deepEqual(feed(machine, quiet), [], 'counted afresh from the renegotiation');
  assert.deepEqual(feed(machine, [sample(5), sample(5)]), ['stalled']);
  machine.handle({ type: 'renegotiated' });
  assert.equal(machine.stalled, true);
  assert.deepEqual(feed(machine, [sample(9)]), ['flowing']);
});

test('leaving connected stops sampling, but only growth ends the stall; a reset forgets it', () => {
  const machine = connected();
  feed(machine, Array(STALL_SAMPLES + 1).fill(sample(1)));
  assert.equal(machine.stalled, true);
  assert.deepEqual(machine.handle({ type: 'ice', connected: false }), [{ type: 'timer', command: { type: 'cancel', timer: 'mediaSample' } }]);
  assert.deepEqual(machine.handle({ type: 'timerFired', timer: 'mediaSample' }), []);
  assert.deepEqual(machine.handle({ type: 'sampled', sample: sample(9, 9) }), []);
  machine.handle({ type: 'ice', connected: true });
  assert.equal(machine.stalled, true, 'ICE connected again proves nothing');
  assert.deepEqual(feed(machine, [sample(1)]), [], 'a new baseline, not growth');
  assert.deepEqual(feed(machine, [sample(2)]), ['flowing']);
  feed(machine, Array(STALL_SAMPLES).fill(sample(2)));
  assert.equal(machine.stalled, true);
  assert.deepEqual(machine.handle({ type: 'reset' }), []);
  assert.equal(machine.stalled, false);
});
