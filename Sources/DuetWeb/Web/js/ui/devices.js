// Which camera, microphone and speaker: the pickers (pre-join and in call share this one controller), switching
// in a call without renegotiation (RTCRtpSender.replaceTrack), and following the system's devices: a device in
// use that goes away (unplugged headset, closed lid) falls back to the default one, and the person is told.
import { listDevices, canChooseSpeaker, available, deviceOf, devicePreferences } from '../runtime/devices.js';
import { sendTrack } from '../runtime/media.js';

// How long a device note stays on screen: long enough to read two lines, short enough not to clutter the call.
export const DEVICE_NOTICE_MS = 8000;

export class DeviceController {
  // pickers: [{camera, microphone, speaker}] <select>s; getPc: the live RTCPeerConnection or null;
  // mediaElement: where the other person's sound plays (the speaker choice applies to it);
  // onChange(): a track was replaced (the page re-renders and re-announces its media state);
  // notice: the element that shows what happened to a device (#device-notice; none: only announced).
  constructor({ media, pickers, getPc, mediaElement, announce, onChange, notice = globalThis.document?.getElementById?.('device-notice') ?? null }) {
    this.media = media;
    this.notice = notice;
    this.noticeLines = [];
    this.noticeTimer = null;
    this.pickers = pickers;
    this.getPc = getPc;
    this.mediaElement = mediaElement;
    this.announce = announce;
    this.onChange = onChange;
    this.preferences = devicePreferences.load();
    this.devices = { cameras: [], microphones: [], speakers: [] };
    this.speakerId = null;
    this.busy = Promise.resolve();
    for (const picker of pickers) {
      picker.camera.addEventListener('change', () => this.useCamera(picker.camera.value || null));
      picker.microphone.addEventListener('change', () => this.useMicrophone(picker.microphone.value || null));
      picker.speaker.addEventListener('change', () => this.useSpeaker(picker.speaker.value || null));
    }
    for (const element of document.querySelectorAll('[data-speaker]')) element.hidden = !canChooseSpeaker();
    navigator.mediaDevices?.addEventListener?.('devicechange', () => this.serially(() => this.followDevices()));
  }

  // One switch at a time: two quick picks must not race two getUserMedia calls onto one sender.
  serially(work) {
    this.busy = this.busy.then(work).catch((error) => console.warn('devices', error));
    return this.busy;
  }

  // The ids to start media with: the remembered ones, unless the list shows they are gone. Before permission is
  // given the browser lists no ids at all: then the remembered id is tried as it is (LocalMedia falls back to
  // the default if that device is gone).
  async startingChoice() {
    this.devices = await listDevices();
    const pick = (list, id) => (list.length ? available(list, id) : id);
    return {
      cameraId: pick(this.devices.cameras, this.preferences.cameraId),
      microphoneId: pick(this.devices.microphones, this.preferences.microphoneId),
    };
  }

  // After media started (labels known now): fill the pickers, route the sound, watch the tracks for unplugging.
  async ready() {
    this.devices = await listDevices();
    await this.applySpeaker(available(this.devices.speakers, this.preferences.speakerId));
    this.watchTracks();
    this.render();
    if (this.media.fellBack) {
      this.tell('Your usual camera or microphone was not found, so the default one is used.');
    }
  }

  render() {
    const current = {
      camera: deviceOf(this.media.cameraTrack)?.deviceId ?? '',
      microphone: deviceOf(this.media.audioTrack)?.deviceId ?? '',
      speaker: this.speakerId ?? '',
    };
    const lists = { camera: this.devices.cameras, microphone: this.devices.microphones, speaker: this.devices.speakers };
    for (const picker of this.pickers) {
      for (const kind of ['camera', 'microphone', 'speaker']) {
        const select = picker[kind];
        const options = lists[kind].map((d) => new Option(d.label, d.deviceId));
        // The speaker may be "the system's default"; a camera or microphone in use is always one of the list.
        if (kind === 'speaker' || !lists[kind].length) options.unshift(new Option(kind === 'speaker' ? 'System default' : 'None found', ''));
        select.replaceChildren(...options);
        select.value = lists[kind].some((d) => d.deviceId === current[kind]) ? current[kind] : '';
        select.disabled = (kind === 'camera' && !this.media.cameraTrack) || (kind === 'microphone' && !this.media.audioTrack);
      }
    }
  }

  useCamera(deviceId, { remember = true } = {}) {
    return this.serially(async () => {
      if (!this.media.cameraTrack || deviceOf(this.media.cameraTrack).deviceId === deviceId) return this.render();
      try {
        const track = await this.media.openCamera(deviceId);
        // While the screen is shared the camera is not what is sent: it waits aside for afterwards.
        if (!this.media.sharingScreen) await sendTrack(this.getPc(), 'video', track);
        this.media.adoptVideoTrack(track);
        if (remember) this.remember({ cameraId: deviceOf(track).deviceId });
        this.watchTracks();
        this.onChange();
      } catch (error) {
        this.tell(`Could not switch camera: ${error?.message ?? error}`);
      }
      this.render();
    });
  }

