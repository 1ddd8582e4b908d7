// Port of MediaWatchdogMachine.swift. Media that stops arriving while ICE says `connected` (issue 32): while ICE is
// connected the runtime reads the inbound RTP packet count (all kinds) every MEDIA_SAMPLE_INTERVAL_MS, and media is
// stalled when it did not grow for MEDIA_STALL_TIMEOUT_MS — once packets have arrived on this peer connection or the
// peer says it sends (a peer without any device is no stall; a muted track still sends). The engine treats a stall as ICE `disconnected` and
// restarts ICE. Only growth ends a stall: a new baseline (ICE reconnected, a remote description applied, a new
// connection's counters) proves nothing. Only `reset` (the call lost its peer) forgets one.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

/** Quiet samples in a row that make a stall. */
export const STALL_SAMPLES = Math.ceil(RESILIENCE.MEDIA_STALL_TIMEOUT_MS / RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS);

export class MediaWatchdogMachine {
  constructor() {
    this.iceConnected = false;
    this.stalled = false;
    this.last = null;
    this.quietSamples = 0;
    /** Packets have arrived on this peer connection (its counters, which a new connection restarts). */
    this.received = false;
    this.peerSends = false;
  }

  /**
   * Events: ice{connected}, reset (nobody to hear: a stall is forgotten), peerSends{sends}, timerFired{timer},
   * sampled{packets: number | null}, renegotiated (a remote description was applied).
   * Actions: sample (read the count, feed it back as `sampled`), stalled, flowing, timer{command}.
   */
  handle(event) {
    switch (event.type) {
      case 'ice':
        if (event.connected === this.iceConnected) return [];
        this.iceConnected = event.connected;
        this.#rebaseline();
        return event.connected
          ? [timerAction(schedule('mediaSample', RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS))]
          : [timerAction(cancel('mediaSample'))];
      case 'reset':
        // What this connection carried stays known: a peer that comes back on it is judged like the one before.
        this.stalled = false;
        this.#rebaseline();
        return [];
      case 'peerSends':
        this.peerSends = event.sends === true;
        return [];
      case 'timerFired':
        if (event.timer !== 'mediaSample' || !this.iceConnected) return [];
        // Scheduled here, not when the sample comes back: a sample the runtime never answers stops nothing.
        return [{ type: 'sample' }, timerAction(schedule('mediaSample', RESILIENCE.MEDIA_SAMPLE_INTERVAL_MS))];
      case 'renegotiated':
        if (this.iceConnected) this.#rebaseline();
        return [];
      case 'sampled': {
        const packets = event.packets;
        if (!this.iceConnected || packets == null) return [];
        const previous = this.last;
        if (previous == null || packets < previous) {
          // The first on this path, or a new peer connection's counters (which have carried nothing yet).
          if (previous != null) this.received = false;
          this.last = packets;
          return [];
        }
        this.last = packets;
        if (packets > previous) {
          this.received = true;
          this.quietSamples = 0;
          if (!this.stalled) return [];
          this.stalled = false;
          return [{ type: 'flowing' }];
        }
        this.quietSamples += 1;
        if (!(this.received || this.peerSends) || this.stalled || this.quietSamples < STALL_SAMPLES) return [];
        this.stalled = true;
        return [{ type: 'stalled' }];
      }
      default:
        return [];
    }
  }

  #rebaseline() {
    this.last = null;
    this.quietSamples = 0;
  }
}
