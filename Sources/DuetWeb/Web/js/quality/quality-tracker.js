// What counts towards a call's quality, pure: the call's phase and connection status and each stats poll go in,
// readings come out and the summary is folded. The browser twin of DuetClient's QualityTracker.swift — one rule
// for both engines, and both replay the same traces (Tests/fixtures/quality-tracker) to the same outputs:
// - a new call (`joining`) starts a fresh summary;
// - readings are taken only in `inCall`; leaving it stops counting, and coming back measures from a fresh sample
//   (the time spent waiting for someone is not a dropout);
// - the summary covers `inCall` from the first stats report on; a poll that finds no report (no peer connection,
//   getStats failing) counts the time since the last counted moment as time without media, and so does the gap
//   before the first report of a new peer connection;
// - a reconnect is the connection status leaving `connected` while in the call, once media has flowed in this
//   stretch of it (a call whose media is slow to come up the first time has not *re*connected);
// - when a reading stops being current (no report, or the call left `inCall`) the result says so (`cleared`), so
//   no screen keeps showing a stale level;
// - poll times are the runtime's (`atMs`, monotonic): a sample's own timestamp is replaced by it.
//
//   let tracker = initialTracker;
//   ({ tracker, reading, cleared } = trackQuality(tracker, { type: 'polled', atMs, sample }));
import { addGap, addReading, addReconnect, emptySummary, qualityReading } from './call-quality.js';

export const initialTracker = Object.freeze({
  summary: emptySummary, reading: null, phase: 'idle', status: 'connected', previous: null, countedUntilMs: null,
  mediaSeen: false,
});

// Events: {type: 'phase', phase}, {type: 'connectionStatus', status}, {type: 'polled', atMs, sample|null}.
// Returns {tracker, reading, cleared}: reading is what a poll with a report in the call produced, else null;
// cleared is true when the current reading just stopped being current (show "measuring", not the last level).
export function trackQuality(tracker, event) {
  const t = { ...tracker };
  let reading = null;
  let cleared = false;
  const clear = () => {
    cleared = t.reading !== null;
    t.reading = null;
  };
  switch (event.type) {
    case 'phase':
      if (event.phase === 'joining' && t.phase !== 'joining') t.summary = emptySummary;
      t.phase = event.phase;
      if (event.phase === 'inCall') break;
      Object.assign(t, { previous: null, countedUntilMs: null, mediaSeen: false });
      clear();
      break;
    case 'connectionStatus':
      if (t.phase === 'inCall' && t.mediaSeen && t.status === 'connected' && event.status !== 'connected') {
        t.summary = addReconnect(t.summary);
      }
      t.status = event.status;
      break;
    case 'polled': {
      if (t.phase !== 'inCall') break;
      if (!event.sample) {
        countGap(t, event.atMs);
        t.previous = null;  // the next report measures from itself
        clear();
        break;
      }
      if (t.previous === null) countGap(t, event.atMs);
      const sample = { ...event.sample, timestampMs: event.atMs };
      reading = qualityReading(t.previous, sample);
      Object.assign(t, { summary: addReading(t.summary, reading), previous: sample, countedUntilMs: event.atMs, reading });
      if (reading.mediaFlowing) t.mediaSeen = true;
      break;
    }
    default:
      throw new Error(`unknown quality tracker event ${event.type}`);
  }
  return { tracker: Object.freeze(t), reading, cleared };
}

// The time since the last counted moment, without a reading to cover it, is time without media.
function countGap(t, atMs) {
  if (t.countedUntilMs === null) return;
  if (atMs > t.countedUntilMs) t.summary = addGap(t.summary, atMs - t.countedUntilMs);
  t.countedUntilMs = Math.max(t.countedUntilMs, atMs);
}
