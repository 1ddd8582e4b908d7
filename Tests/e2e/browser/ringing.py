"""Ringing (issue 31) in real headless Chromium: call someone from a saved call, and their browser rings.

Run like scenarios.py, one scenario per process inside a network namespace of its own (RingingTests):
    unshare -n sh -c 'ip link set lo up && exec python3 ringing.py ring-decline'
A and B are two people: two browser contexts (storage of their own). B has been in the call once (so B's browser
saved it, with its member token); then A presses Call on the saved call.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenarios import (  # noqa: E402
    Server, accessible_names, expect, in_call, log, main_with_limits, media_flows, open_call, shot, watch, with_query)


def people(browser, server):
    """A's and B's browsers, a call between them that both have been in (then both left), and its link."""
    # B is the browser's own profile, A a context of its own (storage of its own). Notifications are allowed for B.
    a_context = browser.send("Target.createBrowserContext")["browserContextId"]
    b_context = None
    browser.send("Browser.grantPermissions", {"permissions": ["notifications"], "origin": server.url.rstrip("/")})
    a_home = watch(browser.new_page(server.url, context=a_context), "A")
    a_home.wait_for("window.duet && duet.page === 'home'", 10, message="A's home page loads")
    a_home.evaluate("document.getElementById('start').click()")
    a_home.wait_for("location.pathname.startsWith('/call/') && window.duet && duet.page === 'call' && duet.phase === 'waiting'", 15,
                    message="A starts a call")
    link = a_home.evaluate("document.getElementById('share-link').value")
    b = watch(browser.new_page(link, context=b_context), "B")
    b.wait_for("window.duet && duet.page === 'call'", 10, message="B opens the link")
    in_call(a_home, what="A in call")
    in_call(b, what="B in call")
    room = a_home.evaluate("duet.roomId")
    # Both browsers saved the call with their member token (from joined).
    for page, who in ((a_home, "A"), (b, "B")):
        page.wait_for(f"JSON.parse(localStorage.getItem('duet.recentRooms') || '[]').some(r => r.roomId === {json.dumps(room)} && r.memberToken)",
                      5, message=f"{who}'s browser saved the call with its member token")
    # B names the call on its side, A on its: "Ann" calls, B sees who.
    a_home.evaluate("localStorage.setItem('duet.myName', JSON.stringify('Ann')); true")
    for page in (a_home, b):
        page.evaluate("duet.leave()")
        page.wait_for("duet.phase === 'idle'", 10, message="left")
    b.navigate(server.url)
    b.wait_for("window.duet && duet.page === 'home' && document.querySelectorAll('.saved-call').length === 1", 10,
               message="B's home page lists the saved call")
    b.wait_for(f"duet.occupancy()[{json.dumps(room)}] === 0", 10, message="B's home page watches the call")
    return a_home, a_context, b, b_context, room, link


def ring_from(page, server, room, link):
    """A presses Call on its saved call: the call page opens, joins, and rings."""
    page.navigate(server.url)
    page.wait_for("window.duet && duet.page === 'home' && document.querySelector('.saved-call a.button')", 10, message="A's home lists the call")
    page.evaluate("document.querySelector('.saved-call a.button').click()")
    page.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting'", 15, message="A's call page waits")
    page.wait_for("duet.ring && duet.ring.state === 'ringing'", 10, message="A rings")


def b_rings(b, room):
    b.wait_for(f"duet.incoming.state === 'ringing' && duet.incoming.roomId === {json.dumps(room)} && "
               "!document.getElementById('incoming').hidden", 10, message="B's sheet rings")


def scenario_ring_decline(browser):
    """B's home page is open; A rings from the saved call; B's sheet rings with A's verified name, Accept and Decline; B declines and A sees declined."""
    server = Server()
    try:
        a, _, b, _, room, link = people(browser, server)
        ring_from(a, server, room, link)
        b_rings(b, room)
        expect(b.evaluate("duet.incoming.verified === true && duet.incoming.name === 'Ann'"),
               f"B sees the caller's name, verified by the link's key: {b.evaluate('duet.incoming')}")
        names = accessible_names(b)
        expect({"Accept", "Decline"} <= names, f"the sheet's buttons are named Accept and Decline: {sorted(names)[:40]}")
        expect(b.evaluate("document.activeElement && document.activeElement.id === 'incoming-accept'"), "Accept has the keyboard focus")
        shot(b, "incoming-call", 1280, 800)
        shot(b, "incoming-call-phone", 390, 844)
        b.evaluate("document.getElementById('incoming-decline').click()")
        a.wait_for("duet.ring.state === 'declined' && document.getElementById('ring-status').textContent.includes('declined')", 10,
                   message="A sees declined")
        b.wait_for("document.getElementById('incoming').hidden && duet.history[0].outcome === 'declined'", 5, message="B's sheet closes; history says declined")
        a.wait_for("JSON.parse(localStorage.getItem('duet.callHistory'))[0].outcome === 'declined'", 5, message="A's history says declined")
    finally:
        server.stop()


