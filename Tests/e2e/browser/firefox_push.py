"""Ringing through a real browser's own push client (issue 52): Firefox ESR subscribes with `PushManager.subscribe`
(Duet's VAPID key) to a push service of the test's (Tests/e2e/push/mozilla_push_service.py: Mozilla's push protocol
to Firefox, RFC 8030 over HTTPS to `duet serve`, VAPID checked), decrypts what Duet sent itself, and its service
worker shows the ring with no Duet page open. Chromium (A) calls; Firefox (B) is rung.

    unshare -n sh -c 'ip link set lo up && exec python3 firefox_push.py ring-firefox-push'

Nothing is injected on the way: the subscription is made by the home page's "Ring me here" toggle, the push is the
bytes `duet serve` posted, handed down as Firefox's push service would. What a test cannot do headless is press a
notification's button: the cancel is A's (its page's Cancel), the answer is B's other device's (C, a Chromium
profile that has been in the call, pressing Accept on its home page's sheet), and the notifications are read with
`registration.getNotifications()` from a tab of B's that is no Duet page (a 404 of the origin: the worker counts only
the home and call pages, which ring with their own sheet, as Duet in view).

Mutations (each must fail the scenario; DUET_PUSH_BREAK):
- `wrong-key`: after B subscribed, the server is given B's endpoint with another browser's keys (the server's payload
  is encrypted to the wrong key: Firefox acks 101, no notification);
- `no-push-handler`, `any-page`, `keep-subscription`: `duet serve --web-root` a copy of the browser client whose
  service worker has no `push` listener; whose worker takes any page of the site in view for Duet's (the ring is never
  shown: the 404 tab); whose Ring me here off keeps the browser's subscription (no `unregister`). WEB_MUTATIONS.
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
from bidi import Firefox  # noqa: E402
from scenarios import Server, expect, in_call, log, main_with_limits, watch  # noqa: E402

BREAK = os.environ.get("DUET_PUSH_BREAK", "")


def push_service():
    directory = tempfile.mkdtemp(prefix="duet-mozpush-")
    process = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "push", "mozilla_push_service.py"), directory],
                               stdin=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while not os.path.exists(os.path.join(directory, "ready.json")):
        expect(time.monotonic() < deadline and process.poll() is None, "the push service starts")
        time.sleep(0.05)
    with open(os.path.join(directory, "ready.json")) as f:
        return process, directory, json.load(f)


def events(directory, **match):
    path = os.path.join(directory, "events.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        found = [json.loads(line) for line in f]
    return [e for e in found if all(e.get(k) == v for k, v in match.items())]


def wait_event(directory, what, timeout=15, **match):
    deadline = time.monotonic() + timeout
    while True:
        found = events(directory, **match)
        if found:
            return found
        expect(time.monotonic() < deadline, f"{what} (push service events: {events(directory)[-6:]})")
        time.sleep(0.05)


def firefox_prefs(ws_port):
    """Firefox's push client pointed at the test's service (../shared/notes/firefox.md)."""
    return {
        "dom.push.enabled": True,
        "dom.push.connection.enabled": True,  # BiDi's Remote Agent turns it off unless the profile says otherwise
        "dom.push.serverURL": f"ws://127.0.0.1:{ws_port}/",
        "dom.push.testing.allowInsecureServerURL": True,
        "permissions.default.desktop-notification": 1,
        "dom.serviceWorkers.testing.enabled": True,
        "alerts.useSystemBackend": False,
        # The worker stops soon after its page closes: the push must wake a new instance.
        "dom.serviceWorkers.idle_timeout": 1000,
        "dom.serviceWorkers.idle_extended_timeout": 2000,
    }


# The mutations that run the browser client altered (`duet serve --web-root` a copy): the file, the line, its stand-in.
WEB_MUTATIONS = {
    # The worker ignores `push` events.
    "no-push-handler": ("sw.js", "self.addEventListener('push', (event) => event.waitUntil(onPush(event.data)));",
                        "// (mutation: no push listener)"),
    # Any page of the site in view counts as Duet's (the 404 tab kept open silences the ring).
    "any-page": ("sw.js", "client.visibilityState === 'visible' && ringsItself(client.url)", "client.visibilityState === 'visible'"),
    # Ring me here off keeps the browser's subscription.
    "keep-subscription": ("js/ringing/ring-me-here.js", "await subscription.unsubscribe();", "undefined;"),
}


def mutated_web_root(name):
    """A copy of the browser client with one of WEB_MUTATIONS made."""
    path, line, stand_in = WEB_MUTATIONS[name]
    copy = os.path.join(tempfile.mkdtemp(prefix="duet-web-"), "Web")
    shutil.copytree(os.path.join(ROOT, "Sources", "DuetWeb", "Web"), copy)
    with open(os.path.join(copy, path)) as f:
        text = f.read()
    expect(line in text, f"{path} still has what the mutation {name} changes: {line}")
    with open(os.path.join(copy, path), "w") as f:
        f.write(text.replace(line, stand_in))
    return copy


def saved_call(a, b, server):
    """A (Chromium) starts a call, B (Firefox) joins once: both browsers saved it with their member tokens; A calls
    itself Ann; both leave."""
    a.navigate(server.url)
    a.wait_for("window.duet && duet.page === 'home'", 10, message="A's home page loads")
    a.evaluate("localStorage.setItem('duet.myName', JSON.stringify('Ann')); document.getElementById('start').click()")
    a.wait_for("location.pathname.startsWith('/call/') && window.duet && duet.page === 'call' && duet.phase === 'waiting'", 15,
               message="A starts a call")
    link = a.evaluate("document.getElementById('share-link').value")
    room = a.evaluate("duet.roomId")
    b.navigate(link, timeout=20)
    in_call(a, timeout=30, what="A in call")
    in_call(b, timeout=30, what="B in call")
    for page, who in ((a, "A"), (b, "B")):
        page.wait_for(f"JSON.parse(localStorage.getItem('duet.recentRooms') || '[]').some(r => r.roomId === {json.dumps(room)} && r.memberToken)",
                      10, message=f"{who}'s browser saved the call with its member token")
        page.evaluate("duet.leave()")
        page.wait_for("duet.phase === 'idle'", 10, message=f"{who} left")
    return link, room


def ring_me_here(b, server, room, on):
    """B's home page: the saved call's "Ring me here" toggle, as a person turns it."""
    b.navigate(server.url, timeout=20)
    b.wait_for("window.duet && duet.page === 'home' && document.querySelector('.saved-call .ring-me input')", 10,
               message="B's home page lists the saved call with its Ring me here toggle")
    b.evaluate(f"(() => {{ const box = document.querySelector('.saved-call .ring-me input'); "
               f"if (box.checked !== {json.dumps(on)}) box.click(); return true; }})()")
    expected = "this browser will ring, even when Duet is closed" if on else "ringing here is off"
    try:
        b.wait_for(f"document.getElementById('ring-me-status').textContent.includes({json.dumps(expected)})", 20,
                   message=f"B's Ring me here turned {'on' if on else 'off'}")
    except Exception:
        log("B's Ring me here status:", b.evaluate("document.getElementById('ring-me-status').textContent"))
        raise


def notifications(firefox, server, tag):
    """B's notifications of this tag, read from a tab of the origin that is no Duet page (closed after)."""
    page = firefox.new_page(server.url + "no-such-page")
    try:
        return page.evaluate(
            f"navigator.serviceWorker.getRegistration('/').then(r => r ? r.getNotifications({{tag: {json.dumps(tag)}}}) : []).then(ns => "
            "ns.map(n => ({title: n.title, body: n.body, actions: (n.actions || []).map(a => a.title), "
            "requireInteraction: n.requireInteraction, kind: n.data && n.data.kind, name: n.data && n.data.name, "
            "picture: n.data && n.data.picture})))")
    finally:
        page.close()


