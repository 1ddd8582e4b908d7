"""The deployment folder under test: `deploy/` run for real — nginx with deploy/nginx/duet.conf, coturn with
deploy/coturn/turnserver.conf, `duet serve` with deploy/duet.env as deploy/systemd/duet.service runs it — and
Chromium calling through https://duet.test/. Run by DeployTests:

    python3 deploy_scenarios.py files                                     # nginx -t, systemd-analyze verify, …
    unshare -n -m sh -c 'ip link set lo up && exec python3 deploy_scenarios.py https-call'   # and https-sse, turns-relay

No second copy: every file is read from deploy/ and changed only by the substitutions of `render_*` (the two names,
the secret placeholder, the certificate directories, DUET_DATA_DIR's path), each of which must match, with no
placeholder left outside comments afterwards — so the files cannot drift from what is tested. What a test network
needs beyond the files is on a command line (TEST_ONLY_COTURN: loopback listening and peers for coturn) or in the
wrapper around the site (Debian's own nginx.conf with its pid and log paths moved into a temporary prefix).
duet.service's ExecStart runs with only duet.env's settings in its environment, from the binary installed as
docs/deploy.md installs it (/opt/duet, under a temporary root), with the build directory's copy of the web client
hidden in a mount namespace of the scenario's own (hence `unshare -m`).
Certificates are made here (a throwaway CA and a certificate for duet.test and turn.duet.test); Chromium maps the
names to 127.0.0.1 (--host-resolver-rules) and trusts the certificate by its key (--ignore-certificate-errors-spki-list).

DUET_DEPLOY_DIR (default: the repository's deploy/) exists only to prove that the scenarios fail on a broken copy;
DeployTests never sets it.
"""
import atexit
import base64
import hashlib
import http.client
import os
import re
import secrets
import shlex
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
sys.path.insert(0, os.path.join(HERE, ".."))
import results  # noqa: E402
from scenarios import collect, expect, log, media_flows, run, start_call, state  # noqa: E402

DEPLOY = os.path.abspath(os.environ.get("DUET_DEPLOY_DIR") or os.path.join(ROOT, "deploy"))
DUET = os.environ.get("DUET_BINARY", os.path.join(ROOT, ".build", "debug", "duet"))
SERVE_SOURCE = os.path.join(ROOT, "Sources", "duet", "ServeCommand.swift")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"

# The names the files are written for, and what they are in the test.
NAME, TURN_NAME = "duet.test", "turn.duet.test"
PLACEHOLDER_NAME, PLACEHOLDER_TURN = "duet.example.com", "turn.example.com"
PLACEHOLDER_SECRET = "CHANGE_ME_TURN_SECRET"
CERT_DIR = "/etc/letsencrypt/live/duet.example.com/"     # nginx's certificate (and LoadCredential's source)
CREDENTIALS_DIR = "/run/credentials/coturn.service/"     # where systemd hands coturn that certificate
DATA_DIR = "/var/lib/duet"                               # StateDirectory=duet
DUET_EXEC = "/opt/duet/duet"                             # duet.service's ExecStart binary

# What the test network needs that a server does not, added on coturn's command line (never in the file):
TEST_ONLY_COTURN = (
    # Both Chromiums live on 127.0.0.1; the file (rightly) refuses to relay to loopback.
    "--allow-loopback-peers", "--allowed-peer-ip=127.0.0.1",
    # The namespace has only lo: listen and relay there.
    "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
)


def fail(message):
    raise AssertionError(message)


# MARK: - The files, with asserted substitutions

def read_deploy(relpath):
    path = os.path.join(DEPLOY, relpath)
    with open(path) as f:
        return f.read()


def substitute(relpath, text, replacements):
    """Each (old, new) must occur in the file's text; afterwards no placeholder may be left outside comments."""
    for old, new in replacements:
        if old not in text:
            fail(f"deploy/{relpath}: {old!r} is not in the file any more — the file and the test have drifted")
        text = text.replace(old, new)
    for line in text.splitlines():
        if not line.strip().startswith("#") and ("example.com" in line or "CHANGE_ME" in line):
            fail(f"deploy/{relpath}: a placeholder the test does not replace: {line.strip()!r}")
    return text


def env_file(text, relpath="duet.env"):
    """systemd EnvironmentFile= syntax as this file uses it: KEY=VALUE lines, # comments, no quotes."""
    values = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"DUET_[A-Z_]+", key):
            fail(f"deploy/{relpath}:{number}: not KEY=VALUE: {line!r}")
        if any(c in value for c in "\"'\\$ "):
            fail(f"deploy/{relpath}:{number}: quotes, spaces, $ and \\ mean different things to systemd and shells: {line!r}")
        if key in values:
            fail(f"deploy/{relpath}:{number}: {key} twice")
        values[key] = value
    return values


def unit_values(text, key):
    return [line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith(key + "=")]


