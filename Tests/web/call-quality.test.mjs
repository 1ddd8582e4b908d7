// Call quality in the browser engine (js/quality/*, js/runtime/quality-monitor.js). The fixtures are real captured
// stats shared with the Swift tests (Tests/DuetClientTests/Quality/CallQualityFixtureTests.swift): both engines
// must give exactly the readings and summary each fixture holds (values rounded as docs/call-quality.md says).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import {
  addReading, addReconnect, emptySample, emptySummary, meanOpinionScore, qualityLevel, qualityReading, roundTo,
} from '../../Sources/DuetWeb/Web/js/quality/call-quality.js';
import { sampleFromChromiumStats } from '../../Sources/DuetWeb/Web/js/quality/chromium-stats.js';
import { QUALITY } from '../../Sources/DuetWeb/Web/js/quality/quality-constants.js';
import { QualityMonitor } from '../../Sources/DuetWeb/Web/js/runtime/quality-monitor.js';

const root = new URL('../../', import.meta.url);
const fixtureDir = new URL('Tests/fixtures/quality/', root);
const fixtures = readdirSync(fixtureDir).filter((name) => name.endsWith('.json')).sort()
  .map((name) => ({ name, ...JSON.parse(readFileSync(new URL(name, fixtureDir), 'utf8')) }));

function fold(samples) {
  const readings = samples.map((sample, i) => qualityReading(i === 0 ? null : samples[i - 1], sample));
  return { readings, summary: readings.reduce(addReading, emptySummary) };
}

test('the fixtures are real captures from both engines, clean and lossy', () => {
  const kinds = new Set(fixtures.map((f) => `${f.source}/${f.name.includes('clean') ? 'clean' : 'lossy'}`));
  assert.deepEqual([...kinds].sort(), ['chromium/clean', 'chromium/lossy', 'webrtcbin/clean', 'webrtcbin/lossy']);
  for (const f of fixtures) {
    assert.ok(f.raw.length >= 10 && f.samples.length === f.raw.length && f.readings.length === f.raw.length, f.name);
  }
});

test('Chromium fixtures: the adapter turns each raw RTCStatsReport into the fixture sample', () => {
  for (const f of fixtures.filter((f) => f.source === 'chromium')) {
    f.raw.forEach((capture, i) => {
      assert.deepEqual(sampleFromChromiumStats(capture.report, capture.atMs), f.samples[i], `${f.name} #${i}`);
      // The same report as a Map, the way RTCPeerConnection.getStats() gives it.
      const asReport = new Map(capture.report.map((s) => [s.id, s]));
      assert.deepEqual(sampleFromChromiumStats(asReport, capture.atMs), f.samples[i], `${f.name} #${i} (as a Map)`);
    });
  }
});

test('every fixture: the readings and summary the formula gives are the fixture\'s', () => {
  for (const f of fixtures) {
    const { readings, summary } = fold(f.samples);
    readings.forEach((reading, i) => assert.deepEqual({ ...reading }, f.readings[i], `${f.name} reading #${i}`));
    assert.deepEqual({ ...summary }, f.summary, `${f.name} summary`);
  }
});

test('the fixtures are plausible: clean loopback is good, lossy is not', () => {
  for (const f of fixtures) {
    const rest = f.readings.slice(1);
    assert.equal(f.readings[0].level, null, `${f.name}: a first sample alone has no level`);
    assert.ok(rest.every((r) => r.mediaFlowing && r.level !== null), `${f.name}: media flowed every second`);
    const meanLoss = rest.reduce((sum, r) => sum + r.lossPct, 0) / rest.length;
    if (f.name.includes('clean')) {
      assert.ok(rest.every((r) => r.level === 'good'), `${f.name}: ${rest.map((r) => r.level)}`);
      assert.ok(meanLoss < 1, `${f.name}: mean loss ${meanLoss}`);
    } else {
      assert.ok(meanLoss > 5, `${f.name}: mean loss ${meanLoss}`);
      assert.ok(rest.filter((r) => r.level === 'good').length < rest.length / 2, `${f.name}: ${rest.map((r) => r.level)}`);
      assert.ok(f.summary.averageMos < QUALITY.QUALITY_GOOD_MOS_MIN, `${f.name}: average MOS ${f.summary.averageMos}`);
    }
  }
});

const at = (timestampMs, fields = {}) => ({ ...emptySample(timestampMs), ...fields });

test('a first sample alone: no interval, no MOS, no level; what it knows is passed on', () => {
  const reading = qualityReading(null, at(5000, { audioPacketsReceived: 50, rttMs: 12.345, jitterMs: 3.21, candidateType: 'host' }));
  assert.equal(reading.intervalMs, 0);
  assert.equal(reading.mos, null);
  assert.equal(reading.level, null);
  assert.equal(reading.lossPct, null);
  assert.equal(reading.mediaFlowing, false);
  assert.equal(reading.rttMs, 12.3);
  assert.equal(reading.jitterMs, 3.2);
  assert.equal(reading.candidateType, 'host');
});

