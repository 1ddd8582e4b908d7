// The call page's announcements (js/ui/announce-queue.js): each message gets its turn in the live region, none is
// replaced before it was read, repeats collapse, and a flood stays bounded. A fake clock: no real time passes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AnnounceQueue, ANNOUNCE_GAP_MS } from '../../Sources/DuetWeb/Web/js/ui/announce-queue.js';

function fakeClock() {
  let now = 0;
  let nextId = 1;
  const timers = new Map();  // id -> {at, fn}
  return {
    setTimer: (fn, ms) => { const id = nextId++; timers.set(id, { at: now + ms, fn }); return id; },
    clearTimer: (id) => timers.delete(id),
    get pending() { return timers.size; },
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = [...timers.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at)[0];
        if (!due) break;
        timers.delete(due[0]);
        now = due[1].at;
        due[1].fn();
      }
      now = until;
    },
  };
}

function setup(options = {}) {
  const clock = fakeClock();
  const region = [];  // every write, in order
  const queue = new AnnounceQueue({ write: (text) => region.push(text), setTimer: clock.setTimer, clearTimer: clock.clearTimer, ...options });
  return { clock, region, queue };
}

test('a first message is written at once', () => {
  const { region, queue } = setup();
  queue.say('The other person joined the call.');
  assert.deepEqual(region, ['The other person joined the call.']);
});

test('a second message waits until the first had its time in the region', () => {
  const { clock, region, queue } = setup();
  queue.say('The other person joined the call.');
  queue.say('The other person muted their microphone.');
  assert.deepEqual(region, ['The other person joined the call.']);
  clock.advance(ANNOUNCE_GAP_MS - 1);
  assert.deepEqual(region, ['The other person joined the call.'], 'not replaced before its time is up');
  clock.advance(1);
  assert.deepEqual(region, ['The other person joined the call.', 'The other person muted their microphone.']);
});

test('a burst is said in order, one per gap, nothing dropped', () => {
  const { clock, region, queue } = setup();
  const burst = ['one', 'two', 'three', 'four', 'five'];
  for (const text of burst) queue.say(text);
  for (let i = 1; i <= burst.length; i++) {
    assert.deepEqual(region, burst.slice(0, i));
    clock.advance(ANNOUNCE_GAP_MS);
  }
  assert.deepEqual(region, burst);
  assert.deepEqual(queue.spoken, burst);
  assert.equal(queue.dropped, 0);
});

test('the same text back to back collapses: queued, or still in the region', () => {
  const { clock, region, queue } = setup();
  queue.say('Camera off.');
  queue.say('Camera off.');            // while shown
  queue.say('Microphone muted.');
  queue.say('Microphone muted.');      // while waiting
  clock.advance(5 * ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['Camera off.', 'Microphone muted.']);
});

test('a repeat after the region went quiet is said again', () => {
  const { clock, region, queue } = setup();
  queue.say('Microphone muted.');
  clock.advance(ANNOUNCE_GAP_MS);
  queue.say('Microphone muted.');
  assert.deepEqual(region, ['Microphone muted.', 'Microphone muted.']);
});

test('a repeat that is not back to back is kept', () => {
  const { clock, region, queue } = setup();
  for (const text of ['a', 'b', 'a']) queue.say(text);
  clock.advance(3 * ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['a', 'b', 'a']);
});

test('a flood keeps at most maxPending waiting: the oldest waiting ones go', () => {
  const { clock, region, queue } = setup({ maxPending: 5 });
  for (let i = 0; i < 100; i++) queue.say(`message ${i}`);
  assert.equal(queue.pending.length, 5);
  assert.equal(queue.dropped, 94);  // message 0 was written at once; 1…94 dropped; 95…99 wait
  clock.advance(10 * ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['message 0', 'message 95', 'message 96', 'message 97', 'message 98', 'message 99']);
  assert.equal(queue.pending.length, 0);
});

test('the history of what was said is bounded', () => {
  const { clock, queue } = setup({ historySize: 3 });
  for (let i = 0; i < 10; i++) { queue.say(`m${i}`); clock.advance(ANNOUNCE_GAP_MS); }
  assert.deepEqual(queue.spoken, ['m7', 'm8', 'm9']);
});

test('no timer is left once everything was said; clear() drops what waits', () => {
  const { clock, region, queue } = setup();
  queue.say('a');
  queue.say('b');
  clock.advance(2 * ANNOUNCE_GAP_MS);
  assert.equal(clock.pending, 0);
  queue.say('c');
  queue.say('d');
  queue.clear();
  assert.equal(clock.pending, 0);
  clock.advance(5 * ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['a', 'b', 'c']);
});

test('empty text says nothing', () => {
  const { region, queue } = setup();
  queue.say('');
  queue.say('   ');
  queue.say(undefined);
  assert.deepEqual(region, []);
});

test('a newer message of a topic replaces the older one while it waits', () => {
  const { clock, region, queue } = setup();
  queue.say('The other person joined the call.');
  queue.say('Not connecting after 10 s.', { topic: 'connectivity' });
  queue.say('The other person muted their microphone.');
  queue.say('Not connecting: the direct connection failed.', { topic: 'connectivity' });
  clock.advance(5 * ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['The other person joined the call.', 'Not connecting: the direct connection failed.',
    'The other person muted their microphone.'], 'in the older one\'s place in the line');
});

test('a newer message of a topic takes the region at once from the older one, then the line goes on', () => {
  const { clock, region, queue } = setup();
  queue.say('Not connecting after 10 s.', { topic: 'connectivity' });
  queue.say('The other person muted their microphone.');
  clock.advance(300);
  queue.say('Not connecting: the direct connection failed.', { topic: 'connectivity' });
  assert.deepEqual(region, ['Not connecting after 10 s.', 'Not connecting: the direct connection failed.']);
  clock.advance(ANNOUNCE_GAP_MS - 1);
  assert.equal(region.length, 2, 'the newer one has its full turn');
  clock.advance(1);
  assert.deepEqual(region.at(-1), 'The other person muted their microphone.');
  assert.equal(clock.pending, 1);
  clock.advance(ANNOUNCE_GAP_MS);
  assert.equal(clock.pending, 0);
});

test('a topic does not cut short a message of another kind', () => {
  const { clock, region, queue } = setup();
  queue.say('The other person joined the call.');
  queue.say('Not connecting after 10 s.', { topic: 'connectivity' });
  assert.deepEqual(region, ['The other person joined the call.']);
  clock.advance(ANNOUNCE_GAP_MS);
  assert.deepEqual(region, ['The other person joined the call.', 'Not connecting after 10 s.']);
});

test('a topic message the same as the one being read, with others waiting, is not read twice', () => {
  const { region, queue } = setup();
  queue.say('Not connecting: checking the network.', { topic: 'connectivity' });
  queue.say('The other person joined the call.');
  queue.say('Not connecting: checking the network.', { topic: 'connectivity' });
  assert.deepEqual(region, ['Not connecting: checking the network.'], 'not written again while it is being read');
});