  useMicrophone(deviceId, { remember = true } = {}) {
    return this.serially(async () => {
      if (!this.media.audioTrack || deviceOf(this.media.audioTrack).deviceId === deviceId) return this.render();
      try {
        const track = await this.media.openMicrophone(deviceId);
        await sendTrack(this.getPc(), 'audio', track);
        this.media.adoptAudioTrack(track);
        if (remember) this.remember({ microphoneId: deviceOf(track).deviceId });
        this.watchTracks();
        this.onChange();
      } catch (error) {
        this.tell(`Could not switch microphone: ${error?.message ?? error}`);
      }
      this.render();
    });
  }

  // "Switch camera": the next camera of the list (front ↔ back on a phone).
  nextCamera() {
    const cameras = this.devices.cameras;
    const current = cameras.findIndex((d) => d.deviceId === deviceOf(this.media.cameraTrack)?.deviceId);
    const next = cameras[(current + 1) % cameras.length];
    if (next && cameras.length > 1) return this.useCamera(next.deviceId);
    return this.busy;
  }

  useSpeaker(deviceId) {
    return this.serially(async () => {
      try {
        await this.applySpeaker(deviceId);
        this.remember({ speakerId: deviceId });
      } catch (error) {
        this.tell(`Could not switch speaker: ${error?.message ?? error}`);
      }
      this.render();
    });
  }

  async applySpeaker(deviceId) {
    if (!canChooseSpeaker()) return;
    await this.mediaElement.setSinkId(deviceId ?? '');
    this.speakerId = deviceId;
  }

  // What happened to a device is said (screen readers) and shown for a while (everyone else): a sighted person
  // whose headset died should not have to guess why the sound now comes from the laptop. Two at once (the
  // microphone and the camera of one unplugged webcam) show together, the last two only (a device that keeps
  // coming and going must not grow the note); each is announced on its own.
  tell(text) {
    this.announce(text);
    if (!this.notice) return;
    this.noticeLines = [...(this.notice.hidden ? [] : this.noticeLines ?? []), text].slice(-2);
    this.notice.textContent = this.noticeLines.join(' ');
    this.notice.hidden = false;
    clearTimeout(this.noticeTimer);
    this.noticeTimer = setTimeout(() => { this.notice.hidden = true; }, DEVICE_NOTICE_MS);
  }

  remember(change) {
    this.preferences = { ...this.preferences, ...change };
    devicePreferences.save(this.preferences);
  }

  // A device that is unplugged ends its track (often before devicechange fires): either way, the default one.
  watchTracks() {
    for (const [track, kind] of [[this.media.audioTrack, 'microphone'], [this.media.cameraTrack, 'camera']]) {
      if (!track || track.duetWatched) continue;
      track.duetWatched = true;
      track.addEventListener('ended', () => this.serially(() => this.fallBack(kind, track.label)));
    }
  }

  async followDevices() {
    const before = this.devices;
    this.devices = await listDevices();
    const gone = (list, id) => id && !list.some((d) => d.deviceId === id);
    const mic = deviceOf(this.media.audioTrack);
    const camera = deviceOf(this.media.cameraTrack);
    if (gone(this.devices.microphones, mic?.deviceId)) await this.fallBack('microphone', mic.label);
    if (gone(this.devices.cameras, camera?.deviceId)) await this.fallBack('camera', camera.label);
    if (gone(this.devices.speakers, this.speakerId)) {
      const label = before.speakers.find((d) => d.deviceId === this.speakerId)?.label ?? 'The speaker';
      await this.applySpeaker(null).catch(() => {});
      this.tell(`${label} was disconnected. Sound now plays on the system default speaker.`);
    }
    this.render();
  }

  // The device in use went away: the default one takes its place (not remembered: the person's choice stays,
  // and comes back when the device does on a later call).
  async fallBack(kind, label) {
    const track = kind === 'microphone' ? this.media.audioTrack : this.media.cameraTrack;
    if (track && track.readyState === 'live' && this.devices[kind === 'microphone' ? 'microphones' : 'cameras']
      .some((d) => d.deviceId === deviceOf(track).deviceId)) return;  // it came back, or another one already took over
    try {
      const fresh = kind === 'microphone' ? await this.media.openMicrophone(null) : await this.media.openCamera(null);
      if (kind === 'microphone') {
        await sendTrack(this.getPc(), 'audio', fresh);
        this.media.adoptAudioTrack(fresh);
      } else {
        if (!this.media.sharingScreen) await sendTrack(this.getPc(), 'video', fresh);
        this.media.adoptVideoTrack(fresh);
      }
      this.watchTracks();
      this.onChange();
      this.tell(`${label || `Your ${kind}`} was disconnected. Now using ${fresh.label || `the default ${kind}`}.`);
    } catch {
      this.tell(`${label || `Your ${kind}`} was disconnected, and no other ${kind} could be started.`);
    }
    this.devices = await listDevices();
    this.render();
  }
}
