// A tiny world for end-to-end engine tests: a virtual clock with a FIFO task queue (so every I/O
// result comes back later, as in a browser), a fake relay server speaking protocol v1 as the test
// writes it, and a fake WebRTC peer whose media "connects" when both sides hold each other's
// descriptions. Every output of every engine goes through `Client.perform`, as the runtime's would.
import { CallEngine } from '../../../Sources/DuetServer/Web/js/engine/call-engine.js';

export class World {
  constructor() {
    this.now = 0;
    this.tasks = [];
    this.clients = [];
    this.seq = 0;
  }

  defer(task) { this.tasks.push(task); }

  /** Runs queued tasks until there are none (no time passes). */
  settle() {
    for (let count = 0; this.tasks.length > 0; count += 1) {
      if (count > 100000) throw new Error('the world does not settle');
      this.tasks.shift()();
    }
  }

  /** Moves the clock, firing every client's timers in deadline order and settling after each. */
  advance(ms) {
    const target = this.now + ms;
    this.settle();
    for (;;) {
      let next = null;
      for (const client of this.clients) {
        if (client.dead) continue;
        for (const [timer, entry] of client.timers) {
          if (entry.at > target) continue;
          if (next == null || entry.at < next.entry.at || (entry.at === next.entry.at && entry.seq < next.entry.seq)) {
            next = { client, timer, entry };
          }
        }
      }
      if (next == null) break;
      this.now = next.entry.at;
      next.client.timers.delete(next.timer);
      next.client.input({ type: 'timerFired', timer: next.timer });
      this.settle();
    }
    this.now = target;
  }
}

export class FakeRelay {
  constructor(world) {
    this.world = world;
    this.rooms = new Map();
    this.nextCid = 0;
    this.nextToken = 0;
    this.nextRoom = 0;
    this.received = [];
  }

  newRoomId() {
    this.nextRoom += 1;
    return `Room${String(this.nextRoom).padStart(23, '0')}`;
  }

  connect(client) { return { client, open: true, seat: null }; }

  /** The transport went away: the seat is suspended, never removed. */
  disconnect(conn) {
    if (conn == null || !conn.open) return;
    conn.open = false;
    const seat = conn.seat;
    if (seat == null || seat.conn !== conn) return;
    seat.conn = null;
    seat.status = 'suspended';
    const room = this.rooms.get(seat.rid);
    room.epoch += 1;
    this.#broadcastRoomState(room);
  }

