// Local camera and microphone. Permission problems are reported as a kind the page can explain,
// with a way forward (audio only, or try again) instead of a dead end.

export class LocalMedia {
  constructor() {
    this.stream = null;
    this.audioOnly = false;
  }

  async start({ audioOnly = false } = {}) {
    this.audioOnly = audioOnly;
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({
        audio: true,
        video: audioOnly ? false : { facingMode: 'user', width: { ideal: 1280 }, height: { ideal: 720 } },
      });
      return this.stream;
    } catch (error) {
      throw classifyMediaError(error);
    }
  }

  get audioTrack() { return this.stream?.getAudioTracks()[0] ?? null; }
  get videoTrack() { return this.stream?.getVideoTracks()[0] ?? null; }

  setMicrophoneEnabled(on) { if (this.audioTrack) this.audioTrack.enabled = on; }
  setCameraEnabled(on) { if (this.videoTrack) this.videoTrack.enabled = on; }

  async cameraCount() {
    try {
      const devices = await navigator.mediaDevices.enumerateDevices();
      return devices.filter((d) => d.kind === 'videoinput').length;
    } catch {
      return 0;
    }
  }

  // The next camera's track (front ↔ back on a phone, the next webcam on a desktop), or null with one camera.
  // The caller sends it (replaceTrack, no renegotiation) and then adopts it: the old track is stopped only
  // after the sender has moved on, or the encoder stalls.
  async nextCameraTrack() {
    const cameras = (await navigator.mediaDevices.enumerateDevices()).filter((d) => d.kind === 'videoinput');
    const current = this.videoTrack?.getSettings().deviceId;
    const next = cameras[(cameras.findIndex((c) => c.deviceId === current) + 1) % cameras.length];
    if (!next || next.deviceId === current) return null;
    const fresh = await navigator.mediaDevices.getUserMedia({ video: { deviceId: { exact: next.deviceId } } });
    const track = fresh.getVideoTracks()[0];
    track.enabled = this.videoTrack?.enabled ?? true;
    return track;
  }

  adoptVideoTrack(track) {
    const old = this.videoTrack;
    this.stream.addTrack(track);
    if (old) { this.stream.removeTrack(old); old.stop(); }
  }

  stop() {
    this.stream?.getTracks().forEach((t) => t.stop());
    this.stream = null;
  }
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
