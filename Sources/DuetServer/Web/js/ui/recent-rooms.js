// Rooms this browser was in, newest first, so a person can get back to a call they left — with the link's key
// (`#k=`) when it had one, so the way back is the same verified call. Kept in this browser only, never sent.
import { parseLinkKey } from '../verification/link-key.js';

const KEY = 'duet.recentRooms';
const MAX = 8;

export const recentRooms = {
  list() {
    try {
      return JSON.parse(localStorage.getItem(KEY) ?? '[]').filter((r) => typeof r?.roomId === 'string')
        .map((r) => ({ roomId: r.roomId, at: r.at, key: parseLinkKey(r.key) ? r.key : null }));
    } catch { return []; }
  },
  // keyText: the link's key as written in it, or null for a link without one.
  remember(roomId, keyText = null) {
    const rest = this.list().filter((r) => r.roomId !== roomId);
    localStorage.setItem(KEY, JSON.stringify([{ roomId, at: Date.now(), key: keyText }, ...rest].slice(0, MAX)));
  },
};
