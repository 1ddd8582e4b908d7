// The quality tracker (js/quality/quality-tracker.js): what counts towards a call's quality. The traces in
// Tests/fixtures/quality-tracker are worked out by hand (their comments show the arithmetic) and DuetClient's
// QualityTrackerTests replays the same files: one rule, two engines, the same outputs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { initialTracker, trackQuality } from '../../Sources/DuetWeb/Web/js/quality/quality-tracker.js';

const dir = new URL('../fixtures/quality-tracker/', import.meta.url);
const traces = readdirSync(dir).filter((name) => name.endsWith('.json')).sort()
  .map((name) => JSON.parse(readFileSync(new URL(name, dir), 'utf8')));

test('there are hand-worked traces to replay', () => {
  assert.ok(traces.length >= 3);
});

// One test over every trace (a test per file would be declared in a loop, which BrowserEngineUnitTests' count of
// declared tests cannot see); the messages name the trace and step that differ.
test('every trace: each reading, each "cleared" and the summary as worked out by hand', () => {
  for (const trace of traces) {
    let tracker = initialTracker;
    trace.steps.forEach((step, index) => {
      const result = trackQuality(tracker, step.event);
      tracker = result.tracker;
      assert.equal(result.cleared, step.cleared === true, `${trace.name} step ${index}: cleared`);
      if (step.reading === null) {
        assert.equal(result.reading, null, `${trace.name} step ${index}: no reading`);
        return;
      }
      assert.ok(result.reading, `${trace.name} step ${index}: a reading`);
      for (const [field, value] of Object.entries(step.reading)) {
        assert.equal(result.reading[field], value, `${trace.name} step ${index}: ${field}`);
      }
    });
    for (const [field, value] of Object.entries(trace.summary)) {
      assert.equal(tracker.summary[field], value, `${trace.name} summary: ${field}`);
    }
  }
});

test('an unknown event is refused, not ignored', () => {
  assert.throws(() => trackQuality(initialTracker, { type: 'nonsense' }), /unknown quality tracker event/);
});
