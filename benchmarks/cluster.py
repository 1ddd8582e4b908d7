"""The cluster benchmark (docs/benchmarks.md, "Cluster"): three `duet serve` nodes on one PostgreSQL behind nginx
(Tests/e2e/cluster/cluster.py with deploy/nginx/duet-cluster.conf; rolling.py's LoadCluster: per-address limits off,
nginx allowed enough connections, the site also on plain HTTP for the generator), 1,500 rooms (3,000 WebSocket clients,
`duet-bench hold`) held through nginx; the node holding the most connections is killed with SIGKILL and the time until
every one of its clients is back (rejoined on another node, its room whole) is measured; the node is restarted; then
each node in turn gets SIGTERM and is restarted (a rolling restart at this scale), and the time until every client is
back is measured each time; then join latency through nginx against one node directly (`duet-bench join-latency`);
last, PostgreSQL taken away at the same scale (Tests/e2e/cluster/postgres_outage.py with OUTAGE_ROOMS = the rooms; its
table in docs/cluster.md).
Diagnosis switches (not for the published numbers): CLUSTER_UPSTREAM_ZONE=1 (rolling.py), CLUSTER_NO_RENDER=1,
CLUSTER_JSON=PATH, CLUSTER_KEEP=1 (keep the cluster's logs), CLUSTER_ROOMS=N. Writes docs/benchmarks-cluster.json and the "Cluster"
section of docs/benchmarks.md (between its markers; compare.py keeps that section when it rewrites the file).

Run it with benchmarks/cluster.sh (release builds, a network namespace of its own: cluster.py's ports are fixed; about
2 minutes). It exits non-zero when the assertions of rolling.py fail over the run (the section says so either way).
`--render` rewrites the section from docs/benchmarks-cluster.json without measuring.
"""
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
os.environ.setdefault("DUET_BINARY", os.path.join(ROOT, ".build", "release", "duet"))
os.environ.setdefault("DUET_BENCH", os.path.join(ROOT, ".build", "release", "duet-bench"))
sys.path.insert(0, os.path.join(ROOT, "Tests", "e2e", "cluster"))

ROOMS = int(os.environ.get("CLUSTER_ROOMS", "1500"))
JOIN_RATE = 300
LATENCY_ROOMS, LATENCY_RATE = 1000, 200
JSON_PATH = os.environ.get("CLUSTER_JSON", os.path.join(ROOT, "docs", "benchmarks-cluster.json"))
MD_PATH = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN, END = "<!-- cluster:begin -->", "<!-- cluster:end -->"


def git(*args):
    out = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    return out.stdout.strip()


def listen_counters():
    """TcpExt ListenOverflows/ListenDrops of this network namespace (the benchmark's own): SYNs dropped because a
    listener's accept queue was full — a node's backlog (Hummingbird's default 256) under a burst of reconnects."""
    with open("/proc/net/netstat") as f:
        rows = [line.split() for line in f if line.startswith("TcpExt:")]
    values = dict(zip(rows[0][1:], map(int, rows[1][1:])))
    return {k: values.get(k, 0) for k in ("ListenOverflows", "ListenDrops")}


def nginx_summary(c):
    """What nginx's logs say about failing over: per upstream, connects that timed out (proxy_connect_timeout 1s) or
    were refused, and the requests that found no live upstream (every node marked down: a 502 to the client)."""
    out = {"connectTimedOut": {}, "connectRefused": {}, "noLiveUpstreams": 0, "ws502": 0}
    try:
        with open(c.nginx_log, errors="replace") as f:
            for line in f:
                up = re.search(r'upstream: "http://([0-9.]+:[0-9]+)', line)
                port = up.group(1).rsplit(":", 1)[1] if up else "-"
                if "upstream timed out" in line and "while connecting" in line:
                    out["connectTimedOut"][port] = out["connectTimedOut"].get(port, 0) + 1
                elif "Connection refused" in line and "while connecting" in line:
                    out["connectRefused"][port] = out["connectRefused"].get(port, 0) + 1
                elif "no live upstreams" in line:
                    out["noLiveUpstreams"] += 1
        with open(c.upstream_log, errors="replace") as f:
            for line in f:
                if " /ws " in line:
                    if line.split()[4] == "502":
                        out["ws502"] += 1
    except OSError as e:
        out["error"] = str(e)
    return out


