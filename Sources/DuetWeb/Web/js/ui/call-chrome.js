// What surrounds the call: its duration, the page title (the call's state, readable from the tab strip), full
// screen, picture-in-picture, and a screen wake lock while in a call (so a phone does not dim mid-sentence;
// the browser drops the lock when the tab is hidden, so it is taken again when the tab comes back).
import { $, setToggle } from './call-view.js';
import { formatDuration } from './quality-view.js';

export class CallChrome {
  constructor() {
    this.startedAt = null;    // ms, when both people were first in the call
    this.endedAt = null;
    this.ticker = null;
    this.wantWakeLock = false;
    this.wakeLock = null;
    this.wakeLockState = 'none';  // 'held' | 'released' | 'unsupported' | 'refused' | 'none'
    this.title = '';
    document.addEventListener('visibilitychange', () => {
      if (document.visibilityState === 'visible' && this.wantWakeLock) this.acquireWakeLock();
    });
    $('fullscreen').hidden = !document.fullscreenEnabled;
    $('fullscreen').addEventListener('click', () => this.toggleFullscreen());
    // Both keep their names and say their state with aria-pressed; the title says what a click does now.
    document.addEventListener('fullscreenchange', () => {
      const on = !!document.fullscreenElement;
      setToggle($('fullscreen'), { pressed: on, title: on ? 'Exit full screen (F)' : 'Full screen (F)' });
    });
    const video = $('remote-video');
    $('pip').hidden = !(document.pictureInPictureEnabled && video.requestPictureInPicture);
    $('pip').addEventListener('click', () => this.togglePictureInPicture());
    video.addEventListener('enterpictureinpicture', () => setToggle($('pip'), { pressed: true, title: 'Leave picture in picture (P)' }));
    video.addEventListener('leavepictureinpicture', () => setToggle($('pip'), { pressed: false, title: 'Picture in picture (P)' }));
  }

  get durationS() {
    if (this.startedAt === null) return 0;
    return ((this.endedAt ?? Date.now()) - this.startedAt) / 1000;
  }

  callStarted() {
    if (this.startedAt !== null && this.endedAt === null) return;
    this.startedAt = Date.now();
    this.endedAt = null;
    $('call-info').hidden = false;
    clearInterval(this.ticker);
    this.ticker = setInterval(() => this.tick(), 1000);
    this.tick();
  }

  callEnded() {
    if (this.startedAt !== null && this.endedAt === null) this.endedAt = Date.now();
    clearInterval(this.ticker);
    this.ticker = null;
    $('call-info').hidden = true;
    this.inCall(false);
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    if (document.pictureInPictureElement) document.exitPictureInPicture().catch(() => {});
  }

  reset() {
    this.startedAt = null;
    this.endedAt = null;
  }

  tick() {
    $('duration').textContent = formatDuration(this.durationS);
    this.onTick?.();
  }

  // The tab's title: what the call is doing, then Duet (the state first: tabs cut titles at the end).
  setTitle(text) {
    const title = text ? `${text} – Duet` : 'Duet call';
    if (title !== this.title) document.title = this.title = title;
  }

  inCall(on) {
    this.wantWakeLock = on;
    if (on) this.acquireWakeLock();
    else this.releaseWakeLock();
  }

  async acquireWakeLock() {
    if (!navigator.wakeLock?.request) { this.wakeLockState = 'unsupported'; return; }
    if (this.wakeLock && !this.wakeLock.released) return;
    if (this.wakeLockPending) return;  // one request at a time: a second lock would overwrite and leak the first
    this.wakeLockPending = true;
    try {
      const lock = await navigator.wakeLock.request('screen');
      if (!this.wantWakeLock || (this.wakeLock && !this.wakeLock.released)) { lock.release().catch(() => {}); return; }
      this.wakeLock = lock;
      this.wakeLockState = 'held';
      lock.addEventListener('release', () => { if (this.wakeLock === lock) this.wakeLockState = 'released'; });
    } catch {
      this.wakeLockState = 'refused';  // hidden tab, battery saver, or a policy: the call goes on regardless
    } finally {
      this.wakeLockPending = false;
    }
  }

  releaseWakeLock() {
    const lock = this.wakeLock;
    this.wakeLock = null;
    if (lock && !lock.released) lock.release().catch(() => {});
    if (this.wakeLockState === 'held') this.wakeLockState = 'released';
  }

  async toggleFullscreen() {
    try {
      if (document.fullscreenElement) await document.exitFullscreen();
      else await document.querySelector('.call').requestFullscreen();
    } catch { /* refused (no user gesture): the button stays as it was */ }
  }

  async togglePictureInPicture() {
    try {
      if (document.pictureInPictureElement) await document.exitPictureInPicture();
      else await $('remote-video').requestPictureInPicture();
    } catch { /* no picture yet, or refused */ }
  }
}
