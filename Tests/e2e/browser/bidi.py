"""Minimal WebDriver BiDi driver for headless Firefox ESR in end-to-end tests (stdlib only; issue 32).

Debian has no geckodriver, but Firefox speaks WebDriver BiDi itself: started with `--remote-debugging-port 0` it
prints `WebDriver BiDi listening on ws://127.0.0.1:PORT`, and `ws://…/session` takes `session.new`. A page here has
the calls the scenarios make of a Chromium page (cdp.Page): navigate, evaluate, wait_for, screenshot, console, close,
so the same helpers (in_call, media_flows, stats…) drive both browsers. Facts and prefs: ../shared/notes/firefox.md.

    with Firefox.launch() as browser:
        page = browser.new_page("http://127.0.0.1:8000/")
        page.wait_for("window.ready === true", timeout=10)
"""
import atexit
import base64
import itertools
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import phase_timing  # noqa: E402  (Tests/e2e/phase_timing.py: where a scenario's time goes)

import cdp
from cdp import CDPError, in_private_netns

FIREFOX = os.environ.get("FIREFOX_BIN") or next(
    (p for p in ("/usr/lib/firefox-esr/firefox-esr", "/usr/bin/firefox-esr") if os.path.exists(p)), "firefox-esr")

# What a test profile needs (../shared/notes/firefox.md): fake camera and microphone without prompts, a persistent
# camera/microphone permission (without it Firefox gathers no ICE candidate in a namespace with no default route),
# host candidates on loopback and unobfuscated, autoplay, no throttled background timers, and no network chatter.
PREFS = {
    "media.navigator.streams.fake": True,
    "media.navigator.permission.disabled": True,
    "permissions.default.camera": 1,
    "permissions.default.microphone": 1,
    "media.peerconnection.ice.loopback": True,
    "media.peerconnection.ice.obfuscate_host_addresses": False,
    "media.autoplay.default": 0,
    "media.autoplay.blocking_policy": 0,
    "dom.min_background_timeout_value": 0,
    "dom.timeout.enable_budget_timer_throttling": False,
    "network.manage-offline-status": False,
    "browser.shell.checkDefaultBrowser": False,
    "browser.startup.homepage_override.mstone": "ignore",
    "browser.aboutwelcome.enabled": False,
    "datareporting.policy.dataSubmissionEnabled": False,
    "toolkit.telemetry.enabled": False,
    "app.update.enabled": False,
    "app.update.auto": False,
    "browser.safebrowsing.malware.enabled": False,
    "browser.safebrowsing.phishing.enabled": False,
    "network.captive-portal-service.enabled": False,
    "network.connectivity-service.enabled": False,
    "extensions.update.enabled": False,
    "browser.newtabpage.enabled": False,
    "dom.disable_open_during_load": False,
    # Headless Firefox paints at 60 Hz, and in the parent process (software compositing) that was most of a call's
    # CPU: 10 Hz shows a test everything it looks at (video keeps decoding at its own rate; `framesDecoded` counts
    # it), and a Firefox pair's call took 18.5 CPU-seconds instead of 27 with the camera at 15 fps (issue 50).
    "layout.frame_rate": 10,
}


# The fake camera sends small frames, as Chromium's does (cdp.FAKE_CAMERA, issue 50). Firefox's fake camera gives
# what the page asks for — 1280x720 at 30 fps for Duet's `ideal` — and encoding and decoding that in software took
# more than a core per Firefox pair: three scenarios side by side on 2 cores starved each other's video (CI run
# 20261206T123143Z-63e174: firefox-pair-cut's B decoded no frame for 90 s while its audio flowed). Firefox has no pref
# that caps the fake camera under an `ideal`, so every document caps the video it asks for, like a small camera
# would: the page's own constraints (device, facing mode) stay, only the size is bounded.
SMALL_CAMERA = """() => {
  if (typeof MediaDevices === 'undefined') return;  // not a secure context: no camera to bound
  const [width, height, fps] = [%d, %d, %d];
  const original = MediaDevices.prototype.getUserMedia;
  const small = (video) => ({ ...(typeof video === 'object' ? video : {}), width: { ideal: width, max: width },
                              height: { ideal: height, max: height }, frameRate: { ideal: fps, max: fps } });
  MediaDevices.prototype.getUserMedia = function (constraints) {
    return original.call(this, constraints && constraints.video ? { ...constraints, video: small(constraints.video) } : constraints);
  };
}""" % cdp.FAKE_CAMERA


class BiDiError(CDPError):
    """A protocol error, a JS exception (text in .args[0]) or a dead browser. A CDPError, so that what handles a
    Chromium page's errors (wait_for's "not yet") handles a Firefox page's too."""


