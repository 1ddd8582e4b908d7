"""The cluster (issue 17): three `duet serve` nodes on one PostgreSQL behind nginx with deploy/nginx/duet-cluster.conf,
and Chromium calling through https://duet.test/. Run by ClusterTests, each scenario in a network namespace of its own:

    unshare -n sh -c 'ip link set lo up && exec python3 cluster.py failover'    # and end-room, occupancy, files

What runs:
- PostgreSQL from postgres.py (`start --dir DIR` prints its postgres:// URL; `stop --dir DIR`);
- N=3 nodes: DUET_BINARY `serve --database-url URL --node-id nodeK`, each with a data directory of its own, on the
  ports the site's upstream names (the namespace is the test's own, so they are free), trusting nginx's
  X-Forwarded-For, their own STUN off (`--stun-port 0`: three nodes cannot all have 3478; the pages' ICE needs none
  on loopback), rate limits on as duet serve ships;
- nginx with deploy/nginx/duet-cluster.conf as it is, only its placeholders replaced (the names, the certificate
  directory — each replacement asserted, as deploy_scenarios.py does for duet.conf), inside Debian's own nginx.conf,
  plus an access log of the test's (which node answered each request: `$upstream_addr`).

`Cluster` is the harness: `kill9(node)`, `sigterm(node)`, `restart(node)`, `node_of_room(rid)` (the live node that
last logged `joined` for the room), `nginx_choice(rid)` (where nginx sends a request for the room now), `stop()`.
Everything it started is stopped when it ends, also on a failure (`with Cluster() as c:`).
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
sys.path.insert(0, os.path.join(HERE, "..", "deploy"))
sys.path.insert(0, os.path.join(HERE, ".."))
import ws_frames  # noqa: E402
import results  # noqa: E402
from results import report  # noqa: E402
from scenarios import collect, expect, in_call, log, mark, media_flows, run, start_call, state, watch  # noqa: E402
import deploy_scenarios as deploy  # noqa: E402 — the certificates, Debian's nginx.conf around the site, substitute()

DUET = os.environ.get("DUET_BINARY", os.path.join(ROOT, ".build", "debug", "duet"))
POSTGRES = os.path.join(HERE, "postgres.py")
SITE = "nginx/duet-cluster.conf"
NAME = deploy.NAME
NODES = 3
# Where the nodes' logs say a participant joined: `… [DuetServer] joined` with `rid=… cid=… reconnect=…` metadata.
JOINED = re.compile(r"\bjoined\b")


def render_site(certs_dir):
    """deploy/nginx/duet-cluster.conf with its placeholders replaced, each asserted (no other change)."""
    return deploy.substitute(SITE, deploy.read_deploy(SITE), [
        (deploy.CERT_DIR, certs_dir.rstrip("/") + "/"), (deploy.PLACEHOLDER_TURN, deploy.TURN_NAME),
        (deploy.PLACEHOLDER_NAME, NAME)])


def upstream_ports(site):
    """The ports of the upstream's `server 127.0.0.1:PORT …;` lines, in order."""
    block = re.search(r"upstream\s+duet_cluster\s*\{(.*?)\n\}", site, re.S)
    expect(block, f"deploy/{SITE} has an upstream duet_cluster block")
    ports = [int(p) for p in re.findall(r"^\s*server\s+127\.0\.0\.1:(\d+)\b", block.group(1), re.M)]
    # `&via=nodeK` (a drain's successor) must reach node K itself: its map entry and its one-node upstream.
    for k, port in enumerate(ports, 1):
        expect(re.search(rf"^\s*node{k}\s+duet_node{k};", site, re.M), f"deploy/{SITE} maps via=node{k} to duet_node{k}")
        own = re.search(rf"upstream\s+duet_node{k}\s*\{{(.*?)\n\}}", site, re.S)
        expect(own and re.findall(r"^\s*server\s+127\.0\.0\.1:(\d+)\b", own.group(1), re.M) == [str(port)],
               f"deploy/{SITE}: upstream duet_node{k} is node{k}'s address alone (127.0.0.1:{port})")
    return ports


