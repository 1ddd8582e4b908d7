"""Browser end-to-end scenarios: real `duet serve`, real Chromium (and real coturn for `relay`).

Run by BrowserCallTests inside a fresh network namespace:
    unshare -n sh -c 'ip link set lo up && exec python3 scenarios.py call'
Each scenario asserts what its name says and prints `scenario <name>: ok` at the end.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from cdp import Browser, CDPError  # noqa: E402
import phase_timing  # noqa: E402
import results  # noqa: E402
from results import report, watch  # noqa: E402,F401 — report/watch are the scenarios' API to their outcome

DUET = os.environ.get("DUET_BINARY", ".build/debug/duet")
# Screenshots go with the run's results (.build/results/<run-id>/screenshots) unless told otherwise;
# scripts/publish-results.sh copies a complete run's to docs/screenshots.
SHOTS = os.environ.get("DUET_SCREENSHOTS")
HARD_LIMIT_S = 140


def log(*parts):
    print(f"[{time.strftime('%H:%M:%S')}]", *parts, flush=True)


class Server:
    """`duet serve` on a free port; restartable on the same port and data dir (a server restart)."""

    def __init__(self, *args, host="127.0.0.1", prefix=()):
        # prefix: a command the server runs under, e.g. `ip netns exec NS` (the NAT lab's public namespace)
        self.args, self.data, self.host, self.prefix = list(args), tempfile.mkdtemp(prefix="duet-e2e-data-"), host, list(prefix)
        self.port, self.proc = 0, None
        self.start()

    def start(self):
        with phase_timing.spent("duet serve start"):
            self._start()

    def _start(self):
        self.log = open(os.path.join(self.data, "serve.log"), "ab")
        self.proc = subprocess.Popen(
            [*self.prefix, DUET, "serve", "--host", self.host, "--port", str(self.port), "--data-dir", self.data,
             "--log-level", "info", *self.args],
            stdout=subprocess.PIPE, stderr=self.log, stdin=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("http://"):
            raise AssertionError(f"duet serve did not print its URL (got {line!r}); log: {self.log_tail()}")
        self.url = line if line.endswith("/") else line + "/"
        self.port = int(self.url.rsplit(":", 1)[1].strip("/"))
        log("server at", self.url)

    def new_room(self):
        with urllib.request.urlopen(urllib.request.Request(self.url + "api/room-id", method="POST"), timeout=5) as r:
            return json.load(r)["roomId"]

    def kill(self):
        self.proc.kill()
        self.proc.wait(5)
        log("server killed")

    def stop(self):
        results.capture_failing()  # a failing scenario's pages and peers, while the server still serves them
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def log_tail(self, n=30):
        try:
            with open(os.path.join(self.data, "serve.log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


class Coturn:
    def __init__(self, secret, listen=("127.0.0.1",), port=3478, relay="127.0.0.1", tls=None):
        # tls: (certificate file, key file, port) for TURN over TLS as well (turns:); UDP and TCP are always on
        self.dir = tempfile.mkdtemp(prefix="duet-e2e-turn-")
        tls_args = [f"--cert={tls[0]}", f"--pkey={tls[1]}", f"--tls-listening-port={tls[2]}"] if tls else ["--no-tls"]
        self.proc = subprocess.Popen(
            ["turnserver", "-n", *(f"--listening-ip={ip}" for ip in listen), f"--relay-ip={relay}", f"--listening-port={port}",
             "--use-auth-secret", f"--static-auth-secret={secret}", "--realm=duet.test", "--allow-loopback-peers",
             *tls_args, "--no-dtls", "--no-cli", "--log-file=stdout", "--simple-log",
             # Its own pid file: scenarios run side by side, each with a coturn (the default is one file for all).
             f"--pidfile={os.path.join(self.dir, 'turnserver.pid')}"],
            stdout=open(os.path.join(self.dir, "turn.log"), "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        # Ready once it listens on its UDP port (not after a fixed pause: a loaded machine takes longer).
        deadline = time.monotonic() + 10
        while not subprocess.run(["ss", "-Hlun", f"sport = :{port}"], capture_output=True, text=True).stdout.strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"coturn did not listen on UDP port {port} (log: {self.dir}/turn.log)")
            time.sleep(0.05)

    def stop(self):
        self.proc.kill()  # turnserver takes its time over SIGTERM
        self.proc.wait(5)


class TurnDeployment:
    """coturn plus a `duet serve` that hands out its credentials; `with TurnDeployment() as (server, turn):`."""

    def __init__(self, transport="udp", start_turn=True, *server_args):
        # server_args: extra `duet serve` flags, e.g. a short --turn-ttl
        self.secret = "e2e-" + os.urandom(8).hex()
        self.turn = Coturn(self.secret) if start_turn else None
        # coturn has 127.0.0.1:3478 (STUN and TURN): the server's own STUN server moves aside to 3479.
        self.server = Server("--stun-port", "3479", "--turn-secret", self.secret, "--turn-uri",
                             f"turn:127.0.0.1:3478?transport={transport}", *server_args)

    def start_turn(self):
        self.turn = Coturn(self.secret)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.stop()
        if self.turn:
            self.turn.stop()


def expect(condition, message):
    if not condition:
        raise AssertionError(message)


def shot(page, name, width=None, height=None):
    directory = SHOTS or results.screenshots_dir()
    os.makedirs(directory, exist_ok=True)
    if width:
        page.set_viewport(width, height, mobile=width < 600)
        time.sleep(0.4)  # let layout and a few video frames settle
    page.screenshot(os.path.join(directory, f"{name}.png"))
    log("screenshot", name)


STATE = "({phase: duet.phase, status: duet.connectionStatus, transport: duet.transport, cid: duet.cid, " \
        "screen: duet.screen, badge: duet.badge.kind})"


# Mean luma (0–255) of the remote video, drawn small into a canvas (-1: no picture yet): a stopped camera arrives
# as black frames.
REMOTE_LUMA = """(() => { const v = document.getElementById('remote-video'); if (!v.videoWidth) return -1;
    const c = document.createElement('canvas'); c.width = 32; c.height = 24; const g = c.getContext('2d');
    g.drawImage(v, 0, 0, 32, 24); const d = g.getImageData(0, 0, 32, 24).data; let sum = 0;
    for (let i = 0; i < d.length; i += 4) sum += 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
    return sum / (d.length / 4); })()"""
# Measured (Chromium 156, 2026-11-24): the fake camera's picture reads about 90, a stopped camera's frames 0.
BLACK_LUMA = 16


def state(page):
    return page.evaluate(STATE)


def stats(page):
    return page.evaluate("duet.stats()")


def open_call(browser, url, name=None, prejoin=False):
    """Opens a call link. Test pages join at once (cdp.py's new_page skips the pre-join screen unless prejoin=True:
    then the page waits on it until Join is pressed)."""
    page = watch(browser.new_page(url, prejoin=prejoin), name)
    page.wait_for("window.duet && duet.page === 'call'", 10, message="call page loads")
    return page


def in_call(page, timeout=20, what="in call"):
    page.wait_for("duet.phase === 'inCall' && duet.connectionStatus === 'connected' && "
                  "document.body.dataset.connectionStatus === 'connected' && "
                  "['connected', 'completed'].includes(duet.iceConnectionState) && duet.badge.kind === 'connected'",
                  timeout, message=what)


# Received audio is judged by its level over a window of played-out audio: sqrt(Δenergy / Δduration) of the
# inbound-rtp stats (totalAudioEnergy, totalSamplesDuration; 1.0 = full scale). Measured in Chromium 156 over a
# loopback call (2026-11-23): its fake microphone is a train of beeps, so 0.1 s windows range 0.02–0.77 and
# 0.2 s ones 0.04–0.93, while every 0.5 s window reads 0.41–0.65 (1 s: 0.47–0.61); a muted sender (track
# enabled = false) reads exactly 0.0 while its packets still arrive (none concealed). duet call's tone (a sine
# at volume 0.3) is about 0.2. Silence is at most 0.01 (-40 dBFS): 40× under the quietest real window.
AUDIO_WINDOW_S = 0.5
SILENCE_LEVEL = 0.01


def mark(page):
    """A snapshot of the page's cumulative media counters (`duet.stats()`): checks ask what arrived after it."""
    return stats(page)


