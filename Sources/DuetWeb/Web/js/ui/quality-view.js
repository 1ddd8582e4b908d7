// Call quality you can see: a small indicator (good / fair / poor, as bars and in words), a details panel
// (round trip, jitter, loss, bitrate each way, resolution and frame rate, codec, candidate type, MOS), a word to
// screen readers when quality drops, and at the end a summary (duration, average MOS, reconnects, time without
// media). The numbers come from QualityMonitor (js/runtime/quality-monitor.js, the pure quality module fed by
// getStats); this file only shows them. Until that module is there, the indicator says "measuring" and
// window.duet.quality keeps level null.
import { $ } from './call-view.js';

const WORDS = { good: 'Good', fair: 'Fair', poor: 'Poor' };
let monitorModule = null;
const monitorLoading = import('../runtime/quality-monitor.js')
  .then((module) => { monitorModule = module; })
  .catch((error) => console.info('quality monitor not available', error?.message ?? error));

export function formatDuration(seconds) {
  const s = Math.max(0, Math.floor(seconds ?? 0));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return h ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

const num = (x, digits = 0) => (typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : null);

export class QualityView {
  constructor({ announce, getStats }) {
    this.announce = announce;
    this.getStats = getStats;
    this.monitor = null;
    this.reading = null;
    this.lastSummary = null;
    this.onQuality = (event) => this.render(event.detail);
    $('quality').addEventListener('click', () => this.togglePanel());
    $('quality-close').addEventListener('click', () => this.togglePanel(false));
  }

  // What automation reads (window.duet.quality): level null until the first reading.
  get quality() {
    const r = this.reading;
    return { level: r?.level ?? null, mos: r?.mos ?? null, rttMs: r?.rttMs ?? null, lossPct: r?.lossPct ?? null, jitterMs: r?.jitterMs ?? null };
  }

  get available() { return !!monitorModule?.QualityMonitor; }

  // From the first moment both people are in the call until it ends: one monitor, so the summary is the call's.
  async start() {
    if (this.monitor) return;
    // A stop() while the module loads cancels this start: no monitor may outlive the call it was started for.
    const generation = (this.generation = (this.generation ?? 0) + 1);
    await monitorLoading;
    const Monitor = monitorModule?.QualityMonitor;
    if (!Monitor || this.monitor || generation !== this.generation) return;
    try {
      this.monitor = new Monitor({ getStats: this.getStats, intervalMs: 1000 });
      this.monitor.addEventListener?.('quality', this.onQuality);
      if (this.callState) this.monitor.noteCall(this.callState);
      this.monitor.start();
    } catch (error) {
      console.warn('quality monitor', error);  // quality is shown, never needed: the call goes on without it
      this.monitor = null;
    }
  }

  // The call's phase and connection status, on every change: the monitor's tracker decides what counts (readings
  // in the call, reconnects), by the same rule as DuetClient. Kept, so a monitor made later starts from them.
  noteCall(callState) {
    this.callState = callState;
    try { this.monitor?.noteCall(callState); } catch (error) { console.warn('quality monitor', error); }
  }

  // Ends the measurement; returns the summary ({durationS, averageMos, reconnects, withoutMediaS}) or null.
  stop() {
    this.generation = (this.generation ?? 0) + 1;
    const monitor = this.monitor;
    this.monitor = null;
    if (!monitor) return null;
    let summary = null;
    try {
      monitor.stop();
      summary = monitor.summary();
    } catch (error) {
      console.warn('quality summary', error);
    }
    monitor.removeEventListener?.('quality', this.onQuality);
    this.reading = null;
    this.render(null);
    this.lastSummary = normalizeSummary(summary);
    return this.lastSummary;
  }

  render(reading) {
    const before = this.reading?.level ?? null;
    this.reading = reading;
    const level = reading?.level ?? null;
    const button = $('quality');
    button.dataset.level = level ?? '';
    document.body.dataset.quality = level ?? '';
    $('quality-text').textContent = level ? `Quality: ${WORDS[level]}` : 'Quality: measuring…';
    button.setAttribute('aria-label', `${level ? `Call quality: ${WORDS[level]}` : 'Call quality: measuring'}. Details`);
    // A drop is said; a recovery to good after a poor spell too, so the listener knows it passed.
    if (level === 'poor' && before !== 'poor') this.announce('Call quality is poor: the picture or sound may break up.');
    else if (level && before === 'poor' && level !== 'poor') this.announce(`Call quality is ${WORDS[level].toLowerCase()} again.`);
    this.renderDetails();
  }

  renderDetails() {
    const r = this.reading ?? {};
    const set = (id, text) => { $(id).textContent = text ?? '—'; };
    set('q-level', r.level ? WORDS[r.level] : 'measuring…');
    set('q-mos', num(r.mos, 2) && `${num(r.mos, 2)} of 5`);
    set('q-rtt', num(r.rttMs) && `${num(r.rttMs)} ms`);
    set('q-jitter', num(r.jitterMs, 1) && `${num(r.jitterMs, 1)} ms`);
    set('q-loss', num(r.lossPct, 1) && `${num(r.lossPct, 1)} %`);
    set('q-in', num(r.bitrateInKbps) && `${num(r.bitrateInKbps)} kbit/s`);
    set('q-out', num(r.bitrateOutKbps) && `${num(r.bitrateOutKbps)} kbit/s`);
    // (Field names as quality/call-quality.js gives them, with the shorter names of the agreed interface as well.)
    const width = r.width ?? r.frameWidth;
    const height = r.height ?? r.frameHeight;
    set('q-video', width && height ? `${width}×${height}${num(r.fps) ? ` at ${num(r.fps)} fps` : ''}` : null);
    const codecs = r.codec ?? [r.videoCodec, r.audioCodec].filter(Boolean).map((c) => String(c).replace(/^(video|audio)\//, '')).join(' · ');
    set('q-codec', codecs || null);
    const paths = { host: 'direct (local network)', srflx: 'direct (through NAT)', prflx: 'direct (through NAT)', relay: 'relayed (TURN)' };
    set('q-path', r.candidateType ? `${paths[r.candidateType] ?? r.candidateType} · ${r.candidateType}` : null);
  }

  togglePanel(open = $('quality-panel').hidden) {
    $('quality-panel').hidden = !open;
    $('quality').setAttribute('aria-expanded', String(open));
    if (open) this.renderDetails();
  }

  // The ended screen: how the call went, when there was a call to speak of.
  showSummary(summary, fallbackDurationS) {
    const card = $('call-summary');
    if (!summary && !(fallbackDurationS > 0)) { card.hidden = true; return; }
    const s = normalizeSummary(summary) ?? {};
    // The page's own clock covers the whole call (the monitor's only the seconds it measured).
    $('summary-duration').textContent = formatDuration(fallbackDurationS || s.durationS);
    $('summary-mos').textContent = num(s.averageMos, 1) ? `${num(s.averageMos, 1)} of 5` : 'not measured';
    $('summary-reconnects').textContent = typeof s.reconnects === 'number' ? String(s.reconnects) : 'not measured';
    $('summary-dropout').textContent = typeof s.withoutMediaS === 'number' ? `${Math.round(s.withoutMediaS)} s` : 'not measured';
    card.hidden = false;
  }
}

// {durationS, averageMos, reconnects, withoutMediaS} from the monitor's summary, which counts in milliseconds
// (durationMs, noMediaMs) in quality/call-quality.js; either spelling is taken.
export function normalizeSummary(summary) {
  if (!summary) return null;
  const seconds = (s, ms) => (typeof s === 'number' ? s : typeof ms === 'number' ? ms / 1000 : null);
  return {
    durationS: seconds(summary.durationS, summary.durationMs),
    averageMos: summary.averageMos ?? null,
    reconnects: summary.reconnects ?? null,
    withoutMediaS: seconds(summary.withoutMediaS, summary.noMediaMs),
  };
}