def conf_values(text, key):
    """coturn's `key=value` lines (and bare flags as '')."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#") or not line:
            continue
        k, _, v = line.partition("=")
        if k == key:
            out.append(v)
    return out


class Certificates:
    """A throwaway CA and one certificate for duet.test and turn.duet.test (like certbot's one certificate for both
    names), laid out like certbot's live directory."""

    def __init__(self, directory):
        self.dir = os.path.join(directory, "letsencrypt", "live", NAME)
        os.makedirs(self.dir)
        self.ca, ca_key = os.path.join(directory, "ca.pem"), os.path.join(directory, "ca.key")
        self.fullchain, self.privkey = os.path.join(self.dir, "fullchain.pem"), os.path.join(self.dir, "privkey.pem")
        leaf, csr, ext = (os.path.join(directory, n) for n in ("leaf.pem", "leaf.csr", "leaf.ext"))
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        self._openssl("req", "-x509", *ec, "-keyout", ca_key, "-out", self.ca, "-days", "2", "-subj", "/CN=Duet test CA",
                      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        self._openssl("req", *ec, "-keyout", self.privkey, "-out", csr, "-subj", f"/CN={NAME}")
        with open(ext, "w") as f:
            f.write(f"subjectAltName=DNS:{NAME},DNS:{TURN_NAME}\nbasicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
        self._openssl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", ca_key, "-CAcreateserial", "-out", leaf,
                      "-days", "2", "-extfile", ext)
        with open(self.fullchain, "w") as out:
            for part in (leaf, self.ca):
                with open(part) as f:
                    out.write(f.read())
        # Chromium's --ignore-certificate-errors-spki-list takes base64(SHA-256(SubjectPublicKeyInfo)).
        der = subprocess.run(["openssl", "pkey", "-in", self.privkey, "-pubout", "-outform", "DER"],
                             capture_output=True, check=True).stdout
        self.spki = base64.b64encode(hashlib.sha256(der).digest()).decode()

    @staticmethod
    def _openssl(*args):
        out = subprocess.run(["openssl", *args], capture_output=True, text=True)
        if out.returncode != 0:
            fail(f"openssl {' '.join(args[:2])}: {out.stderr}")

    def context(self):
        ctx = ssl.create_default_context(cafile=self.ca)
        return ctx


def render_site(certs_dir):
    return substitute("nginx/duet.conf", read_deploy("nginx/duet.conf"), [
        (CERT_DIR, certs_dir.rstrip("/") + "/"), (PLACEHOLDER_TURN, TURN_NAME), (PLACEHOLDER_NAME, NAME)])


def render_turnserver(certs_dir, secret):
    return substitute("coturn/turnserver.conf", read_deploy("coturn/turnserver.conf"), [
        (CREDENTIALS_DIR, certs_dir.rstrip("/") + "/"), (PLACEHOLDER_SECRET, secret), (PLACEHOLDER_TURN, TURN_NAME)])


def render_env(data_dir, secret):
    text = substitute("duet.env", read_deploy("duet.env"), [
        (f"DUET_DATA_DIR={DATA_DIR}\n", f"DUET_DATA_DIR={data_dir}\n"), (PLACEHOLDER_SECRET, secret),
        (PLACEHOLDER_TURN, TURN_NAME), (PLACEHOLDER_NAME, NAME)])
    return env_file(text)


def nginx_main_conf(prefix, site_path):
    """Debian's own /etc/nginx/nginx.conf (what the site is included into on a server), with only its machine-wide
    paths moved into `prefix` (pid, logs) and sites-enabled/* replaced by the one site."""
    path = "/etc/nginx/nginx.conf"
    if not os.path.exists(path):
        fail(f"{path} is missing: install Debian's nginx package (scripts/test.sh does)")
    with open(path) as f:
        text = f.read()
    for old, new in (("pid /run/nginx.pid;", f"pid {prefix}/nginx.pid;"),
                     ("error_log /var/log/nginx/error.log;", f"error_log {prefix}/error.log info;"),
                     ("access_log /var/log/nginx/access.log;", f"access_log {prefix}/access.log;"),
                     ("include /etc/nginx/sites-enabled/*;", f"include {site_path};")):
        if old not in text:
            fail(f"{path} has no {old!r}: not the Debian nginx.conf the site is written for")
        text = text.replace(old, new)
    conf = os.path.join(prefix, "nginx.conf")
    with open(conf, "w") as f:
        f.write(text)
    return conf


def nginx_test(conf, prefix):
    return subprocess.run([NGINX, "-t", "-p", prefix + "/", "-c", conf], capture_output=True, text=True)


def exec_start(unit_text, relpath):
    lines = unit_values(unit_text, "ExecStart")
    if len(lines) != 1:
        fail(f"deploy/{relpath}: one ExecStart= expected, found {lines}")
    return shlex.split(lines[0])


# MARK: - The running deployment

def stun_binding(port, timeout=1.0):
    """One STUN Binding request over UDP to 127.0.0.1:port; True when answered with a success."""
    tid = os.urandom(12)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(struct.pack("!HHI", 0x0001, 0, 0x2112A442) + tid, ("127.0.0.1", port))
        try:
            data = s.recv(2048)
        except (socket.timeout, OSError):
            return False
    return len(data) >= 20 and struct.unpack("!H", data[:2])[0] == 0x0101 and data[8:20] == tid


def wait_until(what, check, timeout, proc=None, log_path=None):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass
        if proc is not None and proc.poll() is not None:
            fail(f"{what}: the process exited with {proc.returncode}; log:\n{tail(log_path)}")
        if time.monotonic() >= deadline:
            fail(f"{what}: not within {timeout}s; log:\n{tail(log_path)}")
        time.sleep(0.1)


def tail(path, n=40):
    if not path:
        return ""
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no log)"