def scenario_ring_no_answer(browser):
    """Nobody answers: after the ring's timeout A sees no answer and B's history shows a missed call."""
    server = Server("--ring-timeout", "4")
    try:
        a, _, b, _, room, link = people(browser, server)
        ring_from(a, server, room, link)
        b_rings(b, room)
        a.wait_for("duet.ring.state === 'no_answer'", 10, message="A sees no answer")
        b.wait_for("document.getElementById('incoming').hidden && duet.incoming.state === 'missed' && "
                   "duet.history[0].outcome === 'missed' && document.querySelector('#history-list li[data-outcome=missed]')", 5,
                   message="B's ring stops and its history shows a missed call")
        shot(b, "call-history", 1280, 800)
    finally:
        server.stop()


def scenario_ring_cancel(browser):
    """A cancels mid-ring: B's ring stops (a missed call), and A's page says cancelled."""
    server = Server()
    try:
        a, _, b, _, room, link = people(browser, server)
        ring_from(a, server, room, link)
        b_rings(b, room)
        a.evaluate("document.getElementById('ring-cancel').click()")
        a.wait_for("duet.ring.state === 'cancelled'", 5, message="A's ring is cancelled")
        b.wait_for("document.getElementById('incoming').hidden && duet.incoming.state === 'missed'", 5, message="B's ring stops")
    finally:
        server.stop()


def scenario_ring_two_pages(browser):
    """B has two Duet pages open: both ring; B accepts on one, the other stops (answered elsewhere), and the call has media both ways."""
    server = Server()
    try:
        a, _, b, b_context, room, link = people(browser, server)
        b2 = watch(browser.new_page(server.url, context=b_context), "B2")
        b2.wait_for(f"window.duet && duet.page === 'home' && duet.occupancy()[{json.dumps(room)}] === 0", 10, message="B's second page watches")
        ring_from(a, server, room, link)
        b_rings(b, room)
        b_rings(b2, room)
        b.evaluate("document.getElementById('incoming-accept').click()")
        b2.wait_for("document.getElementById('incoming').hidden && duet.incoming.state === 'answered_elsewhere'", 10,
                    message="B's other page stops: answered on another device")
        b.wait_for("window.duet && duet.page === 'call'", 10, message="Accept opens the call")
        a.wait_for("duet.ring.state === 'accepted'", 10, message="A sees accepted")
        in_call(a, what="A in call")
        in_call(b, what="B in call")
        expect(b.evaluate("duet.verification") == "verified", "the call B accepted is the verified call (the link's key came from B's saved call)")
        media_flows(a, what="A receives video and audio")
        media_flows(b, what="B receives video and audio")
    finally:
        server.stop()


