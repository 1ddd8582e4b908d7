#!/usr/bin/env python3
"""A rolling restart of the cluster under load (issue 17): 300 rooms (600 WebSocket clients, `duet-bench hold`) held
open through nginx on the three nodes of cluster.py; each node in turn gets SIGTERM (it sends `draining`, closes, exits),
is started again and answers /healthz; the clients reconnect through nginx with their reconnect tokens and are
recovered on the other nodes. Run by ClusterLoadTests in a network namespace of its own (cluster.py's fixed ports):

    unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/cluster/rolling.py rolling-restart'

It asserts: every client is back after each node's restart (BACK, no one away), every client ended `recovered` or
`reattached` with its own cid (0 cid changes), the two clients of every room list each other, both connected, in their
last room_state (no room lost, none split over two nodes), no client lost twice in one drain (each room moved once:
the drain names the room's next node to both clients, `draining {via}`), and no error but the transient ones (failed
connects while a node drains or is down). The outcome is recorded either way (Tests/e2e/results.py, suite "cluster"), with the
per-node times to be back.

`LoadCluster` and `HoldBench` are also what benchmarks/cluster.py measures with.
Environment: DUET_BINARY (duet), DUET_BENCH (duet-bench; default .build/debug/), ROLLING_ROOMS (default 300).
"""
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster  # noqa: E402 — PostgreSQL, three nodes, nginx with deploy/nginx/duet-cluster.conf
from cluster import ROOT, deploy, log, results  # noqa: E402

BENCH = os.environ.get("DUET_BENCH", os.path.join(ROOT, ".build", "debug", "duet-bench"))
# Plain HTTP on loopback for the load generator: the bench's clients cannot trust the test's certificate for
# duet.test, and TLS on two shared cores would measure TLS. It is the site's own HTTPS server block with only its
# listen/TLS lines changed (same locations, same proxy and failover settings) and its per-address connection cap
# (`limit_conn … 200`) left out: every generated client comes from 127.0.0.1, as the nodes' own per-address limits
# are turned off for the same reason.
PLAIN_PORT = 8880
# Debian's nginx.conf allows 768 connections per worker; a proxied WebSocket is two (client + upstream).
WORKER_CONNECTIONS = 16384
WORKER_RLIMIT_NOFILE = 19000
METRICS_TOKEN = "rolling-py-metrics-token-0123456789"


def plain_http_mirror(site, port):
    """The site's `listen 443 ssl` server block, listening on 127.0.0.1:`port` without TLS."""
    lines = [line for line in site.splitlines() if not line.strip().startswith("#")]
    text = "\n".join(lines)
    at = text.find("listen 443 ssl")
    assert at >= 0, "deploy/nginx/duet-cluster.conf has a `listen 443 ssl` server block"
    start = text.rfind("server {", 0, at)
    depth, end = 0, None
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i + 1
                break
    assert end, "the HTTPS server block's braces close"
    block = text[start:end]
    out = []
    for line in block.splitlines():
        word = line.strip().split(" ", 1)[0]
        if word in ("listen", "server_name", "limit_conn", "limit_conn_status", "ssl_certificate", "ssl_certificate_key", "ssl_protocols",
                    "ssl_session_cache", "ssl_session_timeout", "ssl_session_tickets") or "Strict-Transport-Security" in line:
            continue
        out.append(line)
        if line.strip() == "server {":
            out.append(f"    listen 127.0.0.1:{port};")
    return "\n# rolling.py: the HTTPS server block above over plain HTTP, for the load generator\n" + "\n".join(out) + "\n"


