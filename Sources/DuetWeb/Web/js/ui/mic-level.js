// A live microphone level (WebAudio AnalyserNode): the pre-join meter, so people see they are heard before
// they join. It reads the track it is given; a muted track reads as silence, which is what the other person
// would hear.
export class MicLevel {
  constructor(meter) {
    this.meter = meter;
    this.context = null;
    this.source = null;
    this.analyser = null;
    this.frame = 0;
    this.samples = null;
    this.level = 0;
    // An AudioContext made before any click may start suspended (autoplay policy): the first key or click
    // resumes it, so the meter comes alive as soon as the person does anything.
    this.resume = () => this.context?.state === 'suspended' && this.context.resume().catch(() => {});
    addEventListener('pointerdown', this.resume, true);
    addEventListener('keydown', this.resume, true);
  }

  watch(track) {
    this.unwatch();
    if (!track || typeof AudioContext === 'undefined') return;
    try {
      this.context ??= new AudioContext();
      this.source = this.context.createMediaStreamSource(new MediaStream([track]));
      this.analyser = this.context.createAnalyser();
      this.analyser.fftSize = 1024;
      this.samples = new Float32Array(this.analyser.fftSize);
      this.source.connect(this.analyser);
      this.resume();
      this.tick();
    } catch (error) {
      console.warn('microphone level', error);  // the meter is a help; joining never depends on it
    }
  }

  tick() {
    this.frame = requestAnimationFrame(() => this.tick());
    this.analyser.getFloatTimeDomainData(this.samples);
    let sum = 0;
    for (const x of this.samples) sum += x * x;
    const rms = Math.sqrt(sum / this.samples.length);
    // Speech sits around 0.02–0.2 RMS: a square root spreads it over the meter. Falls slowly, like a VU meter.
    const shown = Math.min(1, Math.sqrt(rms) * 1.6);
    this.level = Math.max(shown, this.level * 0.85);
    this.meter.value = this.level;
  }

  unwatch() {
    cancelAnimationFrame(this.frame);
    this.source?.disconnect();
    this.source = null;
    this.analyser = null;
    this.level = 0;
    if (this.meter) this.meter.value = 0;
  }

  close() {
    this.unwatch();
    this.context?.close().catch(() => {});
    this.context = null;
  }
}