test('zero packets in an interval: no media, no loss figure, no level; bitrates are 0', () => {
  const same = { audioPacketsReceived: 100, videoPacketsReceived: 300, bytesReceived: 5000, bytesSent: 7000 };
  const reading = qualityReading(at(1000, same), at(2000, same));
  assert.equal(reading.intervalMs, 1000);
  assert.equal(reading.mediaFlowing, false);
  assert.equal(reading.lossPct, null);
  assert.equal(reading.mos, null);
  assert.equal(reading.level, null);
  assert.equal(reading.bitrateInKbps, 0);
  assert.equal(reading.bitrateOutKbps, 0);
});

test('counters that go backwards (a new peer connection) count from zero', () => {
  const before = at(1000, { audioPacketsReceived: 5000, audioPacketsLost: 400, bytesReceived: 900000, bytesSent: 800000 });
  const after = at(2000, { audioPacketsReceived: 45, audioPacketsLost: 5, bytesReceived: 10000, bytesSent: 12000 });
  const reading = qualityReading(before, after);
  assert.equal(reading.mediaFlowing, true);
  assert.equal(reading.lossPct, 10);  // 5 of 50 expected since the restart
  assert.equal(reading.bitrateInKbps, 80);  // 10,000 bytes over a second
  assert.equal(reading.bitrateOutKbps, 96);
  assert.notEqual(reading.level, null);
});

test('a missing RTT scores as 0 ms and is reported as unknown', () => {
  const reading = qualityReading(at(0, { audioPacketsReceived: 0 }), at(1000, { audioPacketsReceived: 49, audioPacketsLost: 1, jitterMs: 4 }));
  assert.equal(reading.rttMs, null);
  assert.equal(reading.mos, roundTo(meanOpinionScore({ rttMs: 0, jitterMs: 4, lossPct: 2 }), 2));
});

test('loss is audio\'s when audio was expected, else video\'s', () => {
  const audio = qualityReading(at(0), at(1000, { audioPacketsReceived: 90, audioPacketsLost: 10, videoPacketsReceived: 100 }));
  assert.equal(audio.lossPct, 10);
  const video = qualityReading(at(0), at(1000, { videoPacketsReceived: 96, videoPacketsLost: 4 }));
  assert.equal(video.lossPct, 4);
});

test('the E-model: best case 4.40, loss lowers it, never below 1, long delay takes the steep branch', () => {
  // No loss, no delay: R = 93.2 − 10/40 = 92.95 → MOS 4.40 (G.107's default R of 93.2 is MOS 4.41).
  assert.equal(roundTo(meanOpinionScore({ rttMs: 0, jitterMs: 0, lossPct: 0 }), 2), 4.4);
  // R = 0 (clamped from below) is MOS 1 by Annex B's mapping; just above it the cubic would dip under 1.
  assert.equal(meanOpinionScore({ rttMs: 0, jitterMs: 0, lossPct: 40 }), 1);
  assert.equal(meanOpinionScore({ rttMs: 0, jitterMs: 0, lossPct: 36 }), 1);
  // The two delay branches meet at 160 ms effective latency (RTT 300 ms: 150 + 10): no jump in the score.
  const below = meanOpinionScore({ rttMs: 299.998, jitterMs: 0, lossPct: 0 });
  const at160 = meanOpinionScore({ rttMs: 300, jitterMs: 0, lossPct: 0 });
  assert.ok(Math.abs(below - at160) < 1e-4);
  // Past it every 10 ms of latency costs a whole point of R, not a quarter: 100 ms more RTT (50 ms more latency)
  // costs 5 points of R there, against 1.25 below it.
  const cost = (from, to) => meanOpinionScore({ rttMs: from, jitterMs: 0, lossPct: 0 }) - meanOpinionScore({ rttMs: to, jitterMs: 0, lossPct: 0 });
  assert.ok(cost(400, 500) > 3 * cost(0, 100));
  let previous = Infinity;
  for (let loss = 0; loss <= 40; loss += 1) {
    const mos = meanOpinionScore({ rttMs: 50, jitterMs: 5, lossPct: loss });
    assert.ok(mos <= previous, `MOS falls as loss grows (${loss}%)`);
    previous = mos;
  }
});

test('levels: good from QUALITY_GOOD_MOS_MIN, fair from QUALITY_FAIR_MOS_MIN, poor below, null without a MOS', () => {
  assert.equal(qualityLevel(4.4), 'good');
  assert.equal(qualityLevel(QUALITY.QUALITY_GOOD_MOS_MIN), 'good');
  assert.equal(qualityLevel(3.99), 'fair');
  assert.equal(qualityLevel(QUALITY.QUALITY_FAIR_MOS_MIN), 'fair');
  assert.equal(qualityLevel(3.09), 'poor');
  assert.equal(qualityLevel(1), 'poor');
  assert.equal(qualityLevel(null), null);
});

