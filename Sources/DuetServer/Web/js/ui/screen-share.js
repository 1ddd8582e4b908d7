// Screen sharing: the shared screen replaces the camera on the video sender (replaceTrack, no renegotiation),
// and stopping — with our button or the browser's own "Stop sharing" bar (the track ends) — puts the camera
// back as it was. The page re-announces {screen} through onChange.
import { sendTrack } from '../runtime/media.js';

export class ScreenShare {
  constructor({ media, getPc, announce, onChange }) {
    this.media = media;
    this.getPc = getPc;
    this.announce = announce;
    this.onChange = onChange;
  }

  // Sharing needs a video sender (audio-only calls have none to reuse) and getDisplayMedia (not on phones).
  get available() {
    return !!navigator.mediaDevices?.getDisplayMedia && !!this.media.cameraTrack;
  }

  get active() { return this.media.sharingScreen; }

  toggle() { return this.active ? this.stop() : this.start(); }

  async start() {
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
    track.addEventListener('ended', () => this.stop());  // the browser's own "Stop sharing"
    this.announce('You are sharing your screen.');
    this.onChange();
  }

  async stop() {
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
