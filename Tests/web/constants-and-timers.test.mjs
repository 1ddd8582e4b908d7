import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { RESILIENCE } from '../../Sources/DuetWeb/Web/js/constants.js';
import { Backoff, SplitMix64, TIMER_IDS } from '../../Sources/DuetWeb/Web/js/machines/timers.js';

const root = new URL('../../', import.meta.url);

test('constants.js matches ResilienceConstants.swift, name by name and value by value', () => {
  const swift = readFileSync(new URL('Sources/DuetClient/ResilienceConstants.swift', root), 'utf8');
  const declared = new Map();
  for (const match of swift.matchAll(/public static let ([A-Z_]+)(?::\s*\w+)?\s*=\s*([0-9_.]+)/g)) {
    declared.set(match[1], Number(match[2].replaceAll('_', '')));
  }
  const table = [...swift.matchAll(/\("([A-Z_]+)", /g)].map((match) => match[1]);
  assert.equal(declared.size, 33);
  assert.deepEqual(new Set(table), new Set(declared.keys()), 'the Swift table lists every constant');
  assert.deepEqual(Object.fromEntries(declared), { ...RESILIENCE });
});

test('constants.js keeps the one-constant-per-line format the Swift parity test parses', () => {
  const text = readFileSync(new URL('Sources/DuetWeb/Web/js/constants.js', root), 'utf8');
  const lines = text.split('\n').filter((line) => /^\s+[A-Z_]+:/.test(line));
  assert.equal(lines.length, 33);
  for (const line of lines) assert.match(line, /^ {2}[A-Z_]+: \d+(\.\d+)?,$/);
  assert.match(text, /^export const RESILIENCE = Object\.freeze\(\{$/m);
  assert.match(text, /^\}\);$/m);
});

test('TimerID names are the Swift case names, in declaration order', () => {
  const swift = readFileSync(new URL('Sources/DuetClient/Machines/Timers.swift', root), 'utf8');
  const body = swift.slice(swift.indexOf('enum TimerID'), swift.indexOf('public enum TimerCommand'));
  const names = [...body.matchAll(/case ([^\n]+)/g)].flatMap((match) => match[1].split(',').map((name) => name.trim()));
  assert.deepEqual([...TIMER_IDS], names);
  assert.equal(TIMER_IDS.length, 19);
});

test('SplitMix64 reproduces the reference sequence (seed 0) and the Swift sequence for seed 42', () => {
  // Seed 0 is the published SplitMix64 test vector; seed 42 was computed with arbitrary-precision
  // integers (Python) from the algorithm in Timers.swift.
  const zero = new SplitMix64(0);
  assert.deepEqual([zero.next(), zero.next(), zero.next()], [0xe220a8397b1dcdafn, 0x6e789e6aa1b965f4n, 0x06c45d188009454fn]);
  const rng = new SplitMix64(42);
  assert.deepEqual(
    [rng.next(), rng.next(), rng.next(), rng.next()],
    [13679457532755275413n, 2949826092126892291n, 5139283748462763858n, 6349198060258255764n],
  );
  assert.equal(new SplitMix64(42n).next(), 0xbdd732262feb6e95n, 'number and bigint seeds agree');
});

test('Backoff doubles from base to cap without jitter', () => {
  const backoff = new Backoff({ baseMs: 500, capMs: 5000, jitterRatio: 0, seed: 1 });
  assert.deepEqual([0, 1, 2, 3, 4, 5, 6].map((attempt) => backoff.delay(attempt)), [500, 1000, 2000, 4000, 5000, 5000, 5000]);
  assert.equal(backoff.delay(1000), 5000);
});

test('Backoff jitter draws like Swift: seed 42 gives a fixed sequence', () => {
  // Computed from the Swift formula: unit = (next >> 11) / 2^53, factor = 1 - r + 2r·unit.
  const backoff = new Backoff({ baseMs: 500, capMs: 5000, jitterRatio: 0.2, seed: 42 });
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((attempt) => backoff.delay(attempt)), [548, 864, 1823, 3751, 4076, 5000]);
});

test('jitter stays within the ratio and the cap, and spreads', () => {
  const backoff = new Backoff({ baseMs: 500, capMs: 5000, jitterRatio: 0.2, seed: 7 });
  const seen = new Set();
  for (let i = 0; i < 500; i += 1) {
    const first = backoff.delay(0);
    assert.ok(first >= 400 && first <= 600, `${first}`);
    seen.add(first);
    assert.ok(backoff.delay(9) <= 5000);
  }
  assert.ok(seen.size > 50, 'jitter spreads reconnects');
});