test('the summary: time covered, time without media, mean MOS of readings that have one, reconnects', () => {
  const readings = [
    qualityReading(null, at(0)),
    qualityReading(at(0), at(1000, { audioPacketsReceived: 50 })),
    qualityReading(at(1000, { audioPacketsReceived: 50 }), at(2500, { audioPacketsReceived: 50 })),
    qualityReading(at(2500, { audioPacketsReceived: 50 }), at(3500, { audioPacketsReceived: 90, audioPacketsLost: 10 })),
  ];
  const summary = addReconnect(readings.reduce(addReading, emptySummary));
  assert.equal(summary.readings, 4);
  assert.equal(summary.durationMs, 3500);
  assert.equal(summary.noMediaMs, 1500);
  assert.equal(summary.reconnects, 1);
  assert.equal(summary.averageMos, roundTo((readings[1].mos + readings[3].mos) / 2, 2));
  assert.equal(emptySummary.averageMos, null);
});

test('QualityMonitor: a reading per poll in the call as a `quality` event; a poll without stats is time without media', async () => {
  const reports = [
    [{ id: 'in', type: 'inbound-rtp', kind: 'audio', packetsReceived: 0, packetsLost: 0, bytesReceived: 0 }],
    [{ id: 'in', type: 'inbound-rtp', kind: 'audio', packetsReceived: 50, packetsLost: 0, bytesReceived: 4000, jitter: 0.002 }],
    null,
    [{ id: 'in', type: 'inbound-rtp', kind: 'audio', packetsReceived: 10, packetsLost: 0, bytesReceived: 800 }],
  ];
  let clock = 0;
  const monitor = new QualityMonitor({ getStats: async () => reports.shift(), now: () => clock });
  const seen = [];
  monitor.addEventListener('quality', (event) => seen.push(event.detail));
  monitor.noteCall({ phase: 'joining', connectionStatus: 'connected' });
  await monitor.tick();  // not in the call yet: nothing counts
  assert.equal(seen.length, 0);
  reports.unshift([{ id: 'in', type: 'inbound-rtp', kind: 'audio', packetsReceived: 0, packetsLost: 0, bytesReceived: 0 }]);
  monitor.noteCall({ phase: 'inCall', connectionStatus: 'connected' });
  assert.equal(monitor.reading, null);
  await monitor.tick();
  clock = 1000;
  await monitor.tick();
  assert.equal(seen.length, 2);
  assert.equal(seen[1].level, 'good');
  assert.equal(seen[1].jitterMs, 2);
  assert.equal(seen[1].bitrateInKbps, 32);
  assert.equal(monitor.reading, seen[1]);
  clock = 2000;
  await monitor.tick();  // no peer connection: a gap, and the level shown is no longer current
  assert.equal(monitor.reading, null);
  assert.equal(seen.length, 3);
  assert.equal(seen[2], null, 'told: no current reading (the page shows "measuring", not the last level)');
  monitor.noteCall({ phase: 'inCall', connectionStatus: 'recovering' });
  clock = 3000;
  await monitor.tick();
  assert.equal(seen.length, 4);
  assert.equal(seen[3].level, null, 'after a gap the next sample is a first one');
  monitor.noteCall({ phase: 'waiting', connectionStatus: 'connected' });
  assert.equal(seen.length, 5);
  assert.equal(seen[4], null, 'leaving the call clears the level too');
  assert.equal(monitor.summary().reconnects, 1);
  assert.equal(monitor.summary().readings, 3);
  assert.equal(monitor.summary().durationMs, 3000, 'the reading’s 1000 ms and the 2000 ms without a report');
  assert.equal(monitor.summary().noMediaMs, 2000);
});

test('QualityMonitor: start() polls every intervalMs until stop(); a poll answered after stop() does not count', async () => {
  // The interval timer is injected: no test waits on real time.
  const timers = { ticks: [], setInterval(f, ms) { this.ticks.push({ f, ms }); return this.ticks.length; }, clearInterval(id) { this.cleared = id; } };
  let answer = null;
  const monitor = new QualityMonitor({ getStats: () => new Promise((resolve) => { answer = resolve; }), intervalMs: 10, timers, now: () => 0 });
  monitor.start();
  monitor.start();  // a second start does not double the polling
  assert.equal(timers.ticks.length, 1);
  assert.equal(timers.ticks[0].ms, 10);
  const poll = timers.ticks[0].f();
  monitor.stop();
  assert.equal(timers.cleared, 1, 'stop() clears the interval');
  answer([]);  // the stats come back after the stop
  await poll;
  assert.equal(monitor.reading, null, 'a poll answered after stop() gives no reading');
  assert.equal(monitor.summary().readings ?? 0, 0);
});

test('quality-constants.js matches QualityConstants.swift, name by name and value by value', () => {
  const swift = readFileSync(new URL('Sources/DuetClient/Quality/QualityConstants.swift', root), 'utf8');
  const declared = new Map();
  for (const match of swift.matchAll(/public static let ([A-Z_]+)(?::\s*\w+)?\s*=\s*([0-9_.]+)/g)) {
    declared.set(match[1], Number(match[2].replaceAll('_', '')));
  }
  const table = [...swift.matchAll(/\("([A-Z_]+)", /g)].map((match) => match[1]);
  assert.ok(declared.size >= 3);
  assert.deepEqual(new Set(table), new Set(declared.keys()), 'the Swift table lists every constant');
  assert.deepEqual(Object.fromEntries(declared), { ...QUALITY });
});
