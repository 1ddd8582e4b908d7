"""`duet call` end-to-end scenarios: the GStreamer peer against headless Chromium, against itself, through
coturn, over SSE, and across a cut link. Run by DuetCallPeerTests, each scenario in a fresh network namespace:
    unshare -n sh -c 'ip link set lo up && exec python3 peer_scenarios.py <name>'
Each scenario asserts what its name says and prints `scenario <name>: ok` at the end.
"""
import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
from cdp import Browser  # noqa: E402
from scenarios import Server, TurnDeployment, collect, expect, in_call, log, media_flows, open_call, report, run, sh, stats, watch  # noqa: E402,F401
from results import capture_failing, how_recovered  # noqa: E402
from tampering_proxy import TamperingProxy  # noqa: E402

PEER = os.environ.get("DUET_CALL_BINARY", ".build/debug/duet-call")

# duet call's `audioLevelDb` is the RMS of the audio it decoded over the last second (GStreamer's `level`), -100 for
# digital silence or nothing decoded. Measured here: another duet call's tone -13.5 dBFS, Chromium's fake microphone
# (a beep twice a second) -20 to -21.3, Chromium muted -100 (-54 and -82 for windows the mute fell in); duet
# call sending silence (audiotestsrc volume=0) -100. Above this is sound, at or below it silence.
SILENCE_DB = -60
# Decoded audio that proves a window of it: a second at Opus's 48 kHz (duet call counts samples per channel).
# A second is also the level's window, so a level read with this much new audio was measured on new audio.
WINDOW_SAMPLES = 48000
NO_MEDIA = {"videoFramesReceived": 0, "audioPacketsReceived": 0, "audioSamplesDecoded": 0, "audioLevelDb": -100,
            "candidateType": None}


class Peer:
    """A running `duet-call --events jsonl`, its events collected as they arrive."""

    def __init__(self, link, *args, netns_pid=None, log_level=None, prefix=()):
        command = [PEER, link, "--events", "jsonl", "--log-level", log_level or os.environ.get("PEER_LOG", "info"), *args]
        if netns_pid:  # run inside another network namespace (the far side of a veth pair)
            command = ["nsenter", "-t", str(netns_pid), "-n", *command]
        command = [*prefix, *command]  # e.g. `ip netns exec NS` (the NAT lab's homes)
        self.err_path = f"/tmp/duet-call-{os.getpid()}-{id(self)}.err"
        self.err = open(self.err_path, "wb")
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self.err, stdin=subprocess.DEVNULL, text=True)
        self.events, self.lock = [], threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        watch(self)  # a failing scenario records this peer's last events

    def _read(self):
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.events.append(event)

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def last(self, kind):
        return next((e for e in reversed(self.snapshot()) if e.get("event") == kind), None)

    def value(self, kind):
        event = self.last(kind)
        return event and event.get("value")

    def wait(self, predicate, timeout, message):
        deadline = time.monotonic() + timeout
        while True:
            # Whether it had exited is read before the predicate, and an exit ends the wait only after one more
            # look with every event it wrote read: a peer exiting between the two looks (as one does when the
            # predicate is its exit) is not a failure.
            exited = self.proc.poll() is not None
            if exited:
                self.reader.join(5)
            if predicate(self):
                return
            if exited or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        tail = self.snapshot()[-8:]
        why = f"duet call exited with {self.proc.returncode}" if exited else f"not true after {timeout}s"
        raise AssertionError(f"{message}: {why}; last events: {tail}")

    def log_text(self):
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def media(self):
        return self.last("media") or NO_MEDIA

    def mark(self):
        """The cumulative media counters now: checks ask what arrived after them."""
        return dict(self.media())

    def _decoded_since(self, since, video):
        m, since = self.media(), since or NO_MEDIA
        new_frames = m["videoFramesReceived"] - since["videoFramesReceived"]
        new_samples = m.get("audioSamplesDecoded", 0) - since.get("audioSamplesDecoded", 0)
        return m, (new_frames > 10 or not video) and new_samples >= WINDOW_SAMPLES

    def wait_media(self, since=None, timeout=20, what="duet-call receives media", video=True):
        """Media flows into duet call after the mark `since` (None: since the call began): new video frames were
        decoded (unless video=False), a second of new audio was decoded, and its level is above silence."""
        def flowing(p):
            m, decoded = p._decoded_since(since, video)
            return decoded and m.get("audioLevelDb", -100) > SILENCE_DB
        self.wait(flowing, timeout, what)
        return self.media()

    def wait_silence(self, since=None, timeout=10, what="duet-call hears silence"):
        """The audio decoded after `since` is silence over a second while still arriving (a muted sender, not a
        broken link)."""
        self.wait(lambda p: p._decoded_since(since, False)[1] and p.media().get("audioLevelDb", -100) <= SILENCE_DB, timeout, what)
        return self.media()

    def in_call(self, timeout=20, what="duet-call in call"):
        # duet call reports its connection status on entering a call: a missing one is not taken for connected.
        self.wait(lambda p: p.value("phase") == "InCall" and p.value("connectionStatus") == "connected", timeout, what)

    def stop(self, sig=signal.SIGTERM, timeout=5):
        capture_failing()  # a failing scenario's peers as they were, before they are stopped
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def wait_quality(peer, what):
    """While media flows, duet call's `quality` events (docs/call-quality.md) carry a level and a MOS."""
    def judged(p):
        q = p.last("quality")
        return q is not None and q.get("mediaFlowing") and q.get("level") in ("good", "fair", "poor") and q.get("mos") is not None
    peer.wait(judged, 10, what)
    return peer.last("quality")