def measure():
    import rolling  # noqa: E402 — Tests/e2e/cluster
    from rolling import HoldBench, LoadCluster, log

    started = datetime.datetime.now(datetime.timezone.utc)
    with open(os.path.join(ROOT, "deploy", "nginx", "duet-cluster.conf")) as f:
        upstream_zone = bool(re.search(r"^\s*zone\s+duet_cluster\b", f.read(), re.M))
    with LoadCluster() as c:
        bench = HoldBench(c.plain_url, ROOMS, join_rate=JOIN_RATE, max_seconds=600, log_dir=c.dir)
        try:
            t0 = time.monotonic()
            clients = bench.ready(300)
            ready_s = time.monotonic() - t0
            time.sleep(2)
            before = {n.name: c.connections(n) for n in c.nodes}
            log("connections per node:", before)
            victim = max(c.nodes, key=lambda n: before[n.name] or 0) if any(before.values()) else c.nodes[0]
            listen = {"start": listen_counters()}
            bench.mark(f"kill9-{victim.name}")
            c.kill9(victim)
            _, back_s, away = bench.wait_back(120)
            log(f"SIGKILL {victim.name}: every client back after {back_s:.2f}s ({away} away)")
            after = {n.name: c.connections(n) for n in c.nodes}
            # The node comes back; rooms whose clients reconnect there later move back (not measured here).
            victim.start()
            c.wait_healthy(victim)
            listen[f"kill9-{victim.name}"] = listen_counters()
            bench.mark(f"restart-{victim.name}")
            time.sleep(3)
            _, settle_s, settle_away = bench.wait_back(120)
            listen[f"restart-{victim.name}"] = listen_counters()
            # A rolling restart at this scale (what ClusterLoadTests does with 600): each node SIGTERMed (draining),
            # restarted, healthy; the time from the SIGTERM until every client is back.
            rolling_backs = {}
            for node in c.nodes:
                held = c.connections(node)
                bench.mark(f"sigterm-{node.name}")
                began = time.monotonic()
                c.sigterm(node)
                exited = time.monotonic() - began
                node.start()
                c.wait_healthy(node)
                _, back, left = bench.wait_back(120)
                rolling_backs[node.name] = {"backSeconds": back, "away": left, "exitedSeconds": round(exited, 2), "held": held}
                listen[f"sigterm-{node.name}"] = listen_counters()
                log(f"SIGTERM {node.name}: exited after {exited:.1f}s, every client back after {back:.2f}s ({left} away)")
                time.sleep(2)
            result = bench.stop()
            nginx = nginx_summary(c)
        finally:
            bench.kill()
        failures = rolling.check_result(result, clients, every_client_moved=False)
        failures += [f"SIGTERM {k}: {v['away']} clients not back" for k, v in rolling_backs.items() if v["away"] or v["backSeconds"] < 0]
        # Nothing else on the cluster now: join latency through nginx and straight to one node, rooms alternating.
        latency = run_bench("join-latency", "--url", c.plain_url, "--direct-url", c.nodes[1].url,
                            "--rooms", str(LATENCY_ROOMS), "--join-rate", str(LATENCY_RATE))
    # PostgreSQL away at the same scale (issue 53): a cluster of its own, now that this one has stopped (fixed ports).
    outage_result = outage(started)
    if not outage_result["passed"]:
        failures.append("PostgreSQL outage: " + (outage_result["outcome"].get("reason") or "failed"))
    kill_phase = next(p for p in result["phases"] if p["label"].startswith("kill9-"))
    return {
        "date": started.isoformat(timespec="seconds"), "commit": git("rev-parse", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "machine": machine(), "rooms": ROOMS, "clients": clients, "joinRate": JOIN_RATE, "readySeconds": round(ready_s, 2),
        "connectionsBefore": before, "connectionsAfterKill": after, "victim": victim.name,
        "victimClients": kill_phase["losses"], "backSeconds": back_s, "away": away,
        "settleSeconds": settle_s, "settleAway": settle_away, "rolling": rolling_backs,
        "killPhase": kill_phase, "hold": result, "failures": failures,
        # Cumulative at the end of each phase (this namespace only), and nginx's failover errors over the hold run.
        "listenOverflows": listen, "nginxFailover": nginx, "upstreamZone": upstream_zone, "connectTimeout": connect_timeout(),
        "joinLatency": latency, "outage": outage_result, "nginx": {"workerConnections": rolling.WORKER_CONNECTIONS,
                                          "workerRlimitNofile": rolling.WORKER_RLIMIT_NOFILE},
    }


def outage(started):
    """Tests/e2e/cluster/postgres_outage.py at the benchmark's scale (OUTAGE_ROOMS = ROOMS, release builds): one node
    cut off from PostgreSQL, PostgreSQL restarted mid-call, a node drained with the database down. Its outcome (every
    field, a failure too) is kept with the run."""
    run_id = "cluster-benchmark-" + started.strftime("%Y%m%dT%H%M%SZ")
    env = dict(os.environ, OUTAGE_ROOMS=str(ROOMS), DUET_RUN_ID=run_id)
    print(f"$ postgres_outage.py postgres-outage (OUTAGE_ROOMS={ROOMS})", flush=True)
    # A session of its own: a scenario that overruns is stopped with everything it started (nodes, nginx, PostgreSQL).
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "e2e", "cluster", "postgres_outage.py"), "postgres-outage"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=900)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        import signal
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            output, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
        code = "timeout (900 s)"
    print(output[-3000:], flush=True)
    path = os.path.join(ROOT, ".build", "results", run_id, "cluster", "postgres-outage.json")
    outcome = {"recovered": False, "reason": f"no outcome written (exit {code})"}
    if os.path.isfile(path):
        try:
            with open(path) as f:
                outcome = json.load(f)
        except ValueError as e:
            outcome = {"recovered": False, "reason": f"its outcome could not be read ({e}; exit {code})"}
    return {"passed": code == 0 and outcome.get("recovered") is True, "exit": code, "runId": run_id, "outcome": outcome}


