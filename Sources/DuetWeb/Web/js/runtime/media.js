// Local camera and microphone. Permission problems are reported as a kind the page can explain,
// with a way forward (audio only, or try again) instead of a dead end.

import { audioConstraints, videoConstraints } from './devices.js';

// `stream` holds exactly what is sent: the microphone's track and the camera's (or, while sharing, the screen's).
// A peer connection made later (a rejoin after a server restart makes a new one) adds these tracks, so whatever
// was switched or shared before carries over. The camera's track is kept aside while the screen is shared, so
// stopping the share puts the same camera back, on or off as it was.
export class LocalMedia {
  constructor() {
    this.stream = null;
    this.audioOnly = false;
    this.cameraTrack = null;
    this.screenTrack = null;
    this.fellBack = false;  // a remembered device was gone and the default was used instead
  }

  async start({ audioOnly = false, cameraId = null, microphoneId = null } = {}) {
    this.audioOnly = audioOnly;
    this.fellBack = false;
    const ask = (camera, microphone) => navigator.mediaDevices.getUserMedia({
      audio: audioConstraints(microphone),
      video: audioOnly ? false : videoConstraints(camera),
    });
    try {
      try {
        this.stream = await ask(cameraId, microphoneId);
      } catch (error) {
        // A remembered camera or microphone that is unplugged: the default one, and the page says so.
        if (!(cameraId || microphoneId) || !['OverconstrainedError', 'NotFoundError'].includes(error?.name)) throw error;
        this.stream = await ask(null, null);
        this.fellBack = true;
      }
      this.cameraTrack = this.stream.getVideoTracks()[0] ?? null;
      this.screenTrack = null;
      return this.stream;
    } catch (error) {
      throw classifyMediaError(error);
    }
  }

  get audioTrack() { return this.stream?.getAudioTracks()[0] ?? null; }
  // The video track being sent: the camera's, or the screen's while sharing.
  get videoTrack() { return this.stream?.getVideoTracks()[0] ?? null; }
  get sharingScreen() { return this.screenTrack !== null; }

  setMicrophoneEnabled(on) { if (this.audioTrack) this.audioTrack.enabled = on; }
  setCameraEnabled(on) { if (this.cameraTrack) this.cameraTrack.enabled = on; }

  async cameraCount() {
    try {
      const devices = await navigator.mediaDevices.enumerateDevices();
      return devices.filter((d) => d.kind === 'videoinput').length;
    } catch {
      return 0;
    }
  }

  // A fresh track from one camera or microphone (null id: the default), on or off like the one it replaces.
  async openCamera(deviceId) {
    const fresh = await navigator.mediaDevices.getUserMedia({ video: videoConstraints(deviceId) });
    const track = fresh.getVideoTracks()[0];
    track.enabled = this.cameraTrack?.enabled ?? true;
    return track;
  }

  async openMicrophone(deviceId) {
    const fresh = await navigator.mediaDevices.getUserMedia({ audio: audioConstraints(deviceId) });
    const track = fresh.getAudioTracks()[0];
    track.enabled = this.audioTrack?.enabled ?? true;
    return track;
  }

  // Takes a new camera track as the camera. While the screen is shared it is kept aside (the screen is what is
  // sent); otherwise it replaces the sent one in the stream.
  adoptVideoTrack(track) {
    const old = this.cameraTrack;
    this.cameraTrack = track;
    if (!this.sharingScreen) this.swapInStream(old, track);
    if (old && old !== track) old.stop();
  }

  adoptAudioTrack(track) {
    const old = this.audioTrack;
    this.swapInStream(old, track);
    if (old && old !== track) old.stop();
  }

  // The screen (getDisplayMedia: the browser asks which screen, window or tab). Throws when refused.
  async openScreen() {
    const display = await navigator.mediaDevices.getDisplayMedia({ video: { frameRate: { ideal: 15 } }, audio: false });
    const track = display.getVideoTracks()[0];
    // Text on a shared screen should stay sharp rather than smooth (a hint the encoder may take).
    if ('contentHint' in track) track.contentHint = 'detail';
    return track;
  }

  // The screen goes into the stream instead of the camera, which stays alive (and as it was) for afterwards.
  adoptScreenTrack(track) {
    this.screenTrack = track;
    this.swapInStream(this.cameraTrack, track);
  }

  // Puts the camera back in the stream; returns the track to send now (the camera's, or null if audio only).
  endScreen() {
    const screen = this.screenTrack;
    this.screenTrack = null;
    if (screen) {
      this.swapInStream(screen, this.cameraTrack);
      screen.stop();
    }
    return this.cameraTrack;
  }

  swapInStream(old, track) {
    if (!this.stream) return;
    if (track && !this.stream.getTracks().includes(track)) this.stream.addTrack(track);
    if (old && old !== track) this.stream.removeTrack(old);
  }

  stop() {
    this.stream?.getTracks().forEach((t) => t.stop());
    this.cameraTrack?.stop();
    this.screenTrack?.stop();
    this.stream = null;
    this.cameraTrack = null;
    this.screenTrack = null;
  }
}

// Sends `track` on the peer connection's sender of that kind without renegotiating (replaceTrack). No peer
// connection yet: nothing to do, the one made later adds the stream's tracks.
export async function sendTrack(pc, kind, track) {
  if (!pc) return;
  const transceiver = pc.getTransceivers().find((t) => !t.stopped && (t.sender.track?.kind === kind
    || (t.receiver.track?.kind === kind && (t.direction === 'sendrecv' || t.direction === 'sendonly'))));
  await transceiver?.sender.replaceTrack(track);
}

export class MediaError extends Error {
  constructor(kind, message) {
    super(message);
    this.kind = kind;  // 'permission' | 'notFound' | 'inUse' | 'unsupported' | 'other'
  }
}

function classifyMediaError(error) {
  if (!navigator.mediaDevices) return new MediaError('unsupported', 'This browser cannot use a camera or microphone here (a secure https:// page is needed).');
  switch (error?.name) {
    case 'NotAllowedError':
    case 'SecurityError':
      return new MediaError('permission', 'Duet was not allowed to use your camera or microphone.');
    case 'NotFoundError':
    case 'OverconstrainedError':
      return new MediaError('notFound', 'No camera or microphone was found.');
    case 'NotReadableError':
    case 'AbortError':
      return new MediaError('inUse', 'Your camera or microphone is in use by another app.');
    default:
      return new MediaError('other', `The camera or microphone could not start (${error?.name ?? error}).`);
  }
}