def scenario_chromium(browser):
    """duet call ↔ headless Chromium: media both ways; Chromium's mute reaches duet call as silence, its unmute as
    sound again; Ctrl-C leaves cleanly (Chromium back to Waiting)."""
    server = Server()
    peer = None
    try:
        link = server.url + "call/" + server.new_room()
        page = open_call(browser, link)
        page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits")
        peer = Peer(link)
        in_call(page, 20, what="Chromium in call with duet call")
        s = media_flows(page, what="Chromium decodes duet call's video and receives its audio")
        log("chromium stats", s)
        m = peer.wait_media(what="duet call decodes Chromium's video and its audio, above silence")
        log("duet-call media", m)
        # Unkeyed, duet call still holds the handshake to the description (webrtcbin does not), and its code, made
        # only once that matched, is the page's.
        peer.wait(lambda p: "the peer's DTLS certificate is the one its description names" in p.log_text(), 10,
                  "duet call checked Chromium's DTLS certificate on a link without a key")
        page.wait_for("duet.verification === 'unverified' && /^[0-9]{6}$/.test(duet.safetyCode ?? '')", 10,
                      message="Chromium: not verified, with a code")
        peer.wait(lambda p: (verification_of(p) or {}).get("safetyCode") == page.evaluate("duet.safetyCode"), 10,
                  "duet call shows the page's safety code")
        expect(verification_of(peer)["value"] == "unverified", f"duet call is not verified: {verification_of(peer)}")
        log("duet-call quality", wait_quality(peer, "duet call rates the call's quality while Chromium's media flows"))
        expect(peer.value("phase") == "InCall" and peer.value("transport") == "ws", f"duet call state: {peer.snapshot()[-3:]}")
        # Mute, verified from the other side: what duet call decodes falls to silence (still decoded: a muted
        # track sends silence, not nothing), and is sound again on unmute.
        page.evaluate("document.getElementById('mute').click()")
        expect(page.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "true", "Chromium is muted")
        log("duet-call while Chromium is muted", peer.wait_silence(since=peer.mark(), what="duet call hears silence while Chromium is muted"))
        page.evaluate("document.getElementById('mute').click()")
        log("after unmute", peer.wait_media(since=peer.mark(), what="duet call hears Chromium again after unmute"))
        media_flows(page, what="Chromium still decodes duet call's video and tone")
        code = peer.stop(signal.SIGINT)
        expect(code == 0, f"Ctrl-C leaves with exit 0 (got {code})")
        page.wait_for("duet.phase === 'waiting'", 10, message="Chromium returns to Waiting after duet call left")
    finally:
        if peer:
            peer.stop()
        server.stop()


def with_firefox(firefox_hosts):
    """duet call ↔ Firefox (issue 32's browser matrix): media both ways (Firefox decodes duet call's video and hears
    its tone; duet call decodes Firefox's video and its audio above silence); Firefox's mute reaches duet call as
    silence, its unmute as sound again; Ctrl-C leaves cleanly."""
    from bidi import Firefox
    order = "Firefox hosts" if firefox_hosts else "duet call hosts"
    server = Server()
    peer = None
    try:
        with Firefox.launch() as firefox:
            link = server.url + "call/" + server.new_room()
            if firefox_hosts:
                page = open_call(firefox, link)
                page.wait_for("duet.phase === 'waiting'", 15, message="Firefox waits")
                peer = Peer(link)
            else:
                peer = Peer(link)
                peer.wait(lambda p: p.value("phase") == "Waiting", 15, "duet call waits")
                page = open_call(firefox, link)
            in_call(page, 30, what=f"{order}: Firefox in call with duet call")
            expect((page.evaluate("duet.hostCid") == page.evaluate("duet.cid")) == firefox_hosts, f"{order}: the intended side hosts")
            log(f"{order}: Firefox stats", media_flows(page, what=f"{order}: Firefox decodes duet call's video and hears its tone"))
            log(f"{order}: duet-call media", peer.wait_media(what=f"{order}: duet call decodes Firefox's video and its audio"))
            page.evaluate("document.getElementById('mute').click()")
            expect(page.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "true", "Firefox is muted")
            peer.wait_silence(since=peer.mark(), what=f"{order}: duet call hears silence while Firefox is muted")
            page.evaluate("document.getElementById('mute').click()")
            peer.wait_media(since=peer.mark(), what=f"{order}: duet call hears Firefox again after unmute")
            code = peer.stop(signal.SIGINT)
            expect(code == 0, f"Ctrl-C leaves with exit 0 (got {code})")
            page.wait_for("duet.phase === 'waiting'", 10, message=f"{order}: Firefox returns to Waiting after duet call left")
    finally:
        if peer:
            peer.stop()
        server.stop()


def scenario_firefox_joins_duet_call(_browser):
    """duet call hosts (offers), Firefox joins and answers: see with_firefox."""
    with_firefox(False)


def scenario_firefox_hosts_duet_call(_browser):
    """Firefox hosts (offers Opus PT 109, VP8 PT 120) and duet call answers: see with_firefox. Before the session was
    made with the offer's payload types, webrtcbin paired the offer's m-lines with new receive-only transceivers, not
    with its sending ones (whose caps pinned Chromium's 111 and 96): both said connected, Firefox got nothing."""
    with_firefox(True)