  receive(conn, envelope) {
    if (conn == null || !conn.open) return; // written to a dead socket: lost
    this.received.push(envelope);
    switch (envelope.type) {
      case 'ping': return this.#deliver(conn, { v: 1, type: 'pong', payload: envelope.payload });
      case 'join': return this.#join(conn, envelope);
      case 'leave': return this.#leave(conn.seat);
      case 'offer':
      case 'answer':
      case 'ice': return this.#relay(conn, envelope);
      case 'reconnect-token-refresh': {
        const seat = conn.seat;
        seat.token = this.#token(seat.cid);
        return this.#deliver(conn, {
          v: 1, type: 'reconnect-token-refreshed', payload: { reconnectToken: seat.token, reconnectTokenTTLMs: 1200000 },
        });
      }
      default: return undefined;
    }
  }

  httpLeave(request) {
    const room = this.rooms.get(request.rid);
    const seat = room?.seats.find((s) => s.cid === request.cid && s.token === request.reconnectToken);
    if (seat) this.#leave(seat);
  }

  #token(cid) {
    this.nextToken += 1;
    return `token-${cid}-${this.nextToken}`;
  }

  #join(conn, envelope) {
    const rid = envelope.rid;
    let room = this.rooms.get(rid);
    if (room == null) {
      room = { rid, seats: [], epoch: 0, hostCid: null };
      this.rooms.set(rid, room);
    }
    const payload = envelope.payload;
    if (payload.reconnectCid != null) {
      const seat = room.seats.find((s) => s.cid === payload.reconnectCid);
      if (seat == null || seat.token !== payload.reconnectToken) {
        return this.#deliver(conn, { v: 1, type: 'error', payload: { code: 'INVALID_RECONNECT_TOKEN', message: 'expired', retryable: false } });
      }
      if (seat.conn != null && seat.conn !== conn) seat.conn.open = false; // the newest proven transport wins
      seat.conn = conn;
      seat.status = 'connected';
      conn.seat = seat;
      room.epoch += 1;
      return this.#joined(room, seat, 'reattached');
    }
    if (room.seats.length >= 2) {
      return this.#deliver(conn, { v: 1, type: 'error', payload: { code: 'ROOM_FULL', message: 'full', retryable: false } });
    }
    this.nextCid += 1;
    const cid = `C-${this.nextCid.toString(16).padStart(16, '0')}`;
    const seat = { rid, cid, joinedAt: this.world.now, status: 'connected', conn, token: this.#token(cid) };
    conn.seat = seat;
    room.seats.push(seat);
    room.hostCid ??= cid;
    room.epoch += 1;
    return this.#joined(room, seat, 'fresh');
  }

  #joined(room, seat, reconnect) {
    seat.token = this.#token(seat.cid);
    this.#deliver(seat.conn, {
      v: 1, type: 'joined', rid: room.rid, cid: seat.cid, epoch: room.epoch,
      payload: {
        hostCid: room.hostCid, participants: this.#participants(room), maxParticipants: 2, reconnect, epoch: room.epoch,
        reconnectToken: seat.token, reconnectTokenTTLMs: 1200000, turnToken: `turn-${seat.cid}`,
        turnTokenExpiresAt: 0, turnTokenTTLMs: 900000,
      },
    });
    this.#broadcastRoomState(room);
  }

  #leave(seat) {
    if (seat == null) return;
    const room = this.rooms.get(seat.rid);
    room.seats = room.seats.filter((s) => s !== seat);
    if (seat.conn) seat.conn.seat = null;
    if (room.hostCid === seat.cid) room.hostCid = room.seats[0]?.cid ?? null;
    room.epoch += 1;
    this.#broadcastRoomState(room);
  }

  #relay(conn, envelope) {
    const from = conn.seat;
    if (from == null) return;
    const room = this.rooms.get(from.rid);
    const target = room.seats.find((s) => s !== from);
    if (target == null || target.conn == null) {
      this.#deliver(conn, { v: 1, type: 'relay_failed', payload: { reason: target ? 'target_suspended' : 'no_peer', of: envelope.type } });
      return;
    }
    this.#deliver(target.conn, {
      ...envelope, cid: from.cid, epoch: room.epoch, payload: { ...envelope.payload, from: from.cid },
    });
  }

  #participants(room) {
    return room.seats.map((s) => ({ cid: s.cid, joinedAt: s.joinedAt, connectionStatus: s.status }));
  }

  #broadcastRoomState(room) {
    for (const seat of room.seats) {
      if (seat.conn == null) continue;
      this.#deliver(seat.conn, {
        v: 1, type: 'room_state', rid: room.rid, epoch: room.epoch,
        payload: { hostCid: room.hostCid, participants: this.#participants(room), epoch: room.epoch },
      });
    }
  }

  /** Over the wire: serialized, and only if that transport is still open when it arrives. */
  #deliver(conn, envelope) {
    const json = JSON.stringify(envelope);
    this.world.defer(() => {
      if (conn.open && !conn.client.dead) conn.client.input({ type: 'message', envelope: JSON.parse(json) });
    });
  }
}

/** WebRTC as the engine sees it: descriptions, candidates, ICE states. */
class FakePeer {
  constructor(client) {
    this.client = client;
    this.alive = false;
    this.local = null;
    this.remote = null;
    this.ice = 'new';
    this.remoteCandidates = [];
    this.count = 0;
  }

  command(command) {
    const client = this.client;
    const later = (inputs) => client.world.defer(() => { for (const input of inputs) client.input(input); });
    switch (command.type) {
      case 'ensurePeerConnection':
        this.alive = true;
        return;
      case 'createOffer': {
        this.count += 1;
        const sdp = `offer:${client.name}:${this.count}${command.iceRestart ? ':restart' : ''}`;
        this.local = sdp;
        later([
          { type: 'signalingStateChanged', state: 'have-local-offer' },
          { type: 'localDescriptionReady', kind: 'offer', sdp },
          ...this.#gather(),
        ]);
        return;
      }
      case 'createAnswer': {
        this.count += 1;
        const sdp = `answer:${client.name}:${this.count}`;
        this.local = sdp;
        later([
          { type: 'signalingStateChanged', state: 'stable' },
          { type: 'localDescriptionReady', kind: 'answer', sdp },
          ...this.#gather(),
        ]);
        return;
      }
      case 'setRemoteDescription':
        this.remote = command.sdp;
        later([
          { type: 'signalingStateChanged', state: command.kind === 'offer' ? 'have-remote-offer' : 'stable' },
          { type: 'remoteDescriptionApplied', kind: command.kind },
        ]);
        if (command.kind === 'answer') client.world.defer(() => client.media.check());
        return;
      case 'rollback':
        later([{ type: 'signalingStateChanged', state: 'stable' }]);
        return;
      case 'addRemoteCandidates':
        this.remoteCandidates.push(...command.candidates);
        return;
      case 'close':
        this.alive = false;
        return;
      default:
        return;
    }
  }

  setIce(state) {
    if (this.ice === state || !this.alive) return;
    this.ice = state;
    this.client.world.defer(() => this.client.input({ type: 'iceStateChanged', state }));
  }