def write_outage_row(r):
    """docs/cluster.md's PostgreSQL-at-scale paragraph, from the same run."""
    o = r.get("outage")
    if not o:
        return
    t = o["outcome"].get("details", {}).get("timings", {})
    d = o["outcome"].get("details", {})
    def count(v):
        return f"{v:,}" if isinstance(v, int) else "—"

    def sec(key):
        return f"{t[key]:.2f} s" if isinstance(t.get(key), (int, float)) else "—"
    verdict = "**passed**" if o["passed"] else "**failed**: " + str(o["outcome"].get("reason"))
    section = "\n".join([
        OUTAGE_BEGIN,
        f"**PostgreSQL away at {r['clients']:,} clients** (`postgres_outage.py` with {r['rooms']:,} rooms, run by "
        f"`benchmarks/cluster.sh` on {r['date'][:10]}, commit `{r['commit'][:7]}`{', dirty tree' if r['dirty'] else ''}, run "
        f"`{o['runId']}`, release builds): {verdict}.",
        "",
        "| one node cut off: caught up after its gate opened | PostgreSQL restarted: `room_ended` after it was back | every node up after it was back | a node drained with the database down: every client back | connections on it | lost beyond them | client errors |",
        "|---|---|---|---|---|---|---|",
        f"| {sec('node3CaughtUpSeconds')} | {sec('roomEndedAfterRestartSeconds')} | {sec('everyNodeUpSeconds')} | "
        f"{sec('backWithDatabaseDownSeconds')} | {count(d.get('node1HeldAtSigterm'))} | {d.get('connectionsLostBeyondNode1s', '—')} | "
        f"{sum(d.get('errors', {}).values()) if isinstance(d.get('errors'), dict) else '—'} |",
        OUTAGE_END,
    ])
    text = open(CLUSTER_MD).read()
    if OUTAGE_BEGIN not in text or OUTAGE_END not in text:
        sys.exit(f"{CLUSTER_MD} lacks its {OUTAGE_BEGIN} … {OUTAGE_END} markers")
    head, rest = text.split(OUTAGE_BEGIN, 1)
    with open(CLUSTER_MD, "w") as f:
        f.write(head + section + rest.split(OUTAGE_END, 1)[1])
    print("wrote the PostgreSQL-at-scale table of docs/cluster.md")


