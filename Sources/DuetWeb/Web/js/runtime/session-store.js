// The seat this tab holds (room, cid, reconnect token) and its SSE sid, in sessionStorage: a reload
// comes back to the same seat, while another tab is another person.

const KEY = 'duet.session';
const SID_KEY = 'duet.sseSid';

export const sessionStore = {
  load(roomId) {
    try {
      const saved = JSON.parse(sessionStorage.getItem(KEY) ?? 'null');
      return saved && saved.roomId === roomId && saved.cid && saved.reconnectToken ? saved : null;
    } catch {
      return null;
    }
  },
  save({ roomId, cid, reconnectToken }) {
    if (roomId && cid && reconnectToken) sessionStorage.setItem(KEY, JSON.stringify({ roomId, cid, reconnectToken }));
    else sessionStorage.removeItem(KEY);
  },
  clear() { sessionStorage.removeItem(KEY); },
  // Rooms this tab saw end: reloading their "Call ended" page must not walk back into the call.
  markEnded(roomId, reason) { sessionStorage.setItem(`duet.ended.${roomId}`, reason); },
  wasEnded(roomId) { return sessionStorage.getItem(`duet.ended.${roomId}`); },
  forgetEnded(roomId) { sessionStorage.removeItem(`duet.ended.${roomId}`); },
  renewSid(make) {
    const sid = make();
    sessionStorage.setItem(SID_KEY, sid);
    return sid;
  },
  sid(make) {
    let sid = sessionStorage.getItem(SID_KEY);
    if (!sid) { sid = make(); sessionStorage.setItem(SID_KEY, sid); }
    return sid;
  },
};
