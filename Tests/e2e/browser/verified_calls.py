"""Verified calls (issue 19) in real headless Chromium: the call link's key (`#k=`) and where it may go.

Run like scenarios.py, one scenario per process inside a network namespace of its own (VerifiedCallTests):
    unshare -n sh -c 'ip link set lo up && exec python3 verified_calls.py link-key'
It reuses scenarios.py's helpers and records its outcomes under the browser suite (Tests/e2e/results.py).
"""
import base64
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenarios import (  # noqa: E402
    Server, expect, in_call, log, media_flows, open_call, shot, watch, with_query)
from tampering_proxy import TamperingProxy  # noqa: E402

KEY_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


class Traffic:
    """Everything a page sends from now on, as CDP sees it leave: request URLs, header values and bodies, WebSocket
    frames. (CDP's request URL is what goes on the wire: a fragment is never part of it, so a key found there was
    put into the path or query by the page itself.)"""

    EVENTS = ("Network.requestWillBeSent", "Network.webSocketFrameSent", "Network.webSocketCreated")

    def __init__(self, page):
        self.page = page
        page.send("Network.enable", {"maxPostDataSize": 1 << 20})
        self.queues = [page.events(method) for method in self.EVENTS]
        self.items = []

    def drain(self):
        for q in self.queues:
            while not q.empty():
                event = q.get_nowait()
                if "request" in event:
                    request = event["request"]
                    self.items.append(("url", request.get("url", "")))
                    self.items += [("header", f"{k}: {v}") for k, v in request.get("headers", {}).items()]
                    for entry in request.get("postDataEntries", []) or []:
                        self.items.append(("body", entry.get("bytes", "")))
                    if request.get("postData"):
                        self.items.append(("body", request["postData"]))
                elif "response" in event:
                    self.items.append(("frame", event["response"].get("payloadData", "")))
                elif "url" in event:
                    self.items.append(("websocket", event["url"]))
        return self.items

    def carrying(self, secret):
        found = []
        for kind, text in self.drain():
            decoded = text
            if kind == "body":  # postDataEntries are base64
                try:
                    decoded = base64.b64decode(text).decode("utf-8", "replace")
                except ValueError:
                    pass
            if secret in text or secret in decoded:
                found.append((kind, text[:200]))
        return found


