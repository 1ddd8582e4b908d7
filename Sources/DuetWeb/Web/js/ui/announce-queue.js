// Screen-reader announcements, one after another. The page says events through one polite live region (the status
// badge has its own); writing a second message into it right after a first replaces the first before it is read ("The other person joined the call." lost to
// their mute a moment later). So messages wait their turn: each stays in the region for `gapMs` before the next
// is written. One exception: a status that changes (why the call is not connecting) is said with a `topic`, and a
// newer message of that topic takes the place of an older one, waiting or being read: the older one is stale, and
// hearing it out first would only delay the news. Pure logic with injected timers (Tests/web/announce-queue.test.mjs
// runs it without real time).

export const ANNOUNCE_GAP_MS = 1000;
// A burst longer than this is news that is already stale: the oldest waiting ones go, so memory stays bounded.
export const ANNOUNCE_MAX_PENDING = 5;
// What was written, newest last, for tests and diagnosis (window.duet.announcements); bounded as well.
export const ANNOUNCE_HISTORY = 20;

export class AnnounceQueue {
  // write(text): puts the text into the live region. setTimer(fn, ms) → handle and clearTimer(handle): the clock.
  constructor({ write, setTimer = (fn, ms) => setTimeout(fn, ms), clearTimer = (handle) => clearTimeout(handle),
    gapMs = ANNOUNCE_GAP_MS, maxPending = ANNOUNCE_MAX_PENDING, historySize = ANNOUNCE_HISTORY } = {}) {
    Object.assign(this, { write, setTimer, clearTimer, gapMs, maxPending, historySize });
    this.pending = [];     // [{text, topic}]
    this.current = null;   // {text, topic} in the region while its turn lasts (null: the region is free)
    this.timer = null;
    this.spoken = [];
    this.dropped = 0;
  }

  say(text, { topic = null } = {}) {
    const message = String(text ?? '').trim();
    if (!message) return;
    // The same words twice in a row say nothing new: they collapse into one (a later repeat, once the region is
    // free again, is read again).
    const last = this.pending.length ? this.pending[this.pending.length - 1] : this.current;
    if (message === last?.text) return;
    if (topic !== null) {
      // Already being read out: cutting in with the same words would only make it read twice.
      if (this.current?.topic === topic && this.current.text === message) return;
      const waiting = this.pending.findIndex((m) => m.topic === topic);
      if (waiting >= 0) {
        this.pending[waiting] = { text: message, topic };
        return;
      }
      if (this.current?.topic === topic && this.timer !== null) {
        this.clearTimer(this.timer);
        this.pending.unshift({ text: message, topic });
        this.next();
        return;
      }
    }
    this.pending.push({ text: message, topic });
    while (this.pending.length > this.maxPending) {
      this.pending.shift();
      this.dropped += 1;
    }
    if (this.timer === null) this.next();
  }

  next() {
    this.timer = null;
    const message = this.pending.shift();
    if (message === undefined) {
      this.current = null;
      return;
    }
    this.current = message;
    this.write(message.text);
    this.spoken.push(message.text);
    if (this.spoken.length > this.historySize) this.spoken.splice(0, this.spoken.length - this.historySize);
    this.timer = this.setTimer(() => this.next(), this.gapMs);
  }

  // Nothing more to say (the page goes away): waiting messages and the timer go.
  clear() {
    if (this.timer !== null) this.clearTimer(this.timer);
    this.timer = null;
    this.pending = [];
    this.current = null;
  }
}
