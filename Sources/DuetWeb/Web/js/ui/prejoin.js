// The pre-join screen: your camera preview, a live microphone level, which camera, microphone and speaker, and
// whether the mic and camera start on. It only gathers choices; joining is the call page's business. Join has
// the focus, so Enter joins: someone who does not care is in with one key press.
import { $, setScreen } from './call-view.js';
import { MicLevel } from './mic-level.js';

export class PreJoin {
  // devices: the DeviceController (fills the pickers, switches tracks); local: {audio, video} to start with.
  constructor({ media, devices, local, onToggle }) {
    this.media = media;
    this.devices = devices;
    this.local = local;
    this.onToggle = onToggle;
    this.meter = new MicLevel($('mic-level'));
    this.pending = null;
    $('prejoin-mic').addEventListener('change', () => this.onToggle({ audio: $('prejoin-mic').checked }));
    $('prejoin-cam').addEventListener('change', () => this.onToggle({ video: $('prejoin-cam').checked }));
    $('prejoin-form').addEventListener('submit', (event) => {
      event.preventDefault();
      this.finish();
    });
    // Enter joins from anywhere on the screen but a picker (where Enter opens or closes the list).
    addEventListener('keydown', (event) => {
      if (!this.pending || event.key !== 'Enter' || event.target?.tagName === 'SELECT' || event.target?.tagName === 'BUTTON') return;
      event.preventDefault();
      this.finish();
    });
  }

  get open() { return this.pending !== null; }

  // Shows the screen with media already started; resolves when the person presses Join.
  show() {
    setScreen('prejoin');
    this.render();
    $('join').focus({ preventScroll: true });
    return new Promise((resolve) => { this.pending = resolve; });
  }

  // Called again whenever a track or a toggle changes, so the preview and the meter follow.
  render() {
    const video = $('prejoin-video');
    if (video.srcObject !== this.media.stream) video.srcObject = this.media.stream;
    const hasCamera = !!this.media.cameraTrack;
    $('prejoin-mic').checked = this.local.audio;
    $('prejoin-cam').checked = this.local.video;
    $('prejoin-cam').disabled = !hasCamera;
    $('prejoin-camera-off').hidden = hasCamera && this.local.video;
    $('prejoin-camera-off').textContent = hasCamera ? 'Your camera is off' : 'No camera: you join with sound only';
    if (this.open || document.body.dataset.screen === 'prejoin') this.meter.watch(this.media.audioTrack);
  }

  note(text) { $('prejoin-note').textContent = text; }

  finish() {
    const resolve = this.pending;
    if (!resolve) return;
    this.pending = null;
    this.meter.close();
    $('prejoin-video').srcObject = null;
    resolve();
  }
}
