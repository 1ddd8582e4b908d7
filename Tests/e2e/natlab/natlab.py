"""The NAT lab: real calls between two homes, each behind a NAT router of its own, through a "public" network
with `duet serve` (and its STUN server) and coturn. Everything runs in network namespaces this script creates
(`ip netns add`, names unique to the run) and deletes when it ends, on failure too; nothing outside them is touched.

    home A (192.168.1.2) ─ router A ─┐                           ┌─ router B ─ home B (192.168.2.2)
      Chromium or duet call  NAT, 203.0.113.11     public (bridge)     203.0.113.12, NAT   Chromium
                                     └─ 203.0.113.1 duet serve (HTTP + STUN :3478)
                                        203.0.113.2 coturn (UDP/TCP :3478, TLS :5349)
                                        203.0.113.254 "the rest of the internet": takes the public side's default
                                        route and forwards nothing (see below) ──┘

What makes it behave like real networks (measured, ../shared/notes/machine-facts.md):
- each router NATs with MASQUERADE (endpoint-independent mapping: one outside port per inside socket, whatever the
  destination; address-and-port-dependent filtering); `--random-fully` makes it symmetric (a new outside port per
  destination). The lab checks its own NATs from the routers' conntrack tables (`mapping_check`).
- each router drops unsolicited UDP to itself (a WAN firewall). Without it the first ICE check to reach the other
  router plants a conntrack entry that clashes with that router's own mapping, and direct calls take 25–60 s.
- the public namespace has a default route (to 203.0.113.254, which forwards nothing): without one coturn's relay
  gets ENETUNREACH for peers' private addresses, and relayed media stalls.

    python3 natlab.py SCENARIO      (re-runs itself under `unshare -n` so it never touches the machine's network)

Each scenario asserts the path it names (candidate types per side, relay protocol) with media both ways (video
frames and decoded audio, scenarios.media_flows; duet call's own counters), and records its outcome with its
measurements (time from opening the pages to media both ways, candidate types, relay protocol, recovery) under
.build/results/<run-id>/natlab/ (Tests/e2e/results.py), passed or not; scripts/publish-results.sh makes
docs/networks.md's table from a complete run. NATLabTests runs one scenario per test.

`DUET_NATLAB_BREAK` (a harness switch that shows the suite can say no; off unless set):
- `relay-only`: the direct scenario forces relay-only ICE (TURN configured, `?relay=1`): its "not relay" check fails;
- `no-turn`: the UDP-blocked scenarios run without TURN: the call cannot connect and they fail;
- `untrusted-cert`: Chromium is not told to trust coturn's certificate: the TLS scenario cannot connect (NOTES_TLS);
- `no-ice-restart`: ICE restarts do nothing in both pages (chaos.py's break): the mapping-flush scenario cannot recover.
"""
import atexit
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
sys.path.insert(0, os.path.join(HERE, "..", "peer"))
import phase_timing  # noqa: E402
from cdp import Browser, in_private_netns  # noqa: E402
import scenarios  # noqa: E402
from scenarios import Server, collect, expect, in_call, log, media_flows, stats, watch  # noqa: E402
import peer_scenarios  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "chaos"))
import chaos  # noqa: E402  (its BREAK_ICE_RESTARTS, for DUET_NATLAB_BREAK=no-ice-restart)
import results  # noqa: E402

BREAK = os.environ.get("DUET_NATLAB_BREAK", "")
PREFIX = "duetnat-"           # every namespace of the lab: duetnat-<pid>-<hex>-<role>
SERVER_IP, TURN_IP, VOID_IP = "203.0.113.1", "203.0.113.2", "203.0.113.254"
NAT_NAMES = {"eim": "endpoint-independent", "symmetric": "symmetric"}
DIRECT = {"srflx", "prflx"}   # a direct path through NATs: reflexive candidates on both ends
PROBLEM = "duet.connectivityProblem"  # why media does not connect, as the call page explains it (null while fine)
# Diagnostics only: remembers the page's RTCPeerConnections (the constructor behind a Proxy, nothing else changed) so a
# failure can log every candidate pair ICE tried — its addresses, state, checks sent and answered.
KEEP_PEERS = """(() => { const peers = window.__natlabPeers = [];
  window.RTCPeerConnection = new Proxy(RTCPeerConnection, {
    construct(target, args, newTarget) { const pc = Reflect.construct(target, args, newTarget); peers.push(pc); return pc; } });
})();"""
ICE_REPORT = """(async () => {
  const out = [];
  for (const pc of window.__natlabPeers || []) {
    const stats = await pc.getStats(), c = (id) => { const x = stats.get(id); return x ? `${x.candidateType} ${x.address}:${x.port}` +
      (x.relayProtocol ? ` (${x.relayProtocol})` : '') : id; };
    const pairs = [];
    stats.forEach((s) => { if (s.type === 'candidate-pair') pairs.push(`${c(s.localCandidateId)} -> ${c(s.remoteCandidateId)}: ` +
      `${s.state}${s.nominated ? ' nominated' : ''}, requests ${s.requestsSent}/${s.responsesReceived} answered, ` +
      `requests received ${s.requestsReceived}`); });
    out.push({ice: pc.iceConnectionState, signaling: pc.signalingState, pairs});
  }
  return out;
})()"""


