// Cameras, microphones and speakers: what the browser has, what this browser chose last time, and the small
// rules for picking one. The choices live in localStorage (per browser, not per tab), so someone who picked a
// headset once gets it again on every call link without looking at the pre-join screen.

const PREFERENCES_KEY = 'duet.devices';

// {cameraId, microphoneId, speakerId, micOn, cameraOn}; ids are null for "the browser's default".
export const DEFAULT_PREFERENCES = Object.freeze({ cameraId: null, microphoneId: null, speakerId: null, micOn: true, cameraOn: true });

export const devicePreferences = {
  load() {
    try {
      const saved = JSON.parse(localStorage.getItem(PREFERENCES_KEY) ?? 'null');
      return normalizePreferences(saved);
    } catch {
      return { ...DEFAULT_PREFERENCES };
    }
  },
  save(preferences) {
    // Storage can be full or refused (private mode): remembering is a convenience, never a reason to fail.
    try { localStorage.setItem(PREFERENCES_KEY, JSON.stringify(normalizePreferences(preferences))); } catch {}
  },
};

export function normalizePreferences(value) {
  const v = value && typeof value === 'object' ? value : {};
  const id = (x) => (typeof x === 'string' && x ? x : null);
  return {
    cameraId: id(v.cameraId), microphoneId: id(v.microphoneId), speakerId: id(v.speakerId),
    micOn: v.micOn !== false, cameraOn: v.cameraOn !== false,
  };
}

// The devices of each kind, labelled. Before permission is granted labels are empty: a label is made up so the
// picker still says which one is which.
export async function listDevices() {
  let all = [];
  try { all = await navigator.mediaDevices.enumerateDevices(); } catch { /* no devices to offer */ }
  const of = (kind, noun) => all.filter((d) => d.kind === kind && d.deviceId)
    .map((d, i) => ({ deviceId: d.deviceId, groupId: d.groupId, label: d.label || `${noun} ${i + 1}` }));
  return { cameras: of('videoinput', 'Camera'), microphones: of('audioinput', 'Microphone'), speakers: of('audiooutput', 'Speaker') };
}

// Where the browser can route a media element's sound (Chromium, Firefox with a flag; not Safari): the speaker
// picker is offered only there.
export function canChooseSpeaker() {
  return typeof HTMLMediaElement !== 'undefined' && 'setSinkId' in HTMLMediaElement.prototype;
}

// The id to ask for: the preferred one while it exists, else null (the default).
export function available(devices, preferredId) {
  return preferredId && devices.some((d) => d.deviceId === preferredId) ? preferredId : null;
}

// getUserMedia constraints for a device: `exact`, so a remembered device that is gone fails and the caller can
// fall back to the default instead of silently getting some other one.
export function audioConstraints(deviceId) {
  return deviceId ? { deviceId: { exact: deviceId } } : true;
}

export function videoConstraints(deviceId) {
  const size = { width: { ideal: 1280 }, height: { ideal: 720 } };
  return deviceId ? { ...size, deviceId: { exact: deviceId } } : { ...size, facingMode: 'user' };
}

// The id and label of the device behind a live track (null for none).
export function deviceOf(track) {
  if (!track) return null;
  return { deviceId: track.getSettings?.().deviceId ?? null, label: track.label };
}