def media_window(before, after):
    """What the page received between two snapshots: video frames decoded, seconds of audio played out, the
    share of them decoded from packets (the rest concealed: made up over a gap) and their level."""
    samples = after["audioSamplesReceived"] - before["audioSamplesReceived"]
    concealed = after["audioConcealedSamples"] - before["audioConcealedSamples"]
    seconds = after["audioSamplesDuration"] - before["audioSamplesDuration"]
    energy = after["audioEnergy"] - before["audioEnergy"]
    return {"frames": after["videoFramesDecoded"] - before["videoFramesDecoded"], "audioSeconds": round(seconds, 3),
            "decoded": round((samples - concealed) / samples, 3) if samples > 0 else 0.0,
            "level": round(math.sqrt(max(energy, 0.0) / seconds), 5) if seconds > 0 else 0.0}


def wait_window(page, since, accept, timeout, what):
    """Polls `duet.stats()` until the newest window of at least AUDIO_WINDOW_S of audio after `since` (a mark;
    None: now) satisfies `accept(window)`; returns the latest stats with that window under "window"."""
    history = [since or mark(page)]
    taken = [time.time()]  # when each reading of `history` was taken (epoch s; a mark: no later than this)
    deadline = time.monotonic() + timeout
    last = None
    while True:
        now = stats(page)
        index = next((i for i in range(len(history) - 1, -1, -1)
                      if now["audioSamplesDuration"] - history[i]["audioSamplesDuration"] >= AUDIO_WINDOW_S), None)
        if index is not None:
            last = media_window(history[index], now)
            if accept(last):
                # windowFrom: the window's start (epoch s, the reading before it), for telling what happened before
                # media came back from what happened after.
                return {**now, "window": last, "windowFrom": taken[index]}
        history.append(now)
        taken.append(time.time())
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not within {timeout}s; since the mark {media_window(history[0], now)}, "
                               f"last full window {last}, stats {now}")
        time.sleep(0.1)


def media_flows(page, since=None, timeout=20, what="media flows", video=True):
    """Media flows into `page` after the mark `since` (None: from now): over one window, new video frames were
    decoded (unless video=False) and audio was decoded from packets, mostly not concealed, above silence."""
    return wait_window(page, since, lambda w: (w["frames"] >= 3 or not video) and w["decoded"] >= 0.5
                       and w["level"] > SILENCE_LEVEL, timeout, what)


def audio_silent(page, since=None, timeout=10, what="received audio is silent"):
    """The audio reaching `page` after `since` is silence over one window while still being decoded from packets
    (a muted sender, not a broken link)."""
    return wait_window(page, since, lambda w: w["decoded"] >= 0.5 and w["level"] <= SILENCE_LEVEL, timeout, what)


def with_query(link, query):
    """A link with `query` in its place: before the fragment (a call link's #k=…), never inside it."""
    base, hash_, fragment = link.partition("#")
    return base + query + hash_ + fragment


def start_call(browser, server, query="", shots=False):
    """Page A starts a call from the home page, page B opens the link; both end up in the call."""
    home = watch(browser.new_page(server.url + query), "A")
    home.wait_for("window.duet && duet.page === 'home'", 10, message="home page loads")
    home.evaluate("document.getElementById('start').click()")
    home.wait_for("location.pathname.startsWith('/call/') && window.duet && duet.page === 'call'", 10,
                  message="Start a call opens the call page")
    home.wait_for("duet.screen === 'waiting' && duet.phase === 'waiting'", 15, message="A waits for the other person")
    if shots:
        shot(home, "waiting", 1280, 800)
    link = home.evaluate("document.getElementById('share-link').value")
    # A new call's link carries its key in the fragment (#k=…, issue 19): the query goes before it.
    expect(link.partition("#")[0].endswith("/call/" + home.evaluate("duet.roomId")), f"share link {link} names the room")
    b = open_call(browser, with_query(link, query), "B")
    in_call(home, what="A in call")
    in_call(b, what="B in call")
    return home, b, link


def accessible_names(page):
    """Names the browser's accessibility tree gives to what is on screen (what a screen reader reads)."""
    page.send("Accessibility.enable")
    nodes = page.send("Accessibility.getFullAXTree")["nodes"]
    return {n.get("name", {}).get("value") for n in nodes if not n.get("ignored")} - {None, ""}


# MARK: scenarios

