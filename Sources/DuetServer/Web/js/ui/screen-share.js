// Screen sharing: the shared screen replaces the camera on the video sender (replaceTrack, no renegotiation),
// and stopping — with our button or the browser's own "Stop sharing" bar (the track ends) — puts the camera
// back as it was. The page re-announces {screen} through onChange.
import { sendTrack } from '../runtime/media.js';

export class ScreenShare {
  // serially(work): the queue every change of the sent tracks goes through (DeviceController.serially). A camera
  // switch and a share started together then run one after the other, never interleaved: an interleaved stop
  // could send the camera it read before a switch stopped it (a frozen picture), and the last request wins.
  constructor({ media, getPc, announce, onChange, serially = (work) => work() }) {
    this.media = media;
    this.getPc = getPc;
    this.announce = announce;
    this.onChange = onChange;
    this.serially = serially;
  }

  // Sharing needs a video sender (audio-only calls have none to reuse) and getDisplayMedia (not on phones).
  get available() {
    return !!navigator.mediaDevices?.getDisplayMedia && !!this.media.cameraTrack;
  }

  get active() { return this.media.sharingScreen; }

  // Decided when its turn comes, so two quick presses are a start and a stop, whatever was queued before them.
  toggle() { return this.serially(() => (this.active ? this.stopNow() : this.startNow())); }

  start() { return this.serially(() => this.startNow()); }

  stop() { return this.serially(() => this.stopNow()); }

  async startNow() {
    if (this.active || !this.available) return;
    let track;
    try {
      track = await this.media.openScreen();
    } catch (error) {
      // Cancelling the browser's picker is a choice, not an error worth more than a word.
      this.announce(error?.name === 'NotAllowedError' ? 'Screen sharing was cancelled.' : `Could not share the screen: ${error?.message ?? error}`);
      return;
    }
    try {
      await sendTrack(this.getPc(), 'video', track);
    } catch (error) {
      track.stop();
      this.announce(`Could not share the screen: ${error?.message ?? error}`);
      return;
    }
    this.media.adoptScreenTrack(track);
    // The browser's own "Stop sharing" ends the track: queued like our button, and only for the share it belongs
    // to (an old share's late end must not stop a newer one).
    track.addEventListener('ended', () => this.serially(() => (this.media.screenTrack === track ? this.stopNow() : undefined)));
    this.announce('You are sharing your screen.');
    this.onChange();
  }

  async stopNow() {
    if (!this.active) return;
    try {
      await sendTrack(this.getPc(), 'video', this.media.cameraTrack);
    } catch (error) {
      console.warn('screen share: camera back', error);
    }
    this.media.endScreen();
    this.announce('You stopped sharing your screen.');
    this.onChange();
  }
}