def keyed_link(url, room):
    """A verified call's link (issue 19): the room and a fresh 256-bit key in the fragment."""
    return f"{url}call/{room}#k={base64.urlsafe_b64encode(os.urandom(32)).rstrip(b'=').decode()}"


def verification_of(peer):
    """duet call's last `{"event":"verification","value":…,"safetyCode":…}`, or None."""
    return peer.last("verification")


def verified_with_code(peer):
    v = verification_of(peer)
    return v is not None and v.get("value") == "verified" and len(v.get("safetyCode") or "") == 6


def join_in_order(browser, link, chromium_hosts):
    """Chromium and duet call join `link`, the host (the first in) waiting before the other comes: (page, peer)."""
    if chromium_hosts:
        page = open_call(browser, link, "Chromium")
        page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits")
        return page, Peer(link)
    peer = Peer(link)
    peer.wait(lambda p: p.value("phase") == "Waiting", 15, "duet call waits")
    page = open_call(browser, link, "Chromium")
    return page, peer


def scenario_verified_duet_call(browser):
    """A keyed link between Chromium and duet call, each way round (Chromium hosts, then duet call hosts): both
    verified, the same safety code on the page and in duet call's events, media both ways."""
    server = Server()
    peers = []
    try:
        for chromium_hosts in (True, False):
            page, peer = join_in_order(browser, keyed_link(server.url, server.new_room()), chromium_hosts)
            peers.append(peer)
            who = "Chromium hosts" if chromium_hosts else "duet call hosts"
            in_call(page, 20, what=f"{who}: Chromium in call")
            peer.in_call(what=f"{who}: duet call in call")
            page.wait_for("duet.verification === 'verified' && /^[0-9]{6}$/.test(duet.safetyCode ?? '')", 10,
                          message=f"{who}: Chromium verified, with a code")
            peer.wait(verified_with_code, 10, f"{who}: duet call verified, with a code")
            codes = (page.evaluate("duet.safetyCode"), verification_of(peer)["safetyCode"])
            # webrtcbin accepts any DTLS certificate: duet call itself holds the handshake's to the verified one.
            peer.wait(lambda p: "the peer's DTLS certificate is the one its verified description names" in p.log_text(), 10,
                      f"{who}: duet call checked Chromium's DTLS certificate against the verified fingerprint")
            expect(codes[0] == codes[1], f"{who}: the page and duet call show the same code: {codes}")
            media_flows(page, what=f"{who}: Chromium receives duet call's media")
            peer.wait_media(what=f"{who}: duet call receives Chromium's media")
            log(who, {"safety code": codes[0]})
            expect(peer.stop(signal.SIGINT) == 0, f"{who}: duet call leaves cleanly")
            page.close()
    finally:
        for peer in peers:
            peer.stop()
        server.stop()


def scenario_intercepted_duet_call(browser):
    """A server rewriting fingerprints (Tests/e2e/browser/tampering_proxy.py) between Chromium and duet call, each
    way round: the page shows the interception screen, duet call says `intercepted` and exits 6, neither applied
    the other's description, and neither retries."""
    server = Server()
    proxy = TamperingProxy("127.0.0.1", server.port, mode="fingerprints")
    peers = []
    try:
        url = f"http://127.0.0.1:{proxy.start()}/"
        for chromium_hosts in (True, False):
            page, peer = join_in_order(browser, keyed_link(url, server.new_room()), chromium_hosts)
            peers.append(peer)
            who = "Chromium hosts" if chromium_hosts else "duet call hosts"
            page.wait_for("duet.verification === 'intercepted' && duet.screen === 'intercepted' && duet.phase === 'idle'", 20,
                          message=f"{who}: Chromium shows the interception screen")
            peer.wait(lambda p: p.proc.poll() is not None, 20, f"{who}: duet call ends the call")
            expect(peer.proc.returncode == 6, f"{who}: duet call exits 6 (intercepted), got {peer.proc.returncode}")
            v = verification_of(peer)
            expect(v is not None and v["value"] == "intercepted", f"{who}: duet call's event says intercepted: {v}")
            m = peer.media()
            expect(m["videoFramesReceived"] == 0 and m.get("audioSamplesDecoded", 0) == 0, f"{who}: no media reached duet call: {m}")
            applied = page.evaluate("duet.remoteDescriptionsApplied")
            expect(applied == 0, f"{who}: the page never applied duet call's description ({applied} applied)")
            expect("may be intercepted" in peer.log_text(), f"{who}: duet call says why on stderr")
            page.close()
        expect(proxy.tampered_count >= 2, f"the relay did rewrite fingerprints ({proxy.tampered_count})")
        log("intercepted both ways", {"fingerprints rewritten": proxy.tampered_count})
    finally:
        for peer in peers:
            peer.stop()
        proxy.stop()
        server.stop()