def tcp_open(port):
    with socket.create_connection(("127.0.0.1", port), 0.5):
        return True


class Client:
    """HTTPS to nginx on 127.0.0.1:443 as https://duet.test/, from a chosen loopback address, verifying the test CA;
    one kept-alive connection."""

    def __init__(self, certs, source=None, timeout=5):
        raw = socket.create_connection(("127.0.0.1", 443), timeout, source_address=(source, 0) if source else None)
        self.conn = http.client.HTTPSConnection(NAME, 443, timeout=timeout, context=certs.context())
        self.conn.sock = certs.context().wrap_socket(raw, server_hostname=NAME)

    def request(self, method, path, headers=None, body=None):
        self.conn.request(method, path, body=body, headers=headers or {})
        response = self.conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()

    def close(self):
        self.conn.close()


class Deployment:
    """coturn, duet serve and nginx, each started from its deploy/ file; `with Deployment() as d:`."""

    def __init__(self, coturn_args=()):
        self.dir = tempfile.mkdtemp(prefix="duet-deploy-")
        self.procs = []
        self.certs = certificates()
        self.secret = secrets.token_hex(32)   # as docs/deploy.md makes it
        self.url = f"https://{NAME}/"
        try:
            self._start_coturn(coturn_args)
            self._start_duet()
            self._start_nginx()
        except BaseException:
            self.stop()
            raise

    def _spawn(self, name, argv, env=None, stdout=None):
        log_path = os.path.join(self.dir, f"{name}.log")
        log_file = open(log_path, "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout or log_file, stderr=log_file, env=env,
                                text=stdout is not None)
        self.procs.append((name, proc))
        log(name, "started:", " ".join(shlex.quote(a) for a in argv))
        return proc, log_path

    def _start_coturn(self, extra):
        conf = os.path.join(self.dir, "turnserver.conf")
        with open(conf, "w") as f:
            f.write(render_turnserver(self.certs.dir, self.secret))
        # Debian's coturn.service: ExecStart=/usr/bin/turnserver -c /etc/turnserver.conf --pidfile=
        # Its log goes to stdout, as the file says (systemd's journal on a server, coturn.log here).
        # (--userdb: coturn opens its user database even with use-auth-secret; not this machine's.)
        argv = ["turnserver", "-c", conf, "--pidfile=", *TEST_ONLY_COTURN, f"--userdb={self.dir}/turndb", *extra]
        self.coturn, self.turn_log = self._spawn("coturn", argv)
        wait_until("coturn serves TLS on 5349", lambda: tcp_open(5349), 10, self.coturn, self.turn_log)

    def _start_duet(self):
        unit = read_deploy("systemd/duet.service")
        argv = exec_start(unit, "systemd/duet.service")
        if argv[0] != DUET_EXEC:
            fail(f"deploy/systemd/duet.service runs {argv[0]}, the test expects {DUET_EXEC}")
        if unit_values(unit, "EnvironmentFile") != ["/etc/duet/duet.env"]:
            fail("deploy/systemd/duet.service must read /etc/duet/duet.env (deploy/duet.env)")
        binary = self._install_duet()
        self.data = os.path.join(self.dir, "state")
        os.makedirs(self.data, mode=0o700)
        self.env = render_env(self.data, self.secret)
        # systemd starts services with a minimal environment: the file's settings and little else.
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", **self.env}
        self.duet, self.duet_log = self._spawn("duet-serve", [binary, *argv[1:]], env=env, stdout=subprocess.PIPE)
        line = self.duet.stdout.readline().strip()
        expected = f"http://{self.env['DUET_HOST']}:{self.env['DUET_PORT']}/"
        if line != expected:
            fail(f"duet serve announced {line!r}, not {expected!r} from deploy/duet.env; log:\n{tail(self.duet_log)}")

    def _install_duet(self):
        """Installs the built duet as docs/deploy.md does — the binary and its resource bundles (the web client) in
        one directory, /opt/duet — and hides the bundles where they were built, so that the installed copy is what
        serves the pages (SwiftPM's accessor falls back to the build directory). The hiding is a mount in this
        process's own mount namespace (`unshare -m`), never seen outside it."""
        if os.readlink("/proc/self/ns/mnt") == os.readlink(f"/proc/{os.getppid()}/ns/mnt"):
            fail("run under `unshare -n -m`: the scenario hides the build directory's resources in a mount namespace of its own")
        built = os.path.dirname(os.path.realpath(DUET))
        prefix = os.path.join(self.dir, DUET_EXEC.lstrip("/"))
        os.makedirs(os.path.dirname(prefix))
        shutil.copy2(os.path.realpath(DUET), prefix)
        bundles = [n for n in os.listdir(built) if n.endswith(".resources")]
        expect(bundles, f"no resource bundle beside {DUET}")
        for name in bundles:
            shutil.copytree(os.path.join(built, name), os.path.join(os.path.dirname(prefix), name))
            subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=4k", "duet-hidden", os.path.join(built, name)], check=True)
        return prefix

    def _start_nginx(self):
        self.nginx_dir = os.path.join(self.dir, "nginx")
        os.makedirs(self.nginx_dir)
        site = os.path.join(self.nginx_dir, "duet")
        with open(site, "w") as f:
            f.write(render_site(self.certs.dir))
        conf = nginx_main_conf(self.nginx_dir, site)
        checked = nginx_test(conf, self.nginx_dir)
        if checked.returncode != 0:
            fail(f"nginx -t: {checked.stderr}")
        self.access_log = os.path.join(self.nginx_dir, "access.log")
        self.nginx, log_path = self._spawn("nginx", [NGINX, "-p", self.nginx_dir + "/", "-c", conf, "-g", "daemon off;"])
        self.nginx_log = os.path.join(self.nginx_dir, "error.log")

        def healthy():
            client = Client(self.certs, timeout=1)
            try:
                return client.request("GET", "/healthz")[0] == 200
            finally:
                client.close()
        wait_until("nginx serves https://duet.test/healthz", healthy, 10, self.nginx, self.nginx_log)

    def access_lines(self, pattern):
        with open(self.access_log, errors="replace") as f:
            return [line for line in f if re.search(pattern, line)]

    def stop(self):
        results.capture_failing()
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for name, proc in reversed(self.procs):
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()   # turnserver takes its time over SIGTERM
                proc.wait(5)
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        if exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            shutil.rmtree(os.path.join(self.dir, "opt"), ignore_errors=True)   # the installed binary: large
            log("kept for a look (configuration and logs):", self.dir)


