"""A real SSE client made half-open, and its peer told: run by SSELivenessTests inside a fresh namespace
    unshare -n sh -c 'ip link set lo up && exec python3 sse_half_open.py'

`duet serve` listens in this namespace; client A lives in a namespace of its own behind a veth pair and talks
SSE, B talks SSE on loopback. Both join one room; A pings every 2 s. Then every packet from A's link is dropped
(iptables, so A's TCP connection stays "open" with nothing arriving: half-open). The server must close A's
stream and suspend A's seat within SSELiveness.silenceLimitMs (27 s) of A's last POST, plus its 1 s
housekeeping tick: B must see A `suspended` by then, and a relay to A must be answered `relay_failed`.
Prints `RESULT {json}` and `sse-half-open: ok`.
"""
import http.client
import json
import os
import queue
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "browser"))
from scenarios import Server, expect, log, sh  # noqa: E402

SILENCE_LIMIT_S = 27.0  # SSELiveness.silenceLimitMs: 2 × 12 s client ping interval + 3 s grace
TICK_S = 1.0
SLACK_S = 2.0


class SSEClient:
    """GET /sse?sid= read on a thread (messages into a queue), POST /sse?sid= one message each."""

    def __init__(self, host, port, sid):
        self.host, self.port, self.sid, self.messages = host, port, sid, queue.Queue()
        self.stream = http.client.HTTPConnection(host, port, timeout=120)
        self.stream.request("GET", f"/sse?sid={sid}", headers={"Accept": "text/event-stream"})
        response = self.stream.getresponse()
        expect(response.status == 200, f"GET /sse answered {response.status}")
        threading.Thread(target=self._read, args=(response,), daemon=True).start()
        # The stream's first message is the token every POST must carry (protocol: POST binding).
        first = self.messages.get(timeout=10)
        expect(first is not None and first.get("type") == "sse_session", f"first SSE message: {first}")
        self.post_token = first["payload"]["postToken"]

    def _read(self, response):
        try:
            for raw in response:
                line = raw.decode().rstrip("\n")
                if line.startswith("data: "):
                    self.messages.put(json.loads(line[6:]))
        except Exception:  # noqa: BLE001 — the stream ends however it ends
            pass
        self.messages.put(None)

    def post(self, message, timeout=5):
        connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        connection.request("POST", f"/sse?sid={self.sid}", body=json.dumps({"v": 1, **message}),
                           headers={"Content-Type": "application/json", "X-Duet-Post-Token": self.post_token})
        status = connection.getresponse().status
        connection.close()
        return status

    def wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if message is None:
                raise AssertionError(f"{what}: the stream ended")
            if predicate(message):
                return message
        raise AssertionError(f"{what}: not seen within {timeout} s")


def client_in_namespace(port, sid, room, pings):
    """A's client, run inside A's namespace: joins, prints its cid, pings until killed."""
    code = f"""
import sys, time, json
sys.path.insert(0, {HERE!r})
from sse_half_open import SSEClient
c = SSEClient("10.9.7.1", {port}, {sid!r})
assert c.post({{"type": "join", "rid": {room!r}, "payload": {{"capabilities": {{"trickleIce": True}}}}}}) == 204
joined = c.wait(lambda m: m["type"] == "joined", 10, "A joined")
print(joined["cid"], flush=True)
while True:
    time.sleep({pings})
    try:
        c.post({{"type": "ping", "payload": {{"ts": 0}}}}, timeout=1)
        print("ping", time.monotonic(), flush=True)
    except Exception:
        pass
"""
    return code


def main():
    holder = subprocess.Popen(["unshare", "-n", "sleep", "infinity"])
    pid = holder.pid
    while os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net"):
        time.sleep(0.01)
    enter = ["nsenter", "-t", str(pid), "-n"]
    sh(f"ip link add rA type veth peer name pA netns {pid} && ip addr add 10.9.7.1/24 dev rA && ip link set rA up")
    subprocess.run([*enter, "sh", "-c", "ip link set lo up && ip addr add 10.9.7.2/24 dev pA && ip link set pA up"], check=True)
    server = Server(host="0.0.0.0")
    a_proc = None
    try:
        room = server.new_room()
        b = SSEClient("127.0.0.1", server.port, "S-00000000000000bb")
        a_proc = subprocess.Popen([*enter, sys.executable, "-c", client_in_namespace(server.port, "S-00000000000000aa", room, 2)],
                                  stdout=subprocess.PIPE, text=True)
        a_cid = a_proc.stdout.readline().strip()
        expect(a_cid.startswith("C-"), f"A joined (got {a_cid!r})")
        expect(b.post({"type": "join", "rid": room, "payload": {"capabilities": {"trickleIce": True}}}) == 204, "B's join is taken")
        b.wait(lambda m: m["type"] == "joined", 10, "B joined")
        # B is a live client too: it pings, or the same rule would (rightly) close its stream.
        stop = threading.Event()

        def ping_b():
            while not stop.wait(2):
                b.post({"type": "ping", "payload": {"ts": 0}})
        threading.Thread(target=ping_b, daemon=True).start()
        # A keeps pinging: for longer than the limit it stays connected (the rule never closes a live client).
        last_ping = None
        started = time.monotonic()
        while time.monotonic() - started < SILENCE_LIMIT_S + 3:
            line = a_proc.stdout.readline()
            last_ping = time.monotonic()
            expect(line.startswith("ping"), f"A pings ({line!r})")
        states = []
        while not b.messages.empty():
            m = b.messages.get()
            expect(m is not None, "B's stream stayed open")
            if m["type"] == "room_state":
                states.append(m)
        expect(not any(p.get("connectionStatus") == "suspended" for s in states for p in s["payload"]["participants"]),
               "A, pinging, was never suspended")
        # Half-open: nothing from A's link reaches this namespace any more; A's TCP connections stay open.
        sh("iptables -A INPUT -i rA -j DROP")
        cut = time.monotonic()
        log("A's link dropped inbound; A last POSTed", round(cut - last_ping, 2), "s before")
        b.wait(lambda m: m["type"] == "room_state" and any(p["cid"] == a_cid and p.get("connectionStatus") == "suspended"
                                                            for p in m["payload"]["participants"]),
               SILENCE_LIMIT_S + TICK_S + SLACK_S + 2, "B sees A suspended")
        seen = time.monotonic()
        since_last_post = seen - last_ping
        expect(since_last_post <= SILENCE_LIMIT_S + TICK_S + 2 + SLACK_S,
               f"suspended {since_last_post:.1f} s after A's last POST (bound {SILENCE_LIMIT_S + TICK_S + 2 + SLACK_S} s)")
        expect(since_last_post >= SILENCE_LIMIT_S - 2 - SLACK_S, f"not before the rule allows ({since_last_post:.1f} s)")
        expect(b.post({"type": "ice", "rid": room, "payload": {"candidate": None}}) == 204, "B relays")
        failed = b.wait(lambda m: m["type"] == "relay_failed", 5, "B's relay to the vanished A is answered")
        expect(failed["payload"].get("reason") == "target_suspended", f"relay_failed says why: {failed}")
        print("RESULT " + json.dumps({"suspendedAfterCutS": round(seen - cut, 1), "suspendedAfterLastPostS": round(since_last_post, 1)}), flush=True)
        print("sse-half-open: ok", flush=True)
        stop.set()
    finally:
        if a_proc:
            a_proc.kill()
        server.stop()
        holder.kill()


if __name__ == "__main__":
    main()