def _connect_in(netns_pid, address, timeout):
    """A TCP connection made from inside the network namespace of `netns_pid` (Firefox's BiDi listens on that
    namespace's loopback): a thread enters it (setns applies to the calling thread only), connects and ends; the
    socket stays in that namespace and works from any thread."""
    import ctypes
    result = {}

    def connect():
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(f"/proc/{netns_pid}/ns/net", os.O_RDONLY)
        try:
            if libc.setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
                raise OSError(ctypes.get_errno(), "setns into the browser's network namespace failed")
            result["sock"] = socket.create_connection(address, timeout=timeout)
        except BaseException as e:
            result["error"] = e
        finally:
            os.close(fd)

    thread = threading.Thread(target=connect, name="bidi-netns-connect")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["sock"]


class _WebSocket:
    """A WebSocket client for one local connection: text frames, masking, fragments, ping/pong, close."""

    def __init__(self, url, timeout=10, netns_pid=None):
        match = re.match(r"ws://([^:/]+):(\d+)(/.*)?$", url)
        if not match:
            raise BiDiError(f"not a ws:// URL: {url}")
        host, port, path = match.group(1), int(match.group(2)), match.group(3) or "/"
        self.sock = (_connect_in(netns_pid, (host, port), timeout) if netns_pid
                     else socket.create_connection((host, port), timeout=timeout))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BiDiError("the BiDi server closed during the handshake")
            response += chunk
        head, _, self._buffer = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise BiDiError(f"BiDi handshake refused: {head[:200]!r}")
        self.sock.settimeout(None)
        self._lock = threading.Lock()

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        header = bytearray([0x81])
        if len(payload) < 126:
            header.append(0x80 | len(payload))
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + len(payload).to_bytes(2, "big")
        else:
            header += bytes([0x80 | 127]) + len(payload).to_bytes(8, "big")
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self._lock:
            self.sock.sendall(bytes(header) + mask + masked)

    def _read(self, count):
        while len(self._buffer) < count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    def receive(self):
        """The next text message; EOFError when the connection ends."""
        message = b""
        while True:
            first, second = self._read(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                length = int.from_bytes(self._read(2), "big")
            elif length == 127:
                length = int.from_bytes(self._read(8), "big")
            mask = self._read(4) if second & 0x80 else None
            payload = self._read(length)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise EOFError
            if opcode == 0x9:
                with self._lock:
                    self.sock.sendall(bytes([0x8A, 0x80 | len(payload)]) + b"\0\0\0\0" + payload)
                continue
            if opcode in (0x1, 0x0):
                message += payload
                if first & 0x80:
                    return message.decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Firefox:
    def __init__(self, proc, profile, log_path, ws):
        self.proc, self.profile, self.log_path, self._ws = proc, profile, log_path, ws
        self._ids = itertools.count(1)
        self._pending = {}
        self._pages = {}                # browsing context id -> Page
        self._dead = None
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="bidi-reader", daemon=True)
        self._reader.start()
        atexit.register(self.close)

    @classmethod
    def launch(cls, start_timeout=30, require_netns=True, prefix=(), prefs=None, netns_pid=None, _template=True):
        """`prefix`: a command Firefox runs under, e.g. `nsenter -t PID -n` for a namespace of its own; then
        `netns_pid` names a process in that namespace, where the driver connects to BiDi (it listens on loopback).
        The profile starts as a copy of a warmed one (`_copy_warm_profile`); `_template=False` starts from nothing."""
        if require_netns and not in_private_netns():
            raise RuntimeError("refusing to start Firefox outside a private network namespace (run under `unshare -n`)")
        profile = tempfile.mkdtemp(prefix="duet-firefox-")
        if _template:
            _copy_warm_profile(profile, prefix, netns_pid)
        with open(os.path.join(profile, "user.js"), "w") as f:
            for name, value in {**PREFS, **(prefs or {})}.items():
                f.write(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n")
        log_path = os.path.join(profile, "firefox.log")
        argv = [*prefix, FIREFOX, "--headless", "--no-remote", "--profile", profile, "--remote-debugging-port", "0", "about:blank"]
        env = {**os.environ, "MOZ_CRASHREPORTER_DISABLE": "1"}
        with open(log_path, "ab") as log:
            # Own process group: close() kills the content processes too (they outlive the parent otherwise).
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True)
        t0 = time.monotonic()
        url = None
        while url is None:
            with open(log_path, errors="replace") as f:
                found = re.search(r"WebDriver BiDi listening on (ws://[0-9.:]+)", f.read())
            if found:
                url = found.group(1) + "/session"
            elif proc.poll() is not None or time.monotonic() - t0 > start_timeout:
                tail = open(log_path, errors="replace").read()[-3000:]
                _kill_group(proc)
                shutil.rmtree(profile, ignore_errors=True)
                raise BiDiError(f"Firefox did not start (BiDi never listened)\n--- log tail ---\n{tail}")
            else:
                time.sleep(0.05)
        browser = cls(proc, profile, log_path, _WebSocket(url, netns_pid=netns_pid))
        try:
            browser.send("session.new", {"capabilities": {"alwaysMatch": {"acceptInsecureCerts": True}}}, timeout=start_timeout)
            browser.send("session.subscribe", {"events": ["log.entryAdded", "browsingContext.load"]})
        except BaseException:
            browser.close()
            raise
        browser.launch_seconds = time.monotonic() - t0
        phase_timing.add("browser start", browser.launch_seconds)
        return browser

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _read_loop(self):
        try:
            while True:
                message = json.loads(self._ws.receive())
                if message.get("id") is not None:
                    q = self._pending.pop(message["id"], None)
                    if q:
                        q.put(message)
                elif message.get("type") == "event":
                    self._on_event(message.get("method"), message.get("params", {}))
        except (EOFError, OSError, ValueError):
            pass
        finally:
            self._dead = "the BiDi connection closed"
            for q in list(self._pending.values()):
                q.put(None)

    def _on_event(self, method, params):
        if method == "log.entryAdded":
            page = self._pages.get((params.get("source") or {}).get("context"))
            if page is not None:
                page.console.append(f"{params.get('level')}: {params.get('text')}")
        elif method == "browsingContext.load":
            page = self._pages.get(params.get("context"))
            if page is not None:
                with page._load_cv:
                    page._loads += 1
                    page._load_cv.notify_all()

    def send(self, method, params=None, timeout=10):
        if self._dead:
            raise BiDiError(self._dead)
        message_id = next(self._ids)
        q = self._pending[message_id] = queue.Queue(1)
        try:
            self._ws.send(json.dumps({"id": message_id, "method": method, "params": params or {}}))
        except OSError as e:
            self._pending.pop(message_id, None)
            raise BiDiError(f"{method}: cannot write to Firefox: {e}") from e
        try:
            reply = q.get(timeout=timeout)
        except queue.Empty:
            self._pending.pop(message_id, None)
            raise TimeoutError(f"{method}: no reply within {timeout}s") from None
        if reply is None:
            raise BiDiError(f"{method}: {self._dead}")
        if reply.get("type") == "error":
            raise BiDiError(f"{method}: {reply.get('error')}: {reply.get('message')}")
        return reply.get("result", {})

    def new_page(self, url=None, timeout=10, prejoin=False, preload=()):
        """A new tab. prejoin: show Duet's pre-join screen (by default a test page joins at once: every document
        gets sessionStorage['duet.prejoin'] = 'skip' before its scripts run, as cdp.Browser.new_page does).
        preload: more function declarations each document runs before its own scripts."""
        context = self.send("browsingContext.create", {"type": "tab"})["context"]
        page = Page(self, context)
        self._pages[context] = page
        for declaration in (SMALL_CAMERA, *preload):
            self.send("script.addPreloadScript", {"functionDeclaration": declaration, "contexts": [context]})
        if not prejoin:
            self.send("script.addPreloadScript", {
                "functionDeclaration": "() => { try { sessionStorage.setItem('duet.prejoin', 'skip'); } catch (e) {} }",
                "contexts": [context]})
        if url:
            page.navigate(url, timeout=timeout)
        return page

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def close(self):
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        try:
            self.send("browser.close", timeout=3)
        except Exception:
            pass
        self._ws.close()
        _kill_group(self.proc)
        shutil.rmtree(self.profile, ignore_errors=True)


