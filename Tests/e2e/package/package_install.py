"""The Debian package (scripts/package.sh) installed as an operator installs it, into a root without Swift, and run
from there (issue 35). Run by `scripts/test.sh --long` (stage `package`), or by hand:

    scripts/package.sh --debug --output /tmp/dist
    unshare -n -m sh -c 'ip link set lo up && exec python3 Tests/e2e/package/package_install.py /tmp/dist/duet_*.deb'

The root is this machine's own Debian 12 as a copy-on-write overlay (nothing written reaches the machine: the overlay's
upper layer is a tmpfs of this script's mount namespace) with the Swift toolchain and this repository hidden under
empty mounts, so neither the Swift runtime nor the build directory's copy of the web client can be found — checked
before the install (no `swift`, no libswiftCore.so anywhere in the root). In it, as the operator would:
`apt-get install ./duet_<version>_<arch>.deb` (no network: every dependency must already be there), the TURN secret
set in /etc/duet/duet.env (deploy step 5), then `duet serve` started as the unit starts it (the unit's ExecStart, as
its User=, with only the file's settings; systemd itself does not run here). It must answer /healthz, serve the
browser client from /opt/duet, and seat two clients in one room over WebSocket; SIGTERM must end it with status 0;
`apt-get purge` must leave no file of it behind but its user.
"""
import atexit
import http.client
import json
import os
import re
import secrets
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))
import results  # noqa: E402
import ws_frames  # noqa: E402

UNIT = "/lib/systemd/system/duet.service"
ENV_FILE = "/etc/duet/duet.env"
PLACEHOLDER_SECRET = "CHANGE_ME_TURN_SECRET"


def fail(message):
    raise AssertionError(message)


def log(message):
    print(f"package: {message}", flush=True)


def sh(*argv, check=True, **kwargs):
    result = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    if check and result.returncode != 0:
        fail(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result


class Root:
    """The machine's root as an overlay, the toolchain and the repository hidden, with /proc, /dev, /run and /tmp."""

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="duet-package-")
        atexit.register(os.rmdir, self.base)  # empty again once the namespace's mounts are gone (lazily, below)
        sh("mount", "-t", "tmpfs", "-o", "size=2g", "duet-package", self.base)
        atexit.register(sh, "umount", "-l", self.base, check=False)
        for name in ("upper", "work", "merged"):
            os.mkdir(os.path.join(self.base, name))
        self.path = os.path.join(self.base, "merged")
        sh("mount", "-t", "overlay", "overlay", "-o",
           f"lowerdir=/,upperdir={self.base}/upper,workdir={self.base}/work", self.path)
        sh("mount", "-t", "proc", "proc", self.inside("/proc"))
        sh("mount", "--rbind", "/dev", self.inside("/dev"))
        for empty in ("/run", "/tmp"):
            sh("mount", "-t", "tmpfs", "tmpfs", self.inside(empty))
        # What must not be there: the toolchain (wherever `swift` lives) and this checkout (the build directory's
        # resource bundle, which SwiftPM's accessor would fall back to).
        swift = shutil.which("swift")
        self.hidden = [ROOT]
        if swift:
            toolchain = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(swift))))  # …/usr/bin/swift
            if toolchain in ("/", "/usr"):
                fail(f"the Swift toolchain is installed into {toolchain} ({swift}): it cannot be hidden from the root; "
                     "use a toolchain unpacked into a folder of its own (e.g. /opt/swift)")
            self.hidden.append(toolchain)
        for path in self.hidden:
            if os.path.isdir(self.inside(path)):
                sh("mount", "-t", "tmpfs", "-o", "ro,size=4k", "duet-hidden", self.inside(path))

    def inside(self, path):
        return os.path.join(self.path, path.lstrip("/"))

    def run(self, *argv, check=True, env=None, userspec=None, **kwargs):
        prefix = ["chroot"] + ([f"--userspec={userspec}"] if userspec else []) + [self.path]
        environment = env if env is not None else {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
            "DEBIAN_FRONTEND": "noninteractive"}
        return sh(*prefix, *argv, check=check, env=environment, **kwargs)

    def read(self, path):
        with open(self.inside(path)) as f:
            return f.read()


def check_no_swift(root):
    found = root.run("sh", "-c", "command -v swift swiftc", check=False)
    if found.returncode == 0:
        fail(f"the root still has a Swift toolchain on its PATH: {found.stdout.strip()}")
    libraries = root.run("find", "/usr", "/opt", "/lib", "/var", "-name", "libswiftCore.so*", check=False).stdout.split()
    if libraries:
        fail(f"the root still has the Swift runtime: {libraries}")
    log(f"the root has no swift and no libswiftCore.so (hidden: {', '.join(root.hidden)})")