  #gather() {
    return [
      {
        type: 'localCandidate',
        candidate: {
          candidate: `candidate:1 1 udp 2122260223 10.0.0.${this.client.index} 5000 typ host generation 0 ufrag u${this.client.name} network-id 1`,
          sdpMid: '0', sdpMLineIndex: 0, usernameFragment: `u${this.client.name}`,
        },
      },
      { type: 'gatheringComplete' },
    ];
  }
}

/** Peer-to-peer media between the clients: up when each holds the other's current description. */
export class FakeMedia {
  constructor() { this.peers = []; }

  check() {
    const live = this.peers.filter((peer) => peer.alive && !peer.client.dead);
    for (const a of live) {
      const partner = live.find((b) => b !== a && a.local != null && a.local === b.remote && b.local === a.remote);
      if (partner) a.setIce('connected');
    }
  }

  /** A page died: whoever had media with it sees ICE drop. */
  lost(deadPeer) {
    for (const peer of this.peers) {
      if (peer !== deadPeer && peer.alive && (peer.remote === deadPeer.local || peer.local === deadPeer.remote)) peer.setIce('disconnected');
    }
  }
}

export class Client {
  constructor(world, relay, media, name, options = {}) {
    this.world = world;
    this.relay = relay;
    this.media = media;
    this.name = name;
    this.index = world.clients.length + 1;
    this.engine = new CallEngine({ jitterSeed: null, ...options });
    this.events = [];
    this.outputs = [];
    this.timers = new Map();
    this.conn = null;
    this.linkGeneration = 0;
    this.dead = false;
    this.peer = new FakePeer(this);
    media.peers.push(this.peer);
    world.clients.push(this);
  }

  input(input) {
    if (this.dead) return;
    const outputs = this.engine.handle(input);
    this.outputs.push(...outputs);
    for (const output of outputs) this.perform(output);
  }

  perform(output) {
    const world = this.world;
    switch (output.type) {
      case 'openTransport': {
        const generation = ++this.linkGeneration;
        world.defer(() => {
          if (this.dead || generation !== this.linkGeneration) return;
          this.conn = this.relay.connect(this);
          this.input({ type: 'transportOpened', transport: output.transport });
        });
        return;
      }
      case 'closeTransport':
        this.linkGeneration += 1;
        this.relay.disconnect(this.conn);
        this.conn = null;
        return;
      case 'send': {
        const conn = this.conn;
        const json = JSON.stringify(output.envelope);
        world.defer(() => this.relay.receive(conn, JSON.parse(json)));
        return;
      }
      case 'createRoomId':
        world.defer(() => this.input({ type: 'roomIdCreated', roomId: this.relay.newRoomId() }));
        return;
      case 'fetchTurnCredentials':
        world.defer(() => this.input({ type: 'turnCredentialsFetched', ttlSeconds: 3600 }));
        return;
      case 'httpLeave':
        world.defer(() => this.relay.httpLeave(output.request));
        return;
      case 'engine':
        this.peer.command(output.command);
        return;
      case 'timer':
        if (output.command.type === 'schedule') {
          world.seq += 1;
          this.timers.set(output.command.timer, { at: world.now + output.command.afterMs, seq: world.seq });
        } else {
          this.timers.delete(output.command.timer);
        }
        return;
      case 'emit':
        this.events.push(output.event);
        return;
      case 'teardown':
        world.defer(() => {
          this.relay.disconnect(this.conn);
          this.conn = null;
          this.linkGeneration += 1;
          this.peer.alive = false;
          this.input({ type: 'teardownFinished' });
        });
        return;
      default:
        throw new Error(`unknown output ${JSON.stringify(output)}`);
    }
  }

  /** The signaling transport breaks (the media path does not). */
  dropTransport() {
    this.relay.disconnect(this.conn);
    this.conn = null;
    this.linkGeneration += 1;
    this.world.defer(() => this.input({ type: 'transportClosed', reason: 'networkError' }));
  }

  /** The page is reloaded: engine, socket, timers and peer connection all vanish at once. */
  kill() {
    this.dead = true;
    this.relay.disconnect(this.conn);
    this.conn = null;
    this.timers.clear();
    this.media.lost(this.peer);
    this.peer.alive = false;
  }

  eventsOf(type) { return this.events.filter((event) => event.type === type); }
  sentOf(type) { return this.outputs.filter((o) => o.type === 'send' && o.envelope.type === type).map((o) => o.envelope); }
  commandsOf(type) { return this.outputs.filter((o) => o.type === 'engine' && o.command.type === type).map((o) => o.command); }
  /** The seat of the last `session` event (null once cleared). */
  lastSeat() { return this.eventsOf('session').at(-1)?.seat ?? null; }
  lastSession() { return this.eventsOf('session').at(-1); }
}
