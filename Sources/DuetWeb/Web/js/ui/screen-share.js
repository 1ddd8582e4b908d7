// Screen sharing: the shared screen replaces the camera on the video sender (replaceTrack, no renegotiation),
// and stopping — with our button or the browser's own "Stop sharing" bar (the track ends) — puts the camera
// back as it was. The page re-announces {screen} through onChange.
import { sendTrack } from '../runtime/media.js';

export class ScreenShare {
  // serially(work): the queue every change of the sent tracks goes through (DeviceController.serially). A camera
  // switch and a share started together then run one after the other, never interleaved: an interleaved stop
  // could send the camera it read before a switch stopped it (a frozen picture), and the last request wins.
  // The picker itself is not queued (start()).
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

  // What the user asked for last: a press decides at once (two quick presses are a start and a stop), and the
  // queued work follows it when its turn comes.
  wanted = false;

  toggle() { return this.wanted ? this.stop() : this.start(); }

  // The browser's picker opens at once, on the click that asked for it (it needs that click, and an open picker
  // must not hold the queue: a microphone fallback waits behind nothing). Only sending the chosen screen is queued.
  start() {
    if (this.wanted || this.active || !this.available) return this.serially(() => {});
    this.wanted = true;
    const picking = this.pick();
    return this.serially(async () => {
      const track = await picking;
      if (!track) return;
      if (!this.wanted || this.active) {
        track.stop();  // stopped (or replaced) while the picker was open: nothing to send
        return;
      }
      await this.sendScreen(track);
    });
  }

  stop() {
    this.wanted = false;
    return this.serially(() => this.stopNow());
  }

  async pick() {
    try {
      return await this.media.openScreen();
    } catch (error) {
      // Cancelling the browser's picker is a choice, not an error worth more than a word.
      this.announce(error?.name === 'NotAllowedError' ? 'Screen sharing was cancelled.' : `Could not share the screen: ${error?.message ?? error}`);
      this.wanted = false;
      return null;
    }
  }

  async sendScreen(track) {
    try {
      await sendTrack(this.getPc(), 'video', track);
    } catch (error) {
      track.stop();
      this.wanted = false;
      this.announce(`Could not share the screen: ${error?.message ?? error}`);
      return;
    }
    this.media.adoptScreenTrack(track);
    // The browser's own "Stop sharing" ends the track: queued like our button, and only for the share it belongs
    // to (an old share's late end must not stop a newer one).
    track.addEventListener('ended', () => {
      if (this.media.screenTrack !== track) return;
      this.wanted = false;
      this.serially(() => (this.media.screenTrack === track ? this.stopNow() : undefined));
    });
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