def scenario_certificate_swap_duet_call(browser):
    """The attack the HMAC cannot see, between Chromium and duet call on a keyed link, each way round: a server that
    leaves every signed fingerprint and `auth` alone but answers each side's ICE with an aiortc peer of its own
    (Tests/e2e/browser/dtls_mitm.py, keep_fingerprints). webrtcbin completes that DTLS handshake with a certificate
    the verified description does not name; duet call's own check of the handshake's certificate ends the call as
    intercepted (exit 6), and the page, told by a `verify_failed` only duet call could sign, shows the interception
    screen. Without duet call's check the handshake would stand (the MITM's peer facing it says connected)."""
    from dtls_mitm import DtlsMitm  # aiortc only where it is needed
    from mitm_call import loopback_for_aiortc
    loopback_for_aiortc()
    server = Server()
    peers, mitms = [], []
    try:
        for chromium_hosts in (True, False):
            mitm = DtlsMitm("127.0.0.1", server.port, keep_fingerprints=True)
            mitms.append(mitm)
            url = f"http://127.0.0.1:{mitm.start()}/"
            page, peer = join_in_order(browser, keyed_link(url, server.new_room()), chromium_hosts)
            peers.append(peer)
            who = "Chromium hosts" if chromium_hosts else "duet call hosts"
            facing_duet_call = "M_B" if chromium_hosts else "M_A"  # the MITM's peer that duet call does DTLS with
            peer.wait(lambda p: p.proc.poll() is not None, 30, f"{who}: duet call ends the call")
            expect(peer.proc.returncode == 6, f"{who}: duet call exits 6 (intercepted), got {peer.proc.returncode}")
            v = verification_of(peer)
            expect(v is not None and v["value"] == "intercepted", f"{who}: duet call's event says intercepted: {v}")
            said = [e["value"] for e in peer.snapshot() if e.get("event") == "verification"]
            expect("verified" not in said, f"{who}: duet call never said verified while the MITM held the handshake: {said}")
            expect("the peer's DTLS certificate is not the one its verified description names" in peer.log_text(),
                   f"{who}: duet call caught it by the handshake's certificate (not by the HMAC)")
            expect(facing_duet_call in mitm.ever_connected,
                   f"{who}: webrtcbin finished DTLS with the MITM's peer ({mitm.ever_connected}): the attack was real")
            expect(mitm.offers_intercepted == 1 and mitm.answers_intercepted >= 1 and not mitm.errors,
                   f"{who}: the MITM took both descriptions: offers {mitm.offers_intercepted}, answers "
                   f"{mitm.answers_intercepted}, errors {mitm.errors}")
            page.wait_for("duet.verification === 'intercepted' && duet.screen === 'intercepted' && duet.phase === 'idle'", 20,
                          message=f"{who}: Chromium shows the interception screen (duet call's verify_failed)")
            log(who, {"MITM peers connected": sorted(mitm.ever_connected), "injected": mitm.injected})
            page.close()
        # Without a key nothing can end the call, but the safety codes must still tell: duet call's is made over the
        # certificate its handshake presented (the MITM's), the page's over the descriptions (which name duet
        # call's real certificate), so the two people read different codes.
        mitm = DtlsMitm("127.0.0.1", server.port, keep_fingerprints=True)
        mitms.append(mitm)
        url = f"http://127.0.0.1:{mitm.start()}/"
        page, peer = join_in_order(browser, f"{url}call/{server.new_room()}", True)
        peers.append(peer)
        peer.wait(lambda p: "the peer's DTLS certificate is not the one its description names" in p.log_text(), 30,
                  "unkeyed: duet call finds the handshake's certificate is not the described one")
        expect("M_B" in mitm.ever_connected, f"unkeyed: webrtcbin finished DTLS with the MITM ({mitm.ever_connected})")
        page.wait_for("/^[0-9]{6}$/.test(duet.safetyCode ?? '')", 10, message="unkeyed: the page shows a code")
        peer.wait(lambda p: (verification_of(p) or {}).get("safetyCode") is not None, 10, "unkeyed: duet call shows a code")
        codes = (page.evaluate("duet.safetyCode"), verification_of(peer)["safetyCode"])
        expect(codes[0] != codes[1], f"unkeyed: the page's and duet call's codes differ: {codes}")
        expect(peer.proc.poll() is None and verification_of(peer)["value"] == "unverified",
               f"unkeyed: duet call stays in the call, not verified ({verification_of(peer)}, exit {peer.proc.poll()})")
        log("unkeyed", {"codes": codes, "MITM peers connected": sorted(mitm.ever_connected)})
        page.close()
    finally:
        for peer in peers:
            peer.stop()
        for mitm in mitms:
            mitm.stop()
        server.stop()


def scenario_peer_to_peer(_browser):
    """duet call ↔ duet call; the second leaves after --duration, the first is told and waits."""
    server = Server()
    a = b = None
    try:
        link = server.url + "call/" + server.new_room()
        a = Peer(link)
        a.wait(lambda p: p.value("phase") == "Waiting", 15, "A waits")
        b = Peer(link, "--duration", "8")
        for name, peer in (("A", a), ("B", b)):
            peer.in_call(what=f"{name} in call")
            log(name, peer.wait_media(what=f"{name} receives media"))
            log(name, wait_quality(peer, f"{name} rates the call's quality while media flows"))
        b.wait(lambda p: p.proc.poll() is not None, 15, "B leaves after --duration")
        expect(b.proc.returncode == 0, f"B exits 0 after --duration (got {b.proc.returncode})")
        summary = b.last("summary")
        log("B summary", summary)
        expect(summary is not None and summary["readings"] > 0 and summary["durationMs"] > 0
               and summary["averageMos"] is not None and summary["reconnects"] == 0,
               f"B ends with its quality summary: {summary}")
        a.wait(lambda p: p.value("phase") == "Waiting", 10, "A back to Waiting")
    finally:
        for peer in (a, b):
            if peer:
                peer.stop()
        server.stop()


