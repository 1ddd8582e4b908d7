// Port of TrickleIceMachine.swift. Our own ICE candidates on their way out (seed 004): cleaned of
// WebRTC-only extensions, held back until the description they belong to is sent (the answer, and our offer too:
// TrickleIceMachine.swift says why), and closed by end-of-candidates (`candidate:null`) when gathering completes or
// after 3 s without a new candidate.
import { RESILIENCE } from '../constants.js';
import { cancel, schedule, timerAction } from './timers.js';

const DROPPED = new Set(['generation', 'ufrag', 'network-id', 'network-cost']);

/**
 * Drops `generation`, `ufrag`, `network-id` and `network-cost` (each with its value); keeps the
 * standard fields in order.
 */
export function cleanCandidate(candidate) {
  const words = String(candidate).split(' ').filter((word) => word.length > 0);
  const kept = [];
  for (let index = 0; index < words.length; index += 1) {
    if (DROPPED.has(words[index])) {
      index += 1; // and its value
    } else {
      kept.push(words[index]);
    }
  }
  return kept.join(' ');
}

export class TrickleIceMachine {
  constructor() {
    this.holding = false;
    this.queued = [];
    this.gatheringDone = false;
    this.endSent = false;
  }

  /**
   * Events: offering (we are making an offer: candidates wait for it), offerSent (candidates flow at once),
   * answering (a remote offer arrived: candidates wait for our answer), answerSent, descriptionFailed (our offer or
   * answer could not be made: nothing waits any longer), connectionRenewed (our peer connection was replaced: what the
   * old one gathered is dropped), localCandidate{candidate}, gatheringComplete, timerFired{timer}.
   * Actions: sendCandidate{candidate}, sendEndOfCandidates, timer{command}.
   * Candidates are IceCandidate wire shapes: {candidate, sdpMid, sdpMLineIndex} (usernameFragment and
   * any other field is dropped, as the Swift IceCandidate has no room for it).
   */
  handle(event) {
    switch (event.type) {
      case 'offering':
      case 'answering':
        // A new description, perhaps a new generation of candidates (gathering again, to complete again).
        this.holding = true;
        this.#startGeneration();
        return [timerAction(cancel('endOfCandidates'))];
      case 'connectionRenewed':
        this.holding = false;
        this.queued = [];
        this.#startGeneration();
        return [timerAction(cancel('endOfCandidates'))];
      case 'offerSent':
      case 'answerSent':
      case 'descriptionFailed': {
        this.holding = false;
        const actions = this.#flush();
        if (this.gatheringDone) actions.push(...this.#end());
        return actions;
      }
      case 'localCandidate': {
        const candidate = event.candidate;
        const cleaned = {
          candidate: cleanCandidate(candidate.candidate),
          sdpMid: candidate.sdpMid ?? null,
          sdpMLineIndex: candidate.sdpMLineIndex ?? null,
        };
        if (this.holding) {
          this.queued.push(cleaned);
          return [];
        }
        this.endSent = false;
        return [
          { type: 'sendCandidate', candidate: cleaned },
          timerAction(schedule('endOfCandidates', RESILIENCE.END_OF_CANDIDATES_TIMEOUT_MS)),
        ];
      }
      case 'gatheringComplete':
        this.gatheringDone = true;
        return this.holding ? [] : this.#end();
      case 'timerFired':
        if (event.timer !== 'endOfCandidates') return [];
        return this.holding ? [] : this.#end();
      default:
        return [];
    }
  }

  #startGeneration() {
    this.gatheringDone = false;
    this.endSent = false;
  }

  #flush() {
    if (this.queued.length === 0) return [];
    const candidates = this.queued;
    this.queued = [];
    return [
      ...candidates.map((candidate) => ({ type: 'sendCandidate', candidate })),
      timerAction(schedule('endOfCandidates', RESILIENCE.END_OF_CANDIDATES_TIMEOUT_MS)),
    ];
  }

  #end() {
    if (this.endSent) return [];
    this.endSent = true;
    return [timerAction(cancel('endOfCandidates')), { type: 'sendEndOfCandidates' }];
  }
}
