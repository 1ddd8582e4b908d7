// Call quality, live: polls the peer connection's stats every second, turns each report into a reading
// (quality/call-quality.js) and emits it as a `quality` CustomEvent (detail: the reading), folding every reading
// into the call's summary. The page tells it about reconnects (noteReconnect); it decides nothing else.
//
//   const monitor = new QualityMonitor({ getStats: () => call.peer.rawStats() });
//   monitor.addEventListener('quality', ({ detail }) => show(detail.level, detail.mos));
//   monitor.start(); … monitor.stop(); monitor.summary();
import { addReading, addReconnect, emptySummary, qualityReading } from '../quality/call-quality.js';
import { sampleFromChromiumStats } from '../quality/chromium-stats.js';
import { QUALITY } from '../quality/quality-constants.js';

export class QualityMonitor extends EventTarget {
  #getStats;
  #now;
  #intervalMs;
  #timer = null;
  #polling = false;
  #previous = null;
  #reading = null;
  #summary = emptySummary;

  // getStats: async () => RTCStatsReport, or null while there is no peer connection.
  constructor({ getStats, now = () => Date.now(), intervalMs = QUALITY.QUALITY_SAMPLE_INTERVAL_MS }) {
    super();
    this.#getStats = getStats;
    this.#now = now;
    this.#intervalMs = intervalMs;
  }

  start() {
    if (this.#timer !== null) return;
    this.#timer = setInterval(() => { this.tick(); }, this.#intervalMs);
  }

  // Stops polling; the summary and the last reading stay.
  stop() {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#previous = null;  // a later start() measures from a fresh sample, not across the pause
  }

  noteReconnect() { this.#summary = addReconnect(this.#summary); }

  // The latest reading, or null before the first.
  get reading() { return this.#reading; }

  summary() { return this.#summary; }

  // One poll: what the timer runs every interval (tests call it directly). A poll still waiting for its stats
  // is not overtaken by the next one.
  async tick() {
    if (this.#polling) return;
    this.#polling = true;
    try {
      let report = null;
      try { report = await this.#getStats(); } catch { report = null; }
      if (!report) {
        this.#previous = null;  // no peer connection: the next one counts from zero
        return;
      }
      const sample = sampleFromChromiumStats(report, this.#now());
      const reading = qualityReading(this.#previous, sample);
      this.#previous = sample;
      this.#reading = reading;
      this.#summary = addReading(this.#summary, reading);
      this.dispatchEvent(new CustomEvent('quality', { detail: reading }));
    } finally {
      this.#polling = false;
    }
  }
}