def env_settings(text):
    """EnvironmentFile= as duet.env writes it: KEY=VALUE lines and # comments."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            if not sep:
                fail(f"{ENV_FILE}: not KEY=VALUE: {line!r}")
            values[key] = value
    return values


def unit_value(text, key):
    values = [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(key + "=")]
    if len(values) != 1:
        fail(f"{UNIT}: {key}= {len(values)} times")
    return values[0]


def install(root, deb):
    copy = root.inside("/tmp/" + os.path.basename(deb))
    shutil.copy(deb, copy)
    result = root.run("apt-get", "install", "-y", "--no-install-recommends", "/tmp/" + os.path.basename(deb))
    log("apt-get install: " + " | ".join(l for l in result.stdout.splitlines() if "duet" in l.lower())[:600])
    # What the package put where, and with what rights.
    for path in ("/opt/duet/duet", "/opt/duet/Duet_DuetWeb.resources/Web/index.html", UNIT, ENV_FILE):
        if not os.path.exists(root.inside(path)):
            fail(f"{path} is not installed")
    if os.readlink(root.inside("/usr/bin/duet")) != "/opt/duet/duet":
        fail("/usr/bin/duet does not point at /opt/duet/duet")
    mode = os.stat(root.inside(ENV_FILE)).st_mode & 0o777
    if mode != 0o600:
        fail(f"{ENV_FILE} is {oct(mode)}, not 0600: it holds the TURN secret")
    with open(os.path.join(ROOT, "deploy", "systemd", "duet.service")) as f:
        if root.read(UNIT) != f.read():
            fail(f"{UNIT} is not deploy/systemd/duet.service")
    user = root.run("getent", "passwd", "duet").stdout.strip().split(":")
    if int(user[2]) >= 1000 or user[6] != "/usr/sbin/nologin":
        fail(f"the duet user is not a system user without a shell: {user}")
    state = os.stat(root.inside("/var/lib/duet"))
    if state.st_uid != int(user[2]) or state.st_mode & 0o777 != 0o700:
        fail(f"/var/lib/duet is not duet's alone: uid {state.st_uid}, mode {oct(state.st_mode & 0o777)}")
    linked = root.run("ldd", "/opt/duet/duet").stdout
    if "not found" in linked or re.search(r"libswift|libFoundation|lib_FoundationICU|libdispatch|libBlocksRuntime", linked):
        fail(f"/opt/duet/duet does not stand alone:\n{linked}")
    check_depends(root, deb, linked)
    version = root.run("duet", "--version").stdout.strip()
    libraries = sorted(re.findall(r"^\s*(\S+\.so[.0-9]*)", linked, re.M))
    log(f"installed duet {version}; it links only: {', '.join(libraries)}")
    return version


def check_depends(root, deb, linked):
    """Every library the binary loads belongs to a package the .deb depends on: the root here has far more than a
    minimal Debian 12 does, so a library present only by chance would pass the run but not a fresh machine."""
    declared = {re.sub(r"\s*\(.*\)", "", d).strip() for d in sh("dpkg-deb", "-f", deb, "Depends").stdout.split(",")}
    for path in sorted(set(re.findall(r"=> (/\S+)", linked) + re.findall(r"^\s*(/\S+) \(", linked, re.M))):
        real = "/" + os.path.relpath(os.path.realpath(root.inside(path)), root.path)
        # dpkg names a file by the path its package ships (/lib or /usr/lib, on a merged /usr either reaches it).
        names = dict.fromkeys([path, real] + [n[4:] if n.startswith("/usr/") else "/usr" + n for n in (path, real)])
        package = next((owner.stdout.split(":")[0].strip() for owner in (root.run("dpkg", "-S", n, check=False) for n in names)
                        if owner.returncode == 0), None)
        if package not in declared:
            fail(f"{path} (package {package or 'unknown'}) is loaded by duet but the .deb depends only on {sorted(declared)}")
    log(f"every library duet loads is in a package it depends on: {sorted(declared)}")


def set_secret(root):
    """Deploy step 5: the operator's own TURN secret replaces the placeholder."""
    text = root.read(ENV_FILE)
    if PLACEHOLDER_SECRET not in text:
        fail(f"{ENV_FILE} has no {PLACEHOLDER_SECRET} for the operator to replace")
    with open(root.inside(ENV_FILE), "w") as f:
        f.write(text.replace(PLACEHOLDER_SECRET, secrets.token_hex(32)))


def start(root):
    unit = root.read(UNIT)
    argv = unit_value(unit, "ExecStart").split()
    user = unit_value(unit, "User")
    if unit_value(unit, "EnvironmentFile") != ENV_FILE:
        fail(f"{UNIT} does not read {ENV_FILE}")
    settings = env_settings(root.read(ENV_FILE))
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", **settings}
    log_path = os.path.join(root.base, "duet-serve.log")
    logfile = open(log_path, "w")
    process = subprocess.Popen(["chroot", f"--userspec={user}:{user}", root.path, *argv], env=env,
                               stdout=subprocess.PIPE, stderr=logfile, text=True)
    ready, _, _ = select.select([process.stdout], [], [], 30)
    line = process.stdout.readline().strip() if ready else "(nothing within 30 s)"
    expected = f"http://{settings['DUET_HOST']}:{settings['DUET_PORT']}/"
    if line != expected:
        process.kill()
        with open(log_path) as f:
            fail(f"duet serve announced {line!r}, not {expected!r}; exit {process.poll()}; log:\n{f.read()[-3000:]}")
    log(f"duet serve (as {user}, {ENV_FILE}'s settings) announced {line}")
    return process, settings["DUET_HOST"], int(settings["DUET_PORT"]), log_path


