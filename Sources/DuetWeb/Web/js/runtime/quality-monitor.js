// Call quality, live: polls the peer connection's stats every second and feeds each poll, with the call's phase
// and connection status, to the pure tracker (quality/quality-tracker.js: the same rule as DuetClient's), which
// decides what counts; each reading is emitted as a `quality` CustomEvent (detail: the reading), and a `quality`
// event with detail null says there is no current reading any more (no stats, or the call left inCall).
//
//   const monitor = new QualityMonitor({ getStats: () => call.peer.rawStats() });
//   monitor.addEventListener('quality', ({ detail }) => show(detail.level, detail.mos));
//   monitor.noteCall({ phase, connectionStatus });  // on every change
//   monitor.start(); … monitor.stop(); monitor.summary();
import { sampleFromChromiumStats } from '../quality/chromium-stats.js';
import { QUALITY } from '../quality/quality-constants.js';
import { initialTracker, trackQuality } from '../quality/quality-tracker.js';

export class QualityMonitor extends EventTarget {
  #getStats;
  #now;
  #intervalMs;
  #timer = null;
  #timers;
  #polling = false;
  /** Bumped by stop(): a poll that was waiting for its stats when the monitor stopped does not count. */
  #generation = 0;
  #tracker = initialTracker;

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
  }

  // The call's phase and connection status as they are now; only changes are events for the tracker.
  noteCall({ phase, connectionStatus }) {
    if (phase !== undefined && phase !== this.#tracker.phase) this.#track({ type: 'phase', phase });
    if (connectionStatus !== undefined && connectionStatus !== this.#tracker.status) {
      this.#track({ type: 'connectionStatus', status: connectionStatus });
    }
  }

  // The latest reading, or null before the first (and while there is no report).
  get reading() { return this.#tracker.reading; }

  summary() { return this.#tracker.summary; }

  #track(event) {
    const { tracker, reading, cleared } = trackQuality(this.#tracker, event);
    this.#tracker = tracker;
    if (reading || cleared) this.dispatchEvent(new CustomEvent('quality', { detail: reading }));
  }

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
      // No report (no peer connection, getStats failing) is a poll too: the tracker counts the gap.
      const atMs = this.#now();
      this.#track({ type: 'polled', atMs, sample: report ? sampleFromChromiumStats(report, atMs) : null });
    } finally {
      this.#polling = false;
    }
  }
}