def through_https(page, name):
    expect(page.evaluate("location.origin") == f"https://{NAME}", f"{name} is on https://{NAME}")
    expect(page.evaluate("window.isSecureContext") is True, f"{name} is a secure context (camera allowed)")


# MARK: - Scenarios

def scenario_files(_browser):
    """The deploy/ files are valid and agree with each other: nginx -t on the site inside Debian's nginx.conf,
    systemd-analyze verify (and an offline security review) on the units, nft -c on the firewall, every DUET_*
    setting in duet.env, the shared secret, names and ports the same in every file; and the nginx and systemd checks
    are shown to fail on a broken copy."""
    env_text = read_deploy("duet.env")
    env = env_file(env_text)
    with open(SERVE_SOURCE) as f:
        known = set(re.findall(r'"(DUET_[A-Z_]+)"', f.read()))
    expect(known, f"no DUET_* names found in {SERVE_SOURCE}")
    expect(set(env) == known, f"deploy/duet.env must set every DUET_* setting of duet serve and no other: "
                              f"missing {sorted(known - set(env))}, unknown {sorted(set(env) - known)}")
    site, turn = read_deploy("nginx/duet.conf"), read_deploy("coturn/turnserver.conf")
    unit, dropin = read_deploy("systemd/duet.service"), read_deploy("systemd/coturn.service.d/duet.conf")

    # One secret, one set of names and ports.
    expect(conf_values(turn, "static-auth-secret") == [env["DUET_TURN_SECRET"]] == [PLACEHOLDER_SECRET],
           "coturn's static-auth-secret and DUET_TURN_SECRET are the same placeholder")
    expect("use-auth-secret" in [l.strip() for l in turn.splitlines()], "coturn uses REST credentials (use-auth-secret)")
    turn_port, tls_port = conf_values(turn, "listening-port"), conf_values(turn, "tls-listening-port")
    expect(turn_port == ["3478"] and tls_port == ["5349"], f"coturn listens on 3478 and 5349: {turn_port}, {tls_port}")
    for uri in env["DUET_TURN_URIS"].split(",") + env["DUET_STUN_URIS"].split(","):
        m = re.fullmatch(r"(stun|turns?):([^:?]+):(\d+)(\?transport=(udp|tcp))?", uri)
        expect(m, f"DUET_TURN_URIS/DUET_STUN_URIS entry {uri!r}")
        expect(m.group(2) == PLACEHOLDER_TURN, f"{uri} names coturn's host {PLACEHOLDER_TURN}")
        expect(m.group(3) == (tls_port[0] if m.group(1) == "turns" else turn_port[0]), f"{uri}: coturn's port")
        # duet serve's URI grammar (exit 64 otherwise): stun: takes no query, turns: runs over TCP only.
        expect(not (m.group(1) == "stun" and m.group(4)), f"{uri}: a stun: URI has no ?transport=")
        expect(not (m.group(1) == "turns" and m.group(5) == "udp"), f"{uri}: turns: is TLS over TCP, never udp")
    expect(env["DUET_TURN_SECRET"] and env["DUET_TURN_URIS"], "TURN URIs come with the secret (duet serve refuses one without the other)")
    expect(env["DUET_STUN_PORT"] == "0", "duet's own STUN is off: coturn answers STUN on the same port")
    expect(conf_values(turn, "realm") == [PLACEHOLDER_TURN], "coturn's realm is its name")
    upstreams = set(re.findall(r"proxy_pass\s+http://([^;/]+);", site))
    expect(upstreams == {f"{env['DUET_HOST']}:{env['DUET_PORT']}"}, f"nginx proxies to DUET_HOST:DUET_PORT: {upstreams}")
    expect(env["DUET_TRUSTED_PROXIES"] == "127.0.0.1/32", "duet serve trusts nginx's address, and only that")
    expect(env["DUET_FORWARDED_HEADER"] == "x-forwarded-for" and "proxy_set_header X-Forwarded-For $remote_addr;" in site,
           "nginx writes the header duet serve reads")
    sse = re.search(r"location = /sse \{(.*?)\}", site, re.S)
    expect(sse and "proxy_buffering off;" in sse.group(1), "SSE is not buffered by nginx")
    # The cluster's site (nginx/duet-cluster.conf, run by Tests/e2e/cluster/cluster.py): duet.conf's site line for line
    # but for where it proxies — an upstream of nodes that hashes the room — and how it fails over.
    cluster = read_deploy("nginx/duet-cluster.conf")
    lines = lambda text: [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    missing = [l for l in lines(site) if not l.startswith("proxy_pass ") and l not in lines(cluster)]
    expect(not missing, f"nginx/duet-cluster.conf has every line of nginx/duet.conf but its proxy_pass: missing {missing}")
    expect(re.findall(r"proxy_pass\s+(\S+);", cluster) == ["http://$duet_upstream"] * 3,
           "every location of the cluster's site proxies to the upstream its map picks")
    # The map: the ring (duet_cluster) unless the request names a drain's node (`&via=nodeK`), which goes to that
    # node's own upstream, the same address as the ring's server K (issue 53).
    via_map = re.search(r"map \$arg_via \$duet_upstream \{(.*?)\}", cluster, re.S)
    entries = dict(re.findall(r"^\s*(\S+)\s+(\S+);", via_map.group(1), re.M)) if via_map else {}
    expect(entries.get("default") == "duet_cluster", f"a request without a known via goes by the ring: {entries}")
    ring = re.findall(r"^\s*server (127\.0\.0\.1:\d+) ", re.search(r"upstream duet_cluster \{(.*?)\n\}", cluster, re.S).group(1), re.M)
    for k, address in enumerate(ring, 1):
        own = re.search(rf"upstream duet_node{k} \{{(.*?)\n\}}", cluster, re.S)
        expect(entries.get(f"node{k}") == f"duet_node{k}" and own
               and re.findall(r"^\s*server (127\.0\.0\.1:\d+)", own.group(1), re.M) == [address],
               f"via=node{k} goes to node{k} ({address}) alone")
    upstream = re.search(r"upstream duet_cluster \{(.*?)\n\}", cluster, re.S)
    expect(upstream and "hash $duet_room consistent;" in upstream.group(1)
           and re.search(r"map \$arg_rid \$duet_room \{[^}]*default \$arg_rid;", cluster),
           "the upstream hashes the room the clients name in ?rid= (consistently: a failed node moves only its rooms)")
    nodes = re.findall(r"^\s*server 127\.0\.0\.1:(\d+) max_fails=1 fail_timeout=5s;", upstream.group(1), re.M)
    expect(len(nodes) == 3 and len(set(nodes)) == 3, f"three nodes on loopback, each out for 5 s after a failure: {nodes}")
    expect("proxy_next_upstream error timeout http_502 http_504;" in lines(cluster)
           and "proxy_connect_timeout 3s;" in lines(cluster) and "non_idempotent" not in " ".join(lines(cluster)),
           "a dead node (refused at once; 3 s connect timeout, past the kernel's 1 s SYN retry) is skipped; a POST that "
           "reached a node is not retried")
    expect("zone duet_cluster 64k;" in upstream.group(1), "the workers share one view of which node is down (zone)")
    for path in ("/ws", "/sse"):
        block = re.search(r"location = %s \{(.*?)\}" % path, cluster, re.S)
        expect(block and "proxy_next_upstream error timeout http_502 http_503 http_504;" in block.group(1),
               f"{path}: a draining node's 503 to a new session is passed on to the next node")
        expect(f"limit_conn duet_signaling {env['DUET_MAX_CONNECTIONS_PER_IP']};" in block.group(1),
               f"{path}: nginx holds each address to DUET_MAX_CONNECTIONS_PER_IP over all nodes, so no node's per-address "
               "503 (which would take the node out for everyone) is ever reached")
        expect(path != "/sse" or "proxy_buffering off;" in block.group(1), "SSE is not buffered by the cluster's nginx")
    expect(unit_values(unit, "EnvironmentFile") == ["/etc/duet/duet.env"], "duet.service reads /etc/duet/duet.env")
    expect(unit_values(unit, "StateDirectory") == ["duet"] and env["DUET_DATA_DIR"] == DATA_DIR,
           "StateDirectory=duet is DUET_DATA_DIR")
    expect(exec_start(unit, "systemd/duet.service") == [DUET_EXEC, "serve"], "duet.service runs duet serve")
    expect(unit_values(unit, "RestartPreventExitStatus") == ["64 78"],
           "duet.service does not restart after exit 64 (bad flags) or 78 (configuration): it would fail again")
    expect("no-tcp-relay" in [l.strip() for l in turn.splitlines()], "coturn relays no TCP (no TCP service is reachable)")
    # coturn's certificate: what LoadCredential= hands over is what turnserver.conf reads, from nginx's certificate.
    credentials = dict(v.split(":", 1) for v in unit_values(dropin, "LoadCredential"))
    for key in ("cert", "pkey"):
        path = conf_values(turn, key)
        expect(len(path) == 1 and path[0].startswith(CREDENTIALS_DIR), f"coturn's {key} comes from systemd's credentials")
        name = path[0][len(CREDENTIALS_DIR):]
        expect(name in credentials, f"the drop-in loads the credential {name}")
        expect(os.path.dirname(credentials[name]) + "/" == CERT_DIR, f"{name} is nginx's certificate ({CERT_DIR})")
    expect(re.findall(r"ssl_certificate(?:_key)?\s+(\S+);", site) ==
           [CERT_DIR + "fullchain.pem", CERT_DIR + "privkey.pem"], "nginx's certificate is certbot's live directory")

    work = tempfile.mkdtemp(prefix="duet-deploy-files-")
    try:
        certs = Certificates(work)

        def nginx_check(site_text):
            prefix = tempfile.mkdtemp(dir=work, prefix="nginx-")
            path = os.path.join(prefix, "duet")
            with open(path, "w") as f:
                f.write(site_text)
            return nginx_test(nginx_main_conf(prefix, path), prefix)

        site_text = render_site(certs.dir)
        checked = nginx_check(site_text)
        expect(checked.returncode == 0 and "test is successful" in checked.stderr, f"nginx -t: {checked.stderr}")
        log("nginx -t:", checked.stderr.strip().replace("\n", " | "))
        cluster_site = substitute("nginx/duet-cluster.conf", cluster, [
            (CERT_DIR, certs.dir.rstrip("/") + "/"), (PLACEHOLDER_TURN, TURN_NAME), (PLACEHOLDER_NAME, NAME)])
        checked = nginx_check(cluster_site)
        expect(checked.returncode == 0 and "test is successful" in checked.stderr, f"nginx -t (cluster): {checked.stderr}")
        log("nginx -t (nginx/duet-cluster.conf):", checked.stderr.strip().replace("\n", " | "))
        broken = nginx_check(site_text.replace("proxy_buffering off;", "proxy_buffering of;", 1))
        expect(broken.returncode != 0, f"nginx -t fails on a broken site: {broken.stderr}")
        log("nginx -t on a broken copy fails:", broken.stderr.strip().splitlines()[-2:])

        # systemd-analyze verify in a root of its own: the system's unit directory (for the targets and Debian's
        # coturn.service), the two files where docs/deploy.md installs them, and the programs they start.
        root = os.path.join(work, "root")

        def verify(files):
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree("/lib/systemd/system", os.path.join(root, "usr/lib/systemd/system"), symlinks=True)
            for program in (DUET_EXEC, "/usr/bin/turnserver"):
                os.makedirs(os.path.dirname(root + program), exist_ok=True)
                with open(root + program, "w") as f:
                    f.write("#!/bin/sh\n")
                os.chmod(root + program, 0o755)
            for target, text in files.items():
                os.makedirs(os.path.dirname(root + target), exist_ok=True)
                with open(root + target, "w") as f:
                    f.write(text)
            out = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={root}", "duet.service",
                                  "coturn.service"], capture_output=True, text=True)
            # verify exits 0 on many mistakes (an unknown key, a bad value: "…, ignoring"); passing means silence.
            return out.returncode == 0 and not (out.stdout + out.stderr).strip(), (out.stdout + out.stderr).strip()

        units = {"/etc/systemd/system/duet.service": unit, "/etc/systemd/system/coturn.service.d/duet.conf": dropin}
        expect(os.path.exists(os.path.join("/lib/systemd/system/coturn.service")),
               "Debian's coturn.service is installed (the drop-in extends it)")
        ok, out = verify(units)
        expect(ok, f"systemd-analyze verify duet.service coturn.service: {out}")
        log("systemd-analyze verify duet.service coturn.service (with the drop-in): silent, exit 0")
        # Exposure 0.0 (confined) … 10.0; --threshold counts tenths.
        for unit_name, limit in (("duet.service", 2.0), ("coturn.service", 4.0)):
            review = subprocess.run(["systemd-analyze", "security", "--offline=yes", f"--root={root}", f"--threshold={int(limit * 10)}",
                                     "--no-pager", unit_name], capture_output=True, text=True)
            level = re.search(r"Overall exposure level for \S+: ([\d.]+)", review.stdout)
            expect(review.returncode == 0 and level, f"{unit_name}: exposure over {limit} "
                   f"({level.group(1) if level else '?'}): {review.stderr.strip()}")
            log(f"systemd-analyze security {unit_name}: exposure {level.group(1)} (at most {limit})")
        for path, old, new in (("/etc/systemd/system/duet.service", "NoNewPrivileges=yes", "NoNewPrivilege=yes"),
                               ("/etc/systemd/system/duet.service", f"ExecStart={DUET_EXEC}", "ExecStart=/usr/bin/duet"),
                               ("/etc/systemd/system/coturn.service.d/duet.conf", "LimitNOFILE=65536", "LimitNOFILE=lots")):
            ok, out = verify({**units, path: units[path].replace(old, new, 1)})
            expect(not ok, f"verify fails when {old} becomes {new}")
            log(f"verify with {new}: fails: {out.splitlines()[0]}")
        # The firewall opens exactly the ports the other files listen on: checked by nft itself (in a network
        # namespace of its own, so nothing here can touch this machine's rules), then its ports compared.
        nft_path = os.path.join(DEPLOY, "nftables", "duet.nft")
        nft = subprocess.run(["unshare", "-n", shutil.which("nft") or "/usr/sbin/nft", "-c", "-f", nft_path],
                             capture_output=True, text=True)
        expect(nft.returncode == 0, f"nft -c -f deploy/nftables/duet.nft: {nft.stderr}")
        rules = read_deploy("nftables/duet.nft")
        opened = {(proto, ports) for proto, ports in re.findall(r"^\s*(tcp|udp) dport (\S+|\{[^}]*\}) accept", rules, re.M)}
        relay = f"{conf_values(turn, 'min-port')[0]}-{conf_values(turn, 'max-port')[0]}"
        listens = sorted(set(re.findall(r"listen\s+(?:\[::\]:)?(\d+)", site)))
        expect(listens == ["443", "80"], f"nginx listens on 80 and 443: {listens}")
        expected_rules = {("tcp", "22"), ("tcp", "{ 80, 443 }"), ("udp", turn_port[0]), ("tcp", turn_port[0]),
                          ("tcp", tls_port[0]), ("udp", relay)}
        expect(opened == expected_rules, f"the firewall opens ssh, nginx's and coturn's ports and no other: "
                                         f"{sorted(opened)} (expected {sorted(expected_rules)})")
        log("nft -c: ok; opens", sorted(opened))
        hook = os.path.join(DEPLOY, "certbot", "renewal-hook.sh")
        syntax = subprocess.run(["sh", "-n", hook], capture_output=True, text=True)
        expect(syntax.returncode == 0, f"sh -n {hook}: {syntax.stderr}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def scenario_https_call(browser):
    """Two pages call through nginx at https://duet.test/ over WebSocket, media both ways; nginx hands duet serve
    the client's address (X-Forwarded-For) and nothing a client says it is."""
    with Deployment() as d:
        expect(stun_binding(3478), "coturn answers STUN on UDP 3478, where DUET_STUN_URIS sends clients")
        a, b, link = start_call(browser, d)
        expect(link.startswith(f"https://{NAME}/call/"), f"the share link is the public https one: {link}")
        for name, page in (("A", a), ("B", b)):
            through_https(page, name)
            s = media_flows(page, what=f"{name} decodes video and hears audio through the deployment")
            expect(state(page)["transport"] == "ws", f"{name} signals over WebSocket: {state(page)}")
            log(name, s["window"])
        # TLS in front: http redirects, HSTS, the Origin check sees the public name through Host.
        plain = http.client.HTTPConnection("127.0.0.1", 80, timeout=5)
        plain.request("GET", "/call/x", headers={"Host": NAME})
        response = plain.getresponse()
        expect(response.status == 301 and response.getheader("Location") == f"https://{NAME}/call/x",
               f"http:// redirects to https://: {response.status} {response.getheader('Location')}")
        client = Client(d.certs)
        status, headers, body = client.request("GET", "/healthz")
        expect(status == 200 and "max-age" in headers.get("strict-transport-security", ""), f"HSTS: {headers}")
        expect("content-security-policy" in headers, "duet serve's own security headers pass through")
        status, _, _ = client.request("POST", "/api/room-id", headers={"Origin": "https://elsewhere.example"})
        expect(status == 403, f"a foreign Origin is refused through the proxy: {status}")
        status, _, _ = client.request("POST", "/api/room-id", headers={"Origin": f"https://{NAME}"})
        expect(status == 200, f"the site's own Origin passes: {status}")
        status, _, _ = client.request("GET", "/metrics")
        expect(status == 403, f"/metrics is not loopback's when it comes through nginx: {status}")
        client.close()
        # X-Forwarded-For: /api/* allows a burst of 60 per client address, then 10 a second. 127.0.0.2 spends its
        # burst; 127.0.0.3 is still served (behind a proxy that did not forward the address, or a server that did
        # not trust it, both would be nginx's 127.0.0.1 and share one bucket), and 127.0.0.2 cannot claim another
        # address (a bucket of its own serves all five of 127.0.0.3's requests, whatever the timing).
        hammer = Client(d.certs, source="127.0.0.2")
        codes = []
        while len(codes) < 300 and 429 not in codes:
            last_sent = time.monotonic()
            codes.append(hammer.request("POST", "/api/room-id")[0])
        expect(codes[-1] == 429 and codes.count(200) >= 50, f"127.0.0.2 is rate limited after its burst: {codes.count(200)} "
                                                           f"served, then {codes[-1]}")
        # A forged X-Forwarded-For must land in 127.0.0.2's own, empty bucket, not a fresh one of 60. Counting a few
        # requests against a fixed number would depend on the machine's speed (the bucket refills 10 a second), so
        # the bound comes from the clock: since just before the refused request the bucket held under one token, so
        # it can have served at most 1 + 10 × elapsed (+1 for millisecond rounding) — however slow the machine, this
        # never fails wrongly. A fresh bucket would serve all 60; the bound tells the two apart as long as it stays
        # under 60 (60 requests in under ~5.7 s — milliseconds each here), and the test says so rather than pass
        # when it does not.
        spoofed = [hammer.request("POST", "/api/room-id", headers={"X-Forwarded-For": "127.0.0.9"})[0] for _ in range(60)]
        elapsed = time.monotonic() - last_sent
        own_bucket = 2 + int(10 * elapsed)
        expect(own_bucket < 60, f"too slow to tell a fresh bucket from an empty one: {elapsed:.1f} s since the refusal")
        expect(spoofed.count(200) <= own_bucket, f"a client's own X-Forwarded-For does not buy a fresh bucket: "
                                                 f"{spoofed.count(200)} of 60 served, the own bucket allows {own_bucket}")
        hammer.close()
        other = Client(d.certs, source="127.0.0.3")
        served = [other.request("POST", "/api/room-id")[0] for _ in range(5)]
        expect(served == [200] * 5, f"another client address is served meanwhile: {served}")
        other.close()
        log(f"127.0.0.2: {codes.count(200)} served, then 429; with a forged X-Forwarded-For {spoofed.count(200)} of 60 "
            f"in {elapsed:.2f} s (own bucket: at most {own_bucket}); 127.0.0.3: {served}")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name} still has media")
        # nginx logs an upgraded request when its connection ends: leave, then read the log.
        for page in (a, b):
            page.evaluate("duet.leave()")
            page.navigate("about:blank")
        wait_until("nginx logged both WebSockets as upgraded (101)",
                   lambda: len(d.access_lines(r'"GET /ws\?rid=[A-Za-z0-9_-]{27} HTTP/1\.1" 101 ')) >= 2, 10, log_path=d.access_log)