def scenario_relay(browser):
    """Relay-only through real coturn: duet call --relay ↔ Chromium ?relay=1, both on relay candidates."""
    with TurnDeployment() as deployment:
        link = deployment.server.url + "call/" + deployment.server.new_room()
        page = open_call(browser, link + "?relay=1")
        page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits")
        peer = Peer(link, "--relay")
        try:
            s = media_flows(page, timeout=30, what="Chromium receives duet call's media through coturn")
            expect(s["candidateType"] == "relay", f"Chromium relayed: {s}")
            peer.wait_media(timeout=30, what="duet call receives media through coturn")
            peer.wait(lambda p: p.media().get("candidateType") == "relay", 10, "duet call's selected candidate is a relay")
            log("relayed", s, peer.media())
        finally:
            peer.stop()


def scenario_relay_tcp_audio_only(browser):
    """TURN over TCP and --audio-only: duet call sends only its tone (Chromium gets audio, no video) and still
    receives Chromium's video, everything relayed over TCP."""
    with TurnDeployment(transport="tcp") as deployment:
        link = deployment.server.url + "call/" + deployment.server.new_room()
        page = open_call(browser, link + "?relay=1")
        page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits")
        peer = Peer(link, "--relay", "--audio-only")
        try:
            s = media_flows(page, timeout=30, video=False, what="Chromium hears duet call's tone through TURN/TCP")
            expect(s["candidateType"] == "relay", f"Chromium relayed: {s}")
            peer.wait_media(timeout=30, what="duet call receives Chromium's video and audio through TURN/TCP")
            peer.wait(lambda p: p.media().get("candidateType") == "relay", 10, "duet call relayed")
            expect(stats(page)["videoFramesDecoded"] == 0, f"audio only: no video reaches Chromium ({stats(page)})")
        finally:
            peer.stop()


def scenario_turn_refresh(_browser):
    """Short-lived TURN credentials (10 s): refreshed ones keep reaching the live webrtcbin (add-turn-server, no
    renegotiation) and the relayed call carries on past the first credentials' expiry."""
    with TurnDeployment("udp", True, "--turn-ttl", "10") as deployment:
        link = deployment.server.url + "call/" + deployment.server.new_room()
        a = Peer(link, "--relay", log_level="debug")
        a.wait(lambda p: p.value("phase") == "Waiting", 15, "A waits")
        b = Peer(link, "--relay")
        try:
            for name, peer in (("A", a), ("B", b)):
                peer.in_call(what=f"{name} in call")
                peer.wait_media(timeout=30, what=f"{name} relayed")
            added = "TURN server added to the live session"
            a.wait(lambda p: p.log_text().count(added) >= 2, 20, "refreshed credentials reach the live session (0.8 × TTL)")
            time.sleep(4)  # past the first credentials' 10 s lifetime
            for name, peer in (("A", a), ("B", b)):
                m = peer.wait_media(since=peer.mark(), timeout=20, what=f"{name}: media still relayed after the first credentials expired")
                expect(m["candidateType"] == "relay", f"{name} relayed: {m}")
            restarts = [e for e in a.snapshot() + b.snapshot() if e.get("event") == "iceRestart"]
            expect(not restarts, f"no renegotiation was needed: {restarts}")
        finally:
            a.stop()
            b.stop()


def scenario_sse(browser):
    """/ws refused: duet call falls back to SSE and the call with Chromium works; the host ending the room
    ends duet call with exit code 4."""
    server = Server("--block-websocket", "on")
    peer = None
    try:
        link = server.url + "call/" + server.new_room()
        page = open_call(browser, link)
        page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits (over SSE)")
        peer = Peer(link)
        peer.in_call(what="duet call in call over SSE")
        expect(peer.value("transport") == "sse", f"duet call signals over SSE: {peer.value('transport')}")
        media_flows(page, what="Chromium receives media")
        peer.wait_media(what="duet call receives media")
        # The host (Chromium) ends the room: duet call reports it and exits with 4.
        ended = time.monotonic()
        page.evaluate("duet.end()")
        peer.wait(lambda p: p.proc.poll() is not None, 10, "duet call exits when the room ends")
        log(f"duet call exited {time.monotonic() - ended:.2f}s after the host ended the room")
        expect(peer.proc.returncode == 4, f"exit code 4 for a room ended during the call (got {peer.proc.returncode})")
    finally:
        if peer:
            peer.stop()
        server.stop()