class LoadCluster(cluster.Cluster):
    """cluster.py's cluster, set up for load from one address: the nodes' per-address limits off (every bench client
    is 127.0.0.1 to them: DUET_RATE_LIMIT=off, DUET_MAX_CONNECTIONS_PER_IP), nginx allowed enough connections, and
    the site's HTTPS server also on plain http://127.0.0.1:8880/."""

    def __init__(self):
        os.environ["DUET_RATE_LIMIT"] = "off"
        os.environ["DUET_MAX_CONNECTIONS_PER_IP"] = "20000"
        # /metrics from loopback needs the token here: the nodes trust 127.0.0.1 as their proxy.
        os.environ["DUET_METRICS_TOKEN"] = METRICS_TOKEN
        self.plain_url = f"http://127.0.0.1:{PLAIN_PORT}/"
        super().__init__()

    def _start_nginx(self, site):
        original = deploy.nginx_main_conf

        def main_conf(prefix, site_path):
            path = original(prefix, site_path)
            with open(path) as f:
                text = f.read()
            old = re.search(r"worker_connections\s+\d+;", text)
            assert old, "Debian's nginx.conf names worker_connections"
            text = text.replace(old.group(0), f"worker_connections {WORKER_CONNECTIONS};")
            text = text.replace("worker_processes auto;", f"worker_processes auto;\nworker_rlimit_nofile {WORKER_RLIMIT_NOFILE};")
            with open(path, "w") as f:
                f.write(text)
            return path

        if os.environ.get("CLUSTER_UPSTREAM_ZONE") == "1" and "zone duet_cluster" not in site:
            # Diagnosis only: the upstream's peer state (max_fails/fail_timeout) shared by all nginx workers.
            assert "hash $duet_room consistent;" in site
            site = site.replace("hash $duet_room consistent;", "hash $duet_room consistent;\n    zone duet_cluster 64k;", 1)
            log("CLUSTER_UPSTREAM_ZONE=1: upstream with `zone duet_cluster 64k;` (not the shipped file)")
        if os.environ.get("CLUSTER_CONNECT_TIMEOUT"):
            # Diagnosis only: nginx's connect timeout to a node (the shipped 1s equals Linux's first SYN retransmit,
            # so a SYN dropped by a full listen queue counts as a failed node).
            value = os.environ["CLUSTER_CONNECT_TIMEOUT"]
            assert "proxy_connect_timeout 1s;" in site
            site = site.replace("proxy_connect_timeout 1s;", f"proxy_connect_timeout {value};")
            log(f"CLUSTER_CONNECT_TIMEOUT: proxy_connect_timeout {value} (not the shipped file)")
        deploy.nginx_main_conf = main_conf
        try:
            super()._start_nginx(site + plain_http_mirror(site, PLAIN_PORT))
        finally:
            deploy.nginx_main_conf = original

    def __exit__(self, *exc):
        if os.environ.get("CLUSTER_KEEP") == "1" and exc[0] is None:
            self.stop()  # kept for a look: nodes' logs, nginx's upstream.log
            log("kept (CLUSTER_KEEP=1):", self.dir)
            return
        super().__exit__(*exc)

    @staticmethod
    def node_healthy(node):
        try:
            with urllib.request.urlopen(node.url + "healthz", timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_healthy(self, node, timeout=30):
        deploy.wait_until(f"{node.name} answers /healthz", lambda: self.node_healthy(node), timeout, node.proc)

    @staticmethod
    def metrics_text(node):
        """A node's /metrics (with the token: the nodes trust 127.0.0.1 as their proxy), or None."""
        request = urllib.request.Request(node.url + "metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
        try:
            with urllib.request.urlopen(request, timeout=3) as response:
                return response.read().decode()
        except OSError:
            return None

    def connections(self, node):
        """Open signaling connections on a node, from its /metrics, or None."""
        text = self.metrics_text(node)
        if text is None:
            return None
        total = 0.0
        found = False
        for line in text.splitlines():
            if re.match(r"duet_connections(\{| )", line):
                total += float(line.rsplit(" ", 1)[1])
                found = True
        return int(total) if found else None


class HoldBench:
    """`duet-bench hold` driven over its stdin/stdout lines (Sources/duet-bench/Load/HoldRun.swift)."""

    def __init__(self, url, rooms, join_rate=200, max_seconds=300, log_dir=None):
        self.stderr_path = os.path.join(log_dir or "/tmp", f"duet-bench-hold-{os.getpid()}.log")
        self.argv = [BENCH, "hold", "--url", url, "--rooms", str(rooms), "--join-rate", str(join_rate),
                     "--max-seconds", str(max_seconds)]
        log("$", " ".join(self.argv))
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.stderr_path, "w"), text=True, bufsize=1)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.result = None

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, prefix, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"duet-bench hold printed no {prefix} within {timeout}s; stderr: {self.stderr_tail()}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"duet-bench hold exited ({self.proc.wait()}) before {prefix}; stderr: {self.stderr_tail()}")
            if line.startswith(prefix + " ") or line == prefix:
                return line

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def ready(self, timeout=180):
        return int(self.expect("READY", timeout).split()[1])

    def mark(self, label):
        self.send(f"MARK {label}")

    def wait_back(self, timeout=60):
        """(label, seconds from the MARK until every client was back or -1, clients still away)."""
        self.send(f"WAITBACK {timeout}")
        _, label, seconds, away = self.expect("BACK", timeout + 30).split()
        return label, float(seconds), int(away)

    def stop(self, timeout=60):
        self.send("STOP")
        line = self.expect("BENCH", timeout)
        self.result = json.loads(line[len("BENCH "):])
        self.proc.wait(10)
        return self.result

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)

    def stderr_tail(self, n=2000):
        try:
            with open(self.stderr_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""


# Errors a client may see while a node drains or is down and nginx moves it: a connect refused or failed
# (502/503 from nginx while it tries the next node, the node's own 503 while it drains).
def transient(error_key):
    return error_key.startswith("connect:")


def check_result(result, clients, every_client_moved=True):
    """The assertions on a hold run's BENCH result; returns the list of what failed. `every_client_moved`: every
    client must have lost its node at least once (a rolling restart of all of them), so its last join was a
    recovery or a reattach; otherwise clients that never moved may have stayed `fresh`."""
    failures = []
    if result.get("timedOut"):
        failures.append("duet-bench hold ran out of time (--max-seconds)")
    if result["cidChanged"] != 0:
        failures.append(f"{result['cidChanged']} rejoins came back with another cid")
    last = result["lastKinds"]
    allowed = ("recovered", "reattached") if every_client_moved else ("recovered", "reattached", "fresh")
    wrong = {k: v for k, v in last.items() if k not in allowed}
    if wrong:
        failures.append(f"clients whose last join was not recovered/reattached: {wrong} (all: {last})")
    if sum(last.values()) != clients:
        failures.append(f"{sum(last.values())} clients accounted for, not {clients}")
    if result["clientsAway"]:
        failures.append(f"{result['clientsAway']} clients away at the end")
    if result["roomsNotWhole"]:
        failures.append(f"{result['roomsNotWhole']} rooms whose two clients do not both see both seats connected: "
                        f"{result['roomsNotWholeSample'][:3]}")
    bad = {k: v for k, v in result["errors"].items() if not transient(k)}
    if bad:
        failures.append(f"errors other than transient connect failures: {bad}")
    for phase in result["phases"]:
        if phase.get("backSeconds") is not None and phase["backSeconds"] < 0:
            failures.append(f"phase {phase['label']}: not every client came back ({phase.get('stillAway')} away)")
    return failures


# What a phase of a hold run records, with where a rejoin's time went (issue 53).
PHASE_KEYS = ("label", "backSeconds", "losses", "drainings", "kinds", "rejoinMs", "drainingAfterMarkMs", "rejoinWaitMs",
              "rejoinRetryingMs", "rejoinConnectMs", "rejoinJoinMs", "rejoinConnects", "clientsLostMoreThanOnce")


def where_the_time_went(phase):
    """One line: a phase's rejoins split into the node's announcement, the client's delay, the connect through the
    proxy and the join on the new node (p50 / max, ms), and how many connects a rejoin took."""
    def part(key):
        s = phase.get(key) or {}
        return f"{s.get('p50', 0):.0f} / {s.get('max', 0):.0f}"
    return (f"{phase['label']}: back {phase.get('backSeconds')} s; p50 / max ms: draining after the mark "
            f"{part('drainingAfterMarkMs')}, client's delay {part('rejoinWaitMs')}, retrying {part('rejoinRetryingMs')}, connect {part('rejoinConnectMs')}, "
            f"join {part('rejoinJoinMs')}, whole rejoin {part('rejoinMs')}; connects per rejoin {phase.get('rejoinConnects')}; "
            f"clients lost more than once {phase.get('clientsLostMoreThanOnce')}")


# The outcome's name and title (scripts/publish_results.py lists it in docs/cluster.md's table).
SCENARIO = "rolling-restart"
TITLE = ("Rolling restart under load: ROLLING_ROOMS rooms (300 by default, 2 clients each) through nginx; each node in "
         "turn SIGTERM, restarted — every client back with its cid, every room whole")


def scenario_rolling_restart():
    rooms = int(os.environ.get("ROLLING_ROOMS", "300"))
    title = (f"Rolling restart under load: {rooms} rooms ({2 * rooms} clients) through nginx; each node in turn "
             "SIGTERM, restarted — every client back with its cid, every room whole")
    with results.outcome("cluster", SCENARIO, title):
        with LoadCluster() as c:
            bench = HoldBench(c.plain_url, rooms, join_rate=200, max_seconds=280, log_dir=c.dir)
            try:
                clients = bench.ready(120)
                log(f"{clients} clients joined through nginx;",
                    ", ".join(f"{n.name}: {c.connections(n)} connections" for n in c.nodes))
                backs = {}
                for node in c.nodes:
                    label = f"sigterm-{node.name}"
                    held = c.connections(node)
                    bench.mark(label)
                    began = time.monotonic()
                    c.sigterm(node)          # draining, closes, exits (waits for the exit)
                    exited = time.monotonic() - began
                    node.start()
                    c.wait_healthy(node)
                    healthy = time.monotonic() - began
                    _, seconds, away = bench.wait_back(60)
                    log(f"{label}: exited after {exited:.1f}s, healthy again after {healthy:.1f}s; "
                        f"every client back {seconds:.2f}s after the SIGTERM ({away} away)")
                    backs[node.name] = {"backSeconds": seconds, "away": away, "exitedSeconds": round(exited, 2),
                                        "healthySeconds": round(healthy, 2), "held": held}
                    results.detail(backs=backs)
                    cluster.expect(away == 0 and seconds >= 0, f"{label}: {away} clients not back within 60 s")
                    # Rooms that moved while the node was away may move back to it as their clients reconnect, and
                    # nginx tries a failed node again only 5 s after it failed: wait past that, then every client
                    # must be back (and its room whole) before the next node goes.
                    bench.mark(f"settle-{node.name}")
                    time.sleep(6)
                    _, settle, away = bench.wait_back(60)
                    cluster.expect(away == 0, f"settle after {label}: {away} clients not back")
                result = bench.stop()
            finally:
                bench.kill()
            summary = {k: result[k] for k in ("clients", "kinds", "lastKinds", "cidChanged", "errors", "closes",
                                               "drainingReceived", "losses", "rejoinMs", "roomsNotWhole", "clientsAway")}
            summary["phases"] = [{k: p.get(k) for k in PHASE_KEYS} for p in result["phases"]]
            results.detail(result=summary)
            log("BENCH", json.dumps(summary))
            for phase in result["phases"]:
                if phase.get("drainings"):
                    log(where_the_time_went(phase))
            failures = check_result(result, clients)
            # Each room moved once (issue 53): the drain named each room's next node to both of its clients
            # (`draining {via}`, routed by nginx's `&via=`), so no client may lose its node twice in one drain — as it
            # did through nginx's ring, when a node back from its own drain was half out and a room's two clients
            # reached two nodes.
            twice = {p["label"]: p.get("clientsLostMoreThanOnce") for p in result["phases"] if p["label"].startswith("sigterm-")}
            results.detail(clientsLostMoreThanOnce=twice)
            if any(twice.values()):
                failures.append(f"clients lost more than once in a drain (a room moved twice): {twice}")
            cluster.expect(not failures, "; ".join(failures))
            slowest = max(b["backSeconds"] for b in backs.values())
            results.report(seconds=slowest, how=(
                f"each node SIGTERMed in turn and restarted; {clients} clients reconnected through nginx with their "
                f"reconnect tokens after `draining` ({', '.join(f'{v} {k}' for k, v in sorted(result['kinds'].items()))} "
                f"rejoins), 0 cid changes, every room whole; slowest node: every client back {slowest:.1f} s after "
                "its SIGTERM (including its restart)"))
    print("scenario rolling-restart: ok", flush=True)


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "rolling-restart"
    if name != "rolling-restart":
        sys.exit(f"unknown scenario {name}")
    scenario_rolling_restart()