def scenario_https_sse(browser):
    """Both pages signal over SSE through nginx (?transports=sse), media both ways; events reach a client at once."""
    with Deployment() as d:
        a, b, _ = start_call(browser, d, "?transports=sse")
        for name, page in (("A", a), ("B", b)):
            through_https(page, name)
            s = media_flows(page, what=f"{name} has media with SSE signaling through nginx")
            expect(state(page)["transport"] == "sse", f"{name} signals over SSE: {state(page)}")
            log(name, s["window"])
        # Each names the room (?rid=, for a proxy routing rooms to nodes: nginx/duet-cluster.conf).
        streams, posts = d.access_lines(r'"GET /sse\?sid=S-[0-9a-f]{16}&rid=[A-Za-z0-9_-]{27} HTTP/[\d.]+" 200 '), \
            d.access_lines(r'"POST /sse\?sid=S-[0-9a-f]{16}&rid=[A-Za-z0-9_-]{27} HTTP/[\d.]+" 2\d\d ')
        expect(len({re.search(r"sid=(S-\w+)", l).group(1) for l in streams + posts}) >= 2 and posts,
               f"both pages' streams and POSTs went through nginx: {len(streams)} streams, {len(posts)} POSTs")
        expect(not d.access_lines(r'"GET /ws[ ?]'), "no WebSocket was opened")
        # A raw stream: its first events arrive at once, not when a buffer fills.
        client = Client(d.certs)
        started = time.monotonic()
        client.conn.request("GET", "/sse?sid=S-" + secrets.token_hex(8), headers={"Accept": "text/event-stream"})
        response = client.conn.getresponse()
        expect(response.status == 200 and response.getheader("Content-Type", "").startswith("text/event-stream"),
               f"SSE through nginx: {response.status} {response.getheaders()}")
        seen = []
        while not any("sse_session" in line for line in seen):
            line = response.readline().decode()
            expect(line, f"the stream ended early: {seen}")
            seen.append(line.strip())
            expect(time.monotonic() - started < 3, f"SSE events held back: {seen}")
        log(f"SSE through nginx: {seen[:2]} … in {1000 * (time.monotonic() - started):.0f} ms")
        client.close()