class FarSide:
    """A second network namespace joined to ours by a veth pair (10.78.0.1 here, 10.78.0.2 there) that a test
    can cut and restore."""

    def __enter__(self):
        self.proc = subprocess.Popen(["unshare", "-n", "sleep", "300"])
        # Its namespace exists once unshare has made it (not after a fixed pause: a loaded machine takes longer).
        deadline = time.monotonic() + 5
        while os.readlink(f"/proc/{self.proc.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            if time.monotonic() > deadline:
                raise RuntimeError("the far side's namespace did not appear")
            time.sleep(0.01)
        sh(f"ip link add duetA type veth peer name duetB && ip link set duetB netns {self.proc.pid} && "
           "ip addr add 10.78.0.1/24 dev duetA && ip link set duetA up")
        sh(f"nsenter -t {self.proc.pid} -n sh -c 'ip link set lo up && ip addr add 10.78.0.2/24 dev duetB && ip link set duetB up'")
        return self

    @property
    def pid(self):
        return self.proc.pid

    def cut_for(self, seconds, quietly=False):
        """Takes the link down (this side's network monitor sees an interface go away), or with `quietly` drops
        every packet on it (nothing on this side sees a change: only silence tells)."""
        self.quietly = quietly
        sh("iptables -I INPUT -i duetA -j DROP && iptables -I OUTPUT -o duetA -j DROP" if quietly else "ip link set duetA down")
        log("link cut" + (" quietly (iptables)" if quietly else ""))
        time.sleep(seconds)

    def restore(self):
        sh("iptables -D INPUT -i duetA -j DROP && iptables -D OUTPUT -o duetA -j DROP" if self.quietly else "ip link set duetA up")
        log("link restored")
        return time.monotonic()

    def __exit__(self, *exc):
        self.proc.kill()


def scenario_link_cut(_browser):
    """The link between two namespaces is cut for 8 s and restored: both duet calls recover with no user
    action, and the time to recover is reported. libnice's ICE never leaves connected on a dead path: the engines'
    media watchdog finds 5 s without inbound packets a stall, the host restarts ICE and the guest asks it to (8 s is
    longer than the stall timeout and two readings, so the restart is certain, not a race with the link's return)."""
    with FarSide() as far:
        server = Server("--host", "10.78.0.1")
        a = b = None
        try:
            link = server.url + "call/" + server.new_room()
            a = Peer(link, "--ice-address", "10.78.0.1")
            a.wait(lambda p: p.value("phase") == "Waiting", 15, "A waits")
            b = Peer(link, "--ice-address", "10.78.0.2", netns_pid=far.pid)
            for name, peer in (("A", a), ("B", b)):
                peer.in_call(what=f"{name} in call")
                peer.wait_media(what=f"{name} receives media")
            far.cut_for(8)
            cut = [a.mark(), b.mark()]
            restored = far.restore()
            for name, peer, since in (("A", a, cut[0]), ("B", b, cut[1])):
                peer.wait_media(since=since, timeout=60, what=f"{name} receives video and audible audio again")
            recovered = time.monotonic() - restored
            for name, peer in (("A", a), ("B", b)):
                peer.in_call(30, what=f"{name} back to connected")
            restarts = [e.get("value") for e in a.snapshot() + b.snapshot() if e.get("event") == "iceRestart"]
            log(f"recovered {recovered:.1f}s after the link came back; ICE restarts: {restarts}")
            report(seconds=recovered, how=how_recovered(a, b))
            print(f"time to recover: {recovered:.1f}s", flush=True)
            expect(restarts, "the cut was noticed and answered with an ICE restart")
        finally:
            for peer in (a, b):
                if peer:
                    peer.stop()
            server.stop()


def peer_restarts(peer):
    """The ICE restarts duet call started itself (`iceRestart` events: its own, never the peer's)."""
    return [e.get("value") for e in peer.snapshot() if e.get("event") == "iceRestart"]


def scenario_link_cut_chromium(_browser):
    """As link-cut, with Chromium (hosting) on this side and duet call on the far side: Chromium sees its interface
    go and come back and restarts ICE; duet call, not the host, never does."""
    link_cut_with_chromium(chromium_hosts=True)


def scenario_link_cut_duet_call_hosts(_browser):
    """As link-cut-chromium, with duet call hosting and the link cut quietly for 8 s (iptables: Chromium's network
    monitor sees nothing, so Chromium, not the host, has no reason to restart): duet call notices the silence and
    restarts ICE, and its restart offers must keep the session Chromium knows."""
    link_cut_with_chromium(chromium_hosts=False)


@contextlib.contextmanager
def chromium_with_far_duet_call(chromium_hosts):
    """Chromium on this side, duet call on the far side of a FarSide link, in a call with media both ways, the intended
    side hosting: yields (far, server, page, peer), and stops them all afterwards."""
    with FarSide() as far:
        server = Server("--host", "10.78.0.1")
        # Not localhost: Chromium allows the camera on this origin only when told it is a secure one.
        browser = Browser.launch(extra_flags=(f"--unsafely-treat-insecure-origin-as-secure={server.url.rstrip('/')}",))
        peer = None
        try:
            link = server.url + "call/" + server.new_room()
            if chromium_hosts:
                page = open_call(browser, link)
                page.wait_for("duet.phase === 'waiting'", 15, message="Chromium waits")
                peer = Peer(link, "--ice-address", "10.78.0.2", netns_pid=far.pid)
            else:
                peer = Peer(link, "--ice-address", "10.78.0.2", netns_pid=far.pid)
                peer.wait(lambda p: p.value("phase") == "Waiting", 15, "duet call waits")
                page = open_call(browser, link)
            in_call(page, 20, what="Chromium in call")
            expect((page.evaluate("duet.hostCid") == page.evaluate("duet.cid")) == chromium_hosts, "the intended side hosts")
            media_flows(page)
            peer.wait_media()
            yield far, server, page, peer
        finally:
            if peer:
                peer.stop()
            browser.close()
            server.stop()


def link_cut_with_chromium(chromium_hosts):
    with chromium_with_far_duet_call(chromium_hosts) as (far, _server, page, peer):
        restarts_before = (len(page.evaluate("duet.iceRestarts")), len(peer_restarts(peer)))
        # Quietly: 5 s without inbound packets are a stall to duet call's media watchdog, and as the host it restarts.
        far.cut_for(float(os.environ.get("CUT_SECONDS", "5" if chromium_hosts else "8")), quietly=not chromium_hosts)
        cut = peer.mark()
        restored = far.restore()
        # Chromium's check takes its own mark: the newest second of audio after the heal.
        media_flows(page, timeout=60, what="Chromium decodes video and hears duet call again")
        peer.wait_media(since=cut, timeout=60, what="duet call decodes video and hears Chromium again")
        recovered = time.monotonic() - restored
        in_call(page, 30, what="Chromium back to connected")
        peer.in_call(30, what="duet call back to connected")
        chromium_restarts, duet_call_restarts = page.evaluate("duet.iceRestarts"), peer_restarts(peer)
        log(f"recovered {recovered:.1f}s after the link came back; Chromium restarts {chromium_restarts}, "
            f"duet call restarts {duet_call_restarts}")
        # The recovery this relies on: an ICE restart after the cut by the host (duet call restarts only as host).
        if chromium_hosts:
            expect(len(chromium_restarts) > restarts_before[0], f"Chromium (the host) restarted ICE after the cut: {chromium_restarts}")
            expect(not duet_call_restarts, f"duet call, not the host, never restarts ICE: {duet_call_restarts}")
        else:
            expect(len(duet_call_restarts) > restarts_before[1], f"duet call (the host) restarted ICE after the cut: {duet_call_restarts}")
        report(seconds=recovered, how=how_recovered(page, peer))
        print(f"time to recover: {recovered:.1f}s", flush=True)


# STUN passes (its magic cookie at offset 4 of the UDP payload), everything else on UDP is dropped (chaos.py's rule).
NOT_STUN = '-m u32 ! --u32 "0>>22&0x3C@12=0x2112A442"'


def scenario_stall_duet_call_guest(_browser):
    """Issue 32: media to duet call, the guest, is black-holed for 12 s while STUN passes, so both ICE agents stay
    connected and Chromium, the host, hears duet call all along: only duet call can know. Its media watchdog finds 5 s
    without inbound packets a stall and leaves `connected`; webrtcbin cannot restart ICE in place, so it asks the host
    (`restart_request`), and Chromium restarts ICE for it (`peerRequest`) while the hole lasts. Once it closes, media
    both ways, and duet call never made a restart offer of its own."""
    rule = f"OUTPUT -o duetA -p udp {NOT_STUN} -j DROP"
    with chromium_with_far_duet_call(chromium_hosts=True) as (_far, _server, page, peer):
        peer.in_call(what="duet call in call")
        restarts_before = len(page.evaluate("duet.iceRestarts"))
        statuses_before = len([e for e in peer.snapshot() if e.get("event") == "connectionStatus"])
        sh(f"iptables -I {rule}")
        began = time.monotonic()
        log("media to duet call black-holed (STUN passes)")
        try:
            peer.wait(lambda p: any(e.get("value") != "connected" for e in
                                    [e for e in p.snapshot() if e.get("event") == "connectionStatus"][statuses_before:]),
                      9, "duet call's status left connected (its media watchdog)")
            noticed = time.monotonic() - began
            log(f"duet call noticed the stall after {noticed:.1f} s")
            page.wait_for(f"duet.iceRestarts.slice({restarts_before}).includes('peerRequest')", 5,
                          message="Chromium restarted ICE at duet call's request")
            chromium_ice = page.evaluate("duet.iceConnectionState")
            log(f"Chromium restarted at duet call's request; its ICE: {chromium_ice}")
            time.sleep(max(0.0, 12 - (time.monotonic() - began)))
        finally:
            sh(f"iptables -D {rule}")
        healed = time.monotonic()
        log("the black hole closes")
        cut = peer.mark()
        peer.wait_media(since=cut, timeout=60, what="duet call decodes video and hears Chromium again")
        media_flows(page, timeout=60, what="Chromium decodes video and hears duet call again")
        recovered = time.monotonic() - healed
        in_call(page, 30, what="Chromium back to connected")
        peer.in_call(30, what="duet call back to connected")
        chromium_restarts, duet_call_restarts = page.evaluate("duet.iceRestarts")[restarts_before:], peer_restarts(peer)
        log(f"whole {recovered:.1f}s after the hole closed; Chromium restarts {chromium_restarts}, duet call restarts {duet_call_restarts}")
        expect(not duet_call_restarts, f"duet call, the guest, asked and never restarted itself: {duet_call_restarts}")
        expect(noticed <= 8, f"noticed within the stall timeout (5 s) and a reading or two: {noticed:.1f} s")
        report(seconds=recovered, how=how_recovered(page, peer) + f"; noticed {noticed:.1f} s into the hole, Chromium restarted at its request")
        print(f"time to recover: {recovered:.1f}s", flush=True)


def scenario_chromium_joins_second(browser):
    """duet call hosts (offers first) and Chromium joins: Chromium accepts webrtcbin's offer, media both ways."""
    server = Server()
    peer = None
    try:
        link = server.url + "call/" + server.new_room()
        peer = Peer(link)
        peer.wait(lambda p: p.value("phase") == "Waiting", 15, "duet call waits")
        page = open_call(browser, link)
        in_call(page, 20, what="Chromium in call with duet call hosting")
        media_flows(page, what="Chromium decodes duet call's offer-side media")
        # webrtcbin's offer names one stream for both tracks (a=msid): the page shows and plays both.
        tracks = page.evaluate("document.getElementById('remote-video').srcObject?.getTracks().map(t => t.kind).sort()")
        expect(tracks == ["audio", "video"], f"Chromium gets duet call's audio and video in one stream: {tracks}")
        peer.wait_media(what="duet call receives Chromium's media")
        expect(page.evaluate("duet.hostCid") != page.evaluate("duet.cid"), "duet call is the host")
    finally:
        if peer:
            peer.stop()
        server.stop()


def scenario_ring_duet_calls(_browser):
    """duet call --ring ↔ duet call --answer (issue 31): nobody to ring exits 9; then the answering side hears the ring with the caller's verified name, accepts, and the call has media both ways."""
    server = Server()
    peers = []
    try:
        room = server.new_room()
        link = server.url + "call/" + room + "#k=" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        lonely = Peer(link, "--ring", "--name", "Bea")
        peers.append(lonely)
        lonely.wait(lambda p: p.proc.poll() is not None, 20, "a ring that reaches nobody ends")
        expect(lonely.proc.returncode == 9 and (lonely.last("ring") or {}).get("state") == "unreachable",
               f"--ring with nobody to ring exits 9: {lonely.proc.returncode}, {lonely.last('ring')}")
        # A device id that starts with "-" (base64url: one random id in 32 does) is taken as the option's value.
        device = "-" + base64.urlsafe_b64encode(os.urandom(18)).decode()[:23]
        answering = Peer(link, "--answer", "--device-id", device)
        peers.append(answering)
        answering.wait(lambda p: p.last("listening") is not None, 20, "the answering side joined once and listens")
        ringing = Peer(link, "--ring", "--name", "Bea")
        peers.append(ringing)
        answering.wait(lambda p: p.last("incoming") is not None, 20, "the ring is heard")
        expect(answering.last("incoming")["caller"] == {"verified": "Bea"}, f"the caller's name, verified: {answering.last('incoming')}")
        ringing.wait(lambda p: (p.last("ring") or {}).get("state") == "accepted", 20, "the caller sees accepted")
        said = [(e["state"], e["devices"]) for e in ringing.snapshot() if e.get("event") == "ring"]
        expect(all(a != b for a, b in zip(said, said[1:])), f"each ring event says something new: {said}")
        for name, peer in (("ringing", ringing), ("answering", answering)):
            peer.in_call(what=f"{name} side in call")
            log(name, peer.wait_media(what=f"{name} side receives media"))
    finally:
        for peer in peers:
            peer.stop()
        server.stop()


def home_listening(browser, link, name):
    """Chromium has been in the call (its browser saved it, with its member token) and now waits on its home page."""
    page = open_call(browser, link, name)
    page.wait_for("duet.phase === 'waiting'", 15, message=f"{name} joins once")
    page.wait_for("JSON.parse(localStorage.getItem('duet.recentRooms') || '[]').some(r => r.memberToken)", 5, message=f"{name} has its member token")
    page.evaluate("duet.leave()")
    page.wait_for("duet.phase === 'idle'", 10, message=f"{name} left")
    return page


def scenario_ring_chromium_answers(browser):
    """duet call --ring → Chromium (issue 31): the home page rings with the caller's verified name, Accept joins, media both ways."""
    server = Server()
    peer = None
    try:
        link = server.url + "call/" + server.new_room() + "#k=" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        page = home_listening(browser, link, "B")
        page.navigate(server.url)
        page.wait_for("window.duet && duet.page === 'home' && Object.keys(duet.occupancy()).length === 1", 10, message="B's home page listens")
        peer = Peer(link, "--ring", "--name", "Ann")
        page.wait_for("duet.incoming.state === 'ringing' && duet.incoming.verified && duet.incoming.name === 'Ann'", 20,
                      message="Chromium rings with duet call's verified name")
        page.evaluate("document.getElementById('incoming-accept').click()")
        peer.wait(lambda p: (p.last("ring") or {}).get("state") == "accepted", 15, "duet call sees accepted")
        page.wait_for("window.duet && duet.page === 'call'", 10, message="Accept opens the call")
        in_call(page, 20, what="Chromium in call")
        media_flows(page, what="Chromium receives duet call's media")
        peer.wait_media(what="duet call receives Chromium's media")
    finally:
        if peer:
            peer.stop()
        server.stop()


def scenario_ring_duet_call_answers(browser):
    """Chromium rings → duet call --answer (issue 31): duet call hears Chromium's verified name, accepts; Chromium sees accepted, media both ways."""
    server = Server()
    peer = None
    try:
        link = server.url + "call/" + server.new_room() + "#k=" + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        page = home_listening(browser, link, "A")
        page.evaluate("localStorage.setItem('duet.myName', JSON.stringify('Ann')); true")
        peer = Peer(link, "--answer")
        peer.wait(lambda p: p.last("listening") is not None, 20, "duet call listens")
        page.navigate(server.url)
        page.wait_for("window.duet && duet.page === 'home' && document.querySelector('.saved-call a.button')", 10, message="A's saved call")
        page.evaluate("document.querySelector('.saved-call a.button').click()")
        # duet call answers at once: the page may be past "ringing" by the time it is looked at.
        page.wait_for("window.duet && duet.page === 'call' && duet.ring && ['ringing', 'accepted'].includes(duet.ring.state)", 15,
                      message="Chromium rings")
        peer.wait(lambda p: p.last("incoming") is not None, 15, "duet call hears the ring")
        expect(peer.last("incoming")["caller"] == {"verified": "Ann"}, f"duet call sees the verified name: {peer.last('incoming')}")
        page.wait_for("duet.ring.state === 'accepted'", 15, message="Chromium sees accepted")
        in_call(page, 20, what="Chromium in call with duet call")
        media_flows(page, what="Chromium receives duet call's media")
        peer.wait_media(what="duet call receives Chromium's media")
    finally:
        if peer:
            peer.stop()
        server.stop()


if __name__ == "__main__":
    run(collect(globals()),
        lambda name: None if name in ("firefox-joins-duet-call", "firefox-hosts-duet-call", "peer-to-peer", "link-cut", "link-cut-chromium", "link-cut-duet-call-hosts", "stall-duet-call-guest", "turn-refresh", "ring-duet-calls") else {},
        suite="peer")