def scenario_call(browser):
    server = Server()
    try:
        a, b, link = start_call(browser, server, shots=True)
        for name, page in (("A", a), ("B", b)):
            s = media_flows(page, what=f"{name} decodes video and receives audio")
            log(name, "stats", s)
            expect(state(page)["transport"] == "ws", f"{name} signals over WebSocket")
        # The other side's pictures and sound keep coming: a second window on both pages.
        media_flows(a, what="A keeps decoding")
        media_flows(b, what="B keeps decoding")
        expect(a.evaluate("duet.hostCid") == b.evaluate("duet.hostCid") == a.evaluate("duet.cid"), "A hosts; both agree")
        expect(a.evaluate("duet.badge.kind") == "connected", "the badge says connected only when it is")
        shot(a, "in-call", 1280, 800)
        shot(b, "in-call-phone", 390, 844)
        expect(b.evaluate("document.documentElement.scrollWidth <= 390"), "nothing overflows at phone width")
        unnamed = b.evaluate("""[...document.querySelectorAll('button, input, a, video')]
            .filter(e => e.offsetParent !== null || e.tagName === 'VIDEO')
            .filter(e => !(e.getAttribute('aria-label') || e.labels?.length || e.textContent.trim()))
            .map(e => e.id || e.tagName)""")
        expect(unnamed == [], f"every control has an accessible name: {unnamed}")
        names = accessible_names(b)
        for label in ("Mute", "Stop camera", "Leave", "The other person's video", "Your camera preview"):
            expect(label in names, f"the accessibility tree names {label!r}: {sorted(names)}")
        # Switch camera: offered with two cameras; it swaps the sent track without renegotiating. (Chromium's
        # second fake camera never reaches the encoder in our runs, so frames are checked after switching back.)
        camera = "document.getElementById('local-video').srcObject.getVideoTracks()[0].label"
        expect(a.evaluate("!document.getElementById('switch-camera').hidden"), "switch camera is offered with two cameras")
        expect(a.evaluate(camera) == "fake_device_0", "the first camera to start with")
        a.evaluate("document.getElementById('switch-camera').click()")
        a.wait_for(f"{camera} === 'fake_device_1'", 5, message="the other camera is in use")
        a.evaluate("document.getElementById('switch-camera').click()")
        a.wait_for(f"{camera} === 'fake_device_0'", 5, message="and back")
        media_flows(b, what="B keeps decoding A's video after the switches")
        expect(a.evaluate("duet.phase") == "inCall" and a.evaluate("duet.connectionStatus") == "connected", "still connected")
        expect(a.evaluate("duet.iceRestarts") == [], "switching cameras needs no ICE restart")
        # Controls: mute and camera off change the local tracks, the buttons say so, and the other side sees it:
        # B's received audio falls to silence (still decoded from packets), and comes back on unmute.
        a.evaluate("document.getElementById('mute').click()")
        expect(a.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "true", "mute is pressed")
        expect(a.evaluate("document.getElementById('local-video').srcObject.getAudioTracks()[0].enabled") is False, "mic off")
        log("B while A is muted", audio_silent(b, what="B hears silence while A is muted")["window"])
        media_flows(a, what="A still hears B while muted")
        a.evaluate("document.getElementById('mute').click()")
        expect(a.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "false", "mute is released")
        log("B after unmute", media_flows(b, what="B hears A again after unmute")["window"])
        # Camera off: what B receives of A turns black (a disabled track sends black frames); camera on: A is back.
        a.evaluate("document.getElementById('camera').click()")
        expect(a.evaluate("document.getElementById('local-video').srcObject.getVideoTracks()[0].enabled") is False, "camera off")
        lit = b.evaluate(REMOTE_LUMA)
        b.wait_for(f"(luma => luma >= 0 && luma < {BLACK_LUMA})({REMOTE_LUMA})", 10,
                   message="B's picture of A goes black when A stops the camera")
        log("B's picture of A, mean luma", lit, "→ camera off", b.evaluate(REMOTE_LUMA))
        a.evaluate("document.getElementById('camera').click()")
        b.wait_for(f"{REMOTE_LUMA} > {BLACK_LUMA}", 10, message="B sees A again when A restarts the camera")
        # Home lists the room among recent calls, with live occupancy from watch_rooms.
        room = a.evaluate("duet.roomId")
        home = browser.new_page(server.url)
        home.wait_for(f"duet.page === 'home' && duet.occupancy()['{room}'] === 2", 10, message="home shows 2 people in the call")
        expect("2 people in the call" in home.evaluate("document.getElementById('recent-list').textContent"), "occupancy is written out")
        shot(home, "home", 1280, 800)
        b.evaluate("duet.leave()")
        home.wait_for(f"duet.occupancy()['{room}'] === 1", 10, message="occupancy follows a leave live")
    finally:
        server.stop()


def scenario_sse_fallback(browser):
    server = Server("--block-websocket", "on")
    try:
        a, b, _ = start_call(browser, server)
        for name, page in (("A", a), ("B", b)):
            s = media_flows(page, what=f"{name} has media with signaling over SSE")
            expect(state(page)["transport"] == "sse", f"{name} fell back to SSE: {state(page)}")
            log(name, "over SSE", s)
    finally:
        server.stop()


def scenario_relay(browser):
    with TurnDeployment() as deployment:
        a, b, _ = start_call(browser, deployment.server, "?relay=1")
        for name, page in (("A", a), ("B", b)):
            s = media_flows(page, what=f"{name} has media through coturn")
            expect(s["candidateType"] == "relay", f"{name} uses a relay candidate: {s}")
            log(name, "relayed", s)


def scenario_server_restart(browser):
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        media_flows(a)
        media_flows(b)
        cids = (a.evaluate("duet.cid"), b.evaluate("duet.cid"))
        server.kill()
        # Media is peer to peer: it keeps flowing while signaling is gone.
        down = {name: mark(page) for name, page in (("A", a), ("B", b))}
        a.wait_for("duet.connectionStatus !== 'connected'", 35, message="A notices signaling is gone")
        a.wait_for("duet.badge.kind === 'reconnecting'", 5, message="A shows Reconnecting… after the debounce")
        shot(a, "recovering", 1280, 800)
        for name, page in (("A", a), ("B", b)):
            media_flows(page, since=down[name], what=f"{name}: video and audio keep coming while the server is down")
        a.wait_for("duet.connectionStatus === 'retrying' && duet.badge.kind === 'retrying'", 15, message="A goes to retrying")
        expect(a.evaluate("!document.getElementById('badge-leave').hidden"), "retrying offers Leave call")
        shot(a, "retrying", 1280, 800)
        server.start()
        restarted = time.monotonic()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 30, what=f"{name} back to connected with no user action")
        expect((a.evaluate("duet.cid"), b.evaluate("duet.cid")) == cids, "both kept their seats")
        for name, page in (("A", a), ("B", b)):
            expect(page.evaluate("duet.reconnects").count("recovered") >= 1, f"{name} was recovered: {page.evaluate('duet.reconnects')}")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name} still decodes video and audio after the restart")
        report(seconds=time.monotonic() - restarted, how=results.how_recovered(a, b))
        expect(a.evaluate("duet.badge.kind") == "connected", "badge back to connected")
    finally:
        server.stop()


