// A Duet page's link to the server when it is not in a call there (issue 31): who is in the saved calls
// (watch_rooms → room_statuses, room_status_update), and, for the calls this browser has a member token of,
// their rings (listen → incoming_call, ring_ended). It reconnects by itself with the signaling backoff and says
// the set again: rings never depend on the page being reloaded.
import { RESILIENCE } from '../constants.js';
import { openWebSocketLink } from '../runtime/websocket-link.js';
import { openSseLink, newSseSid } from '../runtime/sse-link.js';

export class RoomWatch {
  /** rooms(): [{roomId, memberToken}] to watch; onMessage(envelope) for every message. */
  constructor({ baseUrl, rooms, deviceId, onMessage, forceSse = false }) {
    Object.assign(this, { baseUrl, rooms, deviceId, onMessage, forceSse });
    this.link = null;
    this.attempt = 0;
    this.stopped = false;
    this.retryTimer = null;
  }

  start() { this.connect(); return this; }

  stop() {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.link?.close();
    this.link = null;
  }

  // Say the rooms again (a call was saved, renamed or forgotten, or a member token arrived).
  refresh() {
    if (this.link) this.sendWatch(); else if (!this.retryTimer) this.connect();
  }

  send(envelope) {
    try { this.link?.send(envelope); return !!this.link; } catch { return false; }
  }

  sendWatch() {
    const rooms = this.rooms();
    const members = Object.fromEntries(rooms.filter((r) => r.memberToken).map((r) => [r.roomId, r.memberToken]));
    this.send({
      v: 1, type: 'watch_rooms',
      payload: { rids: rooms.map((r) => r.roomId), listen: { deviceId: this.deviceId, members } },
    });
  }

  async connect() {
    this.retryTimer = null;
    if (this.stopped || this.rooms().length === 0) return;
    const handlers = {
      onMessage: (envelope) => this.onMessage(envelope),
      onClose: () => { this.link = null; this.retry(); },
    };
    try {
      // Same rule as a call's signaling: SSE when forced, or after WebSocket failed repeatedly.
      const useSse = this.forceSse || this.attempt >= RESILIENCE.WS_FALLBACK_CONSECUTIVE_FAILURES;
      const link = await (useSse ? openSseLink(this.baseUrl, newSseSid(), handlers) : openWebSocketLink(this.baseUrl, handlers));
      if (this.stopped) { link.close(); return; }
      this.link = link;
      this.sendWatch();
      this.attempt = 0;  // a working link starts the backoff (and the WebSocket preference) afresh
    } catch {
      this.retry();
    }
  }

  retry() {
    if (this.stopped) return;
    const delay = Math.min(RESILIENCE.RECONNECT_BACKOFF_BASE_MS * 2 ** this.attempt, RESILIENCE.RECONNECT_BACKOFF_CAP_MS);
    this.attempt += 1;
    this.retryTimer = setTimeout(() => this.connect(), delay);
  }
}
