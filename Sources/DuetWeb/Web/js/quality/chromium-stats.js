// A browser's RTCStatsReport (or the array of its stats dictionaries, as captured in the fixtures) → the
// normalized sample call-quality.js reads. Field names are the W3C webrtc-stats ones Chromium reports.
import { emptySample } from './call-quality.js';

function entriesOf(report) {
  if (Array.isArray(report)) return report;
  if (report && typeof report.values === 'function') return [...report.values()];
  return [];
}

function codecName(codec) {
  // mimeType is `audio/opus`, `video/VP8`: the part after the slash is what people know.
  const mime = codec?.mimeType;
  return typeof mime === 'string' ? mime.slice(mime.indexOf('/') + 1) : null;
}

function selectedPair(entries, byId) {
  const transport = entries.find((s) => s.type === 'transport' && s.selectedCandidatePairId);
  if (transport) return byId.get(transport.selectedCandidatePairId) ?? null;
  return entries.find((s) => s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') ?? null;
}

export function sampleFromChromiumStats(report, timestampMs) {
  const entries = entriesOf(report);
  const byId = new Map(entries.map((s) => [s.id, s]));
  const sample = emptySample(timestampMs);
  let videoJitterMs = null;
  let remoteRttMs = null;
  for (const s of entries) {
    const kind = s.kind ?? s.mediaType;
    if (s.type === 'inbound-rtp' && (kind === 'audio' || kind === 'video')) {
      sample[`${kind}PacketsReceived`] += s.packetsReceived ?? 0;
      sample[`${kind}PacketsLost`] += s.packetsLost ?? 0;
      sample.bytesReceived += s.bytesReceived ?? 0;
      const codec = codecName(byId.get(s.codecId));
      if (kind === 'audio') {
        if (sample.jitterMs === null && typeof s.jitter === 'number') sample.jitterMs = s.jitter * 1000;
        sample.audioCodec ??= codec;
      } else {
        if (videoJitterMs === null && typeof s.jitter === 'number') videoJitterMs = s.jitter * 1000;
        sample.framesDecoded += s.framesDecoded ?? 0;
        if (s.frameWidth) sample.frameWidth = s.frameWidth;
        if (s.frameHeight) sample.frameHeight = s.frameHeight;
        sample.videoCodec ??= codec;
      }
    }
    if (s.type === 'outbound-rtp') sample.bytesSent += s.bytesSent ?? 0;
    if (s.type === 'remote-inbound-rtp' && remoteRttMs === null && typeof s.roundTripTime === 'number') {
      remoteRttMs = s.roundTripTime * 1000;
    }
  }
  sample.jitterMs ??= videoJitterMs;
  const pair = selectedPair(entries, byId);
  // ICE consent checks measure the selected pair every few seconds; RTCP's RTT is the fallback.
  sample.rttMs = typeof pair?.currentRoundTripTime === 'number' ? pair.currentRoundTripTime * 1000 : remoteRttMs;
  sample.candidateType = (pair && byId.get(pair.localCandidateId)?.candidateType) ?? null;
  return sample;
}