def scenario_link_key(browser):
    """A new call's link carries a key in its fragment that no request, frame, log or referrer carries. "Start a
    call" makes /call/ROOM#k=<43 characters>; the share box, the copy and the recent-calls list keep it; the other
    person (over SSE too) joins with it; a cut-short key is refused with a clear screen, and a link without a key
    still joins."""
    server = Server()
    try:
        home = watch(browser.new_page(server.url), "A")
        home.wait_for("window.duet && duet.page === 'home'", 10, message="home page loads")
        a_traffic = Traffic(home)
        home.evaluate("document.getElementById('start').click()")
        home.wait_for("location.pathname.startsWith('/call/') && window.duet && duet.page === 'call'", 10,
                      message="Start a call opens the call page")
        home.wait_for("duet.screen === 'waiting' && duet.phase === 'waiting'", 15, message="A waits for the other person")
        fragment = home.evaluate("location.hash")
        expect(fragment.startswith("#k=") and len(fragment) == 3 + 43 and all(c in KEY_CHARS for c in fragment[3:]),
               f"the link's fragment is a 256-bit key: {fragment!r}")
        key = fragment[3:]
        room = home.evaluate("duet.roomId")
        link = home.evaluate("document.getElementById('share-link').value")
        expect(link == f"{server.url}call/{room}#k={key}", f"the share box keeps the key: {link}")

        # B joins over SSE (its messages are POST bodies), with the query before the fragment.
        b = watch(browser.new_page(None), "B")
        b_traffic = Traffic(b)
        b.navigate(with_query(link, "?transports=sse"))
        b.wait_for("window.duet && duet.page === 'call'", 10, message="B's call page loads")
        expect(b.evaluate("location.hash") == f"#k={key}", "B has the same key")
        in_call(home, what="A in call")
        in_call(b, what="B in call")
        expect(b.evaluate("duet.transport") == "sse", f"B signals over SSE: {b.evaluate('duet.transport')}")
        media_flows(b, what="B receives A's media")
        media_flows(home, what="A receives B's media")

        # Copy keeps it: the copy button writes the share box (clipboard access is granted to the test origin).
        browser.send("Browser.grantPermissions", {"origin": server.url.rstrip("/"),
                                                  "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
        home.evaluate("document.getElementById('copy-link').click()")
        home.wait_for("document.getElementById('copy-status').textContent === 'Copied'", 5, message="the link is copied")
        copied = home.evaluate("navigator.clipboard.readText()")
        expect(copied == link, f"the copied link has the key: {copied}")

        # The recent-calls list on the home page links back with the key.
        home.evaluate("duet.leave ? duet.leave() : document.getElementById('leave').click()")
        home.wait_for("duet.phase === 'idle'", 10, message="A leaves")
        home.navigate(server.url)
        home.wait_for("window.duet && duet.page === 'home' && document.querySelectorAll('#recent-list a').length > 0", 10,
                      message="the home page lists the recent call")
        recent = home.evaluate("document.querySelector('#recent-list a').href")
        expect(recent == f"{server.url}call/{room}#k={key}", f"the recent call keeps its key: {recent}")

        leaks = a_traffic.carrying(key) + b_traffic.carrying(key)
        expect(not leaks, f"the key left the browser: {leaks}")
        sent = len(a_traffic.items) + len(b_traffic.items)
        expect(sent > 10 and any(kind == "frame" for kind, _ in a_traffic.items) and any(kind == "body" for kind, _ in b_traffic.items),
               f"the check saw the traffic it judges (A's WebSocket frames, B's SSE posts): {sent} items")
        with open(os.path.join(server.data, "serve.log"), errors="replace") as f:
            expect(key not in f.read(), "the key is not in the server's log")
        log("key kept in the browser", {"items checked": sent})

        # A key cut short is refused with a clear screen: never joined as an unverified call.
        cut = watch(browser.new_page(None), "cut")
        cut_traffic = Traffic(cut)
        cut.navigate(f"{server.url}call/{room}#k={key[:-1]}")
        cut.wait_for("window.duet && duet.page === 'call' && duet.screen === 'error'", 10, message="a cut-short key is refused")
        said = cut.evaluate("document.body.innerText")
        expect("This link is damaged" in said, f"the screen says why: {said[:300]}")
        expect(not any(kind in ("frame", "websocket") for kind, _ in cut_traffic.drain()),
               f"the refused page never signaled: {cut_traffic.items}")

        # A link without a key still joins (older links, typed room ids).
        plain_room = server.new_room()
        c = open_call(browser, f"{server.url}call/{plain_room}", "C")
        c.wait_for("duet.phase === 'waiting'", 15, message="a link without a key joins")
    finally:
        server.stop()


def start_keyed_call(browser, url, joiner=None):
    """A starts a call from the home page at `url` (a keyed link); B opens the same link (in `joiner`, another browser,
    when given). Returns (A, B, link)."""
    a = watch(browser.new_page(url), "A")
    a.wait_for("window.duet && duet.page === 'home'", 10, message="home page loads")
    a.evaluate("document.getElementById('start').click()")
    a.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting'", 15, message="A waits for the other person")
    link = a.evaluate("document.getElementById('share-link').value")
    expect("#k=" in link, f"a keyed link: {link}")
    b = watch((joiner or browser).new_page(None), "B")
    b.navigate(link)
    b.wait_for("window.duet && duet.page === 'call'", 10, message="B's call page loads")
    return a, b, link


def scenario_verified(browser):
    """Through a relay that forwards every byte untouched (the control for `intercepted`), a keyed call is verified
    on both pages, both show the same six-digit safety code, and media flows both ways."""
    server = Server()
    proxy = TamperingProxy("127.0.0.1", server.port, mode="honest")
    try:
        url = f"http://127.0.0.1:{proxy.start()}/"
        a, b, _ = start_keyed_call(browser, url)
        in_call(a, what="A in call")
        in_call(b, what="B in call")
        for page, name in ((a, "A"), (b, "B")):
            page.wait_for("duet.verification === 'verified' && /^[0-9]{6}$/.test(duet.safetyCode ?? '')", 10,
                          message=f"{name}: verified, with a safety code")
        codes = [page.evaluate("duet.safetyCode") for page in (a, b)]
        expect(codes[0] == codes[1], f"both pages show the same code: {codes}")
        shown = a.evaluate("document.getElementById('verification').innerText")
        expect("Verified" in shown and f"{codes[0][:3]} {codes[0][3:]}" in shown, f"A's chip says it: {shown!r}")
        media_flows(b, what="B receives A's media")
        media_flows(a, what="A receives B's media")
        for page, name in ((a, "A"), (b, "B")):  # the count the interception check relies on does count
            expect(page.evaluate("duet.remoteDescriptionsApplied") >= 1, f"{name} counted the description it applied")
        expect(proxy.tampered_count == 0, "the honest relay changed nothing")
        shot(a, "verified-call")
        log("verified", {"safety code": codes[0]})
    finally:
        proxy.stop()
        server.stop()


def scenario_verified_across_browsers(browser):
    """A keyed call between Chromium and Firefox (issue 32's matrix), each way round, and between two Firefox pages:
    verified on both pages, the same six-digit safety code (each browser's stable DTLS identity, and the handshake's
    certificate, on either side), and media both ways."""
    from bidi import Firefox
    server = Server()
    try:
        with Firefox.launch() as firefox:
            for first, second, names in ((browser, firefox, ("Chromium", "Firefox")), (firefox, browser, ("Firefox", "Chromium")),
                                         (firefox, firefox, ("Firefox", "Firefox"))):
                a, b, _ = start_keyed_call(first, server.url, second)
                for page, name in ((a, names[0]), (b, names[1])):
                    in_call(page, what=f"{name} in call ({names[0]} hosts)")
                    page.wait_for("duet.verification === 'verified' && /^[0-9]{6}$/.test(duet.safetyCode ?? '')", 10,
                                  message=f"{name}: verified, with a safety code ({names[0]} hosts)")
                codes = [page.evaluate("duet.safetyCode") for page in (a, b)]
                expect(codes[0] == codes[1], f"{names[0]} hosts: both pages show the same code: {codes}")
                media_flows(b, what=f"{names[1]} receives {names[0]}'s media")
                media_flows(a, what=f"{names[0]} receives {names[1]}'s media")
                log("verified", {"hosts": names[0], "safety code": codes[0]})
                for page in (a, b):
                    page.evaluate("document.getElementById('leave')?.click()")
                    page.close()
    finally:
        server.stop()


def scenario_intercepted(browser):
    """A relay that rewrites the DTLS fingerprints of every offer and answer (a server in the middle): with a keyed
    link neither page applies the other's description, both show the interception screen, the call ends without
    media and is not retried, and a reload shows the screen again."""
    server = Server()
    proxy = TamperingProxy("127.0.0.1", server.port, mode="fingerprints")
    try:
        url = f"http://127.0.0.1:{proxy.start()}/"
        a, b, _ = start_keyed_call(browser, url)
        for page, name in ((a, "A"), (b, "B")):
            page.wait_for("duet.verification === 'intercepted' && duet.screen === 'intercepted' && duet.phase === 'idle'", 20,
                          message=f"{name} shows the interception screen")
            said = page.evaluate("document.getElementById('screen-intercepted').innerText")
            expect("This call may be intercepted" in said and "Do not use this link again" in said, f"{name} says what to do: {said[:300]}")
            buttons = page.evaluate("[...document.querySelectorAll('#screen-intercepted button')].length")
            expect(buttons == 0, f"{name}: nothing on the screen dismisses it or rejoins ({buttons} buttons)")
            applied = page.evaluate("duet.remoteDescriptionsApplied")
            expect(applied == 0, f"{name} never applied the other side's description ({applied} applied)")
        expect(proxy.tampered_count >= 1, f"the relay did rewrite fingerprints ({proxy.tampered_count})")
        # Not retried: a while later both are still out of the call.
        time.sleep(3)
        for page, name in ((a, "A"), (b, "B")):
            expect(page.evaluate("duet.phase") == "idle" and page.evaluate("duet.screen") == "intercepted", f"{name} stayed out of the call")
        a.navigate(a.evaluate("location.href"))
        a.wait_for("window.duet && duet.page === 'call' && duet.screen === 'intercepted'", 10, message="a reload shows the screen again")
        expect(a.evaluate("duet.phase") == "idle", "the reloaded page did not rejoin")
        shot(b, "intercepted")
        shot(b, "intercepted-phone", 390, 844)
        log("intercepted", {"fingerprints rewritten": proxy.tampered_count})
    finally:
        proxy.stop()
        server.stop()


def scenario_stable_identity(browser):
    """Each browser keeps its DTLS certificate (IndexedDB, one per open call page): after a reload the fingerprints and
    the safety code are the ones from before and media flows both ways again (the side that kept its connection
    renews it, or DTLS would never be redone with an unchanged fingerprint); a new call has the same fingerprint;
    two tabs of one browser differ, and so does another profile."""
    server = Server()
    try:
        a, b, link = start_keyed_call(browser, server.url)
        in_call(a, what="A in call")
        in_call(b, what="B in call")
        verified = "duet.verification === 'verified' && /^[0-9]{6}$/.test(duet.safetyCode ?? '')"
        for page, name in ((a, "A"), (b, "B")):
            page.wait_for(verified, 10, message=f"{name}: verified, with a code")
        fa, fb = a.evaluate("duet.localFingerprints"), b.evaluate("duet.localFingerprints")
        code = a.evaluate("duet.safetyCode")
        expect(b.evaluate("duet.safetyCode") == code, "one code on both pages")
        expect(fa and fb and not set(fa) & set(fb), f"two tabs of one browser present different certificates: {fa} {fb}")

        b.reload()
        b.wait_for("window.duet && duet.page === 'call'", 10, message="B's page is back")
        in_call(b, 20, what="B rejoins after the reload")
        in_call(a, 20, what="A in call with the reloaded B")
        for page, name in ((a, "A"), (b, "B")):
            page.wait_for(f"{verified} && duet.safetyCode === {code!r}", 15, message=f"{name}: verified again, with the same code")
        media_flows(b, what="B receives A's media after the reload")
        media_flows(a, what="A receives B's media after the reload")
        expect(b.evaluate("duet.localFingerprints") == fb, f"B kept its certificate across the reload: {b.evaluate('duet.localFingerprints')} vs {fb}")
        expect(a.evaluate("duet.localFingerprints") == fa, "A kept its certificate through the renewal of its connection")

        # Another call, with someone in another profile (a browser context: storage of its own).
        b.evaluate("duet.leave()")
        a.evaluate("duet.leave()")
        a.wait_for("duet.phase === 'idle'", 10, message="A left")
        a.navigate(server.url)
        a.wait_for("window.duet && duet.page === 'home'", 10, message="A's home page")
        a.evaluate("document.getElementById('start').click()")
        a.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting'", 15, message="A starts another call")
        second = a.evaluate("document.getElementById('share-link').value")
        context = browser.send("Target.createBrowserContext")["browserContextId"]
        c = watch(browser.new_page(None, context=context), "C")
        c.navigate(second)
        in_call(a, 20, what="A in the second call")
        in_call(c, 20, what="C (another profile) in the second call")
        c.wait_for(verified, 10, message="C: verified, with a code")
        expect(a.evaluate("duet.localFingerprints") == fa, "A presents the same certificate in a new call")
        fc = c.evaluate("duet.localFingerprints")
        expect(fc and not set(fc) & set(fa + fb), f"another profile presents another certificate: {fc}")
        expect(c.evaluate("duet.safetyCode") == a.evaluate("duet.safetyCode"), "one code in the second call too")
        media_flows(c, what="C receives A's media")
        media_flows(a, what="A receives C's media")
        log("stable identity", {"code": code, "second call's code": c.evaluate("duet.safetyCode")})
    finally:
        server.stop()


# The sum of each scenario's wait deadlines (s), for its time limit.
WAITS_S = {
    # home 10, start 10 + 15, B page 10, in_call 20 + 20, media_flows 20 + 20, copied 5, idle 10, navigate 10,
    # recent 10, cut page 10 + 10, C page 10 + 15
    "link-key": 10 + 10 + 15 + 10 + 20 + 20 + 20 + 20 + 5 + 10 + 10 + 10 + 10 + 10 + 10 + 15,  # 235
    # home 10, start 15, B page 10, in_call 20 + 20, verified 10 + 10, media_flows 20 + 20
    "verified": 10 + 15 + 10 + 20 + 20 + 10 + 10 + 20 + 20,  # 135
    # home 10, start 15, B page 10, intercepted 20 + 20, not retried 3, reload 10
    "intercepted": 10 + 15 + 10 + 20 + 20 + 3 + 10,  # 88
    # three calls: home 10, start 15, B page 10, in_call 20 + 20, verified 10 + 10, media_flows 20 + 20; Firefox starts 30
    "verified-across-browsers": 3 * (10 + 15 + 10 + 20 + 20 + 10 + 10 + 20 + 20) + 30,  # 435
    # home 10, start 15, B page 10, in_call 20 + 20, verified 10 + 10, reload 10, in_call 20 + 20, verified 15 + 15,
    # media 20 + 20, A left 10, home 10, start 15, in_call 20 + 20, C verified 10, media 20 + 20
    "stable-identity": 10 + 15 + 10 + 20 + 20 + 10 + 10 + 10 + 20 + 20 + 15 + 15 + 20 + 20 + 10 + 10 + 15 + 20 + 20 + 10 + 20 + 20,  # 340
}


if __name__ == "__main__":
    import scenarios
    scenarios.main_with_limits(globals(), WAITS_S, lambda name: {})