def scenario_turns_relay(browser):
    """Relay-only call through coturn over TLS (turns:5349, its UDP and TCP listeners off), with the credentials duet
    serve issues under the shared secret."""
    with Deployment(coturn_args=("--no-udp", "--no-tcp")) as d:
        # Only coturn's TLS listener is up, so a relay candidate can only have come through turns:.
        expect(not stun_binding(3478), "coturn's UDP listener is off for this scenario")
        try:
            tcp_open(3478)
            fail("coturn's TCP listener is off for this scenario")
        except ConnectionRefusedError:
            pass
        a, b, _ = start_call(browser, d, "?relay=1")
        for name, page in (("A", a), ("B", b)):
            through_https(page, name)
            s = media_flows(page, what=f"{name} has media relayed through coturn over TLS")
            expect(s["candidateType"] == "relay", f"{name} uses a relay candidate: {s}")
            expect(s["relayProtocol"] == "tls", f"{name} reaches coturn over TLS: {s}")
            log(name, "relayed", s["relayProtocol"], s["window"])


_certificates = []


def certificates():
    """This run's certificates, made once: Chromium must be started trusting them, before the scenario runs."""
    if not _certificates:
        directory = tempfile.mkdtemp(prefix="duet-deploy-certs-")
        atexit.register(shutil.rmtree, directory, True)
        _certificates.append(Certificates(directory))
    return _certificates[0]


def browser_options(name):
    if name == "files":
        return None
    return {"extra_flags": (f"--host-resolver-rules=MAP {NAME} 127.0.0.1,MAP {TURN_NAME} 127.0.0.1",
                            f"--ignore-certificate-errors-spki-list={certificates().spki}")}


if __name__ == "__main__":
    run(collect(globals()), browser_options, suite="deploy")
