// The other person's media as they announced it (media_state, through DuetCall's state.remoteMedia): a camera
// that is off shows a placeholder instead of a black or frozen picture, a muted microphone a "Muted" label, and
// both are said once to screen readers. Also plays their video and sound, and never fails silently when the
// browser refuses to play sound without a click (autoplay policy): "Click to turn on sound".
import { $ } from './call-view.js';

export class RemoteMediaView {
  constructor({ announce }) {
    this.announce = announce;
    this.media = null;       // {audio, video, screen} or null: unknown
    this.soundBlocked = false;
    $('sound-on').addEventListener('click', () => this.turnOnSound());
  }

  // null: not known (no one there, or their app does not say).
  show(media, { peerPresent }) {
    const before = this.media;
    this.media = media ? { audio: !!media.audio, video: !!media.video, screen: !!media.screen } : null;
    const m = peerPresent ? this.media : null;
    $('remote-camera-off').hidden = !(m && !m.video && !m.screen);
    $('remote-muted').hidden = !(m && !m.audio);
    $('remote-sharing').hidden = !(m && m.screen);
    document.body.dataset.remoteAudio = m ? String(m.audio) : '';
    document.body.dataset.remoteVideo = m ? String(m.video) : '';
    if (!peerPresent || !m) return;
    // Only a change is said (the first state too, when it is not the ordinary "all on").
    const was = before ?? { audio: true, video: true, screen: false };
    const said = [];
    if (was.audio !== m.audio) said.push(m.audio ? 'unmuted their microphone' : 'muted their microphone');
    if (was.video !== m.video) said.push(m.video ? 'turned their camera on' : 'turned their camera off');
    if (was.screen !== m.screen) said.push(m.screen ? 'is sharing their screen' : 'stopped sharing their screen');
    if (said.length) this.announce(`The other person ${said.join(' and ')}.`);
  }

  // Plays the other person's stream. A refused play() (NotAllowedError: no click yet) still shows the picture,
  // muted, and offers the button that turns the sound on.
  attach(stream) {
    const video = $('remote-video');
    if (video.srcObject !== stream) video.srcObject = stream;
    if (!stream) return;
    video.muted = this.soundBlocked;
    video.play().catch((error) => {
      if (error?.name !== 'NotAllowedError') return;  // AbortError: a newer srcObject took over; it plays itself
      this.blockSound();
      video.play().catch(() => {});
    });
  }

  blockSound() {
    this.soundBlocked = true;
    $('remote-video').muted = true;
    $('sound-on').hidden = false;
    // The one thing standing between the person and the call's sound: it takes the focus, so Enter or Space does it.
    $('sound-on').focus({ preventScroll: true });
    document.body.dataset.soundBlocked = 'true';
    this.announce('Your browser blocked the sound. Press the “Click to turn on sound” button to hear the other person.');
  }

  async turnOnSound() {
    const video = $('remote-video');
    video.muted = false;
    try {
      await video.play();
      this.soundBlocked = false;
      $('sound-on').hidden = true;
      document.body.dataset.soundBlocked = 'false';
    } catch (error) {
      video.muted = true;
      this.announce(`Sound could not start: ${error?.message ?? error}`);
    }
  }
}