def scenario_ring_push(browser):
    """B has no Duet page open: the ring goes by Web Push (a local push service, then the DevTools protocol delivers it to B's service worker), which shows a notification with Accept and Decline and A's snapshot (sealed to B's key, proven by the link's key); its Decline reaches A. Then B's home page is open and A calls again: the sheet shows A's picture too."""
    push_dir = tempfile.mkdtemp(prefix="duet-push-")
    push = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "..", "push", "push_service.py"), push_dir,
                             "--script", "b=201"], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(os.path.join(push_dir, "ready.json")):
            expect(time.monotonic() < deadline and push.poll() is None, "the push service starts")
            time.sleep(0.05)
        with open(os.path.join(push_dir, "ready.json")) as f:
            subscription = json.load(f)["subscriptions"]["b"]
        server = Server("--push-allow-private-endpoints", "on", "--push-ca-file", os.path.join(push_dir, "ca.pem"))
        try:
            a, a_context, b, b_context, room, link = people(browser, server)
            origin = server.url.rstrip("/")
            # B turned on "Ring me here": the worker is registered, what it needs is in IndexedDB, and the server has
            # B's subscription (here the local push service's: headless Chromium has no push service of its own).
            b.wait_for("navigator.serviceWorker.ready.then(() => true)", 10, message="B's service worker is active")
            device, token, key = b.evaluate(
                f"(() => {{ const c = JSON.parse(localStorage.getItem('duet.recentRooms')).find(r => r.roomId === {json.dumps(room)}); "
                "return [localStorage.getItem('duet.deviceId'), c.memberToken, c.key]; })()")
            b.evaluate(f"import('/js/ringing/ring-store.js').then(m => m.ringStore.put({json.dumps(room)}, "
                       f"{{deviceId: {json.dumps(device)}, memberToken: {json.dumps(token)}, key: {json.dumps(key)}, name: 'Ann and me', "
                       f"endpoint: {json.dumps(subscription['endpoint'])}}})).then(() => true)")
            # B's snapshot key, made and kept by the page's own code (the private half never leaves IndexedDB).
            # Vouched for with the link's key, as ring-me-here.js does: A's page seals its picture only to such keys.
            enc_key, enc_key_auth = b.evaluate(
                "Promise.all([import('/js/ringing/ring-store.js'), import('/js/ringing/snapshot.js'), import('/js/verification/link-key.js')])"
                f".then(async ([s, k, l]) => {{ const key = await s.ringStore.deviceKey(k.newDeviceKey); "
                f"return [key.publicJwk, await k.deviceKeyAuth({{ rid: {json.dumps(room)}, publicJwk: key.publicJwk, linkKey: l.parseLinkKey({json.dumps(key)}) }})]; }})")
            body = json.dumps({**subscription, "encPublicKey": enc_key, "encKeyAuth": enc_key_auth, "deviceId": device, "memberToken": token}).encode()
            with urllib.request.urlopen(urllib.request.Request(server.url + f"api/push/subscribe?roomId={room}", data=body, method="POST",
                                                               headers={"Content-Type": "application/json"}), timeout=5) as r:
                expect(r.status == 204, f"B's subscription is stored ({r.status})")
            # B's worker registration, through a tab of B's that is no Duet page: nothing of Duet is open for B.
            updates = b.events("ServiceWorker.workerRegistrationUpdated")
            b.navigate("about:blank")
            b.send("ServiceWorker.enable")
            registration_id = registration_of(updates, origin)
            # A opens the call and, once its camera shows, presses the waiting screen's Call: the ring carries its picture.
            a.navigate(server.url)  # (the same link again would only be a fragment change: no new page)
            a.navigate(link)
            a.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting' && document.getElementById('local-video').videoWidth > 0",
                       15, message="A waits in the call, its camera showing")
            a.evaluate("document.getElementById('ring-button').click()")
            a.wait_for("duet.ring && duet.ring.state === 'ringing'", 10, message="A rings")
            a.wait_for("duet.ring.devices === 1", 10, message="A rings one device (the push service took it)")
            log_path = os.path.join(push_dir, "pushes.jsonl")
            deadline = time.monotonic() + 10
            while True:
                pushes = [json.loads(line) for line in open(log_path)] if os.path.exists(log_path) else []
                pushes = [p for p in pushes if (p.get("payload") or {}).get("kind") == "ring"]
                if pushes:
                    break
                expect(time.monotonic() < deadline, f"the ring reaches the push service: {open(log_path).read() if os.path.exists(log_path) else None}")
                time.sleep(0.05)
            ring = pushes[0]
            expect(ring["vapid"] and ring["payload"]["kind"] == "ring", f"a signed, encrypted ring: {ring}")
            expect(ring["payload"].get("snapshotKey") and ring["payload"].get("snapshotId"),
                   f"A's camera went with the ring, its key wrapped for B's device: {sorted(ring['payload'])}")
            # Deliver what the push service decrypted to B's worker, as Chromium's push service would.
            b.send("ServiceWorker.deliverPushMessage", {"origin": origin, "registrationId": registration_id, "data": json.dumps(ring["payload"])})
            worker = worker_page(browser, origin, not_in=a_context)
            call_id = ring["payload"]["callId"]
            shown = worker.wait_for(f"self.registration.getNotifications({{tag: {json.dumps(call_id)}}}).then(ns => ns.length === 1 && ns.map(n => "
                                    "({title: n.title, body: n.body, actions: n.actions.map(a => a.title), requireInteraction: n.requireInteraction, tag: n.tag, "
                                    "image: n.image.slice(0, 23), picture: n.data.picture})))",
                                    10, message="the worker shows the ring")
            note = shown[0]
            expect(note["actions"] == ["Accept", "Decline"] and note["requireInteraction"] and note["title"] == "Ann",
                   f"a ring notification with Accept and Decline, the caller's verified name, that stays: {note}")
            expect(note["picture"] is True and note["image"] == "data:image/jpeg;base64,",
                   f"the notification shows A's picture, opened with B's key: {note}")
            expect(worker.evaluate(f"self.duetNotificationAction({json.dumps(call_id)}, 'decline')") is True, "the notification's Decline runs")
            a.wait_for("duet.ring.state === 'declined'", 10, message="A sees the notification's Decline")
            # B opens Duet again: the history has the call the worker declined.
            b.navigate(server.url)
            b.wait_for(f"window.duet && duet.page === 'home' && duet.history.some(h => h.callId === {json.dumps(call_id)} && h.outcome === 'declined' && h.name === 'Ann')",
                       10, message="B's history shows the call declined from the notification")
            # B's home page is open now: A calls again; the sheet rings live and shows A's picture.
            b.wait_for(f"duet.occupancy()[{json.dumps(room)}] === 1", 10, message="B's home page watches the call (A is in it)")
            a.evaluate("document.getElementById('ring-button').click()")
            b_rings(b, room)
            b.wait_for("duet.incoming.picture === true && document.getElementById('incoming-picture').src.startsWith('data:image/jpeg') && "
                       "!document.getElementById('incoming-picture').hidden && document.getElementById('incoming-picture').naturalWidth === 320",
                       10, message="B's sheet shows A's picture")
            shot(b, "incoming-call-picture", 1280, 800)
            b.evaluate("document.getElementById('incoming-decline').click()")
            a.wait_for("duet.ring.state === 'declined'", 10, message="A sees the second decline")
            # The seed's join alert with a snapshot: A leaves and opens the call again (no ring): its join waits up to
            # 2 s for a picture sealed to B's key, and B's worker shows it with the alert.
            a.evaluate("duet.leave()")
            a.wait_for("duet.phase === 'idle'", 10, message="A left")
            # As a person does: the pre-join screen with the camera on, then Join (the picture is of a camera that
            # is already showing, not one the join itself is still opening).
            again = watch(browser.new_page(link, prejoin=True, context=a_context), "A again")
            again.wait_for("window.duet && duet.screen === 'prejoin' && document.getElementById('prejoin-video').videoWidth > 0", 15,
                           message="A's camera preview plays")
            again.evaluate("document.getElementById('join').click()")
            again.wait_for("duet.phase === 'waiting'", 15, message="A joins again")
            deadline = time.monotonic() + 10
            while True:
                joins = [json.loads(line) for line in open(log_path)]
                joins = [p for p in joins if (p.get("payload") or {}).get("kind") == "join" and (p.get("payload") or {}).get("snapshotKey")]
                if joins:
                    break
                expect(time.monotonic() < deadline, "A's join alert reaches the push service with a snapshot sealed to B's key: "
                       f"{[sorted((p.get('payload') or {}).items())[:3] for p in (json.loads(line) for line in open(log_path))]}")
                time.sleep(0.05)
            alert = joins[0]["payload"]
            expect(alert.get("snapshotPurpose") == "join", f"a join snapshot: {sorted(alert)}")
            b.send("ServiceWorker.deliverPushMessage", {"origin": origin, "registrationId": registration_id, "data": json.dumps(alert)})
            note = worker.wait_for(f"self.registration.getNotifications({{tag: 'join-' + {json.dumps(room)}}}).then(ns => ns.length === 1 && "
                                   "({body: ns[0].body, image: ns[0].image.slice(0, 23), picture: ns[0].data.picture}))",
                                   10, message="B's worker shows the join alert")
            expect(note["picture"] is True and note["image"] == "data:image/jpeg;base64,", f"the join alert shows A's picture: {note}")
        finally:
            server.stop()
    finally:
        push.stdin.close()
        push.terminate()