def sh(*argv, check=True):
    """Runs a command (no shell), failing with its output."""
    done = subprocess.run(argv, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def in_ns(ns):
    """The prefix that runs a command in namespace `ns`; `setpriv --pdeathsig KILL` so nothing outlives this script
    even when it is SIGKILLed (the namespaces are then removed by the next run, see remove_stale)."""
    return ["setpriv", "--pdeathsig", "KILL", "ip", "netns", "exec", ns]


def remove_stale():
    """Namespaces left by a lab whose script died without cleaning up (SIGKILL): named with that script's pid."""
    for line in sh("ip", "netns", "list").splitlines():
        name = line.split()[0] if line.strip() else ""
        match = re.match(rf"{PREFIX}(\d+)-", name)
        if match and not os.path.exists(f"/proc/{match.group(1)}"):
            log("removing a stale lab namespace", name)
            sh("ip", "netns", "del", name, check=False)


class Home:
    """A home network: the router namespace (NAT, firewall) and the home namespace behind it."""

    def __init__(self, lab, name, index, nat):
        self.lab, self.name, self.nat = lab, name, nat
        self.router, self.ns = lab.ns[f"r{name.lower()}"], lab.ns[f"h{name.lower()}"]
        self.gateway, self.address = f"192.168.{index}.1", f"192.168.{index}.2"
        self.wan = f"203.0.113.{10 + index}"
        self.browser = self.page = self.peer = None
        self.network = [f"{NAT_NAMES[nat]} NAT"]   # what the results table says about this home's network

    def note(self, what):
        self.network.append(what)
        results.detail(network={home.name: ", ".join(home.network) for home in self.lab.homes})

    def ipt(self, *rule):
        sh(*in_ns(self.router), "iptables", "-w", *rule)

    def block_udp(self):
        """The router forwards no UDP from the home (a firewall that allows only TCP out)."""
        self.ipt("-I", "FORWARD", "1", "-i", "lan", "-p", "udp", "-j", "DROP")
        self.note("UDP blocked")

    def block_tcp_port(self, port):
        self.ipt("-I", "FORWARD", "1", "-i", "lan", "-p", "tcp", "--dport", str(port), "-j", "DROP")
        self.note(f"TCP {port} blocked")

    def conntrack(self):
        """The router's UDP conntrack entries: (inside ip, inside port, destination ip, destination port, outside ip,
        outside port) — what its NAT mapped. (/proc/net/nf_conntrack of the router's namespace.)"""
        text = sh(*in_ns(self.router), "cat", "/proc/net/nf_conntrack")
        entries = []
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 3 or fields[2] != "udp":
                continue
            pairs = [f.split("=", 1) for f in fields if "=" in f]
            src = [v for k, v in pairs if k == "src"]
            dst = [v for k, v in pairs if k == "dst"]
            sport = [v for k, v in pairs if k == "sport"]
            dport = [v for k, v in pairs if k == "dport"]
            if len(src) >= 2 and src[0] == self.address:
                entries.append((src[0], int(sport[0]), dst[0], int(dport[0]), dst[1], int(dport[1])))
        return entries

    def change_outside_address(self):
        """The ISP gives the router a new outside address (as after a router reboot or a new DHCP lease): the old
        one goes, and with it every NAT mapping on it (MASQUERADE drops its conntrack entries)."""
        old, self.wan = self.wan, f"203.0.113.{int(self.wan.rsplit('.', 1)[1]) + 10}"
        sh(*in_ns(self.router), "sh", "-c", f"ip addr flush dev wan && ip addr add {self.wan}/24 dev wan && "
                                            f"ip route add default via {VOID_IP}")
        self.note("outside address changed mid-call")
        return old

    def launch(self, origin, extra_flags=(), init_script=None):
        """Chromium in this home, with a blank page: started before the call, so its start-up is not the call's.
        `init_script` runs in the page before any of its own scripts (the harness's breaks)."""
        # (Without --allow-loopback-in-peer-connection: a home has a real interface, and loopback is no path.)
        self.browser = Browser.launch(prefix=in_ns(self.ns), without_flags=("--allow-loopback-in-peer-connection",), extra_flags=(
            f"--unsafely-treat-insecure-origin-as-secure={origin}",
            # Host candidates as real addresses (not mDNS names), as inside the homes of the issue.
            "--disable-features=WebRtcHideLocalIpsWithMdns", *extra_flags))
        self.page = watch(self.browser.new_page(), self.name)
        for script in (KEEP_PEERS, init_script):
            if script:
                self.page.send("Page.addScriptToEvaluateOnNewDocument", {"source": script})

    def ice_report(self):
        """Every candidate pair this page's peer connections tried, for a failure's log (see KEEP_PEERS)."""
        return self.page.evaluate(ICE_REPORT, timeout=5)

    def open(self, url):
        self.page.navigate(url, timeout=15)
        self.page.wait_for("window.duet && duet.page === 'call'", 15, message=f"{self.name}: call page loads")

    def side(self):
        """What this side's call runs over now: the selected pair's local and remote candidate types, protocols."""
        if self.page is not None:
            s = stats(self.page)
            return {"client": "chromium", "nat": NAT_NAMES[self.nat], "local": s.get("candidateType"),
                    "remote": s.get("remoteCandidateType"), "localProtocol": s.get("localProtocol"),
                    "relayProtocol": s.get("relayProtocol"), "rttMs": s.get("rttMs")}
        if self.peer is not None:
            m = self.peer.media()
            return {"client": "duet call", "nat": NAT_NAMES[self.nat], "local": m.get("candidateType"),
                    "remote": None, "localProtocol": None, "relayProtocol": None, "rttMs": m.get("rttMs")}
        return {"client": None, "nat": NAT_NAMES[self.nat]}


class Lab:
    """The whole topology (see the module's docstring); `with Lab(nat_b="symmetric") as lab:`."""

    def __init__(self, nat_a="eim", nat_b="eim"):
        self.tag = f"{os.getpid()}-{secrets.token_hex(2)}"
        self.ns = {role: f"{PREFIX}{self.tag}-{role}" for role in ("pub", "void", "ra", "rb", "ha", "hb")}
        self.created, self.servers, self.turns = [], [], []
        self.dir = tempfile.mkdtemp(prefix="duet-natlab-")
        self.a, self.b = Home(self, "A", 1, nat_a), Home(self, "B", 2, nat_b)
        self.homes = (self.a, self.b)
        results.detail(network={home.name: ", ".join(home.network) for home in self.homes})
        self._closed = False
        atexit.register(self.close)
        try:
            with phase_timing.spent("namespace set-up"):
                self._build()
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def run(self, role, command):
        sh(*in_ns(self.ns[role]), "sh", "-c", command)

    def _build(self):
        remove_stale()
        for role, ns in self.ns.items():
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            # No IPv6: a link-local address turning up seconds later reads to Chromium as a network change.
            self.run(role, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 && "
                           "ip link set lo up")
        pub = self.ns["pub"]
        self.run("pub", f"ip link add name br0 type bridge && ip link set br0 up && "
                        f"ip addr add {SERVER_IP}/24 dev br0 && ip addr add {TURN_IP}/24 dev br0")
        # "The rest of the internet": the public side's default route goes here, and it forwards nothing.
        sh("ip", "-n", pub, "link", "add", "name", "to-void", "type", "veth", "peer", "name", "wan", "netns", self.ns["void"])
        self.run("pub", f"ip link set to-void master br0 && ip link set to-void up && ip route add default via {VOID_IP}")
        self.run("void", f"ip addr add {VOID_IP}/24 dev wan && ip link set wan up && sysctl -qw net.ipv4.ip_forward=0")
        for home in self.homes:
            r = home.name.lower()
            sh("ip", "-n", pub, "link", "add", "name", f"to-r{r}", "type", "veth", "peer", "name", "wan", "netns", home.router)
            self.run("pub", f"ip link set to-r{r} master br0 && ip link set to-r{r} up")
            sh("ip", "-n", home.router, "link", "add", "name", "lan", "type", "veth", "peer", "name", "eth0", "netns", home.ns)
            masquerade = "MASQUERADE --random-fully" if home.nat == "symmetric" else "MASQUERADE"
            sh(*in_ns(home.router), "sh", "-c", " && ".join((
                f"ip addr add {home.wan}/24 dev wan", "ip link set wan up",
                f"ip addr add {home.gateway}/24 dev lan", "ip link set lan up",
                f"ip route add default via {VOID_IP}",
                "sysctl -qw net.ipv4.ip_forward=1",
                f"iptables -w -t nat -A POSTROUTING -o wan -j {masquerade}",
                # The WAN firewall: no unsolicited UDP to the router itself (see the module's docstring).
                "iptables -w -A INPUT -i wan -p udp -j DROP",
                "iptables -w -P FORWARD DROP",
                "iptables -w -A FORWARD -i lan -o wan -j ACCEPT",
                "iptables -w -A FORWARD -i wan -o lan -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT")))
            sh(*in_ns(home.ns), "sh", "-c", f"ip addr add {home.address}/24 dev eth0 && ip link set eth0 up && "
                                            f"ip route add default via {home.gateway}")
        # Everything is up before any Chromium starts: an interface coming up under a loading page fails its loads.
        links = [("pub", "br0"), ("pub", "to-void"), ("void", "wan"), ("ra", "wan"), ("ra", "lan"), ("rb", "wan"),
                 ("rb", "lan"), ("ha", "eth0"), ("hb", "eth0")]
        deadline = time.monotonic() + 10
        while True:
            down = [f"{role}/{dev}" for role, dev in links
                    if "state UP" not in sh("ip", "-n", self.ns[role], "-o", "link", "show", "dev", dev)]
            if not down:
                break
            expect(time.monotonic() < deadline, f"the lab's links came up: still down {down}")
            time.sleep(0.05)
        log(f"lab {self.tag}: A behind {NAT_NAMES[self.a.nat]} NAT, B behind {NAT_NAMES[self.b.nat]} NAT")

    # MARK: servers in the public namespace

    def serve(self, *args):
        """`duet serve` on the public address (its STUN server on UDP 3478 there, by default)."""
        server = Server(*args, host=SERVER_IP, prefix=in_ns(self.ns["pub"]))
        self.servers.append(server)
        return server

    def origin(self, server):
        return server.url.rstrip("/")

    def new_room(self, server):
        """A room id, asked for from home A (this script's own namespace reaches none of the lab's addresses)."""
        out = sh(*in_ns(self.a.ns), "curl", "-sf", "--max-time", "5", "-X", "POST", server.url + "api/room-id")
        return json.loads(out)["roomId"]

    def certificates(self):
        """A throwaway CA and a certificate for coturn's TLS listener (203.0.113.2); returns (cert, key, the SPKI
        hash of the certificate's key for Chromium's --ignore-certificate-errors-spki-list)."""
        d = self.dir
        sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
           "-subj", "/CN=Duet NAT lab CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
        sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
           "-subj", f"/CN={TURN_IP}", "-keyout", f"{d}/turn.key", "-out", f"{d}/turn.csr")
        with open(f"{d}/turn.ext", "w") as f:
            f.write(f"subjectAltName=IP:{TURN_IP}\nextendedKeyUsage=serverAuth\n")
        sh("openssl", "x509", "-req", "-in", f"{d}/turn.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
           "-CAcreateserial", "-days", "2", "-extfile", f"{d}/turn.ext", "-out", f"{d}/turn.pem")
        spki = subprocess.run(f"openssl x509 -in {d}/turn.pem -pubkey -noout | openssl pkey -pubin -outform der | "
                              "openssl dgst -sha256 -binary | base64", shell=True, check=True, capture_output=True,
                              text=True).stdout.strip()
        return f"{d}/turn.pem", f"{d}/turn.key", spki

    def coturn(self, secret, tls=False):
        """coturn on 203.0.113.2: UDP and TCP 3478, and TLS 5349 with `tls`; returns once it listens."""
        turn = Coturn(self, secret, tls)
        self.turns.append(turn)
        return turn

    def turn_args(self, secret, *transports):
        uris = {"udp": f"turn:{TURN_IP}:3478?transport=udp", "tcp": f"turn:{TURN_IP}:3478?transport=tcp",
                "tls": f"turns:{TURN_IP}:5349?transport=tcp"}
        return ["--turn-secret", secret, *[a for t in transports for a in ("--turn-uri", uris[t])]]

    # MARK: teardown

    def close(self):
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        results.capture_failing()  # a failing scenario's pages and peers as they were, before they go
        failing = sys.exc_info()[1] is not None
        if failing:  # each side's path, what ICE tried, and what the NATs had mapped, when it failed
            try:
                results.detail(sidesAtFailure=sides(self))
            except Exception as error:  # noqa: BLE001 — a dead page must not hide the failure itself
                log(f"sides unreadable: {error}")
            for home in self.homes:
                if home.page is not None:
                    try:
                        log(f"{home.name}: ICE candidate pairs: " + json.dumps(home.ice_report(), indent=1))
                    except Exception as error:  # noqa: BLE001
                        log(f"{home.name}: candidate pairs unreadable: {error}")
            for home in self.homes:
                try:
                    lines = [line for line in sh(*in_ns(home.router), "cat", "/proc/net/nf_conntrack").splitlines()
                             if " udp " in line and "dport=53 " not in line]
                    log(f"router {home.name} ({home.wan}) UDP conntrack:\n  " + "\n  ".join(lines))
                except Exception as error:  # noqa: BLE001
                    log(f"router {home.name}: conntrack unreadable: {error}")
        for home in self.homes:
            if home.peer is not None:
                home.peer.stop()
            if home.browser is not None:
                if failing:
                    log(f"{home.name}: chromium log tail:\n" + home.browser.log_tail(15))
                home.browser.close()
        for server in self.servers:
            if failing:
                log("duet serve log tail:\n" + server.log_tail(15))
            server.stop()
        for turn in self.turns:
            if failing:
                log("coturn log tail:\n" + turn.log_tail(15))
            turn.stop()
        for ns in reversed(self.created):
            # Whatever still runs in the lab was started here (setpriv ... ip netns exec); end it by its id.
            for pid in sh("ip", "netns", "pids", ns, check=False).split():
                try:
                    os.kill(int(pid), 9)
                except (ProcessLookupError, ValueError):
                    pass
            sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)
        left = [ns for ns in self.created if ns in sh("ip", "netns", "list", check=False)]
        if left:
            log("WARNING: lab namespaces not removed:", left)


