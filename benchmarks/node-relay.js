// The signaling server of the tutorials: Node.js with the `ws` package (Debian's node-ws), rooms in a Map,
// every message from one member forwarded as is to the others. Same envelope as Duet: `join` answers
// `joined`, `ping` answers `pong`, anything else is relayed. Prints its port, then serves until killed.
'use strict';
const { WebSocketServer } = require('ws');

const rooms = new Map(); // rid -> Set of sockets
let nextId = 0;
const server = new WebSocketServer({ host: '127.0.0.1', port: Number(process.argv[2] || 0), path: '/ws', maxPayload: 1 << 20 });

server.on('listening', () => console.log(`port ${server.address().port}`));
server.on('connection', (socket) => {
  socket.cid = `c${++nextId}`;
  socket.on('message', (data) => {
    let message;
    try { message = JSON.parse(data); } catch { return; }
    if (message.type === 'join') {
      const members = rooms.get(message.rid) ?? new Set();
      rooms.set(message.rid, members);
      members.add(socket);
      socket.rid = message.rid;
      socket.send(JSON.stringify({ v: 1, type: 'joined', rid: message.rid, cid: socket.cid, payload: { participants: members.size } }));
    } else if (message.type === 'ping') {
      socket.send(JSON.stringify({ v: 1, type: 'pong', payload: message.payload ?? {} }));
    } else if (socket.rid) {
      for (const other of rooms.get(socket.rid) ?? []) if (other !== socket) other.send(data, { binary: false });
    }
  });
  socket.on('close', () => {
    const members = rooms.get(socket.rid);
    if (members) { members.delete(socket); if (members.size === 0) rooms.delete(socket.rid); }
  });
});