def worker_page(browser, origin, not_in):
    """B's service worker (not the one of context `not_in`: A's home page registers one too) as a CDP session
    (cdp.Page: evaluate and wait_for work there as in a page)."""
    from cdp import Page
    deadline = time.monotonic() + 10
    while True:
        targets = browser.send("Target.getTargets")["targetInfos"]
        worker = next((t for t in targets if t["type"] == "service_worker" and t["url"].startswith(origin)
                       and t.get("browserContextId") != not_in), None)
        if worker:
            session = browser.send("Target.attachToTarget", {"targetId": worker["targetId"], "flatten": True})["sessionId"]
            page = Page(browser, worker["targetId"], session)
            browser._sessions[session] = page
            return page
        expect(time.monotonic() < deadline, f"B's service worker is running: {[t['type'] + ' ' + t['url'] for t in targets]}")
        time.sleep(0.1)


def registration_of(updates, origin):
    """The worker registration's id, as ServiceWorker.deliverPushMessage takes it, from the domain's updates."""
    deadline = time.monotonic() + 10
    while True:
        try:
            event = updates.get(timeout=max(0.1, deadline - time.monotonic()))
        except Exception:
            raise AssertionError("B's worker registration was never reported")
        for reg in event.get("registrations", []):
            if reg["scopeURL"].startswith(origin) and not reg.get("isDeleted"):
                return reg["registrationId"]


# Each scenario's waits summed (seconds): its time limit (scenarios.limit_of).
WAITS = {"ring-decline": 100, "ring-no-answer": 100, "ring-cancel": 95, "ring-two-pages": 160, "ring-push": 200}

if __name__ == "__main__":
    main_with_limits(globals(), WAITS, lambda name: {}, suite="browser")
