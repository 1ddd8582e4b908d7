// Call quality from WebRTC statistics: the browser twin of DuetClient's Quality/ (CallQuality.swift,
// QualitySample.swift, QualitySummary.swift). Pure: no clock, no I/O; times come in the samples. Both engines do
// the same arithmetic in the same order and round the same way, so the shared fixtures in Tests/fixtures/quality
// give identical readings in both. docs/call-quality.md explains every field, the formula and its source.
import { QUALITY } from './quality-constants.js';

export const QUALITY_LEVELS = Object.freeze(['good', 'fair', 'poor']);

// A sample: what one stats report says, normalized (every counter cumulative since the peer connection began).
//   timestampMs           when the report was taken (the caller's clock; only differences matter)
//   audio/videoPackets*   inbound RTP packets received and lost (RTCInboundRtpStreamStats packetsReceived/Lost)
//   bytesReceived/Sent    RTP payload bytes, all inbound / all outbound streams
//   jitterMs              inbound audio jitter in milliseconds (video's when there is no audio), null if unknown
//   rttMs                 round-trip time in milliseconds (selected ICE pair, else RTCP), null if unknown
//   framesDecoded         inbound video frames decoded; frameWidth/frameHeight: the last decoded frame's size
//   audioCodec/videoCodec the inbound codecs (`opus`, `VP8`, …); candidateType: the selected pair's local candidate
export function emptySample(timestampMs) {
  return {
    timestampMs, audioPacketsReceived: 0, audioPacketsLost: 0, videoPacketsReceived: 0, videoPacketsLost: 0,
    bytesReceived: 0, bytesSent: 0, jitterMs: null, rttMs: null, framesDecoded: 0, frameWidth: null,
    frameHeight: null, audioCodec: null, videoCodec: null, candidateType: null,
  };
}

// Half up at `places` decimals. Swift does exactly these operations (QualityRounding), so both print the same.
export function roundTo(value, places) {
  const scale = [1, 10, 100][places];
  return Math.floor(value * scale + 0.5) / scale;
}

// The simplified E-model (Cole & Rosenbluth's reduction of ITU-T G.107, in its common form; docs/call-quality.md):
// effective latency = RTT/2 + 2·jitter + 10 ms; R = 93.2 − latency/40 (latency < 160 ms) or − (latency − 120)/10,
// − 2.5 per percent lost, clamped to [0, 100]; MOS = 1 + 0.035·R + 7·10⁻⁶·R·(R − 60)·(100 − R) (G.107 Annex B).
// An unknown RTT or jitter counts as 0: loss, which is always known when media flows, dominates on real links.
// MOS is kept at 1 or above (see below).
export function meanOpinionScore({ rttMs, jitterMs, lossPct }) {
  const latency = (rttMs ?? 0) / 2 + 2 * (jitterMs ?? 0) + 10;
  const delayImpairment = latency < 160 ? latency / 40 : (latency - 120) / 10;
  const r = Math.min(100, Math.max(0, 93.2 - delayImpairment - 2.5 * lossPct));
  // The cubic dips just under 1 for R < 6.5 (0.99 at R = 3): a score never goes below the scale's bottom.
  return Math.max(1, 1 + 0.035 * r + 0.000007 * r * (r - 60) * (100 - r));
}

export function qualityLevel(mos) {
  if (mos === null) return null;
  if (mos >= QUALITY.QUALITY_GOOD_MOS_MIN) return 'good';
  if (mos >= QUALITY.QUALITY_FAIR_MOS_MIN) return 'fair';
  return 'poor';
}

// Counters that only grow while one peer connection lives. One of them going down means a new peer connection
// (or a fresh webrtcbin session after an ICE restart) started counting from zero. Lost counts are not among them:
// packetsLost may legitimately shrink when late packets arrive.
const GROWING = ['audioPacketsReceived', 'videoPacketsReceived', 'bytesReceived', 'bytesSent', 'framesDecoded'];

export function countersRestarted(previous, current) {
  return GROWING.some((name) => current[name] < previous[name]);
}

function lossPercent(received, lost) {
  const expected = received + lost;
  if (expected <= 0) return null;
  return Math.min(100, Math.max(0, (lost / expected) * 100));
}

// The reading for the interval between two consecutive samples (`previous` null: the first sample, which has no
// interval: no loss, bitrate or MOS, level null). Counters that went down are read as restarted from zero.
export function qualityReading(previous, current) {
  const intervalMs = previous ? current.timestampMs - previous.timestampMs : 0;
  const reading = {
    intervalMs: 0, rttMs: current.rttMs === null ? null : roundTo(current.rttMs, 1),
    jitterMs: current.jitterMs === null ? null : roundTo(current.jitterMs, 1), lossPct: null,
    bitrateInKbps: null, bitrateOutKbps: null, frameWidth: current.frameWidth, frameHeight: current.frameHeight,
    fps: null, audioCodec: current.audioCodec, videoCodec: current.videoCodec, candidateType: current.candidateType,
    mos: null, level: null, mediaFlowing: false,
  };
  if (!previous || intervalMs <= 0) return Object.freeze(reading);
  const base = countersRestarted(previous, current) ? emptySample(previous.timestampMs) : previous;
  const delta = (name) => current[name] - base[name];
  // Voice quality is what the E-model scores: audio's loss when audio was expected, else video's.
  const audioLoss = lossPercent(delta('audioPacketsReceived'), delta('audioPacketsLost'));
  const lossPct = audioLoss ?? lossPercent(delta('videoPacketsReceived'), delta('videoPacketsLost'));
  const mediaFlowing = delta('audioPacketsReceived') + delta('videoPacketsReceived') > 0;
  const mos = mediaFlowing && lossPct !== null
    ? roundTo(meanOpinionScore({ rttMs: current.rttMs, jitterMs: current.jitterMs, lossPct }), 2) : null;
  return Object.freeze({
    ...reading, intervalMs, lossPct: lossPct === null ? null : roundTo(lossPct, 2),
    bitrateInKbps: roundTo((delta('bytesReceived') * 8) / intervalMs, 0),
    bitrateOutKbps: roundTo((delta('bytesSent') * 8) / intervalMs, 0),
    fps: roundTo((delta('framesDecoded') * 1000) / intervalMs, 1),
    mos, level: qualityLevel(mos), mediaFlowing,
  });
}

// The call so far, folded from its readings: time covered, time without inbound media (with the gaps no reading
// covers), the mean of the MOS readings, and reconnects. quality-tracker.js decides what is added when.
export const emptySummary = Object.freeze({
  readings: 0, durationMs: 0, noMediaMs: 0, reconnects: 0, mosTotal: 0, mosCount: 0, averageMos: null,
});

export function addReading(summary, reading) {
  const mosTotal = summary.mosTotal + (reading.mos ?? 0);
  const mosCount = summary.mosCount + (reading.mos === null ? 0 : 1);
  return Object.freeze({
    ...summary, readings: summary.readings + 1, durationMs: summary.durationMs + reading.intervalMs,
    noMediaMs: summary.noMediaMs + (reading.mediaFlowing ? 0 : reading.intervalMs), mosTotal, mosCount,
    averageMos: mosCount > 0 ? roundTo(mosTotal / mosCount, 2) : null,
  });
}

// Time in the call that no reading covers (no stats report): it counts, and counts as without media.
export function addGap(summary, ms) {
  return Object.freeze({ ...summary, durationMs: summary.durationMs + ms, noMediaMs: summary.noMediaMs + ms });
}

export function addReconnect(summary) {
  return Object.freeze({ ...summary, reconnects: summary.reconnects + 1 });
}