def run_bench(*args):
    print("$ duet-bench", *args, flush=True)
    out = subprocess.run([os.environ["DUET_BENCH"], *args], capture_output=True, text=True, timeout=600)
    line = next((l for l in out.stdout.splitlines() if l.startswith("BENCH ")), None)
    if out.returncode != 0 or line is None:
        sys.exit(f"duet-bench {' '.join(args)} failed:\n{out.stdout}\n{out.stderr[-3000:]}")
    result = json.loads(line[len("BENCH "):])
    print("  ", json.dumps(result), flush=True)
    return result


def machine():
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True,
                         text=True).stdout.strip()
    return f"{os.cpu_count()} cores ({cpu or platform.machine()})"


def ms(s):
    return f"{s['p50']:.2f} / {s['p90']:.2f} / {s['p99']:.2f} / {s['max']:.1f}"


def connect_timeout():
    with open(os.path.join(ROOT, "deploy", "nginx", "duet-cluster.conf")) as f:
        m = re.search(r"^\s*proxy_connect_timeout\s+(\S+);", f.read(), re.M)
    return m.group(1) if m else "?"


def failover_paragraph(r):
    """What nginx's logs and the namespace's TCP counters say about failing over: measured counts only."""
    n, listen = r.get("nginxFailover"), r.get("listenOverflows")
    if not n or not listen:
        return "(This run recorded no nginx failover counts.)"
    names = {"8081": "node1", "8082": "node2", "8083": "node3"}
    timed = ", ".join(f"{names.get(k, k)} {v:,}" for k, v in sorted(n["connectTimedOut"].items())) or "none"
    phases = ["start"] + [p["label"] for p in r["hold"]["phases"] if p["label"] in listen and p["label"] != "start"]  # the JSON's keys are sorted
    drops = ", ".join(f"{b} {listen[b]['ListenOverflows'] - listen[a]['ListenOverflows']:,}"
                      for a, b in zip(phases, phases[1:]))
    return (
        f"What nginx saw over the run: {sum(n['connectTimedOut'].values()):,} connects to a node timing out "
        f"(`proxy_connect_timeout {r.get('connectTimeout', connect_timeout())}`; per node: {timed}), "
        f"{sum(n['connectRefused'].values()):,} refused (a killed node: passed on to the next node), "
        f"{n['noLiveUpstreams']:,} requests that found no live upstream and {n['ws502']:,} `/ws` answered 502. "
        f"Listen-queue overflows in the namespace (SYNs dropped because a node's accept queue was full; the nodes "
        f"listen with a backlog of 4,096) per phase: {drops}. A draining node answers new sessions `503` + "
        "`Retry-After: 1`, which nginx passes on to the next node (`proxy_next_upstream http_503` on `/ws` and `/sse`); "
        "its clients are told `draining` with `reconnectAfterMs` spread over 0–1 s by room, both clients of a room alike."
    )


ROLLING_BEGIN, ROLLING_END = "<!-- rolling:begin -->", "<!-- rolling:end -->"
OUTAGE_BEGIN, OUTAGE_END = "<!-- outage:begin -->", "<!-- outage:end -->"
CLUSTER_MD = os.path.join(ROOT, "docs", "cluster.md")
ROLLING_TARGET_S = 3.0


