"""Minimal Chrome DevTools Protocol driver for end-to-end tests (stdlib only).

Chromium is started with --remote-debugging-pipe: CDP runs over fds 3 (commands
in) and 4 (replies/events out) as NUL-terminated JSON, so there is no port to
discover and no websocket to implement.  Page sessions use flatten=True, so every
page is multiplexed over that single pipe and told apart by sessionId.

    with Browser.launch() as browser:
        page = browser.new_page("http://127.0.0.1:8000/")
        page.wait_for("window.ready === true", timeout=10)
"""
import atexit
import base64
import fcntl
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import phase_timing  # noqa: E402  (Tests/e2e/phase_timing.py: where a scenario's time goes)

CHROMIUM = os.environ.get("CHROMIUM_BIN") or next(
    (p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if os.path.exists(p)),
    "chromium")

FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
    # Without this no ICE candidates are gathered in a loopback-only namespace.
    "--allow-loopback-in-peer-connection",
    "--autoplay-policy=no-user-gesture-required",
    # Several pages share one browser; hidden ones must not get throttled timers.
    "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
    "--disable-backgrounding-occluded-windows",
    # Quiet, deterministic start: no keyring/dbus prompts, no update/network chatter.
    "--password-store=basic", "--disable-background-networking", "--disable-component-update",
    "--disable-extensions", "--disable-sync", "--disable-dev-shm-usage",
    # There is no sound device anyway; inbound-rtp audio stats still count samples.
    "--mute-audio",
)


# The fake camera sends small frames (issue 50): Chromium's own fake device gives what the page asks for (1280x720 at
# 30 fps), and encoding and decoding that both ways in software kept a core busy per call, so two scenarios could not
# share this 2-core machine without starving each other's media. A 320x180 (16:9, as the page asks) picture with a
# moving bar costs a fraction of it and still changes every frame; its mean luma (about 110) reads as a live picture
# to the scenarios' black-frame check (scenarios.BLACK_LUMA). Not used where a scenario asks for several fake
# cameras (`--use-fake-device-for-media-stream=device-count=N`): a file is one camera only. At 15 fps, as a small
# camera in dim light sends: a Chromium pair's call took about 10 % less CPU than at 30 (measured with each scenario's
# CPU-seconds, Tests/e2e/phase_timing.py), and the cores are the suite's bound.
FAKE_CAMERA = (320, 180, 15)


