#!/usr/bin/env python3
"""A malicious signaling server for the issue 19 ("verified calls") end-to-end tests.

Sits between browsers (or a Swift/GStreamer peer) and a real `duet serve`, relays every TCP
connection byte for byte, and in the server->client direction rewrites the value of every
`a=fingerprint:<alg> <hex pairs>` found in relayed SDP: each hex digit x becomes (x+1) mod 16,
keeping case. That is what a man in the middle substituting its own DTLS certificate would do,
so a verified call must notice and an unverified one would not.

The rewrite keeps the byte length identical, so WebSocket frame headers, Content-Length and
chunked/SSE framing stay valid with no re-framing. That only works because the traffic is not
compressed: `grep -rn deflate Sources/DuetServer` finds nothing, and the server's
WebSocketServerConfiguration sets no extensions, so permessage-deflate is never negotiated.
The SDP travels inside JSON strings, where CRLF is the 4-byte escape `\\r\\n`; the backslash ends
the value just as a real CR would. Client->server bytes are never touched.

CLI:  tampering_proxy.py --listen 127.0.0.1:0 --upstream 127.0.0.1:8080 [--mode fingerprints|honest]
      tampering_proxy.py --self-test
"""
import argparse, asyncio, os, re, signal, socket, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from background_loop import BackgroundLoop  # noqa: E402

MARKER = b"a=fingerprint:"
HOLD_LIMIT = 300      # longer than any marker + algorithm + spaces + sha-512 value (~230 bytes)
FLUSH_DELAY = 0.03    # a held tail waits at most this long for the bytes that would resolve it
# A complete match. The bounds keep matches short enough to fit in HOLD_LIMIT; a longer run is
# cut the same way whether the stream arrives whole or split, so the result is still deterministic.
_FULL = re.compile(rb"a=fingerprint:([A-Za-z0-9-]{1,20})( {1,4})((?:[0-9A-Fa-f]{2}:){0,63}[0-9A-Fa-f]{2})")
# Something at the very end of the buffer that more bytes could still turn into (a longer) match.
_PARTIAL = re.compile(rb"a=fingerprint:[A-Za-z0-9-]{0,20}(?: {1,4}(?:(?:[0-9A-Fa-f]{2}:){0,63}[0-9A-Fa-f]{0,2})?)?\Z")
_LOWER = bytes.maketrans(b"0123456789abcdefABCDEF", b"123456789abcdef0bcdef0")
_UPPER = bytes.maketrans(b"0123456789abcdefABCDEF", b"123456789ABCDEF0BCDEF0")


def tamper_value(value: bytes) -> bytes:
    """Shift every hex digit by one; digits keep the value's case so 'F' wraps to '0', '9' to 'A'."""
    return value.translate(_UPPER if re.search(rb"[A-F]", value) else _LOWER)


def rewrite_stream(buffer: bytes, final: bool = False, on_tamper=None):
    """Rewrite the complete fingerprints in `buffer`; return (out, held, count).

    `out` may be sent now. `held` is a tail that could still be (or grow into) a fingerprint, so
    the caller prepends it to the next read; with final=True nothing is held (flush on EOF or
    after FLUSH_DELAY of silence). Splitting a stream anywhere gives the same concatenated output.
    """
    cut = len(buffer)
    if not final:
        tail_start = max(0, len(buffer) - HOLD_LIMIT)
        partial = _PARTIAL.search(buffer, tail_start)
        if partial:
            cut = partial.start()
        else:  # a proper prefix of the marker at the end ("a=fin") may start one
            for size in range(min(len(MARKER) - 1, len(buffer)), 0, -1):
                if buffer.endswith(MARKER[:size]):
                    cut = len(buffer) - size
                    break
    pieces, count, pos = [], 0, 0
    for m in _FULL.finditer(buffer, 0, cut):
        # A match may only look complete because the search stopped at `cut`; _PARTIAL already
        # moved `cut` to its start in that case, so every match found here ends before `cut`.
        new = tamper_value(m.group(3))
        pieces += [buffer[pos:m.start(3)], new]
        pos, count = m.end(3), count + 1
        if on_tamper:
            on_tamper(m.group(1).decode(), m.group(3)[:11].decode(), new[:11].decode())
    pieces.append(buffer[pos:cut])
    return b"".join(pieces), buffer[cut:], count


