// Every timer of the engine. Machines never sleep: they emit `schedule`/`cancel`, and the runtime
// (or a test's virtual clock) feeds `timerFired` back as an event. Port of Timers.swift.

/** TimerID cases, in the Swift declaration order (`TimerID.allCases`). */
export const TIMER_IDS = Object.freeze([
  // join
  'pushEndpointWait', 'snapshotPrepare', 'joinKickstart', 'joinRecovery', 'joinHardTimeout',
  // signaling link
  'connectTimeout', 'reconnectBackoff', 'ping',
  // connection status
  'retryingThreshold', 'retryEscalation',
  // negotiation
  'offerTimeout', 'nonHostFallback', 'iceRestartDelay', 'iceRestartCooldown',
  // trickle ICE
  'endOfCandidates',
  // TURN
  'turnFetchTimeout', 'turnRefresh',
  // session
  'reconnectTokenRefresh',
  // media watchdog
  'mediaSample',
]);

/** TimerCommand.schedule */
export function schedule(timer, afterMs) {
  return { type: 'schedule', timer, afterMs };
}

/** TimerCommand.cancel */
export function cancel(timer) {
  return { type: 'cancel', timer };
}

/** A machine action carrying a timer command (`.timer(...)` in every Swift machine). */
export function timerAction(command) {
  return { type: 'timer', command };
}

const MASK64 = (1n << 64n) - 1n;

/** SplitMix64 on unsigned 64-bit BigInts: the same sequence as the Swift `SplitMix64` for the same seed. */
export class SplitMix64 {
  constructor(seed) {
    this.state = toUInt64(seed);
  }

  /** The next value, a BigInt in [0, 2^64). */
  next() {
    this.state = (this.state + 0x9e3779b97f4a7c15n) & MASK64;
    let z = this.state;
    z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
    z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
    return z ^ (z >> 31n);
  }
}

/** A seed as Swift's UInt64: numbers are truncated to integers and wrapped like a bit pattern. */
export function toUInt64(seed) {
  if (typeof seed === 'bigint') return BigInt.asUintN(64, seed);
  return BigInt.asUintN(64, BigInt(Math.trunc(Number(seed) || 0)));
}

/**
 * Exponential backoff with jitter as a value: the random draw comes from a seeded generator so
 * machines stay deterministic (and tests can turn jitter off).
 */
export class Backoff {
  constructor({ baseMs, capMs, jitterRatio, seed }) {
    this.baseMs = baseMs;
    this.capMs = capMs;
    this.jitterRatio = jitterRatio;
    this.rng = new SplitMix64(seed);
  }

  /** Delay before attempt `attempt` (0-based): base·2ⁿ capped, ± jitter, never above the cap. */
  delay(attempt) {
    const exponential = attempt >= 20 ? this.capMs : Math.min(this.capMs, this.baseMs * 2 ** attempt);
    if (!(this.jitterRatio > 0)) return exponential;
    const unit = Number(this.rng.next() >> 11n) / 2 ** 53; // [0, 1)
    const factor = 1 - this.jitterRatio + 2 * this.jitterRatio * unit;
    // Swift's `.rounded()` rounds halves away from zero; the value is positive, so Math.round agrees.
    return Math.min(this.capMs, Math.max(1, Math.round(exponential * factor)));
  }
}
