// The query that routes a request of a room in a cluster (docs/protocol.md, Transports): `rid=ROOM`, and
// `&via=NODE` after a drain that named the room's next node (`draining {via}`). The same bytes as the Swift client's
// `SignalingURL.query` (encodeURIComponent), so a proxy hashing them routes every client of a room alike. A via means
// nothing without its room.
export function roomQuery(roomId, via = null) {
  if (roomId == null) return '';
  return `rid=${encodeURIComponent(roomId)}` + (via != null ? `&via=${encodeURIComponent(via)}` : '');
}
