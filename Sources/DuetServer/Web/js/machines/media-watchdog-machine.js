// Port of MediaWatchdogMachine.swift. Media that stops arriving while ICE says `connected` (issue 32): while ICE is
// connected the runtime reads the inbound counters every MEDIA_SAMPLE_INTERVAL_MS, and media is stalled when they
// did not grow for MEDIA_STALL_TIMEOUT_MS — packets whenever the peer says it sends anything, decoded video frames
// too when it says its camera or screen is on and frames were decoded on this path before (a receiver without video
// decodes none). The engine treats a stall as ICE `disconnected` and restarts ICE;
// growth again is recovery. A sample below the last (a new peer connection's counters) or the first after ICE
// (re)connects is a new baseline, never growth. A stall, once said, lasts until media grows again (through the ICE
// restart it causes and a renewed connection), or until the call has no peer any more (`reset`).
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

/** Quiet samples in a row that make a stall. */
export const STALL_SAMPLES = Math.ceil(RESILIENCE.MEDIA_STALL_TIMEOUT_MS / RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS);

export class MediaWatchdogMachine {
  constructor() {
    this.iceConnected = false;
    this.stalled = false;
    this.last = null;
    this.quietPacketSamples = 0;
    this.quietFrameSamples = 0;
    /** Video frames were decoded on this path: from now on, frames that stop are a stall when video is expected. */
    this.framesSeen = false;
    this.expectsPackets = true;
    this.expectsFrames = false;
  }

  /**
   * Events: ice{connected}, reset (nobody to hear: a stall is forgotten), peerMedia{media} (null: the peer said nothing), timerFired{timer},
   * sampled{sample: {packets, videoFrames} | null}, renegotiated (a remote description was applied).
   * Actions: sample (read the counters, feed them back as `sampled`), stalled, flowing, timer{command}.
   */
  handle(event) {
    switch (event.type) {
      case 'ice': {
        if (event.connected === this.iceConnected) return [];
        this.iceConnected = event.connected;
        // Coming back is a path to judge from a new baseline; a stall stays until media grows on it.
        this.#rebaseline(null);
        return event.connected
          ? [timerAction(schedule('mediaSample', RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS))]
          : [timerAction(cancel('mediaSample'))];
      }
      case 'reset':
        this.stalled = false;
        this.#rebaseline(null);
        return [];
      case 'peerMedia': {
        const media = event.media;
        this.expectsPackets = media == null ? true : (media.audio || media.video || media.screen);
        this.expectsFrames = media == null ? false : (media.video || media.screen);
        return this.#judge();
      }
      case 'timerFired':
        if (event.timer !== 'mediaSample' || !this.iceConnected) return [];
        // Scheduled here, not when the sample comes back: a sample the runtime never answers stops nothing.
        return [{ type: 'sample' }, timerAction(schedule('mediaSample', RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS))];
      case 'renegotiated':
        // A remote description was applied (say, the peer's ICE restart): the path is judged afresh. A stall already
        // said stays until media grows (its restart is under way).
        if (this.iceConnected && !this.stalled) this.#rebaseline(null);
        return [];
      case 'sampled': {
        const sample = event.sample;
        if (!this.iceConnected || sample == null) return [];
        const previous = this.last;
        if (previous == null || sample.packets < previous.packets || sample.videoFrames < previous.videoFrames) {
          this.#rebaseline(sample); // the first on this path, or a new peer connection's counters
          return [];
        }
        this.quietPacketSamples = sample.packets > previous.packets ? 0 : this.quietPacketSamples + 1;
        this.quietFrameSamples = sample.videoFrames > previous.videoFrames ? 0 : this.quietFrameSamples + 1;
        if (sample.videoFrames > previous.videoFrames) this.framesSeen = true;
        this.last = sample;
        return this.#judge();
      }
      default:
        return [];
    }
  }

  #rebaseline(sample) {
    this.last = sample;
    this.quietPacketSamples = 0;
    this.quietFrameSamples = 0;
    this.framesSeen = false;
  }

  #judge() {
    const silent = (this.expectsPackets && this.quietPacketSamples >= STALL_SAMPLES)
      || (this.expectsFrames && this.framesSeen && this.quietFrameSamples >= STALL_SAMPLES);
    if (!this.iceConnected || silent === this.stalled) return [];
    this.stalled = silent;
    return [{ type: silent ? 'stalled' : 'flowing' }];
  }
}
