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
  #timers;
  #polling = false;
  /** Bumped by stop(): a poll that was waiting for its stats when the monitor stopped does not count. */
  #generation = 0;
  #previous = null;
  #reading = null;
  #summary = emptySummary;

  // getStats: async () => RTCStatsReport, or null while there is no peer connection. now: a monotonic clock (a
  // wall clock that jumps would make an interval negative or huge). timers: {setInterval, clearInterval}, injectable
  // so the polling is tested without waiting on real time.
  constructor({
    getStats, now = () => performance.now(), intervalMs = QUALITY.QUALITY_SAMPLE_INTERVAL_MS,
    timers = { setInterval: (f, ms) => setInterval(f, ms), clearInterval: (id) => clearInterval(id) },
  }) {
    super();
    this.#timers = timers;
    this.#getStats = getStats;
    this.#now = now;
    this.#intervalMs = intervalMs;
  }

  start() {
    if (this.#timer !== null) return;
    this.#timer = this.#timers.setInterval(() => { this.tick(); }, this.#intervalMs);
  }

  // Stops polling; the summary and the last reading stay.
  stop() {
    if (this.#timer !== null) this.#timers.clearInterval(this.#timer);
    this.#timer = null;
    this.#generation += 1;
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
    const generation = this.#generation;
    try {
      let report = null;
      try { report = await this.#getStats(); } catch { report = null; }
      if (generation !== this.#generation) return;  // stopped meanwhile: the summary is closed
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