def p50_max(summary):
    """`p50 / max` of a latency summary in ms, or - when the run did not record it."""
    return "-" if not summary or not summary.get("count") else f"{summary['p50']:.0f} / {summary['max']:.0f}"


def where_the_time_went(r):
    """One paragraph from the run: the slowest node's rejoin split into its parts (p50s), and what the parts are."""
    hold = r["hold"]
    backs = r.get("rolling", {})
    if not backs:
        return ""
    name = max(backs, key=lambda n: backs[n]["backSeconds"])
    phase = next(p for p in hold["phases"] if p["label"] == f"sigterm-{name}")
    if not phase.get("rejoinWaitMs"):
        return ""
    def p50(key):
        return f"{phase[key]['p50']:,.0f} ms"
    return (f"Where the time went at the slowest node ({name}, every client back {backs[name]['backSeconds']:.2f} s after "
            f"its SIGTERM), p50 of its {phase['losses']:,} rejoins: the node's `draining` reached a client "
            f"{p50('drainingAfterMarkMs')} after the SIGTERM; the client waited {p50('rejoinWaitMs')} (its room's "
            f"`reconnectAfterMs`, spread over the first second, both clients of a room alike); its connect through nginx "
            f"took {p50('rejoinConnectMs')} (`&via=` names the node the draining node handed the room to, and nginx "
            f"sends the upgrade straight there; the other two nodes take the drained node's clients within that second); "
            f"the join there took {p50('rejoinJoinMs')} (the seat recovered from the client's token, the room from PostgreSQL). "
            f"Connects per rejoin: {phase.get('rejoinConnects')}; clients lost more than once: "
            f"{phase.get('clientsLostMoreThanOnce')}. On these 2 cores the connect is the part that grows with the load "
            "(the nodes, nginx, PostgreSQL and the 3,000 clients of the load generator share them).")


def write_rolling_table(r):
    """docs/cluster.md's rolling-restart table (issue 34: SIGTERM → every client back ≤ 3 s per node, 0 client
    errors), from the same run as docs/benchmarks.md's Cluster section."""
    hold = r["hold"]
    rows = []
    for name, back in sorted(r.get("rolling", {}).items()):
        phase = next(p for p in hold["phases"] if p["label"] == f"sigterm-{name}")
        errs = sum(phase["errors"].values())
        held = back.get("held")
        moved_once = phase.get("clientsLostMoreThanOnce") == 0
        met = back["backSeconds"] <= ROLLING_TARGET_S and errs == 0 and not back["away"] and moved_once
        rows.append(f"| {name} | {'-' if held is None else f'{held:,}'} | {phase['losses']:,} | {back['backSeconds']:.2f} s | "
                    f"{p50_max(phase.get('drainingAfterMarkMs'))} | {p50_max(phase.get('rejoinWaitMs'))} | {p50_max(phase.get('rejoinRetryingMs'))} | "
                    f"{p50_max(phase.get('rejoinConnectMs'))} | {p50_max(phase.get('rejoinJoinMs'))} | {ms(phase['rejoinMs'])} | "
                    f"{errs:,} | {back['away']} | {'met' if met else '**missed**'} |")
    section = "\n".join([
        ROLLING_BEGIN,
        f"**Rolling restart at {r['clients']:,} clients** ({r['rooms']:,} rooms through nginx; `benchmarks/cluster.sh`, "
        f"run on {r['date'][:10]}, commit `{r['commit'][:7]}`{', dirty tree' if r['dirty'] else ''}, {r['machine']}; the "
        "whole run is in docs/benchmarks.md, Cluster). Each node in turn gets SIGTERM, drains, exits and is started "
        f"again; target: every client back within {ROLLING_TARGET_S:.0f} s of the SIGTERM, no client error, each room moved "
        "once (no client lost twice while the node drained; the connections lost match the node's at the SIGTERM). Where a rejoin's time goes, p50 / max in ms: "
        "the node's `draining` after the SIGTERM, the client's delay before it connects again (`reconnectAfterMs`), retries (failed connects or joins and their backoffs), the connect through nginx (to the room's next node, named by the drain: `&via=`), the join on the new node (the room "
        "recovered from the client's token and PostgreSQL).",
        "",
        "| node | connections at SIGTERM | connections lost | SIGTERM → every client back | `draining` | client's delay | retrying | connect | join | whole rejoin p50 / p90 / p99 / max (ms) | client errors | not back | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        where_the_time_went(r),
        ROLLING_END,
    ])
    text = open(CLUSTER_MD).read()
    head, rest = text.split(ROLLING_BEGIN, 1)
    with open(CLUSTER_MD, "w") as f:
        f.write(head + section + rest.split(ROLLING_END, 1)[1])
    print("wrote the rolling-restart table of docs/cluster.md")