def scenario_reload(browser):
    server = Server()
    try:
        a, b, link = start_call(browser, server)
        media_flows(b)
        cid = b.evaluate("duet.cid")
        reloaded = time.monotonic()
        b.reload()
        b.wait_for("window.duet && duet.page === 'call'", 10)
        in_call(b, 20, what="B rejoins after reload")
        expect(b.evaluate("duet.cid") == cid, "B has the same cid after reload")
        expect(b.evaluate("duet.reconnects") == ["reattached"], f"the reloaded page reattached: {b.evaluate('duet.reconnects')}")
        media_flows(b, what="B's call resumes after reload")
        media_flows(a, what="A sees and hears B again")
        report(seconds=time.monotonic() - reloaded, how="the reloaded page reattached to its seat (same cid); time from the reload")
        expect(len(a.evaluate("duet.participants")) == 2, "still two participants")
        # B goes away without leaving (tab navigated off): A is told the other person is reconnecting.
        b.navigate("about:blank")
        a.wait_for("duet.badge.kind === 'peerReconnecting'", 15, message="A sees B suspended")
        expect(a.evaluate("document.getElementById('badge-text').textContent") == "The other person is reconnecting…",
               "the badge names the peer")
        # B's media stops with it: A's watchdog calls that a stall after MEDIA_STALL_TIMEOUT_MS, and ICE may go
        # disconnected. It is B's trouble: A stays in the call, connected, restarting nothing towards a peer that
        # cannot answer — over the window the watchdog and ICE's disconnected delay act in, not just at one look.
        restarts = a.evaluate("duet.iceRestarts.length")
        window = a.evaluate("import('/js/constants.js').then(m => m.RESILIENCE.MEDIA_STALL_TIMEOUT_MS"
                            " + m.RESILIENCE.ICE_DISCONNECTED_RESTART_DELAY_MS)") / 1000 + 2
        a.holds_for(f"duet.phase === 'inCall' && duet.connectionStatus === 'connected'"
                    f" && duet.badge.kind === 'peerReconnecting' && duet.iceRestarts.length === {restarts}", window,
                    message="A's own call is not degraded by B's absence",
                    show="({phase: duet.phase, status: duet.connectionStatus, badge: duet.badge.kind,"
                         " iceRestarts: duet.iceRestarts, ice: duet.iceConnectionState})")
        shot(a, "peer-reconnecting", 1280, 800)
        # The whole link, key and all: a keyed call refuses a side that cannot prove its descriptions (issue 19).
        b.navigate(link)
        in_call(b, 20, what="B comes back to the same seat")
        expect(b.evaluate("duet.cid") == cid, "B still has its cid after coming back")
        a.wait_for("duet.badge.kind === 'connected'", 15, message="A's badge clears when B is back")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: media both ways after B came back")
        # A duplicated tab carries B's seat (sessionStorage is copied): the newer tab takes the seat over,
        # and B stops instead of fighting for it, offering "Use here".
        seat = b.evaluate("sessionStorage.getItem('duet.session')")
        c = browser.new_page(server.url)
        c.evaluate(f"sessionStorage.setItem('duet.session', {json.dumps(seat)}); true")
        c.navigate(link)
        in_call(c, 20, what="the duplicated tab holds the seat")
        expect(c.evaluate("duet.cid") == cid and c.evaluate("duet.reconnects") == ["reattached"], "same seat, reattached")
        for name, page in (("A", a), ("the new tab", c)):
            media_flows(page, what=f"{name}: media both ways with the tab that took the seat")
        b.wait_for("duet.screen === 'ended' && duet.endReason === 'replaced'", 10, message="B steps aside")
        expect(b.evaluate("document.getElementById('rejoin').textContent") == "Use here", "B offers Use here")
        time.sleep(2)
        expect(c.evaluate("duet.phase") == "inCall" and c.evaluate("duet.cid") == cid, "and nobody fights back")
    finally:
        server.stop()


def scenario_leave_end(browser):
    server = Server()
    try:
        a, b, link = start_call(browser, server)
        b.evaluate("document.getElementById('leave').click()")
        b.wait_for("duet.screen === 'ended' && duet.phase === 'idle'", 10, message="B's call ended screen")
        a.wait_for("duet.screen === 'waiting' && duet.phase === 'waiting'", 10, message="A returns to Waiting")
        b.evaluate("document.getElementById('rejoin').click()")
        in_call(b, 20, what="B rejoins")
        in_call(a, 20, what="A back in call")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: media both ways after the rejoin")
        expect(a.evaluate("!document.getElementById('end').hidden"), "the host sees End for both")
        a.evaluate("document.getElementById('end').click()")
        for name, page, reason in (("A", a, "ended"), ("B", b, "roomEnded")):
            page.wait_for("duet.screen === 'ended'", 10, message=f"{name} sees the call ended")
            expect(page.evaluate("duet.endReason") == reason, f"{name} knows why: {page.evaluate('duet.endReason')}")
            expect(page.evaluate("document.getElementById('rejoin').hidden"), f"{name} is not offered to rejoin an ended room")
        # Reloading the "Call ended" page stays there instead of walking back into the room.
        b.reload()
        b.wait_for("window.duet && duet.screen === 'ended'", 10, message="reloaded ended page stays ended")
        expect(b.evaluate("duet.phase") == "idle", "no join after reloading the ended page")
        c = open_call(browser, link)
        c.wait_for("duet.screen === 'error'", 15, message="an ended room's link explains itself")
        expect("ended" in c.evaluate("document.getElementById('error-title').textContent"), "room ended screen")
    finally:
        server.stop()


def scenario_permission_denied(browser):
    """No camera permission: the page explains it and offers audio only; the call then works one-way video."""
    server = Server()
    try:
        origin = server.url.rstrip("/")
        for permission, setting in (("camera", "denied"), ("microphone", "granted")):
            browser.send("Browser.setPermission", {"permission": {"name": permission}, "setting": setting, "origin": origin})
        link = server.url + "call/" + server.new_room()
        a = open_call(browser, link)
        a.wait_for("duet.screen === 'error'", 10, message="blocked camera shows its screen")
        expect("blocked" in a.evaluate("document.getElementById('error-title').textContent"), "the title names the problem")
        expect(a.evaluate("!document.getElementById('error-audio-only').hidden"), "audio-only is offered")
        expect(a.evaluate("!document.getElementById('error-retry').hidden"), "try again is offered")
        shot(a, "no-camera-permission", 1280, 800)
        a.evaluate("document.getElementById('error-retry').click()")
        a.wait_for("duet.screen === 'error'", 10, message="try again while still blocked explains again")
        a.evaluate("document.getElementById('error-audio-only').click()")
        a.wait_for("duet.screen === 'waiting'", 15, message="audio only joins the call")
        browser.send("Browser.setPermission", {"permission": {"name": "camera"}, "setting": "granted", "origin": origin})
        b = open_call(browser, link)
        in_call(a, what="A (audio only) in call")
        in_call(b, what="B in call")
        media_flows(a, what="A receives B's video and audio")
        media_flows(b, video=False, what="B hears A (A sends no video)")
    finally:
        server.stop()


def sh(command):
    subprocess.run(command, shell=True, check=True)


