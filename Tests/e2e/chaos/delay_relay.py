"""A relay that adds a fixed delay to everything it forwards, in both directions: what `tc netem delay`
would do, for a kernel without netem. Each direction of each flow has its own delay line (a queue and a
sender thread), so TCP keeps its byte order, UDP datagrams keep theirs, and a slow reader stalls only itself."""
import collections
import errno
import socket
import threading
import time


class DelayLine:
    """Calls `send(data)` for each item `delay` seconds after it was put, in order."""

    def __init__(self, send, delay, on_close=None):
        self.send, self.delay, self.on_close = send, delay, on_close
        self.items, self.cond, self.closed = collections.deque(), threading.Condition(), False
        threading.Thread(target=self._run, daemon=True).start()

    def put(self, data):
        with self.cond:
            self.items.append((time.monotonic() + self.delay, data))
            self.cond.notify()

    def close(self):
        """Everything already put is still delivered; then `on_close`."""
        self.put(None)

    def _run(self):
        while True:
            with self.cond:
                while not self.items:
                    self.cond.wait()
                due, data = self.items.popleft()
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            if data is None:
                try:
                    if self.on_close:
                        self.on_close()
                except OSError:
                    pass
                return
            try:
                self.send(data)
            except OSError as error:
                # A closed socket ends the line; anything else (an ICMP error reported on a connected UDP
                # socket, a full buffer) loses this one packet, as the network would.
                if error.errno == errno.EBADF:
                    return


class Relay:
    def __init__(self, sockets):
        self.sockets = sockets

    def stop(self):
        for s in list(self.sockets):
            try:
                s.close()
            except OSError:
                pass


def start_tcp(listen, target, delay):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(listen)
    server.listen(64)
    relay = Relay([server])

    def pump(src, dst):
        line = DelayLine(dst.sendall, delay, on_close=lambda: dst.shutdown(socket.SHUT_WR))
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                line.close()
                return
            line.put(data)

    def accept():
        while True:
            try:
                client, _ = server.accept()
                upstream = socket.create_connection(target)
            except OSError:
                return
            relay.sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(src, dst), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return relay


def start_udp(listen, target, delay):
    """Each client address gets its own upstream socket, so the server sees one flow per client."""
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.bind(listen)
    relay = Relay([front])
    flows = {}

    def back_loop(upstream, line):
        while True:
            try:
                line.put(upstream.recv(65536))
            except OSError:
                return

    def front_loop():
        while True:
            try:
                data, client = front.recvfrom(65536)
            except OSError:
                return
            flow = flows.get(client)
            if flow is None:
                upstream = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                upstream.connect(target)
                relay.sockets.append(upstream)
                flow = flows[client] = DelayLine(upstream.send, delay)
                back = DelayLine(lambda d, c=client: front.sendto(d, c), delay)
                threading.Thread(target=back_loop, args=(upstream, back), daemon=True).start()
            flow.put(data)

    threading.Thread(target=front_loop, daemon=True).start()
    return relay