def port_free(port):
    # SO_REUSEADDR, as duet serve and nginx bind: a port whose last connections are in TIME_WAIT (a cluster of the
    # same namespace stopped a moment ago: the cluster benchmark's outage after its rolling restart) is free to them.
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


class Node:
    """One `duet serve` of the cluster; its log lines are stamped (monotonic) as they arrive, so the harness can tell
    which node last took a room."""

    def __init__(self, name, port, database_url, directory, extra_args=()):
        self.name, self.port, self.database_url = name, port, database_url
        self.extra_args = list(extra_args)
        self.data = os.path.join(directory, name)
        os.makedirs(self.data)
        self.log_path = os.path.join(self.data, "serve.log")
        self.lines = []          # (monotonic, line) of this node, across its restarts
        self.lock = threading.Lock()
        self.proc = None
        self.url = f"http://127.0.0.1:{port}/"

    def argv(self):
        return [DUET, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--data-dir", self.data,
                "--database-url", self.database_url, "--node-id", self.name, "--stun-port", "0",
                "--trusted-proxy", "127.0.0.1", "--log-level", "info", "--drain-grace", "2"] + self.extra_args

    def start(self):
        expect(self.proc is None or self.proc.poll() is not None, f"{self.name} is not running already")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, errors="replace")
        log(self.name, "started on port", self.port)
        threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True).start()
        first = self.proc.stdout.readline().strip()
        if first != self.url:
            self.proc.kill()
            raise AssertionError(f"{self.name}: duet serve announced {first!r}, not {self.url!r}; log:\n{self.log_tail()}")
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    def _read(self, stream):
        with open(self.log_path, "a") as out:
            for line in stream:
                with self.lock:
                    self.lines.append((time.monotonic(), line.rstrip("\n")))
                out.write(line)
                out.flush()

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(5)
        log(self.name, "killed (SIGKILL)")

    def sigterm(self, wait=True, timeout=15):
        self.proc.send_signal(signal.SIGTERM)
        log(self.name, "SIGTERM")
        if wait:
            self.proc.wait(timeout)
            log(self.name, "exited", self.proc.returncode)

    def restart(self):
        if self.alive:
            self.sigterm()
        self.start()

    def stop(self):
        if self.alive:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def joined(self, rid, cid=None, since=0.0):
        """(time, line) of each `joined` for the room (and the cid) this node logged after `since`."""
        with self.lock:
            return [(t, line) for t, line in self.lines if t >= since and JOINED.search(line) and f"rid={rid}" in line
                    and (cid is None or f"cid={cid}" in line)]

    def log_tail(self, n=40):
        with self.lock:
            return "\n".join(line for _, line in self.lines[-n:])