def make_network():
    """A veth pair (10.77.0.1 ↔ 10.77.0.2): a loopback-only namespace looks offline to Chromium, this makes it a
    machine with a network. Made before Chromium starts, and settled (both ends up) by then: an interface or address
    appearing while pages load reads to Chromium as a network change, which fails the loads in flight with
    ERR_NETWORK_CHANGED (a page once hung on "starting" that way). No IPv6, so no link-local address turns up
    a second or two later either."""
    sh("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
    sh("ip link add duet0 type veth peer name duet1 && ip addr add 10.77.0.1/24 dev duet0 && "
       "ip addr add 10.77.0.2/24 dev duet1 && ip link set duet0 up && ip link set duet1 up")
    deadline = time.monotonic() + 5
    # (/sys/class/net would show the machine's namespace under `unshare -n`; ip reads this one's.)
    while any("state UP" not in subprocess.run(["ip", "-o", "link", "show", dev], capture_output=True, text=True).stdout
              for dev in ("duet0", "duet1")):
        expect(time.monotonic() < deadline, "the veth pair came up")
        time.sleep(0.05)


def scenario_network_online(browser):
    """A real network interface of the namespace goes down and up: the browser fires `offline`, then
    `online` (and Network Information changes), the engine restarts ICE, and the call carries on.
    The interface is made by make_network() before Chromium starts (see browser_options)."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        media_flows(b)
        b.wait_for("navigator.onLine", 5, message="B is online")
        # The network was there and settled before Chromium started: no load of either page saw it change.
        changed = [m for page in (a, b) for m in page.console if "ERR_NETWORK_CHANGED" in m]
        expect(not changed, f"nothing failed on a network change before the fault: {changed}")
        sh("ip link set duet0 down && ip link set duet1 down")
        b.wait_for("navigator.onLine === false", 10, message="B sees the network go away")
        sh("ip link set duet0 up && ip link set duet1 up")
        online = time.monotonic()
        b.wait_for("duet.iceRestarts.includes('networkOnline')", 15, message="back online restarts ICE")
        for name, page in (("A", a), ("B", b)):
            in_call(page, 30, what=f"{name} connected after coming back online")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: video and audio after the restart")
        report(seconds=time.monotonic() - online, how=results.how_recovered(a, b))
    finally:
        server.stop()


def scenario_relay_unreachable(browser):
    """Relay-only and the TURN server is not there yet: the call never claims "Connected", escalates after
    the threshold ("Taking longer than usual…" with Leave call), and connects once coturn comes up."""
    with TurnDeployment(start_turn=False) as deployment:
        link = deployment.server.url + "call/" + deployment.server.new_room() + "?relay=1"
        a = open_call(browser, link)
        b = open_call(browser, link)
        for name, page in (("A", a), ("B", b)):
            page.wait_for("duet.phase === 'inCall'", 15, message=f"{name} is in the call (signaling works)")
            expect(page.evaluate("duet.badge.kind") == "connecting", f"{name} says Connecting…, not Connected")
        a.wait_for("duet.badge.kind === 'retrying'", 15, message="A escalates when media never connects")
        expect(a.evaluate("document.getElementById('badge-text').textContent") == "Connecting…", "never connected: Connecting…")
        expect(a.evaluate("!document.getElementById('badge-leave').hidden"), "Leave call is offered")
        deployment.start_turn()
        log("coturn started")
        turn_up = time.monotonic()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 60, what=f"{name} connects through the late relay")
        for name, page in (("A", a), ("B", b)):
            s = media_flows(page, what=f"{name}: media through the late relay")
            expect(s["candidateType"] == "relay", f"{name} relayed: {s}")
        report(seconds=time.monotonic() - turn_up, how=results.how_recovered(a, b) + " (time from coturn's start)")


def scenario_relay_restart(browser):
    """Relay-only call and the TURN server dies: ICE degrades, the badge shows, ICE restarts, and when
    coturn is back the call is relayed again with no user action."""
    with TurnDeployment() as deployment:
        a, b, _ = start_call(browser, deployment.server, "?relay=1")
        media_flows(a)
        media_flows(b)
        deployment.turn.stop()
        log("coturn killed")
        for name, page in (("A", a), ("B", b)):
            page.wait_for("duet.connectionStatus !== 'connected'", 30, message=f"{name} notices media is gone")
        a.wait_for("duet.badge.kind === 'reconnecting' || duet.badge.kind === 'retrying'", 10, message="A shows the badge")
        a.wait_for("duet.iceRestarts.length > 0", 20, message="A restarts ICE")
        deployment.start_turn()
        log("coturn restarted")
        turn_up = time.monotonic()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 60, what=f"{name} relayed again")
        for name, page in (("A", a), ("B", b)):
            s = media_flows(page, what=f"{name} decodes video and audio again through the new relay")
            expect(s["candidateType"] == "relay", f"{name} still relay-only: {s}")
        report(seconds=time.monotonic() - turn_up, how=results.how_recovered(a, b))
        log("ICE restarts", a.evaluate("duet.iceRestarts"), b.evaluate("duet.iceRestarts"))


def scenario_error_screens(browser):
    server = Server()
    try:
        bad = open_call(browser, server.url + "call/not-a-room")
        bad.wait_for("duet.screen === 'error'", 5, message="invalid link screen")
        expect("not a Duet call" in bad.evaluate("document.getElementById('error-title').textContent"), "invalid link says so")
        a, b, link = start_call(browser, server)
        c = open_call(browser, link)
        c.wait_for("duet.screen === 'error'", 15, message="a third person sees the room is full")
        expect("full" in c.evaluate("document.getElementById('error-title').textContent"), "room full screen")
        shot(c, "room-full", 390, 844)
        in_call(a, 5, what="the full-room refusal does not disturb the call")
    finally:
        server.stop()


class FailingFetch:
    """Fails the first `times` requests of `page` whose URL matches `pattern` (CDP Fetch: the request errors as
    on a network change) and lets later ones through; answers from a thread of its own. A context manager."""

    def __init__(self, page, pattern, times):
        self.page, self.times, self.failed, self.passed = page, times, 0, 0
        self.paused = page.events("Fetch.requestPaused")
        page.send("Fetch.enable", {"patterns": [{"urlPattern": pattern, "requestStage": "Request"}]})
        self.thread = threading.Thread(target=self._answer, name="failing-fetch", daemon=True)
        self.thread.start()

    def _answer(self):
        while (request := self.paused.get()) is not None:
            fail = self.failed < self.times
            try:
                if fail:
                    self.page.send("Fetch.failRequest", {"requestId": request["requestId"], "errorReason": "InternetDisconnected"})
                else:
                    self.page.send("Fetch.continueRequest", {"requestId": request["requestId"]})
            except CDPError as e:  # the page navigated away meanwhile: that request is gone
                log("failing-fetch:", e)
                continue
            self.failed, self.passed = self.failed + fail, self.passed + (not fail)
            log(f"{'failed' if fail else 'let through'} {request['request']['url']}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.paused.put(None)
        self.thread.join(5)
        self.page.send("Fetch.disable")


def scenario_load_retry(browser):
    """A page whose module fails to load (one of its files errors, as on a network change mid-load) reloads by
    itself and gets going; when every try fails it says so, and Try again works once the file loads."""
    server = Server()
    try:
        guards = [re.search(r"<script>.*?</script>", urllib.request.urlopen(server.url + path, timeout=5).read().decode(), re.S)
                  for path in ("", "call/x")]
        expect(all(guards) and guards[0].group(0) == guards[1].group(0), "the same loading guard in both pages")
        link = server.url + "call/" + server.new_room()
        a = watch(browser.new_page(), "A")
        with FailingFetch(a, "*call-view.js", times=1) as fetch:
            a.navigate(link)
            a.wait_for("window.duet && duet.page === 'call' && duet.screen === 'waiting'", 15,
                       message="the call page gets over its failed module by itself and waits for the other person")
            expect(fetch.failed == 1 and fetch.passed >= 1, f"failed once, then loaded: {fetch.failed} failed, {fetch.passed} passed")
        expect(a.evaluate("performance.getEntriesByType('navigation')[0].type") == "reload", "it reloaded itself")
        expect(a.evaluate("sessionStorage.getItem('duet.loadAttempts')") is None, "a page that loaded forgets its tries")
        b = open_call(browser, link, "B")
        in_call(a, what="A in call")
        in_call(b, what="B in call")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: media both ways")
        # Every try fails (a load and 3 reloads): the page explains, and Try again loads it once the file arrives.
        home = watch(browser.new_page(), "home")
        with FailingFetch(home, "*home-page.js", times=4) as fetch:
            home.navigate(server.url)
            home.wait_for("document.body.dataset.screen === 'load-failed'", 20, message="home says it could not load")
            expect(fetch.failed == 4 and fetch.passed == 0, f"one load and three reloads, all failed: {fetch.failed}, {fetch.passed}")
            text = home.evaluate("document.body.innerText")
            expect("Couldn’t load Duet" in text and "Check your connection" in text, f"the message says what happened: {text!r}")
            expect(home.evaluate("document.activeElement.textContent") == "Couldn’t load Duet", "focus moves to the message")
            expect(home.evaluate("document.querySelector('[role=alert]') !== null"), "announced as an alert")
            shot(home, "load-failed", 1280, 800)
            time.sleep(6)  # longer than the last pause: no reload after the last try
            expect(fetch.failed == 4, f"no more tries after the message: {fetch.failed}")
            home.evaluate("document.querySelector('button').click()")
            home.wait_for("window.duet && duet.page === 'home'", 10, message="Try again loads home")
            expect(fetch.passed == 1, f"the file loaded on Try again: {fetch.passed}")
    finally:
        server.stop()


# MARK: why a call does not connect: the /check page, and the explanation on the call page

CHECK_IDS = ("websocket", "sse", "stun", "turnUdp", "turnTcp", "turnTls", "camera", "microphone")


def self_signed_certificate(address):
    """A throwaway certificate for the IP `address` and its key (openssl), with the base64 SHA-256 of its public key:
    what Chromium's --ignore-certificate-errors-spki-list takes. Chromium checks a TURN server's TLS certificate like
    a web server's (a self-made one gets error 701 "Failed to establish connection"); that flag trusts this key only."""
    directory = tempfile.mkdtemp(prefix="duet-e2e-cert-")
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", f"/CN={address}", "-addext", f"subjectAltName=IP:{address}"], check=True, capture_output=True)
    spki = subprocess.run(f"openssl x509 -in {cert} -pubkey -noout | openssl pkey -pubin -outform der | "
                          "openssl dgst -sha256 -binary | base64", shell=True, check=True, capture_output=True, text=True)
    return cert, key, spki.stdout.strip()


def run_check(page, url):
    """Opens /check at `url` (or runs it where the page is, url None) and waits for every row: window.duetCheck."""
    if url:
        page.navigate(url)
    page.wait_for("window.duetCheck && duetCheck.done", 60, message="the check finishes")
    result = page.evaluate("JSON.parse(JSON.stringify(window.duetCheck))")
    shown = page.evaluate("Object.fromEntries([...document.querySelectorAll('.check-row')].map(r => "
                          "[r.id.slice(6), {status: r.dataset.status, text: r.innerText}]))")
    for check in CHECK_IDS:
        expect(shown[check]["status"] == result["results"][check]["status"], f"{check}: the row shows its result: {shown[check]}")
        expect(result["results"][check]["detail"] in shown[check]["text"], f"{check}: the row says what happened: {shown[check]}")
    log("check", {k: (v["status"], v["detail"]) for k, v in result["results"].items()})
    return result


def rooms_left(page, rooms):
    """Occupancy of `rooms` as the server tells a watcher (watch_rooms over a WebSocket from `page`)."""
    return page.evaluate("""(rids => new Promise((resolve, reject) => {
        const ws = new WebSocket(location.origin.replace('http', 'ws') + '/ws');
        ws.onopen = () => ws.send(JSON.stringify({v: 1, type: 'watch_rooms', payload: {rids}}));
        ws.onmessage = (e) => { const m = JSON.parse(e.data); if (m.type === 'room_statuses') { ws.close(); resolve(m.payload); } };
        ws.onerror = () => reject(new Error('watch_rooms failed'));
        setTimeout(() => reject(new Error('no room_statuses')), 5000);
    }))(%s)""" % json.dumps(rooms))


def shot_page(page, name, width=1280):
    """A screenshot of the whole page at `width` (the viewport made as tall as the page)."""
    page.set_viewport(width, 800)
    height = page.evaluate("Math.ceil(document.documentElement.scrollHeight)")
    shot(page, name, width, max(800, height))


def scenario_check_page(_):
    """The connection check (/check) in a real browser: every row passes against a full deployment. Against duet serve
    with its STUN server and coturn over UDP, TCP and TLS every row passes, each with what it found; against a server
    without TURN (and a dead one) the TURN rows say skip or fail with what to do; a browser that does not trust the
    relay's certificate fails TURN over TLS, naming the certificate."""
    make_network()  # a machine with a network: 10.77.0.1 and 10.77.0.2
    address = "10.77.0.1"
    # A NAT on the way to the full server's STUN port, as behind a home router: the STUN server sees another address
    # (10.77.0.2, another port), so Chromium gets a server-reflexive candidate. (Without one, the address STUN sees is
    # the device's own, and Chromium drops it as a duplicate: the bare server's STUN, on 3479, shows that case.)
    sh(f"iptables -t nat -A POSTROUTING -p udp -d {address} --dport 3478 -j SNAT --to-source 10.77.0.2:40000-40999")
    cert, key, spki = self_signed_certificate(address)
    secret = "e2e-" + os.urandom(8).hex()
    turn_uris = (f"turn:{address}:3490?transport=udp", f"turn:{address}:3490?transport=tcp", f"turns:{address}:5349?transport=tcp")
    turn = Coturn(secret, listen=(address,), port=3490, relay=address, tls=(cert, key, 5349))
    servers = []
    try:
        full = Server("--turn-secret", secret, *(arg for uri in turn_uris for arg in ("--turn-uri", uri)), host=address)
        servers.append(full)
        # No TURN but one that is not there (UDP, dead port); its own STUN port, the full server has 3478.
        bare = Server("--stun-port", "3479", "--turn-secret", secret, "--turn-uri", f"turn:{address}:3999?transport=udp", host=address)
        servers.append(bare)
        origins = ",".join(s.url.rstrip("/") for s in servers)  # camera and microphone need a secure origin
        flags = (f"--unsafely-treat-insecure-origin-as-secure={origins}",)
        with Browser.launch(extra_flags=(*flags, f"--ignore-certificate-errors-spki-list={spki}")) as browser:
            page = watch(browser.new_page(full.url), "check")
            page.wait_for("window.duet && duet.page === 'home'", 10, message="home page loads")
            expect(page.evaluate("document.querySelector('a[href=\"/check\"]')?.textContent") == "Check your connection",
                   "home links to the check")
            page.evaluate("document.querySelector('a[href=\"/check\"]').click()")
            page.wait_for("location.pathname === '/check' && window.duetCheck", 10, message="the link opens the check")
            result = run_check(page, None)
            failed = {k: v for k, v in result["results"].items() if v["status"] != "pass"}
            expect(not failed, f"every row passes against the full deployment: {failed}")
            m = result["measurements"]
            expect(m["stun"]["srflx"], f"STUN passed on a server-reflexive candidate: {m['stun']}")
            expect(result["results"]["stun"]["detail"].startswith("Your network’s public address is 10.77.0.2"), result["results"]["stun"])
            for check, transport, uri in zip(("turnUdp", "turnTcp", "turnTls"), ("udp", "tcp", "tls"), turn_uris):
                relays = m[check]["relays"]
                expect(relays and all(r["relayProtocol"] == transport and r["url"] == uri for r in relays),
                       f"{check}: a relay candidate over {transport} from {uri}: {relays}")
            expect(m["camera"]["width"] > 0 and m["microphone"]["peakLevel"] > 0.01, f"camera picture, microphone sound: {m}")
            expect(page.evaluate("document.getElementById('check-summary').textContent").startswith("Everything works"), "summary")
            expect(page.evaluate("!document.getElementById('camera-still').hidden"), "the camera row shows a still")
            occupancy = rooms_left(page, result["rooms"])
            expect(len(result["rooms"]) == 2 and all(n == 0 for n in occupancy.values()),
                   f"both test rooms were joined and left: {result['rooms']} → {occupancy}")
            shot_page(page, "check")
            # Run again (a user gesture): everything passes again, the camera permission now granted (no mDNS).
            page.evaluate("document.getElementById('check-again').click()")
            page.wait_for("!duetCheck.done", 5, message="running again")
            again = run_check(page, None)
            expect(all(v["status"] == "pass" for v in again["results"].values()), f"all pass again: {again['results']}")

            result = run_check(page, bare.url + "check")
            r = result["results"]
            expect([r[c]["status"] for c in CHECK_IDS] == ["pass", "pass", "pass", "fail", "skip", "skip", "pass", "pass"],
                   f"no TURN over TCP or TLS (skip), TURN over UDP not there (fail): {r}")
            expect(r["turnTcp"]["detail"] == "No TURN over TCP is configured on this Duet server." and "transport=tcp" in r["turnTcp"]["todo"], r["turnTcp"])
            expect(r["turnTls"]["detail"] == "No TURN over TLS is configured on this Duet server." and "turns:" in r["turnTls"]["todo"], r["turnTls"])
            expect("relay address over UDP" in r["turnUdp"]["detail"] and "firewall" in r["turnUdp"]["todo"], r["turnUdp"])
            expect("already its public one" in r["stun"]["detail"], f"no NAT before this STUN server: {r['stun']}")
            expect(page.evaluate("document.getElementById('check-summary').textContent") == "One problem found: see what to do below.", "summary")
            shot_page(page, "check-problems")
        # Without trusting the relay's certificate, Chromium refuses TURN over TLS: the row says so.
        with Browser.launch(extra_flags=flags) as untrusting:
            page = watch(untrusting.new_page(), "untrusting")
            r = run_check(page, full.url + "check")["results"]
            expect(r["turnUdp"]["status"] == r["turnTcp"]["status"] == "pass", f"UDP and TCP relays still pass: {r}")
            expect(r["turnTls"]["status"] == "fail" and "certificate" in r["turnTls"]["todo"], f"TLS fails, naming the certificate: {r['turnTls']}")
    finally:
        for server in servers:
            server.stop()
        turn.stop()


BLOCK_UDP = ("iptables -N DUETBLOCK && iptables -A DUETBLOCK -p udp --dport 3478 -j RETURN && "
             "iptables -A DUETBLOCK -p udp --sport 3478 -j RETURN && iptables -A DUETBLOCK -p udp -j DROP && "
             "iptables -I INPUT -j DUETBLOCK")
UNBLOCK_UDP = "iptables -D INPUT -j DUETBLOCK"
PROBLEM_SHOWN = ("duet.connectivityProblem && duet.connectivityProblem.code === 'direct-failed-no-relay' && "
                 "!document.getElementById('connectivity').hidden && document.body.dataset.connectivityProblem === 'direct-failed-no-relay'")

PROBLEM_ANY = ("duet.connectivityProblem && ['direct-failed-no-relay', 'direct-pending-no-relay'].includes(duet.connectivityProblem.code) && "
               "!document.getElementById('connectivity').hidden")


def scenario_cannot_connect(browser):
    """No relay and the direct path blocked: both pages explain why the call does not connect. iptables drops every
    UDP packet but STUN's, and the server has no TURN: while ICE checks, both pages say the direct connection has not
    connected yet; once ICE fails, "No relay server is configured, and a direct connection between your networks
    failed", with what was tried and what to do, while the engine keeps retrying;
    once the block is lifted the call connects by itself and the explanation goes away."""
    server = Server()  # its STUN server on 127.0.0.1:3478, no TURN
    try:
        sh(BLOCK_UDP)
        link = server.url + "call/" + server.new_room()
        a = open_call(browser, link, "A")
        b = open_call(browser, link, "B")
        for name, page in (("A", a), ("B", b)):
            page.wait_for("duet.phase === 'inCall'", 15, message=f"{name} is in the call (signaling works)")
        # While ICE is still checking, the direct connection is said not to have connected yet (never "failed").
        for name, page in (("A", a), ("B", b)):
            page.wait_for(PROBLEM_ANY, 25, message=f"{name} explains why media does not connect")
            early = page.evaluate("[duet.connectivityProblem, duet.iceConnectionState]")
            if early[0]["code"] == "direct-pending-no-relay":
                expect(early[1] not in ("failed", "disconnected") and "has not connected after" in early[0]["message"]
                       and "failed" not in early[0]["message"], f"{name}: not said to have failed while ICE checks: {early}")
        # Once ICE gives up (failed), it says the direct connection failed.
        for name, page in (("A", a), ("B", b)):
            page.wait_for(PROBLEM_SHOWN, 60, message=f"{name} says the direct connection failed once ICE failed")
        problem = a.evaluate("duet.connectivityProblem")
        log("A explains", problem)
        message = "No relay server is configured, and a direct connection between your networks failed."
        expect(problem["message"] == message, f"the message says what is missing and what failed: {problem}")
        text = a.evaluate("document.getElementById('connectivity').innerText")
        for part in (message, "What Duet tried", "A relay server: none is configured on this Duet server.", "What you can do",
                     "--turn-uri", "Duet keeps trying"):
            expect(part in text, f"the panel shows {part!r}: {text!r}")
        expect("STUN server" in problem["tried"][0], f"what STUN did is said: {problem['tried']}")
        box = a.evaluate("(r => ({top: r.top, bottom: r.bottom, height: r.height, vh: innerHeight}))"
                         "(document.getElementById('connectivity').getBoundingClientRect())")
        expect(box["height"] > 100 and box["top"] >= 0 and box["top"] < box["vh"] / 2, f"the panel is on screen: {box}")
        expect(a.evaluate("document.querySelector('#connectivity a[href=\"/check\"]')?.target") == "_blank",
               "it links to the check, in a new tab (the call goes on)")
        expect(message in a.evaluate("document.getElementById('announcer').textContent"), "announced to screen readers")
        expect(a.evaluate("duet.phase") == "inCall" and a.evaluate("duet.badge.kind") in ("connecting", "retrying"),
               "still in the call, saying Connecting…, never Connected")
        shot(a, "cannot-connect", 1280, 800)
        shot(b, "cannot-connect-phone", 390, 844)
        expect(b.evaluate("document.documentElement.scrollWidth <= 390"), "nothing overflows at phone width")
        # The engine keeps retrying meanwhile (its escalation), and the explanation stays while nothing changes.
        a.wait_for("duet.connectionStatus === 'retrying'", 20, message="A keeps retrying")
        a.wait_for("duet.iceRestarts.length > 0", 30, message="A (the host) restarts ICE while the path is blocked")
        time.sleep(2)
        expect(a.evaluate(PROBLEM_SHOWN) and b.evaluate(PROBLEM_SHOWN), "the explanation stays while media cannot connect")
        sh(UNBLOCK_UDP)
        lifted = time.monotonic()
        log("UDP unblocked")
        for name, page in (("A", a), ("B", b)):
            in_call(page, 60, what=f"{name} connects by itself once the direct path is open")
        for name, page in (("A", a), ("B", b)):
            media_flows(page, what=f"{name}: video and audio both ways")
            page.wait_for("duet.connectivityProblem === null && document.getElementById('connectivity').hidden && "
                          "document.body.dataset.connectivityProblem === ''", 5, message=f"{name}: the explanation is gone")
        report(seconds=time.monotonic() - lifted, how=results.how_recovered(a, b) + " (time from lifting the block)")
    finally:
        server.stop()


def collect(namespace):
    """The scenarios a script defines, by name: `scenario_relay_restart` is `relay-restart` (also how
    scripts/publish_results.py knows which outcomes a complete run has)."""
    return {name[len("scenario_"):].replace("_", "-"): fn for name, fn in namespace.items()
            if name.startswith("scenario_") and callable(fn)}


def title(name, scenario):
    """A scenario's title in its outcome and the docs' tables: its docstring's first sentence."""
    return " ".join((scenario.__doc__ or name).split()).split(". ")[0]


# A script whose scenarios have different lengths (call_ux.py, verified_calls.py) gives each its own limit:
# (Chromium's start + the sum of the scenario's wait deadlines) × 1.2, rounded up to 10 s, so a slow run ends with
# the failing wait's own diagnosis, never with the limit. The Swift test asks the script for it (`--limit NAME`):
# one number, in one place.
LAUNCH_S = 30


def limit_of(waits_s):
    return -(-int((LAUNCH_S + waits_s) * 1.2) // 10) * 10


def main_with_limits(namespace, waits, browser_options, suite="browser"):
    """`script.py SCENARIO` runs it under its limit; `script.py --limit SCENARIO` prints the limit in seconds."""
    global HARD_LIMIT_S
    names = collect(namespace)
    args = sys.argv[1:]
    known = sorted(set(names) & set(waits))
    if len(args) == 2 and args[0] == "--limit" and args[1] in known:
        print(limit_of(waits[args[1]]))
        return
    if len(args) != 1 or args[0] not in known:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} SCENARIO | --limit SCENARIO\nscenarios: {', '.join(known)}")
    HARD_LIMIT_S = limit_of(waits[args[0]])
    run(names, browser_options, suite)


def run(scenarios, browser_options=lambda name: {}, suite="browser"):
    """Runs `sys.argv[1]` of `scenarios` with a Chromium (unless its options are None), bounded in time, and
    prints `scenario <name>: ok` when it passed. Its outcome is recorded either way (Tests/e2e/results.py) under
    `suite`, a failure with its reason and what the watched pages and peers last showed."""
    name = sys.argv[1]
    scenario = scenarios[name]
    title_ = title(name, scenario)
    # A runaway scenario must end by itself, and SIGTERM must still clean up (Chromium, servers).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"scenario {name} ran over {HARD_LIMIT_S}s")))
    signal.alarm(HARD_LIMIT_S)
    started = time.monotonic()

    def attempt(browser):
        try:
            scenario(browser)
        finally:
            signal.alarm(0)  # cleanup and the record must not be cut short by the alarm
            results.capture_failing()

    with results.outcome(suite, name, title_):
        options = browser_options(name)
        if options is None:
            attempt(None)
        else:
            with Browser.launch(**options) as browser:
                try:
                    attempt(browser)
                except BaseException:
                    log("chromium log tail:\n" + browser.log_tail())
                    raise
    print(f"scenario {name}: ok ({time.monotonic() - started:.1f}s)", flush=True)


def browser_options(name):
    if name == "check-page":  # launches its own Chromiums, once its servers are up (their origins are flags)
        return None
    # Without the fake permission UI, permissions set over CDP decide what getUserMedia may use.
    if name == "permission-denied":
        return {"without_flags": ("--use-fake-ui-for-media-stream",)}
    if name == "network-online":  # the network must be there before Chromium is
        make_network()
    if name == "call":  # two fake cameras, so "Switch camera" has somewhere to go
        return {"without_flags": ("--use-fake-device-for-media-stream",),
                "extra_flags": ("--use-fake-device-for-media-stream=device-count=2",)}
    return {}


if __name__ == "__main__":
    run(collect(globals()), browser_options, suite="browser")
