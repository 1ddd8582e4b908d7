#!/usr/bin/env python3
"""A real DTLS man in the middle for the issue 19 ("verified calls") end-to-end tests.

A TCP proxy in front of `duet serve` (built like tampering_proxy.py: listen on port 0, relay to the upstream).
Plain HTTP passes through byte for byte. A connection whose first request asks for a WebSocket upgrade is relayed
raw until the server's response; if that is `101`, both directions switch to WebSocket frame parsing
(client→server frames are masked, server→client ones are not; the server negotiates no permessage-deflate:
`grep -rn deflate Sources/DuetServer` finds nothing). Control frames (ping, pong, close) pass through as they are;
data messages are reassembled (a fragmented one is re-sent as one frame) and, when they are JSON envelopes, judged.

Only the host's connection (page A: its `joined` says cid == hostCid) is touched. On it:
  - A's `offer` (client→server) is not forwarded: aiortc peer M_A answers it, and the answer is injected into A's
    server→client direction as a relay from B (`payload.from` = B's cid, the last epoch seen on A's connection).
    M_B, a second aiortc peer (its own certificate), makes an offer (audio + video, sendrecv) that is injected into
    A's client→server direction as if A had sent it, so the server relays it to B as from A.
  - B's `answer` (server→client) goes to M_B, not to A; B's `ice` goes to M_B; A's own `ice` goes to M_A.
  - Later offers from A (ICE restarts, renegotiations) are dropped and counted (`later_offers_dropped`): aiortc
    cannot restart ICE, and the check only needs the first call up.
So A does DTLS with M_A and B with M_B; each page's safety code is computed over a certificate of the MITM.

`keep_fingerprints=True` is the attack a keyed link's HMAC cannot see (issue 19): the descriptions each side gets
name the OTHER side's real certificate, with the other side's genuine `auth` (it covers the room, the two cids and
the fingerprints, not the ICE credentials or candidates), but their ICE parts are the MITM's, so DTLS is still done
with M_A and M_B. M_B's offer to B carries A's fingerprint lines and A's `auth`; M_A's answer to A waits for B's
answer and carries B's fingerprint lines and B's `auth`. An endpoint that holds the handshake's certificate to the
verified fingerprint (Chromium; duet call's own check) refuses it; webrtcbin alone would not.

Media: whatever M_A receives from A is sent on by M_B and what M_B receives from B by M_A (decoded and encoded
again by aiortc, through MediaRelay). Each sender's track is a placeholder made before the descriptions (the other
side's tracks do not exist yet) that forwards the real received track once it arrives (`ForwardTrack`).

Every aiortc peer gets `RTCConfiguration(iceServers=[])`: no STUN/TURN. Run it only inside a network namespace
whose lo carries an address besides 127.0.0.1 (aioice skips 127.0.0.1): see mitm_call.py.

API: DtlsMitm(upstream_host, upstream_port).start() → port; .stop(); counters offers_intercepted,
answers_intercepted, candidates_intercepted, later_offers_dropped; connection_states {"M_A": "connected", …}
(each aiortc peer's last connectionState: connected = its DTLS handshake with the page is done); mitm_fingerprints {"M_A": [...], "M_B": [...]}
(normalized as the page's fingerprintsInSdp: "<alg lowercased> <VALUE UPPERCASED>", sorted).
"""
import asyncio
import json
import os
import sys
import time

from background_loop import BackgroundLoop
from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription
from aiortc.contrib.media import MediaRelay
from aiortc.mediastreams import MediaStreamTrack
from aiortc.sdp import candidate_from_sdp

HEADER_LIMIT = 64 * 1024
OP_CONT, OP_TEXT, OP_BINARY = 0x0, 0x1, 0x2


def fingerprints_in_sdp(sdp):
    """As the page's fingerprintsInSdp (js/verification/fingerprint-auth.js): every distinct a=fingerprint."""
    found = set()
    for raw in sdp.split("\n"):
        line = raw.rstrip("\r")
        if not line.startswith("a=fingerprint:"):
            continue
        parts = line[len("a=fingerprint:"):].lstrip(" ").split(None, 1)
        if len(parts) == 2:
            found.add(f"{parts[0].lower()} {parts[1].strip().upper()}")
    return sorted(found, key=lambda s: s.encode())