def get(host, port, path):
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


class WebSocket:
    """Just enough RFC 6455 for a join (../ws_frames.py): masked text frames out, pings answered."""

    def __init__(self, host, port, path):
        self.sock = socket.create_connection((host, port), timeout=10)
        try:
            status_line, self.buffer = ws_frames.upgrade(self.sock, f"{host}:{port}", path)
        except ConnectionError as error:
            fail(f"the WebSocket upgrade of {path} failed: {error}")
        if " 101 " not in status_line:
            fail(f"the WebSocket upgrade of {path} was refused: {status_line}")

    def _read(self, n):
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the server closed the WebSocket")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def send(self, message):
        self.sock.sendall(ws_frames.frame(ws_frames.TEXT, json.dumps(message).encode(), masked=True))

    def receive(self, type_, timeout=10):
        """The next message of this type (others, and pings, are passed over)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            opcode, payload = ws_frames.read_frame(self._read)
            if opcode == ws_frames.PING:
                self.sock.sendall(ws_frames.frame(ws_frames.PONG, payload, masked=True))
            elif opcode == ws_frames.CLOSE:
                fail(f"the server closed the WebSocket waiting for {type_}: {payload[2:].decode(errors='replace')}")
            elif opcode == ws_frames.TEXT:
                message = json.loads(payload)
                if message.get("type") == type_:
                    return message
        fail(f"no {type_} within {timeout} s")

    def close(self):
        self.sock.close()


def serve_checks(host, port):
    status, body = get(host, port, "/healthz")
    if status != 200:
        fail(f"/healthz answered {status}: {body[:200]!r}")
    status, page = get(host, port, "/")
    if status != 200 or b"<html" not in page.lower():
        fail(f"/ answered {status} without the browser client's page")
    status, script = get(host, port, "/js/constants.js")
    with open(os.path.join(ROOT, "Sources", "DuetWeb", "Web", "js", "constants.js"), "rb") as f:
        if status != 200 or script != f.read():
            fail(f"/js/constants.js answered {status}, not the browser client's file")
    status, body = get(host, port, "/api/room-id")
    if status != 200:
        fail(f"/api/room-id answered {status}")
    room = json.loads(body)["roomId"]
    log(f"/healthz 200; /, /js/constants.js from /opt/duet's bundle; room {room}")
    host_socket, guest_socket = WebSocket(host, port, f"/ws?rid={room}"), WebSocket(host, port, f"/ws?rid={room}")
    try:
        join = {"v": 1, "type": "join", "rid": room, "payload": {"capabilities": {"trickleIce": True}}}
        host_socket.send(join)
        joined = host_socket.receive("joined")
        guest_socket.send(join)
        guest_joined = guest_socket.receive("joined")
        if guest_joined["payload"].get("hostCid") != joined.get("cid", joined["payload"].get("hostCid")):
            fail(f"the guest was not seated with the first as host: {guest_joined}")
        deadline = time.monotonic() + 10
        while True:
            state = host_socket.receive("room_state", timeout=max(0.1, deadline - time.monotonic()))
            if len(state["payload"]["participants"]) == 2:
                break
        log(f"two clients seated in room {room} over WebSocket (host {guest_joined['payload']['hostCid']})")
    finally:
        host_socket.close()
        guest_socket.close()


def stop(process, log_path):
    process.terminate()
    try:
        status = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        fail("duet serve did not end within 30 s of SIGTERM")
    if status != 0:
        with open(log_path) as f:
            fail(f"duet serve ended with {status} after SIGTERM; log:\n{f.read()[-2000:]}")
    log("SIGTERM: duet serve drained and ended with status 0")


def purge(root):
    root.run("apt-get", "purge", "-y", "duet")
    left = [p for p in ("/opt/duet", "/usr/bin/duet", UNIT, "/etc/duet", "/var/lib/duet")
            if os.path.lexists(root.inside(p))]
    if left:
        fail(f"apt-get purge left {left}")
    log("apt-get purge: nothing left but the duet user")


def main(deb):
    if os.readlink("/proc/self/ns/mnt") == os.readlink(f"/proc/{os.getppid()}/ns/mnt"):
        fail("run under `unshare -n -m`: the root and its mounts live in a mount namespace of the test's own")
    deb = os.path.abspath(deb)
    title = f"{os.path.basename(deb)} installed into a root without Swift serves a call's signaling"
    with results.outcome("package", "deb-install", title):
        started = time.monotonic()
        root = Root()
        check_no_swift(root)
        version = install(root, deb)
        set_secret(root)
        process, host, port, log_path = start(root)
        try:
            serve_checks(host, port)
        except BaseException:
            process.kill()
            raise
        if process.poll() is not None:
            fail(f"duet serve ended by itself (status {process.returncode}) before it was asked to")
        stop(process, log_path)
        purge(root)
        results.report(seconds=time.monotonic() - started, how=f"apt-get install, duet serve {version}, apt-get purge")
    print("scenario deb-install: ok", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
