// The caller's side of a ring, on the call page (issue 31): "Call" rings the other person's devices once this page is
// seated and alone (from the home page's Call, `?ring=1`, or the waiting screen's button); the status line says
// where the ring is (ringing on N devices → answered, declined, no answer, cancelled, nobody to ring); leaving
// cancels it; the history keeps its outcome and, once answered, the call's duration.
// window.duet.ring = {state, devices, callId} (null before any ring).
import { base64url } from '../verification/link-key.js';
import { sealCaller, newAnswerSecrets } from './caller-seal.js';
import { savedCalls, callHistory, myName } from './saved-calls.js';
import { ringStore } from './ring-store.js';
import { RESILIENCE } from '../constants.js';

const SAYS = {
  ringing: (n) => (n === 0 ? 'Ringing…' : `Ringing on ${n} device${n === 1 ? '' : 's'}…`),
  accepted: () => 'Answered: they are joining.',
  declined: () => 'They declined the call.',
  no_answer: () => 'No answer.',
  cancelled: () => 'Call cancelled.',
  unreachable: () => 'Nobody could be rung: the other person has not turned on “Ring me here” for this call. Send them the link.',
};

export class OutgoingRing {
  /** snapshot: (purpose) => Promise<snapshot id | null>, a picture of the caller for the ring (ringing/snapshot.js). */
  constructor({ roomId, linkKey, elements, announce, snapshot = async () => null }) {
    Object.assign(this, { roomId, linkKey, elements, announce, snapshot });
    this.call = null;
    this.wanted = new URLSearchParams(location.search).get('ring') === '1';
    this.answeredAt = null;
    this.preparing = false;
    elements.button.addEventListener('click', () => { this.wanted = true; this.maybeRing(); });
    elements.cancel.addEventListener('click', () => this.call?.cancelRing());
  }

  get state() { const ring = this.call?.state.ring; return ring ? { state: ring.state, devices: ring.devices, callId: ring.callId } : null; }

  attach(call) {
    this.call = call;
    call.addEventListener('ring', ({ detail }) => this.render(detail));
    call.addEventListener('member', ({ detail: token }) => this.remember(token));
    call.addEventListener('change', ({ detail: event }) => {
      if (event.type === 'phase' || event.type === 'participants') this.maybeRing();
      if (event.type === 'phase' && event.phase === 'inCall' && this.call.state.ring?.state === 'accepted') this.answeredAt ??= Date.now();
      if (event.type === 'phase' && event.phase === 'idle' && this.answeredAt && this.call.state.ring) {
        callHistory.finish(this.call.state.ring.callId, Date.now() - this.answeredAt);
      }
    });
    this.render(null);
  }

  // This browser's member token: saved with the call (the home page listens with it) and, where ringing by push is
  // on, for the service worker.
  remember(token) {
    savedCalls.update(this.roomId, { memberToken: token });
    const saved = savedCalls.get(this.roomId);
    if (saved?.ringMe) ringStore.get(this.roomId).then((kept) => kept && ringStore.put(this.roomId, { ...kept, memberToken: token })).catch(() => {});
  }

  alone() {
    const state = this.call?.state;
    return state?.phase === 'waiting' && !state.participants.some((p) => p.cid !== state.cid);
  }

  async maybeRing() {
    const alone = this.alone();
    const busy = this.preparing || this.call?.state.ring?.state === 'ringing';
    this.elements.button.hidden = !alone || busy;
    if (!this.wanted || !alone || busy) return;
    this.wanted = false;
    // Preparing (the seal, the picture, up to SNAPSHOT_PREPARE_TIMEOUT_MS): a second press is not a second ring.
    this.preparing = true;
    this.elements.button.hidden = true;
    try {
      const callId = base64url(crypto.getRandomValues(new Uint8Array(12)));
      // With a key, the answers are proven: their secrets travel sealed, their hashes to the server.
      const answers = this.linkKey ? await newAnswerSecrets() : null;
      const caller = await sealCaller({ name: myName.get() || 'Someone', rid: this.roomId, callId, linkKey: this.linkKey, answers: answers?.secrets });
      // The ring waits for the caller's picture as long as a join waits for its snapshot, never longer.
      const snapshotId = await Promise.race([
        this.snapshot(`ring:${callId}`).catch(() => null),
        new Promise((resolve) => { setTimeout(() => resolve(null), RESILIENCE.SNAPSHOT_PREPARE_TIMEOUT_MS); }),
      ]);
      // The other person may have arrived meanwhile: nothing to ring then.
      if (!this.alone()) return;
      this.call.ring(callId, caller, snapshotId, answers?.commitments ?? null);
      this.announce('Calling…');
    } finally {
      this.preparing = false;
    }
  }

  render(ring) {
    const { status, cancel, button } = this.elements;
    const saved = savedCalls.get(this.roomId);
    button.textContent = saved?.name ? `Call ${saved.name}` : 'Call them';
    document.body.dataset.ring = ring?.state ?? 'none';
    status.hidden = !ring;
    cancel.hidden = ring?.state !== 'ringing';
    if (!ring) return;
    status.textContent = SAYS[ring.state]?.(ring.devices) ?? ring.state;
    if (ring.state !== 'ringing') {
      this.announce(status.textContent);
      callHistory.record({ roomId: this.roomId, callId: ring.callId, direction: 'outgoing', outcome: ring.state, name: saved?.name || null });
    }
    this.maybeRing();
  }
}
