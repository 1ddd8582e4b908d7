// Rooms this browser was in, newest first, so a person can get back to a call they left.
const KEY = 'duet.recentRooms';
const MAX = 8;

export const recentRooms = {
  list() {
    try { return JSON.parse(localStorage.getItem(KEY) ?? '[]').filter((r) => typeof r?.roomId === 'string'); } catch { return []; }
  },
  remember(roomId) {
    const rest = this.list().filter((r) => r.roomId !== roomId);
    localStorage.setItem(KEY, JSON.stringify([{ roomId, at: Date.now() }, ...rest].slice(0, MAX)));
  },
};
