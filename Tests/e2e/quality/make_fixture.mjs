// Turns a capture (capture_chromium.py / capture_webrtcbin.py) into a call-quality fixture: the raw reports as
// captured, the normalized samples, and the readings and summary the formula gives for them — computed here
// once, looked at for plausibility, then required of both engines by their tests (Tests/web/call-quality.test.mjs,
// Tests/DuetClientTests/Quality). Chromium's samples come from js/quality/chromium-stats.js; webrtcbin's are the
// ones DuetClient's WebRtcBinStats made during the capture (its Swift test re-derives them from the raw reports).
//   node Tests/e2e/quality/make_fixture.mjs CAPTURE.json Tests/fixtures/quality/NAME.json "description"
import { readFileSync, writeFileSync } from 'node:fs';
import { addReading, emptySample, emptySummary, qualityReading } from '../../../Sources/DuetWeb/Web/js/quality/call-quality.js';
import { sampleFromChromiumStats } from '../../../Sources/DuetWeb/Web/js/quality/chromium-stats.js';

const [input, output, description] = process.argv.slice(2);
const capture = JSON.parse(readFileSync(input, 'utf8'));
const samples = capture.source === 'chromium'
  ? capture.raw.map((r) => sampleFromChromiumStats(r.report, r.atMs))
  : capture.raw.map((r) => ({ ...emptySample(r.atMs), ...r.sample }));
const raw = capture.raw.map(({ sample, ...rest }) => rest);
const readings = [];
let summary = emptySummary;
samples.forEach((sample, i) => {
  const reading = qualityReading(i === 0 ? null : samples[i - 1], sample);
  readings.push(reading);
  summary = addReading(summary, reading);
});

// One sample or reading per line: the numbers can be read down a column.
const lines = (list) => `[\n${list.map((item) => `    ${JSON.stringify(item)}`).join(',\n')}\n  ]`;
const text = `{
  "description": ${JSON.stringify(description ?? '')},
  "source": ${JSON.stringify(capture.source)},
  "engine": ${JSON.stringify(capture.engine)},
  "network": ${JSON.stringify(capture.network)},
  "captured": ${JSON.stringify(capture.captured)},
  "samples": ${lines(samples)},
  "readings": ${lines(readings)},
  "summary": ${JSON.stringify(summary)},
  "raw": ${lines(raw)}
}
`;
writeFileSync(output, text);
for (const r of readings) {
  console.log(`${r.intervalMs} ms  rtt ${r.rttMs}  jitter ${r.jitterMs}  loss ${r.lossPct}%  in ${r.bitrateInKbps} out ${r.bitrateOutKbps} kbps  ` +
    `${r.frameWidth}x${r.frameHeight}@${r.fps}  ${r.audioCodec}/${r.videoCodec}  ${r.candidateType}  MOS ${r.mos} ${r.level}`);
}
console.log('summary', summary);