class Coturn:
    def __init__(self, lab, secret, tls):
        self.dir = tempfile.mkdtemp(prefix="duet-natlab-turn-", dir=lab.dir)
        tls_args = ["--no-tls"]
        if tls:
            cert, key, self.spki = lab.certificates()
            tls_args = [f"--cert={cert}", f"--pkey={key}", "--tls-listening-port=5349"]
        self.log_path = os.path.join(self.dir, "turn.log")
        self.proc = subprocess.Popen(
            [*in_ns(lab.ns["pub"]), "turnserver", "-n", f"--listening-ip={TURN_IP}", f"--relay-ip={TURN_IP}",
             "--listening-port=3478", "--use-auth-secret", f"--static-auth-secret={secret}", "--realm=duet.test",
             *tls_args, "--no-dtls", "--no-cli", "--log-file=stdout", "--simple-log",
             f"--pidfile={os.path.join(self.dir, 'turnserver.pid')}"],
            stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # Up when it listens on every port it was given (ss in the public namespace).
        wanted = {("tcp", 3478), ("udp", 3478)} | ({("tcp", 5349)} if tls else set())
        deadline = time.monotonic() + 10
        while True:
            listening = set()
            for proto, flag in (("tcp", "-Hltn"), ("udp", "-Hlun")):
                for line in sh(*in_ns(lab.ns["pub"]), "ss", flag, check=False).splitlines():
                    fields = line.split()
                    if len(fields) >= 4 and fields[3].startswith(TURN_IP + ":"):
                        listening.add((proto, int(fields[3].rsplit(":", 1)[1])))
            if wanted <= listening:
                break
            expect(self.proc.poll() is None, f"coturn exited ({self.proc.returncode}): {self.log_tail()}")
            expect(time.monotonic() < deadline, f"coturn listens on {sorted(wanted)}: only {sorted(listening)}")
            time.sleep(0.05)
        log("coturn up" + (" with TLS" if tls else ""))

    def log_tail(self, n=15):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()  # turnserver takes its time over SIGTERM
            self.proc.wait(5)


# MARK: - Checks

def mapping_check(home, want):
    """The router's NAT behaves as `want` says, from its conntrack table: for every inside socket that talked to
    more than one destination, one outside port ("eim") or a different one per destination ("symmetric")."""
    by_socket = {}
    for inside_ip, inside_port, dst, dport, _outside_ip, outside_port in home.conntrack():
        by_socket.setdefault((inside_ip, inside_port), {})[(dst, dport)] = outside_port
    spread = {s: m for s, m in by_socket.items() if len(m) >= 2}
    expect(spread, f"router {home.name}: some socket talked to two destinations (conntrack: {by_socket})")
    for sock, mapping in spread.items():
        ports = set(mapping.values())
        if want == "eim":
            expect(len(ports) == 1, f"router {home.name} maps {sock} to one outside port whatever the destination: {mapping}")
        else:
            expect(len(ports) == len(mapping), f"router {home.name} maps {sock} to a new port per destination: {mapping}")
    return {f"{ip}:{port}": {f"{d}:{p}": o for (d, p), o in m.items()} for (ip, port), m in spread.items()}


def expect_path(home, local, remote=None, relay_protocol=None, what=""):
    """This side's selected pair: its local candidate type in `local`, the remote's in `remote` (when given) and
    the relay's protocol to coturn (when given)."""
    side = home.side()
    expect(side["local"] in local, f"{home.name}'s local candidate is {sorted(local)} {what}: {side}")
    if remote is not None:
        expect(side["remote"] in remote, f"{home.name}'s remote candidate is {sorted(remote)} {what}: {side}")
    if relay_protocol is not None:
        expect(side["relayProtocol"] == relay_protocol, f"{home.name} reaches coturn over {relay_protocol} {what}: {side}")
    return side


def expect_relayed(lab, relay_protocol=None, what=""):
    """The call goes through coturn: one side's local candidate is a relay (over `relay_protocol` when given) and
    the other side sees that relay as its remote candidate. Either side's relay will do: behind a symmetric NAT,
    B may just as well send straight to A's relay (B's local candidate then peer-reflexive)."""
    a, b = lab.a.side(), lab.b.side()
    relays = [(home, mine, theirs) for home, mine, theirs in ((lab.a, a, b), (lab.b, b, a)) if mine["local"] == "relay"]
    expect(relays, f"a relay candidate on the selected path {what}: A {a}, B {b}")
    for home, mine, theirs in relays:
        expect(theirs["remote"] == "relay", f"both ends agree the path runs through {home.name}'s relay {what}: A {a}, B {b}")
        if relay_protocol is not None:
            expect(mine["relayProtocol"] == relay_protocol, f"{home.name} reaches coturn over {relay_protocol} {what}: {mine}")
    return [home.name for home, _, _ in relays]


def sides(lab):
    return {home.name: home.side() for home in lab.homes}


def both_media(lab, timeout, what):
    """Media both ways: each Chromium page decodes new video frames and audio above silence (media_flows); a duet
    call side decodes video and a second of audio above silence (its own counters)."""
    for home in lab.homes:
        if home.page is not None:
            media_flows(home.page, timeout=timeout, what=f"{home.name}: video and audio {what}")
        else:
            home.peer.wait_media(since=home.peer.mark(), timeout=timeout, what=f"{home.name} (duet call): video and audio {what}")


def call(lab, server, query="", timeout=30, flags=None, init_script=None):
    """Opens the call in both homes' Chromiums (A first, so A hosts) and waits until both are in the call with
    media both ways. Records the seconds from opening the pages to both connected (`connectSeconds`) and to media
    flowing both ways (`mediaSeconds`, the scenario's time), and each side's path."""
    url = f"{server.url}call/{lab.new_room(server)}{query}"
    flags = flags or {}
    for home in lab.homes:
        home.launch(lab.origin(server), flags.get(home.name, ()), init_script)
    opened = time.monotonic()
    for home in lab.homes:
        home.open(url)
    return opened, settle(lab, opened, timeout, "after opening the call")


def settle(lab, since, timeout, what):
    """Both sides in the call with media connected, then media both ways; (seconds to connected, to media) since
    `since`. A page that does not connect says why in the failure's first line (its connectivity explanation)."""
    for home in lab.homes:
        if home.page is not None:
            try:
                in_call(home.page, timeout, what=f"{home.name} in the call, media connected, {what}")
            except TimeoutError as error:
                raise TimeoutError(f"{home.name} not connected {what} within {timeout}s; {explanation(home.page)}\n"
                                   f"{error}") from None
        else:
            home.peer.in_call(timeout, what=f"{home.name} (duet call) in the call, {what}")
    connected = round(time.monotonic() - since, 1)
    both_media(lab, timeout, what)
    flowing = round(time.monotonic() - since, 1)
    return connected, flowing


def explanation(page):
    """What the page says about why media does not connect (duet.connectivityProblem: its code and what was tried)."""
    try:
        problem = page.evaluate(PROBLEM)
    except Exception as error:  # noqa: BLE001 — a dead page must not hide the failure itself
        return f"its explanation is unreadable: {error}"
    if not problem:
        return "the page explains nothing"
    return f"the page says {problem.get('code')}: " + " ".join(problem.get("tried") or [problem.get("message", "")])


def record_connect(lab, connected, flowing, expected):
    results.detail(connectSeconds=connected, mediaSeconds=flowing, expected=expected, sides=sides(lab))
    results.report(seconds=flowing)
    log(f"connected after {connected} s, media both ways after {flowing} s:", json.dumps(sides(lab)))


def restarts(lab):
    return {home.name: home.page.evaluate("duet.iceRestarts") for home in lab.homes if home.page is not None}


# MARK: - Scenarios

def scenario_direct(_browser):
    """Endpoint-independent NAT on both sides, default server flags: direct through STUN. Server- or peer-reflexive
    candidates on both ends (never relay or host), media both ways, no ICE restart needed."""
    with Lab() as lab:
        if BREAK == "relay-only":
            secret = "natlab-" + secrets.token_hex(8)
            lab.coturn(secret)
            server, query = lab.serve(*lab.turn_args(secret, "udp")), "?relay=1"
            log("DUET_NATLAB_BREAK=relay-only: TURN configured and relay-only ICE forced")
        else:
            server, query = lab.serve(), ""
        _, (connected, flowing) = call(lab, server, query)
        record_connect(lab, connected, flowing, "srflx/prflx ↔ srflx/prflx on both sides (direct)")
        for home in lab.homes:
            expect_path(home, DIRECT, DIRECT, what="(a direct path through both NATs)")
        expect(all(r == [] for r in restarts(lab).values()), f"connected on the first ICE attempt: {restarts(lab)}")
        results.detail(mappings={home.name: mapping_check(home, "eim") for home in lab.homes})
        results.report(how="direct through STUN, no ICE restart")


def scenario_symmetric_turn(_browser):
    """Symmetric NAT on one side, TURN configured: through the relay. B is behind the symmetric NAT; a relay
    candidate on the selected pair (UDP to coturn), media both ways."""
    with Lab(nat_b="symmetric") as lab:
        secret = "natlab-" + secrets.token_hex(8)
        lab.coturn(secret)
        server = lab.serve(*lab.turn_args(secret, "udp", "tcp"))
        _, (connected, flowing) = call(lab, server)
        record_connect(lab, connected, flowing, "through a relay (UDP): one side's local candidate relay, the other's remote")
        relayed = expect_relayed(lab, "udp", "(B behind the symmetric NAT)")
        results.detail(mappings={"B": mapping_check(lab.b, "symmetric"), "A": mapping_check(lab.a, "eim")})
        results.report(how=f"through {' and '.join(relayed)}'s relay on coturn (UDP)")


def scenario_symmetric_no_turn(_browser):
    """Symmetric NAT on one side, no TURN: the page explains, and connects once TURN is added. Both pages say the
    direct connection failed with no relay configured (`direct-failed-no-relay`); once TURN is added (coturn started,
    duet serve restarted on the same port and data dir with TURN flags) the call connects through the relay with no
    user action."""
    with Lab(nat_b="symmetric") as lab:
        server = lab.serve()
        url = f"{server.url}call/{lab.new_room(server)}"
        for home in lab.homes:
            home.launch(lab.origin(server))
        opened = time.monotonic()
        for home in lab.homes:
            home.open(url)
        for home in lab.homes:
            home.page.wait_for("duet.phase === 'inCall'", 20, message=f"{home.name} is in the call (signaling works)")
        problems = {}
        for home in lab.homes:
            problems[home.name] = home.page.wait_for(
                f"{PROBLEM} && {PROBLEM}.code === 'direct-failed-no-relay' && {PROBLEM}", 60,
                message=f"{home.name} explains that the direct connection failed and no relay is configured")
            message = problems[home.name].get("message") or ""
            expect(message and home.page.evaluate(f"document.body.innerText.includes({json.dumps(message)})"),
                   f"{home.name} shows the explanation on the page: {problems[home.name]}")
            expect(home.page.evaluate("duet.badge.kind") != "connected", f"{home.name} does not claim to be connected")
        explained = round(time.monotonic() - opened, 1)
        results.detail(explainedSeconds=explained, problem=problems["A"], mappings={"B": mapping_check(lab.b, "symmetric")})
        log(f"both pages explain after {explained} s:", problems)
        # TURN is added: coturn starts, and duet serve restarts on the same port and data dir with TURN flags.
        secret = "natlab-" + secrets.token_hex(8)
        lab.coturn(secret)
        server.stop()
        server.args = lab.turn_args(secret, "udp", "tcp")
        server.start()
        added = time.monotonic()
        connected, flowing = settle(lab, added, 90, "once TURN was added")
        results.detail(turnAddedToConnectSeconds=connected, turnAddedToMediaSeconds=flowing, iceRestarts=restarts(lab),
                       expected="explained, then through a relay (UDP) once TURN is added", sides=sides(lab))
        results.report(seconds=flowing)
        log(f"with TURN: connected {connected} s, media both ways {flowing} s after it was added:", json.dumps(sides(lab)))
        relayed = expect_relayed(lab, "udp", "(B behind the symmetric NAT, once TURN is there)")
        for home in lab.homes:
            expect(home.page.evaluate(PROBLEM) is None, f"{home.name}'s explanation is gone once connected: "
                                                        f"{home.page.evaluate(PROBLEM)}")
        results.report(how=f"explained (`direct-failed-no-relay`) after {explained} s; through {' and '.join(relayed)}'s "
                           f"relay {flowing} s after TURN was added: {results.how_recovered(lab.a.page, lab.b.page)}")


def udp_blocked(tls):
    def scenario(_browser):
        with Lab() as lab:
            lab.b.block_udp()
            if tls:
                lab.b.block_tcp_port(3478)  # only TLS (5349) and the web server's port get out
            flags = {}
            if BREAK == "no-turn":
                log("DUET_NATLAB_BREAK=no-turn: no TURN configured")
                server = lab.serve()
            else:
                secret = "natlab-" + secrets.token_hex(8)
                turn = lab.coturn(secret, tls=True)
                server = lab.serve(*lab.turn_args(secret, "udp", "tcp", "tls"))
                # Chromium checks TURN/TLS certificates like any other TLS (see NOTES_TLS): trust the lab's one.
                flags = {home.name: (f"--ignore-certificate-errors-spki-list={turn.spki}",) for home in lab.homes}
                if BREAK == "untrusted-cert":
                    log("DUET_NATLAB_BREAK=untrusted-cert: Chromium is not told to trust the lab's certificate")
                    flags = {}
            _, (connected, flowing) = call(lab, server, timeout=40, flags=flags)
            protocol = "tls" if tls else "tcp"
            record_connect(lab, connected, flowing, f"B: relay over {protocol}; A: its remote is B's relay")
            expect_path(lab.b, {"relay"}, relay_protocol=protocol, what=f"(UDP blocked{' and TCP 3478' if tls else ''})")
            expect_path(lab.a, {"srflx", "prflx", "relay"}, {"relay"}, what="(talking to B's relay)")
            expect(not lab.b.conntrack(), f"no UDP got through B's router: {lab.b.conntrack()}")
            results.report(how=f"through B's relay, B reaching coturn over {protocol.upper()}")
    return scenario


scenario_udp_blocked_tcp = udp_blocked(tls=False)
scenario_udp_blocked_tcp.__doc__ = """UDP blocked at one home's router: through TURN over TCP. B's router forwards no
UDP; B's selected local candidate is a relay reached over TCP, media both ways."""
scenario_udp_blocked_tls = udp_blocked(tls=True)
scenario_udp_blocked_tls.__doc__ = """UDP and TCP 3478 blocked at one home's router: through TURN over TLS. B's router
lets only other TCP ports out; B's selected local candidate is a relay reached over TLS (coturn on 5349 with a
certificate from the lab's own CA), media both ways."""

# NOTES_TLS — how Chromium treats a TURN server's TLS certificate (measured in this lab, Chromium 156, 2026-11-24):
# it checks it like a web server's. With a certificate from the lab's own CA and no flag, every TLS handshake to
# coturn fails (chromium log: "ssl_client_socket_impl.cc handshake failed ... net_error -202", i.e.
# ERR_CERT_AUTHORITY_INVALID; the page sees icecandidateerror 701), no relay candidate over TLS is gathered and the
# TLS scenario cannot connect (DUET_NATLAB_BREAK=untrusted-cert shows it). `--ignore-certificate-errors-spki-list=`
# with the base64 SHA-256 of the certificate's public key (Lab.certificates) makes it trust that one key and nothing
# else — narrower than --ignore-certificate-errors, and no NSS database (certutil) to set up in the profile.


def scenario_mapping_flush(_browser):
    """A home router's outside address changes mid-call: recovers with an ICE restart. B's router gets a new address
    and drops its NAT mappings with the old one; media stops, the call comes back through an ICE restart, media both
    ways again on a direct path."""
    with Lab() as lab:
        server = lab.serve()
        breaking = None
        if BREAK == "no-ice-restart":
            log("DUET_NATLAB_BREAK=no-ice-restart: ICE restarts do nothing in both pages")
            breaking = chaos.BREAK_ICE_RESTARTS
        _, (connected, flowing) = call(lab, server, init_script=breaking)
        record_connect(lab, connected, flowing, "direct, then after B's new outside address: an ICE restart, direct again")
        for home in lab.homes:
            expect_path(home, DIRECT, DIRECT, what="(direct before the change)")
        before = {name: len(r) for name, r in restarts(lab).items()}
        old = lab.b.change_outside_address()
        changed = time.monotonic()
        log(f"router B's outside address {old} → {lab.b.wan}")
        stale = [e for e in lab.b.conntrack() if e[4] == old]
        expect(not stale, f"router B kept no mapping on its old address: {stale}")
        lab.a.page.wait_for("duet.connectionStatus !== 'connected' || duet.iceConnectionState !== 'connected'", 30,
                            message="A notices the path is gone")
        connected, flowing = settle(lab, changed, 60, "after B's router changed address")
        after = restarts(lab)
        results.detail(recoverySeconds=flowing, iceRestarts=after, sidesAfter=sides(lab))
        expect(any(len(r) > before[name] for name, r in after.items()),
               f"recovery went through an ICE restart: before {before}, now {after}")
        for home in lab.homes:
            expect_path(home, DIRECT, DIRECT, what="(direct again after the ICE restart)")
        expect(any(e[4] == lab.b.wan for e in lab.b.conntrack()), "B's calls go out through the new address")
        results.report(how=f"back {flowing} s after the change through "
                           f"{results.how_recovered(lab.a.page, lab.b.page)}; direct again")


def scenario_duet_call(_browser):
    """`duet call` behind one NAT, Chromium behind the other: direct through STUN. Both NATs endpoint-independent,
    duet call in A, Chromium in B; not relayed, media both ways."""
    with Lab() as lab:
        server = lab.serve()
        url = f"{server.url}call/{lab.new_room(server)}"
        lab.b.launch(lab.origin(server))
        opened = time.monotonic()
        lab.b.open(url)
        lab.b.page.wait_for("duet.phase === 'waiting'", 15, message="B (Chromium) waits for the other person")
        lab.a.peer = peer_scenarios.Peer(url, prefix=in_ns(lab.a.ns))
        connected, flowing = settle(lab, opened, 30, "after opening the call")
        record_connect(lab, connected, flowing, "srflx/prflx on both sides (direct)")
        expect_path(lab.b, DIRECT, DIRECT, what="(Chromium, direct to duet call)")
        # duet call reports its selected local candidate only (libnice's type for it: srflx when measured).
        expect_path(lab.a, DIRECT, what="(duet call, direct to Chromium)")
        results.detail(mappings={home.name: mapping_check(home, "eim") for home in lab.homes})
        results.report(how="direct through STUN")


SCENARIOS = collect(globals())


def main():
    if not in_private_netns():
        # The lab never needs the machine's network: run it from a namespace of its own.
        os.execvp("unshare", ["unshare", "-n", sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
    if len(sys.argv) != 2 or sys.argv[1] not in SCENARIOS:
        sys.exit(f"usage: natlab.py {{{','.join(SCENARIOS)}}}")
    scenarios.run(SCENARIOS, lambda name: None, suite="natlab")


if __name__ == "__main__":
    main()
