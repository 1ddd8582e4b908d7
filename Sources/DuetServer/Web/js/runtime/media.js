// Local camera and microphone. Permission problems are reported as a kind the page can explain,
// with a way forward (audio only, or try again) instead of a dead end.

export class LocalMedia {
  constructor() {
    this.stream = null;
    this.audioOnly = false;
    this.facing = 'user';
  }

  async start({ audioOnly = false } = {}) {
    this.audioOnly = audioOnly;
    try {
      this.stream = await navigator.mediaDevices.getUserMedia({
        audio: true,
        video: audioOnly ? false : { facingMode: this.facing, width: { ideal: 1280 }, height: { ideal: 720 } },
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

  // A new track from the other camera; the caller swaps it into the peer connection with replaceTrack.
  async switchCamera() {
    this.facing = this.facing === 'user' ? 'environment' : 'user';
    const fresh = await navigator.mediaDevices.getUserMedia({ video: { facingMode: this.facing } });
    const track = fresh.getVideoTracks()[0];
    const old = this.videoTrack;
    if (old) { track.enabled = old.enabled; this.stream.removeTrack(old); old.stop(); }
    this.stream.addTrack(track);
    return track;
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