def wait_notifications(firefox, server, tag, accept, what, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        shown = notifications(firefox, server, tag)
        if accept(shown):
            return shown
        expect(time.monotonic() < deadline, f"{what}: {shown}")
        time.sleep(0.3)


def wait_connections(server, count, what, timeout=15):
    """The server's open signaling connections (`duet_connections` in /metrics, every transport) once they are `count`."""
    deadline = time.monotonic() + timeout
    while True:
        with urllib.request.urlopen(server.url + "metrics", timeout=5) as response:
            lines = response.read().decode().splitlines()
        found = {line.split(" ")[0]: float(line.split(" ")[-1]) for line in lines if line.startswith("duet_connections{")}
        if sum(found.values()) == count:
            return found
        expect(time.monotonic() < deadline, f"{what}: {found}")
        time.sleep(0.1)


def break_key(server, room, endpoint, b):
    """The `wrong-key` mutation: the server keeps B's endpoint with keys that are not B's browser's."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    other = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    device, token = b.evaluate(
        f"[localStorage.getItem('duet.deviceId'), JSON.parse(localStorage.getItem('duet.recentRooms')).find(r => r.roomId === {json.dumps(room)}).memberToken]")
    b64 = lambda data: base64.urlsafe_b64encode(data).decode().rstrip("=")
    body = json.dumps({"endpoint": endpoint, "keys": {"p256dh": b64(other), "auth": b64(os.urandom(16))},
                       "deviceId": device, "memberToken": token}).encode()
    request = urllib.request.Request(server.url + f"api/push/subscribe?roomId={room}", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        expect(response.status == 204, f"the wrong keys are stored ({response.status})")
    log("mutation wrong-key: the server now encrypts B's pushes to another key")


def second_device(chromium, link, room):
    """B's second device (C, a Chromium profile of its own): it has been in the call once (joined A, left), so the
    server rings it too; its home page stays open, listening."""
    context = chromium.send("Target.createBrowserContext")["browserContextId"]
    c = watch(chromium.new_page(link, context=context), "C")
    in_call(c, timeout=30, what="C (B's other device) joins A once")
    c.wait_for(f"JSON.parse(localStorage.getItem('duet.recentRooms') || '[]').some(r => r.roomId === {json.dumps(room)} && r.memberToken)",
               10, message="C's browser saved the call with its member token")
    c.evaluate("duet.leave()")
    c.wait_for("duet.phase === 'idle'", 10, message="C left")
    c.navigate(link.split("/call/")[0] + "/")
    c.wait_for(f"window.duet && duet.page === 'home' && duet.occupancy()[{json.dumps(room)}] === 1", 10,
               message="C's home page watches the call (A is in it)")
    return c, context


def push_topic(kind, subject):
    """The Topic duet serve gives a push (PushDispatcher.topic): one per join alert's room, one per call."""
    digest = hashlib.sha256(f"{kind}|{subject}".encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()[:32]


def scenario_ring_firefox_push(chromium):
    """Firefox's own push client: B turns on Ring me here (PushManager.subscribe, Duet's VAPID key) and closes every Duet page. A (Chromium) joins with its camera on: Firefox decrypts the join alert and B's worker shows it with A's picture (opened with B's key). A rings: the worker shows A's verified name with Accept and Decline and A's picture (the join alert closed); A cancels and it becomes a missed call. A rings again and B's other device (C, Chromium, its home page open) accepts: Firefox's ring becomes "Answered on another device". B turns Ring me here off: the browser drops its push subscription, and A's next ring reaches nobody."""
    service, push_dir, ports = push_service()
    web_root = ("--web-root", mutated_web_root(BREAK)) if BREAK in WEB_MUTATIONS else ()
    server = Server("--push-allow-private-endpoints", "on", "--push-ca-file", os.path.join(push_dir, "ca.pem"), *web_root)
    try:
        with Firefox.launch(prefs=firefox_prefs(ports["wsPort"])) as firefox:
            a = watch(chromium.new_page(), "A")
            b = watch(firefox.new_page(), "B")
            link, room = saved_call(a, b, server)
            started = time.monotonic()
            ring_me_here(b, server, room, on=True)
            registered = wait_event(push_dir, "Firefox registered a push subscription with Duet's VAPID key", event="register")
            expect(registered[-1]["key"], f"the subscription names an application server key: {registered[-1]}")
            endpoint = registered[-1]["endpoint"]
            channel = endpoint.rsplit("/", 1)[-1]
            log(f"B subscribed through Firefox's push client in {time.monotonic() - started:.1f} s: {endpoint}")
            if BREAK == "wrong-key":
                break_key(server, room, endpoint, b)
            # Every Duet page of B's closed. The tab that keeps the browser open is a page of the site that is no Duet
            # page (a 404): the worker must not take it for Duet in view, which rings with its own sheet.
            blank = firefox.new_page(server.url + "not-a-duet-page")
            b.close()

            def delivered(topic):
                return events(push_dir, channelID=channel, event="push", status=201, topic=topic)

            def pushed(what, topic, index):
                """Push number `index` (from 0) under `topic` to B's endpoint: delivered (201) and decrypted (ack 100).
                By Topic, not by count: a join alert of C's may come between (a ring and its end share the call's)."""
                deadline = time.monotonic() + 15
                while len(delivered(topic)) <= index:
                    expect(time.monotonic() < deadline, f"{what} reached the push service, VAPID verified, and went down to Firefox "
                           f"(push service events: {events(push_dir)[-6:]})")
                    time.sleep(0.05)
                push = delivered(topic)[index]
                acks = wait_event(push_dir, f"Firefox acknowledged {what}", version=push["version"], event="ack")
                expect(acks[-1]["code"] == 100,
                       f"Firefox decrypted {what} and handed it to the worker (ack 100; 101 is a decryption error): {acks[-1]}")
                return push

            # The seed's join alert with a snapshot: A opens the call as a person does, the pre-join screen with the
            # camera on, then Join; its picture is sealed to B's key (made by Ring me here, vouched with the link's).
            # Two of the room's burst of 3 went on A's and B's first joins: this one is the third.
            a.close()
            a = watch(chromium.new_page(link, prejoin=True), "A")
            a.wait_for("window.duet && duet.screen === 'prejoin' && document.getElementById('prejoin-video').videoWidth > 0", 15,
                       message="A's camera preview plays")
            join_topic = push_topic("join", room)
            sent = len(delivered(join_topic))
            joined = time.monotonic()
            a.evaluate("document.getElementById('join').click()")
            a.wait_for("duet.phase === 'waiting'", 15, message="A joins")
            push = pushed("A's join alert", join_topic, sent)
            expect(push["urgency"] == "high" and push["contentEncoding"] == "aes128gcm" and push["topic"] and int(push["ttl"]) <= 60,
                   f"a join alert as docs/protocol.md says (Urgency high, TTL at most 60, a Topic), encrypted: {push}")
            shown = wait_notifications(firefox, server, "join-" + room, lambda ns: len(ns) == 1, "B's service worker shows the join alert")
            log(f"the join alert was shown {time.monotonic() - joined:.1f} s after A pressed Join: {shown[0]}")
            expect(shown[0]["kind"] == "join" and shown[0]["body"].startswith("Someone joined") and not shown[0]["actions"],
                   f"the join alert says someone joined B's call: {shown[0]}")
            expect(shown[0]["picture"] is True, f"the join alert carries A's picture, opened with B's own key: {shown[0]}")

            # A rings from the waiting screen.
            a.evaluate("document.getElementById('ring-button').click()")
            a.wait_for("duet.ring && duet.ring.state === 'ringing'", 10, message="A rings")
            call_id = a.evaluate("duet.ring.callId")
            rang = time.monotonic()
            push = pushed("Duet's ring", push_topic("ring", room + "|" + call_id), 0)
            expect(push["urgency"] == "high" and push["contentEncoding"] == "aes128gcm" and push["topic"],
                   f"an urgent, encrypted ring with a Topic: {push}")
            shown = wait_notifications(firefox, server, call_id, lambda ns: len(ns) == 1 and ns[0]["kind"] == "ring",
                                       "B's service worker shows the ring")
            note = shown[0]
            log(f"the ring's notification was shown {time.monotonic() - rang:.1f} s after A pressed Call: {note}")
            expect(note["title"] == "Ann" and note["name"] == "Ann", f"the caller's verified name: {note}")
            expect(note["actions"] == ["Accept", "Decline"] and note["requireInteraction"] is True,
                   f"Accept and Decline, and it stays until answered: {note}")
            expect(note["picture"] is True, f"the ring carries A's picture, opened with B's own key: {note}")
            expect(notifications(firefox, server, "join-" + room) == [], "the ring closed the join alert it supersedes")
            # A cancels: the ring's end goes by push too, and the worker closes the ring (a missed call instead).
            a.evaluate("document.getElementById('ring-cancel').click()")
            a.wait_for("duet.ring.state === 'cancelled'", 10, message="A's ring is cancelled")
            # (The worker closes the ring, then shows the missed call: wait for the missed call, not for the gap.)
            shown = wait_notifications(firefox, server, call_id, lambda ns: ns and all(n["kind"] != "ring" for n in ns),
                                       "the cancel closed the ring's notification and showed what replaced it")
            log(f"after the cancel, B shows: {shown}")
            expect(len(shown) == 1 and shown[0]["kind"] == "missed" and shown[0]["title"] == "Missed call from Ann"
                   and not shown[0]["actions"], f"a missed call from Ann, nothing left to Accept or Decline: {shown}")

            # Answered elsewhere: B's other device (C, Chromium, no push service of its own here) listens on its home
            # page; A rings both; C accepts; the ring's end reaches Firefox by push and replaces its ring.
            c, c_context = second_device(chromium, link, room)
            a.evaluate("document.getElementById('ring-button').click()")
            a.wait_for("duet.ring && duet.ring.state === 'ringing' && duet.ring.callId !== " + json.dumps(call_id), 10,
                       message="A rings again")
            second_call = a.evaluate("duet.ring.callId")
            pushed("A's second ring", push_topic("ring", room + "|" + second_call), 0)
            c.wait_for(f"duet.incoming.state === 'ringing' && duet.incoming.roomId === {json.dumps(room)} && "
                       "!document.getElementById('incoming').hidden", 10, message="C's sheet rings")
            wait_notifications(firefox, server, second_call, lambda ns: len(ns) == 1 and ns[0]["kind"] == "ring",
                               "B's service worker shows the second ring")
            c.evaluate("document.getElementById('incoming-accept').click()")
            a.wait_for("duet.ring.state === 'accepted'", 10, message="A sees accepted")
            pushed("the ring's end (answered on C)", push_topic("ring", room + "|" + second_call), 1)
            shown = wait_notifications(firefox, server, second_call, lambda ns: ns and all(n["kind"] != "ring" for n in ns),
                                       "C's answer closed Firefox's ring and showed what replaced it")
            log(f"after C answered, B's Firefox shows: {shown}")
            expect(len(shown) == 1 and shown[0]["title"] == "Answered on another device" and not shown[0]["actions"],
                   f"Firefox says the call was answered on another device: {shown}")
            in_call(c, what="C in call with A")
            c.evaluate("duet.leave()")
            c.wait_for("duet.phase === 'idle'", 10, message="C left")
            c.close()
            chromium.send("Target.disposeBrowserContext", {"browserContextId": c_context})

            # B turns ringing here off: the server forgets the endpoint and, no other call being rung here, the
            # browser drops its push subscription; A's next ring reaches no push service.
            b = watch(firefox.new_page(), "B again")
            ring_me_here(b, server, room, on=False)
            wait_event(push_dir, "Firefox dropped its push subscription (no call left to ring here)", event="unregister", channelID=channel)
            b.close()
            # Rung only once B's and C's pages are gone from the server (a page that closes takes a moment to close its
            # socket; one still listening at the ring would be rung live, and the ring would not be unreachable).
            only_a = wait_connections(server, 1, "only A's page is connected to the server")
            log(f"connections before the third ring: {only_a}")
            before = len(events(push_dir, event="push"))
            a.wait_for("duet.phase === 'waiting'", 10, message="A waits alone again")
            a.evaluate("document.getElementById('ring-button').click()")
            a.wait_for("duet.ring && duet.ring.state === 'unreachable'", 15, message="A's third ring reaches nobody (B unsubscribed)")
            late = events(push_dir, event="push")[before:]
            expect(all(p["status"] != 201 for p in late), f"no push delivered after the unsubscribe: {late}")
            blank.close()
    finally:
        server.stop()
        service.stdin.close()
        service.terminate()


# Each scenario's waits summed (seconds), with Firefox's start: its time limit (scenarios.limit_of).
WAITS = {"ring-firefox-push": 330}

if __name__ == "__main__":
    main_with_limits(globals(), WAITS, lambda name: {}, suite="browser")