def fingerprint_lines(sdp):
    """Every distinct `a=fingerprint:` line of `sdp`, in order."""
    lines = []
    for raw in sdp.split("\n"):
        line = raw.rstrip("\r")
        if line.startswith("a=fingerprint:") and line not in lines:
            lines.append(line)
    return lines


def with_fingerprint_lines(sdp, lines):
    """`sdp` naming another certificate: in each section (session and every m=) that had `a=fingerprint:` lines,
    `lines` take the place of the first and the others go."""
    out, placed = [], False
    for raw in sdp.split("\r\n"):
        if raw.startswith("m="):
            placed = False
        if raw.startswith("a=fingerprint:"):
            if not placed:
                out.extend(lines)
                placed = True
            continue
        out.append(raw)
    return "\r\n".join(out)


def xor_mask(data, mask):
    if not data:
        return data
    n = len(data)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


def encode_frame(opcode, data, masked):
    head = bytes([0x80 | opcode])
    bit = 0x80 if masked else 0
    n = len(data)
    if n < 126:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([bit | 127]) + n.to_bytes(8, "big")
    if masked:
        mask = os.urandom(4)
        return head + mask + xor_mask(data, mask)
    return head + data


async def read_frame(reader):
    """(fin, opcode, payload unmasked, raw bytes as read)."""
    head = await reader.readexactly(2)
    fin, opcode, masked, n = head[0] & 0x80, head[0] & 0x0F, head[1] & 0x80, head[1] & 0x7F
    ext = b""
    if n == 126:
        ext = await reader.readexactly(2)
        n = int.from_bytes(ext, "big")
    elif n == 127:
        ext = await reader.readexactly(8)
        n = int.from_bytes(ext, "big")
    mask = await reader.readexactly(4) if masked else b""
    payload = await reader.readexactly(n) if n else b""
    return bool(fin), opcode, (xor_mask(payload, mask) if masked else payload), head + ext + mask + payload


