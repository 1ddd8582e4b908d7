// A ringtone made with Web Audio (no file to fetch): two tones, on for 1 s, off for 2 s, until stopped. A browser
// that refuses to start audio before the user touched the page stays silent; the sheet still shows and the title
// still says it.
export class Ringtone {
  constructor() { this.context = null; this.timer = null; this.playing = false; }

  start() {
    if (this.playing) return;
    this.playing = true;
    try {
      this.context = new AudioContext();
    } catch {
      return;
    }
    const ring = () => {
      if (!this.playing || !this.context) return;
      const now = this.context.currentTime;
      const gain = this.context.createGain();
      gain.gain.setValueAtTime(0.0001, now);
      gain.gain.exponentialRampToValueAtTime(0.2, now + 0.05);
      gain.gain.setValueAtTime(0.2, now + 0.95);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + 1);
      gain.connect(this.context.destination);
      for (const frequency of [440, 480]) {
        const tone = this.context.createOscillator();
        tone.frequency.value = frequency;
        tone.connect(gain);
        tone.start(now);
        tone.stop(now + 1);
      }
    };
    ring();
    this.timer = setInterval(ring, 3000);
  }

  get audible() { return this.playing && this.context?.state === 'running'; }

  stop() {
    this.playing = false;
    clearInterval(this.timer);
    this.timer = null;
    this.context?.close().catch(() => {});
    this.context = null;
  }
}