class Cluster:
    """PostgreSQL, three nodes and nginx; `with Cluster() as c:` stops all of it at the end, however it ends."""

    def __init__(self, node_args=()):
        self.dir = tempfile.mkdtemp(prefix="duet-cluster-")
        os.chmod(self.dir, 0o711)  # PostgreSQL runs as a user of its own (postgres.py), which must reach pg/
        self.pg_dir = os.path.join(self.dir, "pg")
        self.nodes, self.nginx, self.database_url = [], None, None
        self.certs = deploy.certificates()
        self.url = f"https://{NAME}/"
        try:
            self._start_postgres()
            site = render_site(self.certs.dir)
            ports = upstream_ports(site)
            expect(len(ports) == NODES, f"deploy/{SITE} names {NODES} nodes: {ports}")
            for k, port in enumerate(ports, 1):
                expect(port_free(port), f"port {port} of node{k} is free (run in a network namespace of its own)")
                node = Node(f"node{k}", port, self.node_database_url(k), self.dir, node_args)
                self.nodes.append(node)
                node.start()
            self._start_nginx(site)
        except BaseException:
            self.stop()
            raise

    def node_database_url(self, k):
        """The database URL node k is started with (a scenario may put something between a node and PostgreSQL)."""
        return self.database_url

    def _start_postgres(self):
        out = subprocess.run([sys.executable, POSTGRES, "start", "--dir", self.pg_dir], capture_output=True, text=True,
                             timeout=90)
        url = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
        expect(out.returncode == 0 and url.startswith("postgres://"), f"postgres.py start: {out.stdout}{out.stderr}")
        self.database_url = url
        log("postgres at", url)

    def _start_nginx(self, site):
        prefix = os.path.join(self.dir, "nginx")
        os.makedirs(prefix)
        site_path = os.path.join(prefix, "duet")
        with open(site_path, "w") as f:
            f.write(site)
        # The test's own access log beside the site (not in it): which node answered each request, and which were
        # tried before it (`$upstream_addr` lists them), with the request's rid.
        wrapper = os.path.join(prefix, "with-upstream-log.conf")
        self.upstream_log = os.path.join(prefix, "upstream.log")
        with open(wrapper, "w") as f:
            f.write("log_format duet_upstream '$msec $request_method $uri rid=$arg_rid via=$arg_via $status "
                    "upstream=\"$upstream_addr\" upstream_status=\"$upstream_status\"';\n"
                    f"access_log {self.upstream_log} duet_upstream;\n"
                    f"include {site_path};\n")
        conf = deploy.nginx_main_conf(prefix, wrapper)
        checked = deploy.nginx_test(conf, prefix)
        expect(checked.returncode == 0, f"nginx -t on deploy/{SITE}: {checked.stderr}")
        self.nginx_log = os.path.join(prefix, "error.log")
        self.nginx = subprocess.Popen([deploy.NGINX, "-p", prefix + "/", "-c", conf, "-g", "daemon off;"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=open(os.path.join(prefix, "nginx.stderr"), "ab"))

        deploy.wait_until("nginx serves https://duet.test/healthz", self.healthy, 10, self.nginx, self.nginx_log)
        log("nginx serves", self.url)

    def healthy(self):
        client = deploy.Client(self.certs, timeout=1)
        try:
            return client.request("GET", "/healthz")[0] == 200
        finally:
            client.close()

    # MARK: what the scenarios do to it

    def node(self, name):
        return next(n for n in self.nodes if n.name == name)

    def kill9(self, node):
        node.kill9()

    def sigterm(self, node, wait=True):
        node.sigterm(wait)

    def restart(self, node):
        node.restart()

    def node_of_room(self, rid, since=0.0):
        """The live node that last logged a `joined` for the room (after `since`), or None."""
        latest = [(n.joined(rid, since=since)[-1][0], n) for n in self.nodes if n.alive and n.joined(rid, since=since)]
        return max(latest, key=lambda pair: pair[0])[1] if latest else None

    def nginx_choice(self, rid):
        """The node nginx sends a request for the room to now: a GET /healthz?rid= through it, read from its log."""
        pattern = r"GET /healthz rid=" + re.escape(rid) + " "
        # Earlier calls logged lines for this room too: only a line after them answers this request (reading the
        # last line before nginx wrote this one named the node of the previous call).
        seen = len(self.upstream_lines(pattern))
        client = deploy.Client(self.certs, timeout=3)
        try:
            status = client.request("GET", "/healthz?rid=" + urllib.parse.quote(rid, safe=""))[0]
        finally:
            client.close()
        expect(status == 200, f"/healthz?rid={rid} through nginx: {status}")
        for _ in range(40):   # nginx writes the line as the request ends, which can be after the client has its answer
            lines = self.upstream_lines(pattern)
            if len(lines) > seen:
                answered = re.search(r'upstream="([^"]*)"', lines[-1]).group(1).split(", ")[-1]
                port = int(answered.rsplit(":", 1)[1])
                return next(n for n in self.nodes if n.port == port)
            time.sleep(0.05)
        raise AssertionError(f"nginx logged no /healthz?rid={rid}")

    def upstream_lines(self, pattern):
        try:
            with open(self.upstream_log, errors="replace") as f:
                return [line.rstrip("\n") for line in f if re.search(pattern, line)]
        except OSError:
            return []

    def new_room(self):
        client = deploy.Client(self.certs)
        try:
            status, _, body = client.request("POST", "/api/room-id", headers={"Origin": f"https://{NAME}"})
        finally:
            client.close()
        expect(status == 200, f"POST /api/room-id through nginx: {status} {body[:200]!r}")
        return json.loads(body)["roomId"]

    def stop(self):
        results.capture_failing()
        if self.nginx is not None and self.nginx.poll() is None:
            self.nginx.terminate()
            try:
                self.nginx.wait(5)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
        for node in self.nodes:
            try:
                node.stop()
            except Exception as error:  # noqa: BLE001 — stop the others regardless
                log(node.name, "did not stop:", error)
        if self.database_url is not None or os.path.exists(self.pg_dir):
            subprocess.run([sys.executable, POSTGRES, "stop", "--dir", self.pg_dir], capture_output=True, timeout=60)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            log("kept for a look (nodes' logs, nginx's, postgres's):", self.dir)
            for node in self.nodes:
                log(f"--- {node.name} log tail ---\n{node.log_tail(25)}")


# MARK: - A signaling client in Python (stdlib only): WebSocket through nginx (TLS) or straight to a node

class WebSocket:
    """`/ws?rid=` with the handshake and masked text frames by hand; answers pings; reads envelopes."""

    def __init__(self, url, timeout=5, origin=None):
        parts = urllib.parse.urlsplit(url)
        secure = parts.scheme in ("https", "wss")
        port = parts.port or (443 if secure else 80)
        # Through nginx the name is duet.test, which only Chromium maps: connect to 127.0.0.1 and say the name.
        raw = socket.create_connection(("127.0.0.1", port), timeout)
        self.sock = deploy.certificates().context().wrap_socket(raw, server_hostname=parts.hostname) if secure else raw
        path = parts.path + ("?" + parts.query if parts.query else "")
        host = parts.hostname + ("" if parts.port is None else f":{parts.port}")
        self.status, self.buffer = ws_frames.upgrade(self.sock, host, path, origin)
        if " 101 " not in self.status:
            raise ConnectionError(f"{url}: {self.status}")

    def send(self, envelope):
        self.sock.sendall(ws_frames.frame(ws_frames.TEXT, json.dumps(envelope).encode(), masked=True))

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def receive(self, timeout=5):
        """The next envelope (pings answered on the way); raises EOFError when the socket closes."""
        self.sock.settimeout(timeout)
        while True:
            opcode, payload = ws_frames.read_frame(self._read)
            if opcode == ws_frames.PING:
                self.sock.sendall(ws_frames.frame(ws_frames.PONG, payload, masked=True))
            elif opcode == ws_frames.CLOSE:
                raise EOFError(f"closed by the server ({struct.unpack('!H', payload[:2])[0] if len(payload) >= 2 else '-'})")
            elif opcode == ws_frames.TEXT:
                return json.loads(payload)

    def expect(self, kind, timeout=10, where=lambda e: True, kinds=None):
        """The first envelope of type `kind` (or of any of `kinds`) for which `where` holds."""
        kinds = kinds or (kind,)
        deadline = time.monotonic() + timeout
        seen = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {kind} within {timeout}s; saw {[e.get('type') for e in seen]}: {seen[-3:]}")
            try:
                envelope = self.receive(left)
            except socket.timeout:
                continue
            seen.append(envelope)
            if envelope.get("type") in kinds and where(envelope):
                return envelope

    def join(self, rid, **payload):
        self.send({"v": 1, "type": "join", "rid": rid, "payload": {"capabilities": {"trickleIce": True}, **payload}})

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def ws_url(base, rid):
    return base.replace("https://", "wss://").replace("http://", "ws://") + "ws?rid=" + urllib.parse.quote(rid, safe="")


# MARK: - Scenarios

def cids_of(a, b):
    return a.evaluate("duet.cid"), b.evaluate("duet.cid")


def scenario_failover(browser):
    """Two pages in a call through nginx on the cluster; the node holding the room is killed (SIGKILL): both pages
    recover on another node with the same cids, media both ways again; the time from the kill to media both ways is
    recorded."""
    failover(browser, "ws")


def scenario_failover_sse(browser):
    """The same over SSE (?transports=sse): each page's stream and POSTs reach the node holding the room, and after the
    kill both pages recover on another node with the same cids, media both ways again."""
    failover(browser, "sse")


def scenario_drain(browser):
    """The node holding a call's room is stopped (SIGTERM): it sends `draining` and refuses new sessions, both pages
    come back through nginx on another node with the same cids, media both ways; the time from the SIGTERM to media
    both ways is recorded."""
    failover(browser, "ws", fault="sigterm")


def failover(browser, transport, fault="kill9"):
    with Cluster() as c:
        a, b, link = start_call(browser, c, "?transports=sse" if transport == "sse" else "")
        for name, page in (("A", a), ("B", b)):
            expect(state(page)["transport"] == transport, f"{name} signals over {transport}: {state(page)}")
        rid = a.evaluate("duet.roomId")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: video and audio through the cluster")
        cids = cids_of(a, b)
        holder = c.node_of_room(rid)
        expect(holder is not None, f"a node logged the room's joins: {[n.log_tail(5) for n in c.nodes]}")
        for cid in cids:
            expect(holder.joined(rid, cid), f"both pages joined on {holder.name} (nginx sent the room to one node): {cid}")
        expect(c.nginx_choice(rid) is holder, f"nginx sends the room to {holder.name}")
        if transport == "sse":
            # Every POST of both pages named the room and went to the node holding it (and its stream).
            posts = c.upstream_lines(r"POST /sse rid=" + re.escape(rid) + " ")
            elsewhere = [l for l in posts if not l.endswith(f'upstream="127.0.0.1:{holder.port}" upstream_status="204"')]
            expect(posts and not elsewhere, f"the SSE POSTs went to {holder.name}: {len(posts)} POSTs, others: {elsewhere[:3]}")
            unnamed = c.upstream_lines(r"(GET|POST) /sse rid=- ")
            expect(not unnamed, f"no SSE request without the room: {unnamed[:3]}")
        log("room", rid, "on", holder.name)
        results.detail(room=rid, holder=holder.name, cids=list(cids))

        before = {name: page.evaluate("duet.reconnects") for name, page in (("A", a), ("B", b))}
        killed = time.monotonic()
        if fault == "sigterm":
            c.sigterm(holder, wait=False)   # draining; it exits after --drain-grace (2 s)
        else:
            c.kill9(holder)
        # Each page joins again once its link is back: the node it reaches takes the seat from the token and the
        # shared database — `recovered` (the room recreated here), or `reattached` if the other page's join already
        # brought the room, with this seat, onto that node.
        for name, page in (("A", a), ("B", b)):
            page.wait_for(f"duet.reconnects.length > {len(before[name])}", 30,
                          message=f"{name} joins again after its node was killed")
        for name, page in (("A", a), ("B", b)):
            in_call(page, 30, what=f"{name} back to connected on another node")
        signaling_s = time.monotonic() - killed
        expect(cids_of(a, b) == cids, f"both kept their cids: {cids} → {cids_of(a, b)}")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: video and audio both ways after the failover")
        media_s = time.monotonic() - killed
        new = c.node_of_room(rid, since=killed)
        expect(new is not None and new is not holder, f"the room moved off {holder.name}: now {new and new.name}")
        kinds = {}
        for cid in cids:
            lines = new.joined(rid, cid, since=killed)
            kind = re.search(r"reconnect=(\w+)", lines[-1][1]).group(1) if lines else None
            expect(kind in ("recovered", "reattached"),
                   f"{cid} took its seat back on {new.name} with its cid: {lines[-1][1] if lines else 'no join there'}")
            kinds[cid] = kind
        expect("recovered" in kinds.values(), f"the room was recovered on {new.name} (not found there): {kinds}")
        if fault == "sigterm":
            # The draining node named the room's next node to both pages (`draining {via}`), and both went there
            # through nginx (both joined there, above). nginx logs a WebSocket only when it closes: the node's log
            # of the joins is what says where they went.
            for name, page in (("A", a), ("B", b)):
                expect(page.evaluate("duet.via") == new.name, f"{name} was sent to {new.name} by the drain: via={page.evaluate('duet.via')}")
        else:
            chosen = c.nginx_choice(rid)
            expect(chosen is new, f"nginx now sends the room to {new.name}: it sent it to {chosen.name}")
        log(f"failover {holder.name} → {new.name}: signaling back in {signaling_s:.1f}s, media both ways in {media_s:.1f}s")
        results.detail(newHolder=new.name, signalingSeconds=round(signaling_s, 1), mediaSeconds=round(media_s, 1),
                       reconnects={"A": a.evaluate("duet.reconnects"), "B": b.evaluate("duet.reconnects")}, joins=kinds)
        if fault == "sigterm":
            holder.proc.wait(15)
            expect(holder.proc.returncode == 0, f"{holder.name} exited cleanly after draining: {holder.proc.returncode}")
        what = "stopped (SIGTERM: draining, new sessions refused)" if fault == "sigterm" else "killed (SIGKILL)"
        report(seconds=media_s, how=f"{holder.name} {what}; nginx passed the reconnects on and both "
                                    f"pages rejoined on {new.name}, which recovered their seats from their reconnect "
                                    f"tokens and the shared database (same cids); " + results.how_recovered(a, b)
                                    + " (time from the signal to media both ways)")


def scenario_end_room(_browser):
    """A room ended by its host stays ended across the cluster: after end_room and every node restarted, a reconnect
    with a saved reconnect token gets ROOM_ENDED, through nginx and from every node directly. Before the end, a seat's
    TURN credentials, fetched with the room in the URL as the clients do, come from the node holding it."""
    # A TURN server to hand out (nothing here connects to it): without one, /api/turn-credentials answers 503.
    with Cluster(node_args=("--turn-secret", "cluster-test-turn-secret", "--turn-uri", "turn:127.0.0.1:3479")) as c:
        rid = c.new_room()
        host, guest = WebSocket(ws_url(c.url, rid)), WebSocket(ws_url(c.url, rid))
        host.join(rid)
        hosted = host.expect("joined")
        guest.join(rid)
        guested = guest.expect("joined")
        holder = c.node_of_room(rid)
        log("room", rid, "on", holder and holder.name, "host", hosted["cid"], "guest", guested["cid"])
        saved = {"reconnectCid": guested["cid"], "reconnectToken": guested["payload"]["reconnectToken"]}
        # The TURN credentials of a seat come from the node holding it (it checks the seat), so the fetch names the
        # room as the clients do (`&rid=`): through nginx it reaches that node. Without it, another node answers 401.
        turn = guested["payload"]["turnToken"]
        path = "/api/turn-credentials?token=" + urllib.parse.quote(turn, safe="")
        client = deploy.Client(c.certs)
        try:
            statuses = [client.request("GET", path + "&rid=" + urllib.parse.quote(rid, safe=""))[0] for _ in range(6)]
        finally:
            client.close()
        expect(statuses == [200] * 6, f"the TURN fetch with its room, through nginx, is answered by the holder: {statuses}")
        elsewhere = next(n for n in c.nodes if n is not holder)
        with urllib.request.urlopen(urllib.request.Request(holder.url.rstrip("/") + path), timeout=5) as answer:
            expect(answer.status == 200, f"{holder.name} itself answers the fetch: {answer.status}")
        try:
            urllib.request.urlopen(urllib.request.Request(elsewhere.url.rstrip("/") + path), timeout=5)
            expect(False, f"{elsewhere.name}, which does not hold the seat, answered the TURN fetch")
        except urllib.error.HTTPError as error:
            expect(error.code == 401, f"{elsewhere.name}, which does not hold the seat, answers 401: {error.code}")
        results.detail(turnThroughNginx=statuses)
        host.send({"v": 1, "type": "end_room", "rid": rid, "payload": {}})
        for name, client in (("host", host), ("guest", guest)):
            ended = client.expect("room_ended")
            expect(ended["payload"].get("reason") == "host_ended", f"{name} is told the host ended it: {ended}")
        host.close()
        guest.close()
        for node in c.nodes:
            c.restart(node)
        deploy.wait_until("nginx serves again", c.healthy, 15)
        answers = {}
        for where, base in [("nginx", c.url)] + [(n.name, n.url) for n in c.nodes]:
            client = WebSocket(ws_url(base, rid))
            try:
                client.join(rid, **saved)
                reply = client.expect("error", where=lambda e: True, kinds=("error", "joined"))
                answers[where] = reply["payload"].get("code") if reply["type"] == "error" else \
                    f"joined (reconnect={reply['payload'].get('reconnect')})"
            finally:
                client.close()
        log("a reconnect to the ended room, after every node restarted:", answers)
        results.detail(room=rid, answers=answers)
        expect(all(code == "ROOM_ENDED" for code in answers.values()), f"every node says ROOM_ENDED: {answers}")


def scenario_occupancy(browser):
    """The home page opened on one node directly shows the live occupancy of a room whose call is on another node."""
    with Cluster() as c:
        a, b, link = start_call(browser, c)
        rid = a.evaluate("duet.roomId")
        holder = c.node_of_room(rid)
        other = next(n for n in c.nodes if n is not holder)
        log("room", rid, "on", holder.name, "; home page on", other.name)
        results.detail(room=rid, holder=holder.name, homeOn=other.name)
        home = watch(browser.new_page(other.url), "home")
        home.wait_for("window.duet && duet.page === 'home'", 10, message=f"home page loads from {other.name}")
        home.evaluate("localStorage.setItem('duet.recentRooms', JSON.stringify([{roomId: %s, at: Date.now()}])); true"
                      % json.dumps(rid))
        home.reload()
        home.wait_for("window.duet && duet.page === 'home'", 10, message="home page reloads with the room in its list")
        try:
            home.wait_for(f"duet.occupancy()[{json.dumps(rid)}] === 2", 15,
                          message=f"home on {other.name} shows the 2 people in the call on {holder.name}")
        except TimeoutError as error:
            raise AssertionError(f"{error}\nthe home page's occupancy: {home.evaluate('duet.occupancy()')}") from error
        expect("2 people in the call" in home.evaluate("document.getElementById('recent-list').textContent"),
               "occupancy is written out")
        b.evaluate("duet.leave()")
        home.wait_for(f"duet.occupancy()[{json.dumps(rid)}] === 1", 15,
                      message="occupancy follows a leave on the other node live")
        expect(state(a)["phase"] in ("waiting", "inCall"), f"A waits for the other person again: {state(a)}")


def browser_options(name):
    if name == "end-room":
        return None
    return deploy.browser_options(name)


if __name__ == "__main__":
    run(collect(globals()), browser_options, suite="cluster")