# A fresh profile costs Firefox about 4 CPU-seconds to start (it creates its databases and compiles its start-up
# cache); a copy of a profile that has started once costs about 1.9 (measured here, issue 50: ~40 Firefox starts in
# the default tier, on 2 cores that are busy all along). The warmed profile is made once per Firefox build, under
# .build/, by the first launch that needs it (a file lock keeps the others waiting), from the same PREFS, having
# loaded nothing but about:blank. What it keeps is what Firefox makes for itself (databases, start-up cache,
# certificate store); its prefs.js is not kept — the BiDi agent writes its own recommendations there, and a test's
# prefs come from user.js alone, as with a fresh profile — nor its session, lock or log.
_WARM_DROP = ("prefs.js", "user.js", "lock", ".parentlock", "firefox.log", "sessionstore.jsonlz4", "sessionstore-backups",
              "sessionCheckpoints.json", "times.json", "crashes", "minidumps")


def _warm_profile_path():
    binary = os.path.realpath(FIREFOX)
    try:
        st = os.stat(binary)
    except OSError:
        return None
    import hashlib
    key = hashlib.sha256(json.dumps([binary, st.st_size, st.st_mtime_ns, PREFS], sort_keys=True).encode()).hexdigest()[:16]
    return os.path.join(phase_timing.ROOT, ".build", "firefox-warm-profile", key)