def fake_camera_file():
    """A looping Y4M clip (2 s) for `--use-file-for-fake-video-capture`, made once per machine under /tmp."""
    width, height, frames = FAKE_CAMERA
    path = os.path.join(tempfile.gettempdir(), f"duet-fake-camera-{width}x{height}-{frames}-v1.y4m")
    if os.path.exists(path):
        return path
    chroma = bytes([128]) * ((width // 2) * (height // 2) * 2)
    body = bytearray(f"YUV4MPEG2 W{width} H{height} F{frames}:1 Ip A1:1 C420jpeg\n".encode())
    bar = width // 8
    for i in range(2 * frames):
        x0 = (i * width // (2 * frames)) % width
        row = bytearray([100]) * width
        row[x0:x0 + bar] = bytes([235]) * len(row[x0:x0 + bar])
        body += b"FRAME\n" + bytes(row) * height + chroma
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(body)
    os.replace(tmp, path)
    return path


class CDPError(Exception):
    """A protocol error, a JS exception (text in .args[0]) or a dead browser."""


def in_private_netns():
    """True under `unshare -n`: some ancestor sits in another netns, or only lo exists."""
    # (/proc/1/ns/net is unreadable here even for root, so walk our own ancestors.)
    mine, pid = os.readlink("/proc/self/ns/net"), os.getppid()
    while pid > 1:
        try:
            if os.readlink(f"/proc/{pid}/ns/net") != mine:
                return True
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    with open("/proc/net/dev") as f:
        return [line.split(":")[0].strip() for line in f.readlines()[2:]] == ["lo"]


class Browser:
    def __init__(self, proc, to_chrome, from_chrome, profile, log_path):
        self.proc, self.profile, self.log_path = proc, profile, log_path
        self._out, self._in = to_chrome, from_chrome
        self._ids = itertools.count(1)
        self._pending = {}              # id -> Queue(1) receiving the reply
        self._sessions = {}             # sessionId -> Page
        self._write_lock = threading.Lock()
        self._dead = None               # reason string once the pipe is gone
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name="cdp-reader", daemon=True)
        self._reader.start()
        # Chromium also exits on its own when our end of the pipe closes (even on
        # SIGKILL of Python); this just tidies the profile dir on a forgotten close().
        atexit.register(self.close)

    @classmethod
    def launch(cls, extra_flags=(), log_path=None, start_timeout=30, require_netns=True, without_flags=(), prefix=()):
        """`prefix`: a command Chromium runs under, e.g. `nsenter -t PID -n` for a namespace of its own."""
        if require_netns and not in_private_netns():
            raise RuntimeError("refusing to start Chromium outside a private network namespace "
                               "(run under `unshare -n`)")
        several_cameras = "--use-fake-device-for-media-stream" in without_flags or any(
            f.startswith("--use-fake-device-for-media-stream=") or f.startswith("--use-file-for-fake-video-capture") for f in extra_flags)
        camera = () if several_cameras else (f"--use-file-for-fake-video-capture={fake_camera_file()}",)
        profile = tempfile.mkdtemp(prefix="duet-chromium-")
        log_path = log_path or os.path.join(profile, "chromium.log")
        cmd_r, cmd_w = os.pipe()        # we write commands -> Chromium's fd 3
        evt_r, evt_w = os.pipe()        # Chromium's fd 4 -> we read
        # subprocess cannot renumber fds; bash does it and then execs, so proc.pid is
        # Chromium itself (preexec_fn is unsafe with threads).  The child's ends are
        # first moved to fds >= 10 so they cannot collide with 3/4 while renumbering.
        cmd_r, evt_w = (_high_fd(fd) for fd in (cmd_r, evt_w))
        argv = ["/bin/bash", "-c", f'exec 3<&{cmd_r} 4>&{evt_w} {cmd_r}<&- {evt_w}>&-; exec "$@"',
                "bash", *prefix, CHROMIUM, *(f for f in FLAGS if f not in without_flags), *camera, "--remote-debugging-pipe", f"--user-data-dir={profile}",
                f"--disk-cache-dir={profile}/cache", *extra_flags, "about:blank"]
        t0 = time.monotonic()
        try:
            with open(log_path, "ab") as log:
                # Own process group, so close() can also kill renderers/zygotes.
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                        pass_fds=(cmd_r, evt_w), start_new_session=True)
        except BaseException:
            for fd in (cmd_w, evt_r):
                os.close(fd)
            shutil.rmtree(profile, ignore_errors=True)
            raise
        finally:
            for fd in (cmd_r, evt_w):   # Chromium holds the only copies: EOF == it died
                os.close(fd)
        browser = cls(proc, cmd_w, evt_r, profile, log_path)
        try:
            browser.version(timeout=start_timeout)   # first reply == ready
        except Exception as e:
            tail = browser.log_tail()
            browser.close()
            raise CDPError(f"Chromium did not start: {e}\n--- log tail ---\n{tail}") from e
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

    # --- transport -------------------------------------------------------
    def _read_loop(self):
        buf = bytearray()
        try:
            while True:
                chunk = os.read(self._in, 1 << 20)
                if not chunk:
                    break
                buf += chunk
                while (end := buf.find(b"\0")) >= 0:
                    msg = json.loads(buf[:end])
                    del buf[:end + 1]
                    self._dispatch(msg)
        except OSError:
            pass
        finally:
            try:
                code = self.proc.wait(1)
            except subprocess.TimeoutExpired:
                code = "still running"
            self._dead = f"Chromium pipe closed (exit code {code})"
            for q in list(self._pending.values()):
                q.put(None)

    def _dispatch(self, msg):
        if "id" in msg:
            q = self._pending.pop(msg["id"], None)
            if q:
                q.put(msg)
        elif (page := self._sessions.get(msg.get("sessionId"))) is not None:
            # Runs on the reader thread: handlers must only record, never send.
            page._on_event(msg["method"], msg.get("params", {}))

    def send(self, method, params=None, session_id=None, timeout=10):
        if self._dead:
            raise CDPError(self._dead)
        msg_id = next(self._ids)
        msg = {"id": msg_id, "method": method, "params": params or {}}
        if session_id:
            msg["sessionId"] = session_id
        q = self._pending[msg_id] = queue.Queue(1)
        data = json.dumps(msg).encode() + b"\0"
        try:
            with self._write_lock:
                view = memoryview(data)
                while view:
                    view = view[os.write(self._out, view):]
        except OSError as e:
            self._pending.pop(msg_id, None)
            raise CDPError(f"{method}: cannot write to Chromium: {e}") from e
        try:
            reply = q.get(timeout=timeout)
        except queue.Empty:
            self._pending.pop(msg_id, None)
            raise TimeoutError(f"{method}: no reply within {timeout}s") from None
        if reply is None:
            raise CDPError(f"{method}: {self._dead}")
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')} {reply['error'].get('data', '')}".strip())
        return reply.get("result", {})

    # --- API ---------------------------------------------------------------
    def version(self, timeout=10):
        """{'product': 'Chrome/156...', 'protocolVersion', 'userAgent', 'jsVersion', ...}"""
        return self.send("Browser.getVersion", timeout=timeout)

    def new_page(self, url=None, timeout=10, prejoin=False, context=None):
        """prejoin: show Duet's pre-join screen. By default a test page joins at once, as it did before there was
        one: every document of the page gets sessionStorage['duet.prejoin'] = 'skip' before its scripts run
        (the call page's documented automation switch; `?prejoin=0` does the same for one URL).
        context: a browser context id (`Target.createBrowserContext`): another profile, with storage of its own."""
        # Create blank, attach and enable domains first, then navigate: otherwise
        # early console messages and the load event could fire before we listen.
        params = {"url": "about:blank", "newWindow": True, **({"browserContextId": context} if context else {})}
        target_id = self.send("Target.createTarget", params)["targetId"]
        session_id = self.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})["sessionId"]
        page = Page(self, target_id, session_id)
        self._sessions[session_id] = page
        for method in ("Runtime.enable", "Page.enable", "Log.enable"):
            page.send(method)
        if not prejoin:
            page.send("Page.addScriptToEvaluateOnNewDocument",
                      {"source": "try { sessionStorage.setItem('duet.prejoin', 'skip'); } catch (e) {}"})
        page.send("Page.setLifecycleEventsEnabled", {"enabled": True})
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
        """Stop Chromium for sure: SIGTERM, SIGKILL after 3 s, then the whole group.
        The default log lives in the profile dir and goes with it; pass log_path to keep one."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        try:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                pass
            try:   # leftover renderers/zygote share the group even after the main exits
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait(5)
        finally:
            os.close(self._out)
            # Chromium's death gives the reader EOF; only then is closing its fd safe.
            self._reader.join(2)
            if not self._reader.is_alive():
                os.close(self._in)
            for _ in range(5):          # a dying child may still create files briefly
                shutil.rmtree(self.profile, ignore_errors=True)
                if not os.path.exists(self.profile):
                    break
                time.sleep(0.1)


class Page:
    def __init__(self, browser, target_id, session_id):
        self.browser, self.target_id, self.session_id = browser, target_id, session_id
        self.console = []               # "[type] text" strings, newest last
        self._loaded = set()            # loaderIds whose main-frame 'load' fired
        self._load_cv = threading.Condition()
        self._subscriptions = {}        # CDP event name -> Queue of its params

    def send(self, method, params=None, timeout=10):
        return self.browser.send(method, params, self.session_id, timeout)

    def events(self, method):
        """A queue receiving the params of every `method` event of this page from now on (e.g.
        `Fetch.requestPaused`). Answer them from another thread than the reader: its handlers never send."""
        return self._subscriptions.setdefault(method, queue.Queue())

    def _on_event(self, method, p):
        if (subscribers := self._subscriptions.get(method)) is not None:
            subscribers.put(p)
        if method == "Runtime.consoleAPICalled":
            self.console.append(f"[{p['type']}] " + " ".join(_describe(a) for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            self.console.append(f"[exception] {_exception_text(p['exceptionDetails'])}")
        elif method == "Log.entryAdded":   # browser-side: failed loads, CSP, etc.
            e = p["entry"]
            self.console.append(f"[{e['source']}.{e['level']}] {e['text']} {e.get('url', '')}".rstrip())
        elif method == "Inspector.targetCrashed":
            self.console.append("[crash] renderer crashed")
        elif method == "Page.lifecycleEvent" and p["name"] == "load" and p["frameId"] == self.target_id:
            with self._load_cv:
                self._loaded.add(p["loaderId"])
                self._load_cv.notify_all()

    def _wait_load(self, before, loader_id, timeout, what):
        def done():
            return loader_id in self._loaded if loader_id else bool(self._loaded - before)
        with self._load_cv:
            if not self._load_cv.wait_for(done, timeout):
                raise TimeoutError(f"{what}: page did not finish loading within {timeout}s")

    def navigate(self, url, timeout=10):
        before = set(self._loaded)
        r = self.send("Page.navigate", {"url": url}, timeout)
        if r.get("errorText"):
            raise CDPError(f"navigate {url}: {r['errorText']}")
        if r.get("loaderId"):           # absent for same-document (#hash) navigations
            self._wait_load(before, r["loaderId"], timeout, f"navigate {url}")

    def reload(self, timeout=10):
        before = set(self._loaded)
        self.send("Page.reload", {"ignoreCache": True}, timeout)
        self._wait_load(before, None, timeout, "reload")

    def evaluate(self, expr, await_promise=True, timeout=10):
        """Run a JS expression and return its value as JSON (None for undefined)."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": await_promise, "userGesture": True}, timeout)
        if "exceptionDetails" in r:
            raise CDPError(_exception_text(r["exceptionDetails"]))
        res = r["result"]
        if "unserializableValue" in res:    # NaN, Infinity, -0, 12n
            v = res["unserializableValue"]
            return int(v[:-1]) if v.endswith("n") else float(v)
        return res.get("value")

    def wait_for(self, expr, timeout=10, poll=0.1, message=None):
        """Poll until `expr` is JS-truthy; return its value.  Errors count as 'not yet'."""
        probe = f"(async () => {{ const v = await ({expr}\n); return {{ok: !!v, v}}; }})()"
        deadline, last = time.monotonic() + timeout, None
        while True:
            try:
                r = self.evaluate(probe, timeout=max(1.0, deadline - time.monotonic()))
                if r["ok"]:
                    return r.get("v")
                last = r.get("v")
            except (CDPError, TimeoutError) as e:
                last = f"<error: {e}>"
            if time.monotonic() >= deadline:
                raise TimeoutError(self._diagnose(f"{message or 'wait_for'}: `{expr}` not truthy "
                                                  f"after {timeout}s", last))
            time.sleep(poll)

    def holds_for(self, expr, seconds, poll=0.2, message=None, show=None):
        """Poll `expr` for `seconds`: it must be JS-truthy at every look (a state that must last, not appear).
        A look the browser does not answer in time (a busy machine) is no look, not a failure; at least three
        answered looks are needed. `show`: an expression whose value the failure prints (what the state was)."""
        probe = f"(async () => {{ const v = await ({expr}\n); return {{ok: !!v, v}}; }})()"
        deadline, looks = time.monotonic() + seconds, 0
        while True:
            try:
                r = self.evaluate(probe, timeout=5)
            except (CDPError, TimeoutError):
                r = None
            if r is not None:
                looks += 1
                if not r["ok"]:
                    seen = r.get("v")
                    if show:
                        try:
                            seen = self.evaluate(show, timeout=5)
                        except (CDPError, TimeoutError) as e:
                            seen = f"<unavailable: {e}>"
                    raise AssertionError(self._diagnose(f"{message or 'holds_for'}: `{expr}` stopped holding "
                                                        f"{seconds - (deadline - time.monotonic()):.1f}s in", seen))
            if time.monotonic() >= deadline:
                if looks < 3:
                    raise AssertionError(f"{message or 'holds_for'}: only {looks} answered looks in {seconds}s")
                return
            time.sleep(poll)

    def _diagnose(self, headline, last):
        try:
            dataset = self.evaluate("JSON.stringify(Object.assign({}, document.body && document.body.dataset))",
                                    timeout=2)
        except Exception as e:
            dataset = f"<unavailable: {e}>"
        lines = [headline, f"  last value: {json.dumps(last)}", f"  body.dataset: {dataset}",
                 "  console (last 20):"] + [f"    {m}" for m in self.console[-20:]]
        return "\n".join(lines)

    def set_viewport(self, width, height, mobile=False, scale=1):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})

    def screenshot(self, path, timeout=10):
        data = self.send("Page.captureScreenshot", {"format": "png"}, timeout)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        self.browser._sessions.pop(self.session_id, None)
        try:
            self.browser.send("Target.closeTarget", {"targetId": self.target_id})
        except CDPError:
            pass                        # browser already gone: nothing left to close


def _high_fd(fd):
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def _describe(obj):
    if "value" in obj:
        return obj["value"] if isinstance(obj["value"], str) else json.dumps(obj["value"])
    return obj.get("unserializableValue") or obj.get("description") or obj.get("type", "?")


def _exception_text(d):
    exc = d.get("exception") or {}
    text = exc.get("description") or exc.get("value") or d.get("text", "exception")
    where = f" ({d['url']}:{d.get('lineNumber', 0) + 1})" if d.get("url") else ""
    return f"{text}{where}"