class ForwardTrack(MediaStreamTrack):
    """A sender's track made before the track it forwards exists: recv() waits for the source, then passes its
    frames on (no frames until then, so the sender sends nothing)."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self._source = asyncio.get_event_loop().create_future()

    def set_source(self, track):
        if not self._source.done():
            self._source.set_result(track)

    async def recv(self):
        source = await self._source
        return await source.recv()


class WsConnection:
    """One upgraded WebSocket connection: its two writers, and what the server told it."""

    def __init__(self, number, to_client, to_server):
        self.number, self.to_client, self.to_server = number, to_client, to_server
        self.cid = self.host_cid = self.peer_cid = self.rid = None
        self.epoch = None

    def inject(self, direction, envelope):
        data = json.dumps(envelope, separators=(",", ":")).encode()
        if direction == "to_server":
            self.to_server.write(encode_frame(OP_TEXT, data, masked=True))
        else:
            self.to_client.write(encode_frame(OP_TEXT, data, masked=False))


class DtlsMitm:
    """The fixture; `start()` runs it on its own loop in a background thread and returns the port."""

    def __init__(self, upstream_host, upstream_port, listen_host="127.0.0.1", listen_port=0, log=sys.stderr,
                 keep_fingerprints=False):
        self.upstream = (upstream_host, upstream_port)
        self.keep_fingerprints = keep_fingerprints
        self.listen = (listen_host, listen_port)
        self.log = log
        # Written on the loop thread only; int and list reads from the test thread are atomic enough.
        self.offers_intercepted = 0       # A's first offer, kept from B and answered by M_A
        self.answers_intercepted = 0      # B's answers to M_B's offer, kept from A
        self.candidates_intercepted = 0   # A's and B's ice messages, given to M_A / M_B instead
        self.later_offers_dropped = 0     # A's offers after the first (restarts): dropped
        self.injected = []                # (direction, type) of every envelope made up by the MITM
        self.mitm_fingerprints = {"M_A": [], "M_B": []}
        self.connection_states = {}       # "M_A" / "M_B" → the aiortc peer's last connectionState
        self.ever_connected = set()       # "M_A" / "M_B" once its DTLS handshake was done (connectionState connected)
        self.errors = []
        self.port = None
        self._server = None
        self._background = BackgroundLoop("dtls-mitm")
        self._tasks = set()
        self._conn_count = 0
        self._a = None                    # A's WsConnection
        self._pcs = {}                    # "M_A" / "M_B" → RTCPeerConnection
        self._queues = {}                 # "M_A" / "M_B" → asyncio.Queue of coroutine factories, run in order
        self._workers = []
        self._relay = None
        self._to_a = self._to_b = None    # kind → ForwardTrack (M_A's / M_B's senders)
        self._started_mitm = False
        self._b_answer = None             # keep_fingerprints: a future of (B's fingerprint lines, B's auth)

    def _note(self, *parts):
        if self.log:
            print(f"[{time.strftime('%H:%M:%S')}] mitm:", *parts, file=self.log, flush=True)

    # MARK: proxy

    async def serve(self):
        self._server = await asyncio.start_server(self._handle, *self.listen)
        self.port = self._server.sockets[0].getsockname()[1]
        self._relay = MediaRelay()
        self._queues = {"M_A": asyncio.Queue(), "M_B": asyncio.Queue()}
        self._workers = [asyncio.ensure_future(self._work(name)) for name in self._queues]
        self._b_answer = asyncio.get_running_loop().create_future()
        return self.port

    async def close(self):
        if self._server:
            self._server.close()
        for task in list(self._tasks) + self._workers:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._workers, return_exceptions=True)
        for pc in self._pcs.values():
            try:
                await asyncio.wait_for(pc.close(), 5)
            except Exception as error:  # noqa: BLE001 — closing is best effort
                self._note("closing a peer:", repr(error))

    async def _handle(self, client_reader, client_writer):
        task = asyncio.current_task()
        self._tasks.add(task)
        up_writer = None
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            # The first request: a WebSocket handshake or plain HTTP (Chromium opens a WebSocket on a connection of
            # its own, so a connection that starts as plain HTTP stays plain).
            request = await client_reader.readuntil(b"\r\n\r\n")
            up_writer.write(request)
            await up_writer.drain()
            wants_ws = b"upgrade: websocket" in request.lower()
            if not wants_ws:
                await self._raw_both(client_reader, client_writer, up_reader, up_writer)
                return
            response = await up_reader.readuntil(b"\r\n\r\n")
            upgraded = response.startswith(b"HTTP/1.1 101")
            if upgraded:
                self._conn_count += 1
                conn = WsConnection(self._conn_count, client_writer, up_writer)
            client_writer.write(response)
            await client_writer.drain()
            if not upgraded:
                await self._raw_both(client_reader, client_writer, up_reader, up_writer)
                return
            pumps = [asyncio.ensure_future(self._frames(conn, client_reader, up_writer, "to_server")),
                     asyncio.ensure_future(self._frames(conn, up_reader, client_writer, "to_client"))]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for p in pumps:
                    p.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, OSError):
            pass
        except asyncio.CancelledError:
            pass  # stop()
        finally:
            for w in (client_writer, up_writer):
                if w:
                    w.close()
            self._tasks.discard(task)

    async def _raw_both(self, client_reader, client_writer, up_reader, up_writer):
        pumps = [asyncio.ensure_future(self._raw(client_reader, up_writer)),
                 asyncio.ensure_future(self._raw(up_reader, client_writer))]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            for p in pumps:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)

    @staticmethod
    async def _raw(reader, writer):
        while True:
            data = await reader.read(65536)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    async def _frames(self, conn, reader, writer, direction):
        masked = direction == "to_server"
        parts, opcode0, raws = [], None, []
        while True:
            try:
                fin, opcode, data, raw = await read_frame(reader)
            except asyncio.IncompleteReadError:
                return
            if opcode >= 0x8:  # control frames may come between fragments: pass them through at once
                writer.write(raw)
                await writer.drain()
                continue
            if opcode != OP_CONT:
                opcode0, parts, raws = opcode, [], []
            parts.append(data)
            raws.append(raw)
            if not fin:
                continue
            message = b"".join(parts)
            forward = True
            if opcode0 == OP_TEXT:
                try:
                    envelope = json.loads(message)
                except ValueError:
                    envelope = None
                if isinstance(envelope, dict):
                    try:
                        forward = self._judge(conn, direction, envelope)
                    except Exception as error:  # noqa: BLE001 — a bug here must show, not kill the relay
                        self.errors.append(repr(error))
                        self._note("judging failed:", repr(error))
            if forward:
                writer.write(raws[0] if len(raws) == 1 else encode_frame(opcode0, message, masked))
                await writer.drain()
            parts, raws = [], []

    # MARK: what the MITM does with envelopes

    def _judge(self, conn, direction, envelope):
        """True: forward the envelope as it came."""
        kind = envelope.get("type")
        payload = envelope.get("payload") if isinstance(envelope.get("payload"), dict) else {}
        if direction == "to_client":
            if isinstance(envelope.get("epoch"), int):
                conn.epoch = envelope["epoch"]
            if kind in ("joined", "room_state") and isinstance(payload.get("epoch"), int):
                conn.epoch = payload["epoch"]
            if kind == "joined":
                conn.cid = envelope.get("cid")
                conn.host_cid = payload.get("hostCid")
                if conn.cid and conn.cid == conn.host_cid:
                    if self._a is not None and self._a is not conn:
                        self._note(f"A's connection is now #{conn.number} (was #{self._a.number})")
                    self._a = conn
                    self._note(f"connection #{conn.number} is A's (host {conn.cid})")
                else:
                    self._note(f"connection #{conn.number} is {conn.cid} (not the host)")
            if kind in ("joined", "room_state"):
                others = [p.get("cid") for p in payload.get("participants") or [] if isinstance(p, dict)
                          and p.get("cid") != conn.cid]
                if others:
                    conn.peer_cid = others[0]
        else:
            if isinstance(envelope.get("rid"), str):
                conn.rid = envelope["rid"]
        if conn is not self._a:
            return True
        if direction == "to_server":
            if kind == "offer" and isinstance(payload.get("sdp"), str):
                if self._started_mitm:
                    self.later_offers_dropped += 1
                    self._note("dropped a later offer from A (restart or renegotiation)")
                    return False
                self._started_mitm = True
                self.offers_intercepted += 1
                self._note("intercepted A's offer")
                sdp, auth = payload["sdp"], payload.get("auth")
                self._queues["M_A"].put_nowait(lambda: self._answer_a(conn, sdp))
                self._queues["M_B"].put_nowait(lambda: self._offer_b(conn, fingerprint_lines(sdp), auth))
                return False
            if kind == "ice" and "candidate" in payload:
                self.candidates_intercepted += 1
                candidate = payload["candidate"]
                self._queues["M_A"].put_nowait(lambda: self._add_candidate("M_A", candidate))
                return False
            return True
        # server→client on A's connection: what the server relays from B
        if kind == "answer" and isinstance(payload.get("sdp"), str):
            self.answers_intercepted += 1
            self._note("intercepted B's answer")
            sdp = payload["sdp"]
            if not self._b_answer.done():
                self._b_answer.set_result((fingerprint_lines(sdp), payload.get("auth")))
            self._queues["M_B"].put_nowait(lambda: self._answer_b(sdp))
            return False
        if kind == "ice" and "candidate" in payload:
            self.candidates_intercepted += 1
            candidate = payload["candidate"]
            self._queues["M_B"].put_nowait(lambda: self._add_candidate("M_B", candidate))
            return False
        if kind == "offer":  # B offering (it never does in these calls): kept from A as well
            self._note("dropped an offer from B")
            return False
        return True

    async def _work(self, name):
        queue = self._queues[name]
        while True:
            job = await queue.get()
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001
                self.errors.append(f"{name}: {error!r}")
                self._note(f"{name} failed:", repr(error))

    def _peer(self, name):
        pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self._pcs[name] = pc

        @pc.on("connectionstatechange")
        def _state():
            self.connection_states[name] = pc.connectionState
            if pc.connectionState == "connected":
                self.ever_connected.add(name)
            self._note(f"{name} connection {pc.connectionState}")

        return pc

    def _tracks(self):
        if self._to_a is None:
            self._to_a = {k: ForwardTrack(k) for k in ("audio", "video")}  # M_A sends (B's media) to A
            self._to_b = {k: ForwardTrack(k) for k in ("audio", "video")}  # M_B sends (A's media) to B

    async def _answer_a(self, conn, sdp):
        self._tracks()
        pc = self._peer("M_A")

        @pc.on("track")
        def _track(track):
            self._note(f"M_A receives A's {track.kind}")
            if track.kind in self._to_b:
                self._to_b[track.kind].set_source(self._relay.subscribe(track, buffered=False))

        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="offer"))
        for kind in ("audio", "video"):
            pc.addTrack(self._to_a[kind])  # takes the transceiver the offer made for that kind
        if self.keep_fingerprints:
            # M_A answers `a=setup:passive` and is the DTLS server: a webrtcbin server offers only RSA suites and
            # aiortc's client only ECDHE-ECDSA ones ("no shared cipher"), while webrtcbin as client takes aiortc's.
            for transceiver in pc.getTransceivers():
                transceiver.receiver.transport._set_role("server")
        answer = await pc.createAnswer()
        await pc.setLocalDescription(answer)  # waits for ICE gathering: the answer holds the candidates
        local = pc.localDescription.sdp
        self.mitm_fingerprints["M_A"] = fingerprints_in_sdp(local)
        payload = {"sdp": local, "from": conn.peer_cid}
        if self.keep_fingerprints:
            # A gets M_A's ICE with B's certificate named and B's own auth over it: the HMAC holds.
            lines, auth = await asyncio.wait_for(self._b_answer, 30)
            payload = {"sdp": with_fingerprint_lines(local, lines), "from": conn.peer_cid}
            if auth is not None:  # an unkeyed link has none to copy
                payload["auth"] = auth
        conn.inject("to_client", {"v": 1, "type": "answer", "rid": conn.rid, "cid": conn.cid,
                                  "ts": int(time.time() * 1000), "epoch": conn.epoch, "payload": payload})
        self.injected.append(("to_client", "answer"))
        self._note(f"injected M_A's answer to A as from {conn.peer_cid} (epoch {conn.epoch})")

    async def _offer_b(self, conn, a_lines, a_auth):
        self._tracks()
        pc = self._peer("M_B")

        @pc.on("track")
        def _track(track):
            self._note(f"M_B receives B's {track.kind}")
            if track.kind in self._to_a:
                self._to_a[track.kind].set_source(self._relay.subscribe(track, buffered=False))

        for kind in ("audio", "video"):
            pc.addTrack(self._to_b[kind])  # sendrecv
        offer = await pc.createOffer()
        await pc.setLocalDescription(offer)
        local = pc.localDescription.sdp
        self.mitm_fingerprints["M_B"] = fingerprints_in_sdp(local)
        payload = {"sdp": local}
        if self.keep_fingerprints:
            # B gets M_B's ICE with A's certificate named and A's own auth over it: the HMAC holds.
            payload = {"sdp": with_fingerprint_lines(local, a_lines)}
            if a_auth is not None:
                payload["auth"] = a_auth
        conn.inject("to_server", {"v": 1, "type": "offer", "rid": conn.rid, "payload": payload})
        self.injected.append(("to_server", "offer"))
        self._note("injected M_B's offer as A's")

    async def _answer_b(self, sdp):
        pc = self._pcs.get("M_B")
        if pc is None or pc.signalingState != "have-local-offer":
            self._note("an answer from B with no offer of M_B pending: ignored")
            return
        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type="answer"))

    async def _add_candidate(self, name, candidate):
        pc = self._pcs.get(name)
        if pc is None or pc.remoteDescription is None:
            self._note(f"{name}: a candidate before any description: dropped")
            return
        if candidate is None:
            await pc.addIceCandidate(None)
            return
        if not isinstance(candidate, dict) or not isinstance(candidate.get("candidate"), str) \
                or not candidate["candidate"].strip():
            return
        text = candidate["candidate"]
        parsed = candidate_from_sdp(text.split(":", 1)[1] if text.startswith("candidate:") else text)
        parsed.sdpMid = candidate.get("sdpMid")
        parsed.sdpMLineIndex = candidate.get("sdpMLineIndex")
        if parsed.protocol.lower() != "udp":
            return  # aioice speaks ICE over UDP only
        await pc.addIceCandidate(parsed)

    # MARK: lifecycle

    def start(self):
        """Serves on a loop of its own in a background thread; returns the bound port."""
        return self._background.start(self.serve, self.close)

    def stop(self):
        self._background.stop(15)