def _copy_warm_profile(profile, prefix, netns_pid):
    """Fills the empty directory `profile` from the warmed profile, making that first if need be. Any failure leaves
    `profile` empty (a fresh profile: slower, the same behaviour) and says so on stderr."""
    import fcntl
    warm = _warm_profile_path()
    if warm is None or os.path.exists(warm + ".failed"):
        return
    try:
        if not os.path.isdir(warm):
            os.makedirs(os.path.dirname(warm), exist_ok=True)
            with open(warm + ".lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if os.path.exists(warm + ".failed"):
                    return
                if not os.path.isdir(warm):
                    try:
                        _make_warm_profile(warm, prefix, netns_pid)
                    except TimeoutError:
                        raise
                    except (OSError, CDPError, subprocess.SubprocessError) as e:
                        # Once per build: the launches after this one start fresh rather than try again.
                        with open(warm + ".failed", "w") as f:
                            f.write(f"{type(e).__name__}: {e}\n")
                        raise
        with phase_timing.spent("browser start"):
            shutil.copytree(warm, profile, symlinks=True, dirs_exist_ok=True)
    except TimeoutError:
        raise                   # a scenario's hard limit (SIGALRM) or a launch that never answered: not ours to hide
    except (OSError, CDPError, subprocess.SubprocessError) as e:  # a slower start is the whole cost
        print(f"bidi: starting Firefox with a fresh profile ({type(e).__name__}: {e})", file=sys.stderr)
        for name in os.listdir(profile):
            path = os.path.join(profile, name)
            shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else os.remove(path)


def _make_warm_profile(warm, prefix, netns_pid):
    browser = Firefox.launch(prefix=prefix, netns_pid=netns_pid, _template=False)
    made = browser.profile + ".warm"
    try:
        try:
            browser.send("browser.close", timeout=10)   # a clean exit writes the start-up cache
        except CDPError:
            pass                                        # the connection may close before the answer
        browser.proc.wait(20)
        os.rename(browser.profile, made)
    finally:
        browser.close()                                 # kills what is left; the renamed profile stays
    for name in _WARM_DROP:
        path = os.path.join(made, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.remove(path)
    staging = warm + f".{os.getpid()}"
    shutil.copytree(made, staging, symlinks=True)
    shutil.rmtree(made, ignore_errors=True)
    os.rename(staging, warm)


def _kill_group(proc):
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        pass


class Page:
    """One tab, with the calls scenarios make of a cdp.Page."""

    def __init__(self, browser, context):
        self.browser, self.context = browser, context
        self.console = []
        self._loads = 0
        self._load_cv = threading.Condition()

    def navigate(self, url, timeout=10):
        self.browser.send("browsingContext.navigate", {"context": self.context, "url": url, "wait": "complete"}, timeout)

    def reload(self, timeout=10):
        self.browser.send("browsingContext.reload", {"context": self.context, "ignoreCache": True, "wait": "complete"}, timeout)

    def evaluate(self, expr, await_promise=True, timeout=10):
        """Run a JS expression and return its value as JSON (None for undefined). The value crosses as a JSON string
        (BiDi's remote values are a protocol of their own)."""
        wrapped = (f"(async () => {{ const v = await ({expr}\n); return v === undefined ? 'null' : JSON.stringify(v); }})()"
                   if await_promise else f"JSON.stringify(({expr}\n) ?? null)")
        r = self.browser.send("script.evaluate", {
            "expression": wrapped, "target": {"context": self.context}, "awaitPromise": True, "userActivation": True,
        }, timeout)
        if r.get("type") == "exception":
            details = r.get("exceptionDetails", {})
            raise BiDiError(details.get("text") or json.dumps(details)[:500])
        value = (r.get("result") or {}).get("value")
        return None if value is None else json.loads(value)

    # Only evaluate and console are needed: the same polling and diagnosis as a Chromium page.
    wait_for = cdp.Page.wait_for
    _diagnose = cdp.Page._diagnose

    def set_viewport(self, width, height, mobile=False, scale=1):
        self.browser.send("browsingContext.setViewport", {
            "context": self.context, "viewport": {"width": width, "height": height}, "devicePixelRatio": scale})

    def screenshot(self, path, timeout=10):
        data = self.browser.send("browsingContext.captureScreenshot", {"context": self.context}, timeout)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.browser._pages.pop(self.context, None)
        try:
            self.browser.send("browsingContext.close", {"context": self.context})
        except BiDiError:
            pass