class TamperingProxy:
    """The proxy; `start()` runs it on its own loop in a background thread and returns the port."""

    def __init__(self, upstream_host, upstream_port, mode="fingerprints", listen_host="127.0.0.1",
                 listen_port=0, log=sys.stderr):
        assert mode in ("fingerprints", "honest")
        self.upstream = (upstream_host, upstream_port)
        self.listen = (listen_host, listen_port)
        self.mode, self.log = mode, log
        self.tampered_count = 0  # only written on the loop thread; an int read is atomic enough
        self.port = None
        self._server = None
        self._background = BackgroundLoop("tampering-proxy")
        self._tasks = set()

    def _note(self, alg, old, new):
        self.tampered_count += 1
        if self.log:
            print(f"tampered: {alg} {old}… -> {new}…", file=self.log, flush=True)

    async def serve(self):
        """Bind and return the bound port (the caller keeps the loop running)."""
        self._server = await asyncio.start_server(self._handle, *self.listen)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self):
        if self._server:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _handle(self, client_reader, client_writer):
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:  # upstream down: refuse by closing, as a dead server would
            client_writer.close()
            return self._tasks.discard(task)
        tamper = self.mode == "fingerprints"
        pumps = [asyncio.ensure_future(self._pump(client_reader, up_writer, False)),
                 asyncio.ensure_future(self._pump(up_reader, client_writer, tamper))]
        try:
            # Each pump half-closes its destination on EOF, so wait for both directions to end;
            # a reset in one direction ends the connection as a whole.
            done, pending = await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
            for p in pending:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
        except asyncio.CancelledError:
            pass  # stop(): end quietly (asyncio's stream callback logs a cancelled handler as an error)
        finally:
            for p in pumps:
                p.cancel()
            for w in (client_writer, up_writer):
                w.close()
            self._tasks.discard(task)

    async def _pump(self, reader, writer, tamper):
        held = b""
        while True:
            try:
                # Only wait with a deadline while something is held back: never stall data.
                data = await (asyncio.wait_for(reader.read(65536), FLUSH_DELAY) if held else reader.read(65536))
            except asyncio.TimeoutError:
                out, held, _ = rewrite_stream(held, final=True, on_tamper=self._note)
                writer.write(out)
                await writer.drain()
                continue
            if tamper:
                data, held, _ = rewrite_stream(held + data, final=not data, on_tamper=self._note)
            if data:
                writer.write(data)
                await writer.drain()
            if reader.at_eof() and not held:
                if writer.can_write_eof():
                    writer.write_eof()  # propagate the half-close
                return

    def start(self):
        """Serves on a loop of its own in a background thread; returns the bound port."""
        return self._background.start(self.serve, self.close)

    def stop(self):
        self._background.stop(5)


def _host_port(text):
    host, _, port = text.rpartition(":")
    return host or "127.0.0.1", int(port)


async def _main(args):
    host, port = _host_port(args.listen)
    proxy = TamperingProxy(*_host_port(args.upstream), mode=args.mode, listen_host=host, listen_port=port)
    port = await proxy.serve()
    print(f"listening http://{proxy.listen[0]}:{port}/", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await proxy.close()


def _self_test():
    lo = "4a:ad:b9:b1:3f:82:18:3b:54:02:12:df:3e:5d:49:6b:19:e5:7c:ab:3c:8c:1a:2d:f0:3b:4e:8d:63:29:5f:70"
    sdp = ("v=0\\r\\no=- 1 2 IN IP4 127.0.0.1\\r\\na=fingerprint:sha-256 " + lo + "\\r\\nm=audio 9 UDP/TLS/RTP/SAVPF 111"
           "\\r\\na=fingerprint:SHA-256 " + lo.upper() + "\\r\\na=setup:actpass\\r\\n")
    payload = ('{"type":"offer","sdp":"' + sdp + '"}\n').encode()
    expected = payload.replace(lo.encode(), tamper_value(lo.encode())).replace(
        lo.upper().encode(), tamper_value(lo.upper().encode()))

    def check(name, ok):
        return print(("ok   " if ok else "FAIL ") + name) or ok

    def feed(chunks):
        out, held, total = b"", b"", 0
        for chunk in chunks:
            o, held, n = rewrite_stream(held + chunk)
            out, total = out + o, total + n
        o, _, n = rewrite_stream(held, final=True)
        return out + o, total + n

    results = []
    out, count = feed([payload])
    results.append(check("(1) rewrite: same length, both values changed, rest identical",
                         len(out) == len(payload) and count == 2 and out == expected and out != payload
                         and b"5b:be:ca:c2:40:93" in out and b"5B:BE:CA:C2:40:93" in out))
    results.append(check("(2) split at every offset gives identical output",
                         all(feed([payload[:i], payload[i:]]) == (expected, 2) for i in range(len(payload) + 1))))
    plain = b"GET / HTTP/1.1\r\nHost: x\r\n\r\nconst a='a=fingerprint:'.length; // a=fingerprint: none"
    results.append(check("(3) no fingerprint: unchanged, nothing held but a marker prefix",
                         rewrite_stream(plain) == (plain, b"", 0)
                         and rewrite_stream(plain + b"a=fin") == (plain, b"a=fin", 0)))

    def round_trip(mode):
        upstream = socket.create_server(("127.0.0.1", 0))

        def serve_once():
            conn, _ = upstream.accept()
            # Odd-sized writes that split both fingerprints; pauses stay under FLUSH_DELAY.
            for piece in (payload[:97], payload[97:251], payload[251:]):
                conn.sendall(piece)
                time.sleep(0.005)
            conn.shutdown(socket.SHUT_WR)
            conn.recv(1)
            conn.close()

        threading.Thread(target=serve_once, daemon=True).start()
        proxy = TamperingProxy("127.0.0.1", upstream.getsockname()[1], mode=mode, log=None)
        port = proxy.start()
        received = b""
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            while chunk := client.recv(4096):  # ends on the propagated half-close
                received += chunk
        proxy.stop()
        upstream.close()
        return received, proxy.tampered_count

    results.append(check("(4) loopback round trip rewrites and counts 2", round_trip("fingerprints") == (expected, 2)))
    results.append(check("(5) honest mode forwards untouched", round_trip("honest") == (payload, 0)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--upstream")
    parser.add_argument("--mode", choices=("fingerprints", "honest"), default="fingerprints")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        sys.exit(_self_test())
    if not args.upstream:
        parser.error("--upstream is required")
    asyncio.run(_main(args))