def render(r):
    hold, kill = r["hold"], r["killPhase"]
    kinds = ", ".join(f"{v:,} {k}" for k, v in sorted(kill["kinds"].items())) or "none"
    errors = ", ".join(f"{v:,} × {k}" for k, v in sorted(kill["errors"].items())) or "none"
    per_node = ", ".join(f"{k}: {v if v is not None else '?'}" for k, v in sorted(r["connectionsBefore"].items()))
    after = ", ".join(f"{k}: {v if v is not None else 'down'}" for k, v in sorted(r["connectionsAfterKill"].items()))
    jl = r["joinLatency"]
    restart_phase = next(p for p in hold["phases"] if p["label"].startswith("restart-"))
    verdict = "**passed**" if not r["failures"] else "**failed**: " + "; ".join(f.split(": [")[0] for f in r["failures"])
    lines = [
        BEGIN,
        "## Cluster",
        "",
        f"One run of `benchmarks/cluster.sh` on {r['date'][:10]} (commit `{r['commit'][:7]}`{', dirty tree' if r['dirty'] else ''}), "
        f"{r['machine']}, release builds, loopback, in a network namespace of its own: three `duet serve` nodes "
        "(`--database-url` on one PostgreSQL 15, `--node-id node1…3`) behind nginx with `deploy/nginx/duet-cluster.conf` "
        "(`hash $arg_rid consistent`), started by `Tests/e2e/cluster/cluster.py`. The generator reaches nginx over plain "
        "HTTP on loopback (the site's HTTPS server block with only its listen/TLS lines changed, and without its per-address "
        f"`limit_conn`), the nodes' per-address limits are off (every client is 127.0.0.1), and nginx gets `worker_connections {r['nginx']['workerConnections']}` "
        f"and `worker_rlimit_nofile {r['nginx']['workerRlimitNofile']}` (Debian's default of 768 per worker cannot proxy this many "
        "WebSockets: each is two connections). Generator, nginx, PostgreSQL and the three nodes share the cores.",
        "",
        f"**Failover under load.** {r['rooms']:,} rooms, {r['clients']:,} WebSocket clients (`duet-bench hold`: "
        f"`/ws?rid=ROOM`, pings, and the engine's reconnect: backoff 500 ms · 2ⁿ ≤ 5 s ± 20 %, rejoin with cid + "
        f"reconnect token), all joined through nginx in {r['readySeconds']:.1f} s at {r['joinRate']} connects/s. "
        f"Connections per node: {per_node}. **{r['victim']}** (the most) was killed with SIGKILL: its "
        f"{r['victimClients']:,} clients reconnected through nginx (connection refused → the next node on the hash ring), "
        f"which recovered their rooms from the shared database with the same cids — "
        f"**every client back {r['backSeconds']:.2f} s after the kill** (joined again, and both clients of its room "
        f"listing each other connected in `room_state`). After: {after}.",
        "",
        "| measured | value |",
        "|---|---|",
        f"| clients of the killed node | {r['victimClients']:,} |",
        f"| kill → every client back (rejoined, its room whole) | {r['backSeconds']:.2f} s |",
        f"| per client, connection lost → rejoined p50 / p90 / p99 / max (ms) | {ms(kill['rejoinMs'])} |",
        f"| rejoins by `joined.reconnect` | {kinds} |",
        f"| rejoins with another cid | {hold['cidChanged']} |",
        f"| errors seen by clients during the failover | {errors} |",
        f"| after {r['victim']} came back: clients that moved again | {restart_phase['losses']} (a room stays on the node "
        "that recovered it until its clients reconnect) |",
        "",
        f"**Rolling restart at the same scale.** Then each node in turn got SIGTERM (it sends `draining`, closes its "
        "connections after `--drain-grace 2` and exits), was started again and answered `/healthz`; the time from the "
        "SIGTERM until every client was back:",
        "",
        "| node | connections lost (a client can move more than once) | SIGTERM → exited | SIGTERM → every client back | rejoin p50 / p90 / p99 / max (ms) | client errors |",
        "|---|---|---|---|---|---|",
    ]
    for name, back in sorted(r.get("rolling", {}).items()):
        phase = next(p for p in hold["phases"] if p["label"] == f"sigterm-{name}")
        errs = ", ".join(f"{v:,} × {k}" for k, v in sorted(phase["errors"].items())) or "none"
        lines.append(f"| {name} | {phase['losses']:,} | {back['exitedSeconds']:.1f} s | {back['backSeconds']:.2f} s | "
                     f"{ms(phase['rejoinMs'])} | {errs} |")
    lines += [
        "",
        f"At the end of the whole run: {hold['clientsAway']:,} clients away, {hold['roomsNotWhole']:,} rooms not whole (a "
        f"client missing, or the two split over two nodes), {hold['cidChanged']} cid changes; assertions as in "
        f"`rolling.py`: {verdict}.",
        "",
        "A node that held no rooms (it had just come back) loses nobody. More connections lost than the node had "
        "clients would mean rooms moved more than once: a node that sees another node claim one of its rooms sends "
        "that room's clients over, so a room whose two clients reached different nodes moves again. A drain names each "
        "room's next node to both of its clients (`draining {via}`, routed by nginx's `&via=`), so they arrive together.",
        "",
        failover_paragraph(r),
        "",
        f"**Join latency through nginx vs one node directly.** After the run, on the idle cluster: {jl['rooms']:,} rooms "
        f"started at {jl['joinsPerSecond']:.0f} joins/s, alternating between nginx and {jl['direct']['url']} (node2) so "
        "both see the same load; two clients per room connect (`/ws?rid=`), join, leave. Timed by the clients.",
        "",
        "| target | connect (upgrade) p50 / p90 / p99 / max (ms) | join → joined p50 / p90 / p99 / max (ms) | failures |",
        "|---|---|---|---|",
        f"| through nginx | {ms(jl['proxy']['connectMs'])} | {ms(jl['proxy']['joinMs'])} | {jl['proxy']['failures']} |",
        f"| node directly | {ms(jl['direct']['connectMs'])} | {ms(jl['direct']['joinMs'])} | {jl['direct']['failures']} |",
        "",
        "The nodes run as cluster.py starts them (`--log-level info`: a log line per join, read by the harness), on "
        "the same two cores as nginx, PostgreSQL and the generator; through nginx adds one proxy hop each way.",
        END,
    ]
    write_rolling_table(r)
    write_outage_row(r)
    section = "\n".join(lines)
    text = open(MD_PATH).read() if os.path.exists(MD_PATH) else "# Benchmarks\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + section + rest.split(END, 1)[1]
    elif "\n## Targets" in text:
        head, tail = text.split("\n## Targets", 1)
        text = head.rstrip("\n") + "\n\n" + section + "\n\n## Targets" + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(MD_PATH, "w") as f:
        f.write(text)
    print("wrote the Cluster section of docs/benchmarks.md")


if __name__ == "__main__":
    if "--render" in sys.argv:
        with open(JSON_PATH) as f:
            render(json.load(f))
    else:
        results = measure()
        with open(JSON_PATH, "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)
        if os.environ.get("CLUSTER_NO_RENDER") != "1":
            render(results)
        if results["failures"]:
            sys.exit("cluster benchmark: " + "; ".join(results["failures"]))
