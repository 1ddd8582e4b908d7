"""The call itself, as people use it (issue 18), in real headless Chromium with fake devices: the pre-join screen and
its choices carried into the call, switching devices mid-call and devices removed from under it, what the other
person sees of a mute or a camera turned off (and that it survives a server restart), screen sharing, and the
call-quality indicator and summary.

Run like scenarios.py, one scenario per process inside a network namespace of its own (CallExperienceTests):
    unshare -n sh -c 'ip link set lo up && exec python3 call_ux.py prejoin-choices'
It reuses scenarios.py's helpers (Server, start_call, media_flows, shot, …) and records its outcomes under the
browser suite (Tests/e2e/results.py); screenshots go to the run's results dir, never to docs/.

Pre-join and automation: cdp.py's new_page() makes every test page skip the pre-join screen (it sets
sessionStorage['duet.prejoin'] = 'skip' before the page's scripts run), so pages join at once as they always did;
`open_call(..., prejoin=True)` (new_page(prejoin=True)) shows it. By hand, `?prejoin=0` skips it for one URL.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scenarios import (  # noqa: E402
    BLACK_LUMA, REMOTE_LUMA, Server, audio_silent, collect, expect, in_call, log, mark, media_flows, open_call, run, sh,
    shot, start_call, watch)
import results  # noqa: E402

# Several fake cameras, microphones and speakers (`device-count=N`, seen on Chromium 156). Three, not two: Chromium's
# fake_device_1 delivers Y16 (depth) frames, which WebRTC cannot send ("We cannot send frame with storage type:
# format:PIXEL_FORMAT_Y16" in its log: the peer decodes nothing), while fake_device_2 (MJPEG) sends like
# fake_device_0 (I420). A camera switch that must keep video flowing goes to fake_device_2.
FAKE_DEVICES = {"without_flags": ("--use-fake-device-for-media-stream",),
                "extra_flags": ("--use-fake-device-for-media-stream=device-count=3",)}
SENDABLE_SECOND_CAMERA = "fake_device_2"

LOCAL = "JSON.stringify(duet.local)"
REMOTE = "JSON.stringify(duet.remote)"


def key(page, name):
    """Presses a key as a person would (CDP Input: keydown, char, keyup reach whatever has the focus)."""
    codes = {"Enter": ("Enter", 13, "\r"), "m": ("KeyM", 77, "m"), "v": ("KeyV", 86, "v"), "i": ("KeyI", 73, "i"), "f": ("KeyF", 70, "f"), "c": ("KeyC", 67, "c"),
             "?": ("Slash", 191, "?"), "Escape": ("Escape", 27, "")}
    code, vk, text = codes[name]
    page.send("Page.bringToFront")
    down = {"type": "keyDown", "key": name, "code": code, "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk}
    if text:
        down["text"] = text
        down["unmodifiedText"] = text
    if name == "?":
        down["modifiers"] = 8  # Shift
    page.send("Input.dispatchKeyEvent", down)
    page.send("Input.dispatchKeyEvent", {**down, "type": "keyUp", "text": "", "unmodifiedText": ""})


def choose(page, select_id, label=None):
    """Picks another option of a <select> (the one labelled `label`, else the first other one) the way a person
    would (value + change event); returns its value."""
    return page.evaluate(f"""(() => {{
        const s = document.getElementById({json.dumps(select_id)});
        const label = {json.dumps(label)};
        const other = [...s.options].find(o => o.value && o.value !== s.value && (!label || o.text === label));
        if (!other) throw new Error('no other option in #{select_id}: ' + [...s.options].map(o => o.text));
        s.value = other.value; s.dispatchEvent(new Event('change', {{bubbles: true}})); return other.value; }})()""")


def choose_other_devices(page, close=True):
    """Through the devices panel, the second microphone and the second camera that sends (not the defaults); waits
    until the page uses them and (close) closes the panel, the focus leaving the picker so shortcuts act again."""
    page.evaluate("document.getElementById('devices').click()")
    page.wait_for("!document.getElementById('devices-panel').hidden", 5, message="the devices panel opens")
    microphone = choose(page, "microphone-select")
    page.wait_for(f"duet.devices.microphone.deviceId === {json.dumps(microphone)}", 10, message="another microphone in use")
    camera = choose(page, "camera-select", SENDABLE_SECOND_CAMERA)
    page.wait_for(f"duet.devices.camera.deviceId === {json.dumps(camera)}", 10, message="another camera in use")
    if close:
        page.evaluate("document.getElementById('devices').click()")
        page.evaluate("document.activeElement.blur()")
    return page.evaluate("duet.devices")


def visible(page, element_id):
    return page.evaluate(f"(e => !!e && !e.hidden && e.getClientRects().length > 0)(document.getElementById({json.dumps(element_id)}))")


def announced(page):
    return page.evaluate("document.getElementById('announcer').textContent")


def said(page, fragment, seconds, what):
    """The live region has said `fragment` (in any message) within `seconds`: announcements queue, one a second
    (js/ui/announce-queue.js), so the region may show a later one by the time it is read; duet.announcements is
    what it has said."""
    page.wait_for(f"duet.announcements.some(t => t.includes({json.dumps(fragment)}))", seconds, poll=0.05, message=what)


# Records what the live region (#announcer) shows and when, as the DOM changes: a message replaced before anyone
# could hear it shows up as a short stay.
LISTEN_TO_REGION = """(() => {
  const region = document.getElementById('announcer');
  window.regionLog = [];
  new MutationObserver(() => regionLog.push({text: region.textContent, at: performance.now()}))
    .observe(region, {childList: true, characterData: true, subtree: true});
})()"""
HEARD_MS = 900  # what a screen reader needs at least to start a short sentence (the queue gives each 1 s)


def region_listen(page):
    page.evaluate(LISTEN_TO_REGION)


def each_heard(page, fragments, seconds, what):
    """Every fragment was shown in the live region (since region_listen), in this order, and each stayed there at
    least HEARD_MS before something else replaced it."""
    page.wait_for(f"""(want => {{ const shown = regionLog.filter(e => e.text);
        let i = 0; for (const e of shown) if (i < want.length && e.text.includes(want[i])) i++; return i === want.length; }})
        ({json.dumps(fragments)})""", seconds, poll=0.05, message=what)
    log_ = page.evaluate("regionLog")
    shown = [e for e in log_ if e["text"]]
    stays = [(e["text"], round(nxt["at"] - e["at"])) for e, nxt in zip(log_, log_[1:]) if e["text"]]
    log(what, stays, "then", shown[-1]["text"])
    for text, ms in stays:
        expect(ms >= HEARD_MS, f"{what}: {text!r} was replaced after {ms} ms, before it could be heard: {stays}")


def title_of(page, element_id):
    return page.evaluate(f"document.getElementById({json.dumps(element_id)}).title")


def media_states_from_now(page):
    """From now on, the media_state messages the page receives, over WebSocket or SSE (window.duet.mediaStatesReceived:
    the runtime notes each one as it arrives, before the engine, which reports only changes), as a function returning
    those received so far: [{audio, video, screen, from}]. DevTools cannot see them on SSE: its stream is a fetch."""
    before = page.evaluate("duet.mediaStatesReceived.count")

    def received():
        seen = page.evaluate("duet.mediaStatesReceived")
        expect(seen["count"] - before <= len(seen["last"]), f"more media_state messages than the page keeps: {seen}")
        return [m for m in seen["last"] if m["n"] > before]
    return received


def initial_remote_known(page, name):
    """The other person's state is known (non-null, all on) within a second of their joining, as this page saw it."""
    page.wait_for("duet.remoteSeen.knownAt !== null", 5, message=f"{name} learns the other person's media state")
    seen = page.evaluate("duet.remoteSeen")
    log(name, "remote state known", seen)
    expect(seen["peerJoinedAt"] is not None and seen["knownAt"] - seen["peerJoinedAt"] <= 1000,
           f"{name} knows the other person's state within 1 s of their joining: {seen}")
    expect(json.loads(page.evaluate(REMOTE)) == {"audio": True, "video": True, "screen": False}, f"{name}: {page.evaluate(REMOTE)}")


def within(page, expression, seconds, what):
    """`expression` becomes true within `seconds` (the timing is the assertion: "within a second"), timed on the
    page's own clock: a watcher in the page notes when it first holds (every 20 ms), from the moment it was put there.
    Timed through DevTools instead, a busy machine delayed the evaluate's reply past the budget while the page had
    long shown the change (CI run 20261207T142834Z-98596e): the measurement was late, not the page."""
    started = page.evaluate(
        "(() => { const w = window.__duetWithin = { at: null, since: Date.now() }; "
        f"const check = () => {{ try {{ if (w.at === null && ({expression})) w.at = Date.now(); }} catch (e) {{}} return w.at !== null; }}; "
        "if (!check()) { const t = setInterval(() => { if (check()) clearInterval(t); }, 20); } return w.since; })()")
    page.wait_for("window.__duetWithin && window.__duetWithin.at !== null", max(10, 5 * seconds), poll=0.05, message=what)
    took = round((page.evaluate("window.__duetWithin.at") - started) / 1000, 2)
    log(what, f"after {took}s (the page's clock)")
    expect(took <= seconds, f"{what}: after {took} s on the page's clock, not within {seconds} s")
    return took


# MARK: scenarios

def scenario_prejoin_choices(browser):
    """Pre-join choices carry into the call. The pre-join screen shows the camera preview, a live microphone level and
    several cameras and microphones; another camera and another microphone are picked, the camera turned off with `v`,
    and Enter joins; the other page shows the camera-off placeholder and this page sends those devices' tracks; a
    later page in the same browser starts with the same choices."""
    server = Server()
    try:
        link = server.url + "call/" + server.new_room()
        b = open_call(browser, link, "B")  # B first: A's choices are remembered per browser, B keeps the defaults
        b.wait_for("duet.screen === 'waiting'", 15, message="B waits")
        a = open_call(browser, link, "A", prejoin=True)
        a.wait_for("duet.screen === 'prejoin' && duet.prejoin", 15, message="A sees the pre-join screen")
        expect(a.evaluate("document.activeElement.id") == "join", "Join has the focus: Enter joins")
        expect(a.evaluate("duet.phase") == "idle", "nothing joined before Join")
        a.wait_for("document.getElementById('prejoin-video').videoWidth > 0", 10, message="the camera preview plays")
        a.wait_for("document.getElementById('mic-level').value > 0.05", 10, message="the microphone level moves")
        counts = a.evaluate("({cameras: document.getElementById('prejoin-camera').options.length, "
                            "microphones: document.getElementById('prejoin-microphone').options.length, "
                            "speakerShown: !document.getElementById('prejoin-speaker').hidden})")
        log("pickers", counts)
        expect(counts["cameras"] >= 2 and counts["microphones"] >= 2, f"two cameras and two microphones offered: {counts}")
        unnamed = a.evaluate("""[...document.querySelectorAll('#screen-prejoin button, #screen-prejoin input, #screen-prejoin select, #screen-prejoin video, #screen-prejoin meter')]
            .filter(e => !e.hidden && !(e.getAttribute('aria-label') || e.labels?.length || e.textContent.trim()))
            .map(e => e.id || e.tagName)""")
        expect(unnamed == [], f"every pre-join control has an accessible name: {unnamed}")
        expect(a.evaluate("document.title") == "Ready to join – Duet", f"the tab says so: {a.evaluate('document.title')}")
        shot(a, "prejoin", 1280, 800)
        shot(a, "prejoin-phone", 390, 844)
        expect(a.evaluate("document.documentElement.scrollWidth <= 390"), "nothing overflows at phone width")
        a.set_viewport(1280, 800)
        camera = choose(a, "prejoin-camera", SENDABLE_SECOND_CAMERA)
        a.wait_for(f"duet.devices.camera.deviceId === {json.dumps(camera)}", 10, message="the preview switches camera")
        microphone = choose(a, "prejoin-microphone")
        a.wait_for(f"duet.devices.microphone.deviceId === {json.dumps(microphone)}", 10, message="the microphone switches")
        chosen = a.evaluate("duet.devices")
        log("chosen", chosen)
        a.evaluate("document.getElementById('join').focus()")
        key(a, "v")
        a.wait_for("!document.getElementById('prejoin-cam').checked && "
                   "!document.getElementById('prejoin-camera-off').hidden", 5, message="v turns the camera off before joining")
        key(a, "Enter")
        in_call(a, what="A joined with Enter")
        in_call(b, what="B in call")
        expect(json.loads(a.evaluate(LOCAL)) == {"audio": True, "video": False, "screen": False}, f"A: {a.evaluate(LOCAL)}")
        expect(a.evaluate("duet.devices") == chosen, f"the call sends the chosen devices: {a.evaluate('duet.devices')} vs {chosen}")
        tracks = a.evaluate("(s => ({audio: s.getAudioTracks()[0].getSettings().deviceId, video: s.getVideoTracks()[0].getSettings().deviceId,"
                            " videoOn: s.getVideoTracks()[0].enabled, label: s.getVideoTracks()[0].label}))"
                            "(document.getElementById('local-video').srcObject)")
        expect(tracks["audio"] == microphone and tracks["video"] == camera and not tracks["videoOn"],
               f"the sent tracks are the chosen devices, camera off: {tracks}")
        expect(a.evaluate("document.getElementById('camera').getAttribute('aria-pressed')") == "true", "Stop camera is pressed")
        expect(title_of(a, "camera") == "Turn camera on (V)", f"its title says what a click does: {title_of(a, 'camera')!r}")
        expect(title_of(a, "mute") == "Mute (M)", f"the microphone is on: {title_of(a, 'mute')!r}")
        within(b, "duet.remote && duet.remote.video === false && duet.remote.audio === true && "
                  "!document.getElementById('remote-camera-off').hidden && document.getElementById('remote-muted').hidden",
               10, "B shows A's camera is off (placeholder), not muted")
        media_flows(b, what="B hears A on the chosen microphone", video=False)
        media_flows(a, what="A sees and hears B")
        # Remembered per browser: a later call link in this browser starts with the same devices, camera off.
        saved = json.loads(a.evaluate("localStorage.getItem('duet.devices')"))
        expect(saved["cameraId"] == camera and saved["microphoneId"] == microphone and saved["cameraOn"] is False
               and saved["micOn"] is True, f"choices remembered: {saved}")
        later = open_call(browser, server.url + "call/" + server.new_room(), "later", prejoin=True)
        later.wait_for("duet.screen === 'prejoin'", 15, message="a later call shows the pre-join screen")
        later.wait_for(f"duet.devices.camera && duet.devices.camera.deviceId === {json.dumps(camera)} && "
                       f"duet.devices.microphone.deviceId === {json.dumps(microphone)} && "
                       "!document.getElementById('prejoin-cam').checked", 10, message="with the remembered choices")
        later.close()
    finally:
        server.stop()


def scenario_device_switch(browser):
    """A device switch mid-call keeps media flowing both ways. A switches microphone and camera in the devices panel
    (replaceTrack, no renegotiation, no ICE restart) and its speaker; B keeps decoding A's video frames and audio. Then
    A's microphone is unplugged (its track ends): A falls back to the default microphone, says so, and B still hears A.
    A mutes and UDP is dropped until A restarts ICE: afterwards A has the same devices and is still muted, B still
    shows it, and unmuting is heard."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        media_flows(b, what="B receives A")
        before = a.evaluate("duet.devices")
        key(a, "?")
        a.wait_for("document.getElementById('help-dialog').open", 5, message="? opens the shortcuts")
        expect("Mute or unmute the microphone" in a.evaluate("document.getElementById('help-keys').innerText"), "help lists m")
        # Every control on screen has a name and a shortcut, and the help lists that shortcut (Leave and End excepted:
        # one key should not end a call).
        controls = a.evaluate("""[...document.querySelectorAll('.controls button')].filter(b => !b.hidden && b.getClientRects().length)
            .map(b => ({id: b.id, name: (b.getAttribute('aria-label') || b.textContent).trim(), key: b.getAttribute('aria-keyshortcuts')}))""")
        listed = a.evaluate("[...document.querySelectorAll('#help-keys kbd')].map(k => k.textContent)")
        log("controls", controls, "help", listed)
        expect(any(c["id"] == "switch-camera" for c in controls), f"Switch camera is offered (three cameras): {controls}")
        for c in controls:
            expect(c["name"], f"{c['id']} has an accessible name")
            if c["id"] in ("leave", "end"):
                continue
            expect(c["key"], f"{c['id']} has a shortcut: {c}")
            expect(c["key"].replace("Shift+", "").upper() in listed, f"the help lists {c['id']}'s key {c['key']}: {listed}")
        expect("Switch to the next camera" in a.evaluate("document.getElementById('help-keys').innerText"), "help lists c")
        shot(a, "shortcuts", 1280, 800)
        key(a, "Escape")
        a.wait_for("!document.getElementById('help-dialog').open", 5, message="Escape closes them")
        if a.evaluate("document.fullscreenEnabled"):
            key(a, "f")
            a.wait_for("document.fullscreenElement === document.querySelector('.call') && "
                       "document.getElementById('fullscreen').getAttribute('aria-pressed') === 'true' && "
                       "document.getElementById('fullscreen').title === 'Exit full screen (F)'", 5, message="f: full screen")
            key(a, "f")
            a.wait_for("document.fullscreenElement === null && document.getElementById('fullscreen').title === 'Full screen (F)'",
                       5, message="f again: back")
        a.evaluate("document.getElementById('devices').click()")
        a.wait_for("!document.getElementById('devices-panel').hidden", 5, message="the devices panel opens")
        shot(a, "devices-phone", 390, 844)
        a.set_viewport(1280, 800)
        microphone = choose(a, "microphone-select")
        a.wait_for(f"duet.devices.microphone.deviceId === {json.dumps(microphone)}", 10, message="A's microphone switched")
        since = mark(b)
        log("B after the microphone switch", media_flows(b, since=since, what="B hears A's other microphone")["window"])
        # c switches to the next camera (fake_device_1, which sends nothing: the picker then takes one that does).
        # Shortcuts do not act while a field (the picker) has the focus: it goes to the stage and back.
        camera_before = a.evaluate("duet.devices.camera.deviceId")
        a.evaluate("document.activeElement.blur()")
        key(a, "c")
        a.wait_for(f"duet.devices.camera.deviceId !== {json.dumps(camera_before)}", 10, message="c switches the camera")
        a.evaluate("document.getElementById('camera-select').focus()")
        camera = choose(a, "camera-select", SENDABLE_SECOND_CAMERA)
        a.wait_for(f"duet.devices.camera.deviceId === {json.dumps(camera)}", 10, message="A's camera switched")
        since = mark(b)
        log("B after the camera switch", media_flows(b, since=since, what="B decodes A's other camera and audio")["window"])
        media_flows(a, what="A still receives B")
        if a.evaluate("!document.getElementById('speaker-select').hidden"):
            speaker = choose(a, "speaker-select")
            a.wait_for(f"document.getElementById('remote-video').sinkId === {json.dumps(speaker)}", 5, message="speaker switched")
        expect(a.evaluate("duet.iceRestarts") == [] and a.evaluate("duet.reconnects") == ["fresh"],
               f"no ICE restart, no rejoin: {a.evaluate('duet.iceRestarts')} {a.evaluate('duet.reconnects')}")
        expect(a.evaluate("duet.devices") != before, "the devices changed")
        # The microphone in use goes away (unplugged: its track ends).
        a.evaluate("(t => { t.stop(); t.dispatchEvent(new Event('ended')); })"
                   "(document.getElementById('local-video').srcObject.getAudioTracks()[0])")
        a.wait_for("document.getElementById('announcer').textContent.includes('was disconnected')", 10,
                   message="A is told the microphone went away")
        log("A announced", announced(a))
        a.wait_for("document.getElementById('local-video').srcObject.getAudioTracks()[0].readyState === 'live'", 5,
                   message="A has a live microphone again")
        media_flows(b, what="B hears A on the default microphone")
        expect(json.loads(a.evaluate(LOCAL))["audio"] is True, "still unmuted")
        # Escape closes the devices panel, the focus going back to its button, so shortcuts work again.
        key(a, "Escape")
        a.wait_for("document.getElementById('devices-panel').hidden && document.activeElement.id === 'devices'", 5,
                   message="Escape closes the devices panel")
        # An ICE restart keeps the devices and the mute: UDP is dropped until a side restarts ICE.
        devices = a.evaluate("duet.devices")
        key(a, "m")
        within(b, "duet.remote && duet.remote.audio === false", 1.0, "B shows A muted")
        add_loss(1.0)
        try:
            for page in (a, b):
                page.wait_for("duet.connectionStatus !== 'connected'", 30, message="media is gone")
            a.wait_for("duet.iceRestarts.length > 0", 40, message="A (the host) restarts ICE")
        finally:
            remove_loss()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 40, what=f"{name} back after the ICE restart")
        log("ICE restarts", a.evaluate("duet.iceRestarts"), b.evaluate("duet.iceRestarts"))
        expect(a.evaluate("duet.devices") == devices, f"same devices after the ICE restart: {a.evaluate('duet.devices')} vs {devices}")
        expect(json.loads(a.evaluate(LOCAL)) == {"audio": False, "video": True, "screen": False}, f"still muted: {a.evaluate(LOCAL)}")
        expect(b.evaluate("duet.remote.audio") is False and visible(b, "remote-muted"), "B still shows A muted")
        audio_silent(b, what="B hears silence from A, still muted")
        key(a, "m")
        media_flows(b, what="B hears A again after unmuting")
    finally:
        remove_loss()
        server.stop()


# Headless Chromium's fake devices cannot be unplugged. A removal as the page sees it: enumerateDevices stops
# listing the device, and navigator.mediaDevices fires devicechange (a real unplug may also end the track; the
# device-switch scenario covers that path).
UNPLUG = """((ids) => {
  const gone = new Set(ids);
  const list = MediaDevices.prototype.enumerateDevices;
  navigator.mediaDevices.enumerateDevices = function () { return list.call(this).then(all => all.filter(d => !gone.has(d.deviceId))); };
  navigator.mediaDevices.dispatchEvent(new Event('devicechange'));
})"""


def scenario_device_removed(browser):
    """A microphone and a camera removed mid-call fall back to the defaults. A uses a second microphone and camera;
    both vanish from the device list and devicechange fires (as on an unplugged webcam): A switches to the default
    microphone and camera, shows and says what happened (each message heard, one after the other), the pickers no
    longer offer them, and media flows both ways — video frames and decoded audio — afterwards."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        chosen = choose_other_devices(a, close=False)  # the panel stays open: its pickers are checked below
        microphone, camera = chosen["microphone"]["deviceId"], chosen["camera"]["deviceId"]
        media_flows(b, what="B receives A's chosen devices")
        log("A uses", chosen)
        heard = len(a.evaluate("duet.announcements"))
        region_listen(a)
        a.evaluate(f"{UNPLUG}({json.dumps([microphone, camera])})")
        a.wait_for(f"(d => d.microphone.deviceId !== {json.dumps(microphone)} && d.camera.deviceId !== {json.dumps(camera)})(duet.devices)",
                   10, message="A falls back from both removed devices")
        now = a.evaluate("duet.devices")
        log("A now uses", now)
        expect(now["camera"]["label"] == "fake_device_0", f"the default camera: {now}")
        tracks = a.evaluate("(s => s.getTracks().map(t => ({kind: t.kind, id: t.getSettings().deviceId, live: t.readyState === 'live'})))"
                            "(document.getElementById('local-video').srcObject)")
        expect(len(tracks) == 2 and all(t["live"] for t in tracks) and {t["id"] for t in tracks}.isdisjoint({microphone, camera}),
               f"A sends two live tracks, neither from a removed device: {tracks}")
        expect(a.evaluate("(s => JSON.stringify(duet.sending) === JSON.stringify({audio: s.getAudioTracks()[0].id, video: s.getVideoTracks()[0].id}))"
                          "(document.getElementById('local-video').srcObject)"), f"and those are on the senders: {a.evaluate('JSON.stringify(duet.sending)')}")
        # Shown to everyone, said to screen readers: both messages, neither replacing the other.
        a.wait_for("(n => !n.hidden && n.getClientRects().length > 0 && (n.textContent.match(/was disconnected/g) || []).length === 2)"
                   "(document.getElementById('device-notice'))", 5, message="A shows what happened to both devices")
        log("A shows", a.evaluate("document.getElementById('device-notice').textContent"))
        a.wait_for(f"duet.announcements.slice({heard}).filter(t => t.includes('was disconnected. Now using')).length === 2", 5,
                   poll=0.05, message="A says both, one after the other")
        log("A said", a.evaluate(f"duet.announcements.slice({heard})"))
        each_heard(a, [f"{chosen['microphone']['label']} was disconnected", f"{chosen['camera']['label']} was disconnected"], 5,
                   "A's live region says the microphone, then the camera, each long enough to be heard")
        options = a.evaluate("[...document.querySelectorAll('#camera-select option, #microphone-select option')].map(o => o.value)")
        expect(microphone not in options and camera not in options, f"the pickers no longer offer the removed devices: {options}")
        expect(a.evaluate("document.getElementById('camera-select').value") == now["camera"]["deviceId"],
               "the camera picker shows the camera in use")
        shot(a, "device-removed", 1280, 800)
        since = mark(b)
        log("B after the fallback", media_flows(b, since=since, what="B decodes A's default camera and hears A's default microphone")["window"])
        since = mark(a)
        log("A after the fallback", media_flows(a, since=since, what="A still decodes B's video and audio")["window"])
        expect(json.loads(a.evaluate(LOCAL)) == {"audio": True, "video": True, "screen": False}, f"A still on: {a.evaluate(LOCAL)}")
        expect(a.evaluate("duet.iceRestarts") == [] and a.evaluate("duet.reconnects") == ["fresh"],
               f"no ICE restart, no rejoin: {a.evaluate('duet.iceRestarts')} {a.evaluate('duet.reconnects')}")
    finally:
        server.stop()


def scenario_remote_state(browser):
    """Remote mute and camera-off are shown on the other page within a second, and restored after a server restart.
    A presses m, then v: B shows "Muted" and the camera-off placeholder within a second each (media_state), and says
    so; the server is killed; while it is down A unmutes; after the restart both recover their seats, B shows A
    unmuted (A re-announced) with the camera still off, and hears A. A mutes again and reloads (a reattach to its
    seat): it comes back muted with the camera off and the same devices, and B shows that again. A first picks a
    microphone and a camera that are not the defaults, so "the same devices" can tell kept choices from defaults."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        said(a, "The other person joined the call.", 5, "A was told B joined")
        for name, page in (("A", a), ("B", b)):
            initial_remote_known(page, name)
        chosen = choose_other_devices(a)
        media_flows(b, what="B receives A")
        region_listen(b)
        key(a, "m")
        expect(a.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "true", "m mutes A")
        expect(title_of(a, "mute") == "Unmute (M)", f"Mute's title says a click unmutes: {title_of(a, 'mute')!r}")
        took = within(b, "duet.remote && duet.remote.audio === false && !document.getElementById('remote-muted').hidden", 1.0,
                      "B shows A muted")
        key(a, "v")
        took_video = within(b, "duet.remote && duet.remote.video === false && !document.getElementById('remote-camera-off').hidden",
                            1.0, "B shows A's camera off")
        each_heard(b, ["The other person muted their microphone.", "The other person turned their camera off."], 3,
                   "B is told A muted, then that A's camera is off, each long enough to be heard")
        audio_silent(b, what="B hears silence from muted A")
        results.detail(muteShownS=took, cameraOffShownS=took_video)
        title = a.evaluate("document.title")
        expect(title.startswith("In call ") and "(muted)" in title, f"A's tab says it is in a call, muted: {title!r}")
        log("titles", title, "|", b.evaluate("document.title"), "| wake lock", a.evaluate("duet.wakeLock"))
        shot(b, "in-call-remote-muted", 1280, 800)
        shot(b, "in-call-remote-muted-phone", 390, 844)
        expect(b.evaluate("document.documentElement.scrollWidth <= 390"), "nothing overflows at phone width")
        b.set_viewport(1280, 800)
        seen_before = b.evaluate("duet.remoteSeen.count")
        server.kill()
        a.wait_for("duet.connectionStatus !== 'connected'", 35, message="A notices the server is gone")
        a.wait_for("duet.badge.kind !== 'connected'", 5, message="A's badge leaves connected")
        a.wait_for("document.title.startsWith('Reconnecting') || document.title.startsWith('Taking longer')", 5,
                   message="A's tab says it is reconnecting")
        key(a, "m")  # unmuted while nobody can be told
        expect(json.loads(a.evaluate(LOCAL)) == {"audio": True, "video": False, "screen": False}, f"A: {a.evaluate(LOCAL)}")
        server.start()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 40, what=f"{name} back after the restart")
            expect("recovered" in page.evaluate("duet.reconnects"), f"{name} recovered: {page.evaluate('duet.reconnects')}")
        within(b, "duet.remote && duet.remote.audio === true && duet.remote.video === false && "
                  "document.getElementById('remote-muted').hidden && !document.getElementById('remote-camera-off').hidden",
               5, "B sees A unmuted, camera still off, after the restart")
        # Told anew after the restart (A re-announced), not a state B had kept from before the fault.
        expect(b.evaluate("duet.remoteSeen.count") > seen_before, f"B learned A's state after the restart: {b.evaluate('duet.remoteSeen')}")
        expect(a.evaluate("document.getElementById('local-video').srcObject.getVideoTracks()[0].enabled") is False,
               "A's camera is still off")
        media_flows(b, what="B hears A after the restart", video=False)
        expect(a.evaluate("duet.devices") == chosen, f"A's chosen devices after the restart: {a.evaluate('duet.devices')} vs {chosen}")
        # A reload reattaches A to its seat: mute and camera off stay as they were, and B is told so again.
        key(a, "m")
        within(b, "duet.remote.audio === false", 1.0, "B shows A muted again")
        devices = a.evaluate("duet.devices")
        a_cid = a.evaluate("duet.cid")
        # B's engine reports only changes (remoteMedia), and A comes back with the state B already shows: what proves
        # that the reloaded A told it is the media_state message itself reaching B after the reload (over either
        # transport: B may have come back from the restart on SSE).
        log("transports before the reload: A", a.evaluate("duet.transport"), "B", b.evaluate("duet.transport"))
        media_states = media_states_from_now(b)
        a.reload()
        a.wait_for("window.duet && duet.page === 'call'", 10, message="A reloads")
        in_call(a, 20, what="A back in its seat after the reload")
        expect(a.evaluate("duet.reconnects") == ["reattached"], f"A reattached: {a.evaluate('duet.reconnects')}")
        expect(json.loads(a.evaluate(LOCAL)) == {"audio": False, "video": False, "screen": False}, f"A after reload: {a.evaluate(LOCAL)}")
        expect(a.evaluate("duet.devices") == devices == chosen,
               f"the chosen devices after the reload: {a.evaluate('duet.devices')} vs {chosen}")
        expect(a.evaluate("document.getElementById('mute').getAttribute('aria-pressed')") == "true", "Mute still pressed")
        within(b, "duet.remote && duet.remote.audio === false && duet.remote.video === false && "
                  "!document.getElementById('remote-muted').hidden && !document.getElementById('remote-camera-off').hidden",
               5, "B shows A muted with the camera off after A's reattach")
        deadline = time.monotonic() + 5
        told = [m for m in media_states() if m and m.get("from") == a_cid]
        while not told and time.monotonic() < deadline:
            time.sleep(0.05)
            told = [m for m in media_states() if m and m.get("from") == a_cid]
        expect(told and {k: told[-1][k] for k in ("audio", "video", "screen")} == {"audio": False, "video": False, "screen": False},
               f"the reattached A told B its state again (media_state from {a_cid} after the reload): {media_states()}")
        audio_silent(b, what="B hears silence from A after the reload")
        key(a, "m")
        key(a, "v")
        within(b, "duet.remote.audio === true && duet.remote.video === true && document.getElementById('remote-camera-off').hidden",
               1.0, "B sees A's camera on and unmuted")
        b.wait_for(f"{REMOTE_LUMA} > {BLACK_LUMA}", 10, message="and A's picture")
        media_flows(b, what="B sees and hears A")
    finally:
        server.stop()


def scenario_screen_share(browser):
    """Screen share is seen by the peer. A shares its screen (getDisplayMedia onto the video sender): B's remote video
    changes to the screen's size and duet.remote.screen is true; the share survives a server restart; stopping it
    from the browser's own control (the track ends) puts A's camera back and B sees the camera again."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        media_flows(b, what="B receives A")
        camera_size = b.evaluate("[document.getElementById('remote-video').videoWidth, document.getElementById('remote-video').videoHeight]")
        expect(a.evaluate("!document.getElementById('share-screen').hidden"), "Share screen is offered")
        a.evaluate("document.getElementById('share-screen').click()")
        a.wait_for("duet.local.screen === true", 10, message="A shares its screen")
        # The screen is what goes to B (the fake screen shows the fake camera's pattern, so B's picture cannot tell).
        expect(a.evaluate("duet.sending.video === document.getElementById('local-video').srcObject.getVideoTracks()[0].id && "
                          "!!document.getElementById('local-video').srcObject.getVideoTracks()[0].getSettings().displaySurface"),
               f"A sends its screen's track: {a.evaluate('JSON.stringify(duet.sending)')}")
        screen = a.evaluate("document.getElementById('local-video').srcObject.getVideoTracks()[0].getSettings()")
        log("A shares", screen, "camera was", camera_size)
        within(b, "duet.remote && duet.remote.screen === true && !document.getElementById('remote-sharing').hidden", 2, "B is told A shares")
        b.wait_for(f"(v => v.videoWidth > 0 && (v.videoWidth !== {camera_size[0]} || v.videoHeight !== {camera_size[1]}))"
                   "(document.getElementById('remote-video'))", 15, message="B's picture of A becomes the screen (its size)")
        media_flows(b, what="B decodes A's screen and hears A")
        shared_size = b.evaluate("[document.getElementById('remote-video').videoWidth, document.getElementById('remote-video').videoHeight]")
        log("B sees A's screen at", shared_size)
        share_button = a.evaluate("(b => ({name: b.textContent.trim(), title: b.title, active: b.dataset.active, "
                                  "pressed: b.getAttribute('aria-pressed')}))(document.getElementById('share-screen'))")
        expect(share_button == {"name": "Stop sharing", "title": "Stop sharing (S)", "active": "true", "pressed": None},
               f"the button now stops sharing, and says so: {share_button}")
        shot(b, "screen-share", 1280, 800)
        server.kill()
        a.wait_for("duet.connectionStatus !== 'connected'", 35, message="A notices the server is gone")
        server.start()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 40, what=f"{name} back after the restart")
        for name, page in (("A", a), ("B", b)):
            expect("recovered" in page.evaluate("duet.reconnects"), f"{name} recovered: {page.evaluate('duet.reconnects')}")
        within(b, "duet.remote && duet.remote.screen === true", 5, "B still sees A sharing after the restart")
        expect(a.evaluate("duet.local.screen") is True, "A still shares")
        # The browser's own "Stop sharing": the screen track ends.
        a.evaluate("(t => { t.stop(); t.dispatchEvent(new Event('ended')); })"
                   "(document.getElementById('local-video').srcObject.getVideoTracks()[0])")
        a.wait_for("duet.local.screen === false && document.getElementById('local-video').srcObject.getVideoTracks()[0].label === 'fake_device_0' && "
                   "duet.sending.video === document.getElementById('local-video').srcObject.getVideoTracks()[0].id",
                   5, message="A's camera is back, and is what A sends")
        within(b, "duet.remote.screen === false && document.getElementById('remote-sharing').hidden", 2, "B is told the share stopped")
        # The encoder may scale the camera (its size at the start was what the bandwidth estimate allowed then): the
        # camera is back when B's picture is no longer the screen's size and has the camera's 16:9 shape.
        b.wait_for(f"(v => v.videoWidth > 0 && (v.videoWidth !== {shared_size[0]} || v.videoHeight !== {shared_size[1]}) && "
                   "Math.abs(v.videoWidth / v.videoHeight - 16 / 9) < 0.02)(document.getElementById('remote-video'))",
                   15, message="B sees A's camera again")
        log("B sees A's camera again at", b.evaluate("[document.getElementById('remote-video').videoWidth, document.getElementById('remote-video').videoHeight]"))
        media_flows(b, what="B decodes A's camera again")
    finally:
        server.stop()


LOSS_CHAIN = "DUETLOSS"


def add_loss(probability):
    """Drops this share of UDP packets (media; all of it with 1.0) inside the namespace (iptables statistic)."""
    sh(f"iptables -N {LOSS_CHAIN} 2>/dev/null || iptables -F {LOSS_CHAIN}")
    if probability >= 1:
        sh(f"iptables -A {LOSS_CHAIN} -p udp -j DROP")
    else:
        sh(f"iptables -A {LOSS_CHAIN} -p udp -m statistic --mode random --probability {probability} -j DROP")
    sh(f"iptables -C INPUT -j {LOSS_CHAIN} 2>/dev/null || iptables -I INPUT -j {LOSS_CHAIN}")


def remove_loss():
    sh(f"iptables -D INPUT -j {LOSS_CHAIN} 2>/dev/null; iptables -F {LOSS_CHAIN} 2>/dev/null; true")


def scenario_quality(browser):
    """The quality indicator degrades when packets are lost and recovers. With no loss both pages read good; with 40 %
    of UDP dropped (iptables statistic) they fall to fair or poor, and a drop to poor is said; the details panel shows
    the numbers; without loss they read good again. Then all UDP is dropped until the call reconnects (an ICE
    restart); A leaves and its end-of-call summary shows the reconnect and about the time without media the test made."""
    server = Server()
    try:
        a, b, _ = start_call(browser, server)
        expect(a.evaluate("duet.wakeLock") in ("held", "unsupported"), f"the screen is kept on in a call: {a.evaluate('duet.wakeLock')}")
        for name, page in (("A", a), ("B", b)):
            page.wait_for("duet.quality.level === 'good'", 15, message=f"{name} reads good quality")
        log("good", a.evaluate("duet.quality"))
        add_loss(0.4)
        try:
            for name, page in (("A", a), ("B", b)):
                page.wait_for("['fair', 'poor'].includes(duet.quality.level)", 20, message=f"{name}: quality drops with loss")
            log("with loss", a.evaluate("duet.quality"), b.evaluate("duet.quality"))
            expect(a.evaluate("duet.quality.lossPct") > 5, f"A measures the loss: {a.evaluate('duet.quality')}")
            if a.evaluate("duet.quality.level") == "poor":
                said(a, "poor", 3, "a drop to poor is said")
            key(a, "i")
            a.wait_for("!document.getElementById('quality-panel').hidden", 5, message="i opens the quality details")
            details = a.evaluate("document.getElementById('quality-panel').innerText")
            for word in ("Round trip", "Jitter", "Packet loss", "Receiving", "Sending", "Codec", "Connection"):
                expect(word in details, f"details name {word}: {details!r}")
            a.wait_for("!document.getElementById('q-loss').textContent.startsWith('—')", 5, message="loss shown")
            shot(a, "quality-details", 1280, 800)
            shot(a, "quality-details-phone", 390, 844)
            a.set_viewport(1280, 800)
        finally:
            remove_loss()
        for name, page in (("A", a), ("B", b)):
            page.wait_for("duet.quality.level === 'good'", 30, message=f"{name}: quality recovers without loss")
        key(a, "Escape")
        # An outage: every UDP packet dropped until A's call reconnects.
        # The times taken inside the outage (after the rule is in, before it goes): iptables takes a while under load,
        # and a time taken around the commands counted their run as outage (CI run 20261207T104614Z: 0.1 s short).
        add_loss(1.0)
        blocked = time.monotonic()
        try:
            a.wait_for("duet.connectionStatus !== 'connected'", 30, message="A notices media is gone")
            time.sleep(1.0)  # part of the outage the summary must count (not an assertion)
        finally:
            lifted = time.monotonic()
            remove_loss()
        for name, page in (("A", a), ("B", b)):
            in_call(page, 40, what=f"{name} back after the outage")
            media_flows(page, what=f"{name}: media again")
        back = time.monotonic()
        log("outage", round(lifted - blocked, 1), "s blocked; back after", round(back - blocked, 1), "s;",
            a.evaluate("duet.iceRestarts"))
        a.evaluate("document.getElementById('leave').click()")
        a.wait_for("duet.screen === 'ended' && !document.getElementById('call-summary').hidden", 10, message="A's summary")
        b.wait_for("document.getElementById('announcer').textContent === 'The other person left the call.'", 10,
                   message="B is told A left")
        expect(a.evaluate("duet.wakeLock") in ("released", "unsupported"), f"and let go after: {a.evaluate('duet.wakeLock')}")
        expect(a.evaluate("document.title") == "Call ended – Duet", f"the tab says the call ended: {a.evaluate('document.title')}")
        summary = a.evaluate("duet.summary")
        text = a.evaluate("document.getElementById('call-summary').innerText")
        log("summary", summary, text)
        # Every drop from connected in the call is one reconnect (media flowed from the start): the outage's, and any
        # the loss caused before it.
        previous, drops = "connected", 0
        for entry in a.evaluate("duet.statusLog"):
            drops += previous == "connected" and entry["status"] != "connected" and entry["phase"] == "inCall"
            previous = entry["status"]
        expect(drops >= 1 and summary["reconnects"] == drops, f"the reconnects counted are the drops ({drops}): {summary}")
        # A poll interval with any packet in it counts as with media: the one the outage began in and the one media came
        # back in, up to a poll each (1 s, a little more when timers run late), are not counted.
        expect(lifted - blocked - 2.5 <= summary["withoutMediaS"] <= back - blocked + 3,
               f"time without media about the outage ({lifted - blocked:.1f}–{back - blocked:.1f} s): {summary}")
        expect(summary["averageMos"] is not None, f"an average MOS: {summary}")
        results.detail(summary=summary, outageS=round(lifted - blocked, 1))
        shot(a, "call-summary", 1280, 800)
        shot(a, "call-summary-phone", 390, 844)
        expect(a.evaluate("document.documentElement.scrollWidth <= 390"), "nothing overflows at phone width")
    finally:
        remove_loss()
        server.stop()


def peek(page, expression):
    """Evaluates without a user gesture (page.evaluate passes one, which would let the page play sound)."""
    r = page.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "userGesture": False})
    return r.get("result", {}).get("value")


# Chromium lets a page that captures the camera and microphone play sound without a click, whatever
# --autoplay-policy says (seen on 156: play() was never refused, even with document-user-activation-required).
# Browsers that do refuse (Safari, Firefox by default, Chrome for a page that captures nothing) reject play() with
# NotAllowedError; this stand-in does the same for sound until the page has a user activation.
REFUSE_AUTOPLAY = """(() => { const play = HTMLMediaElement.prototype.play;
  HTMLMediaElement.prototype.play = function () {
    if (!this.muted && !navigator.userActivation.isActive) {
      this.pause();
      return Promise.reject(new DOMException("play() failed because the user didn't interact with the document first.", 'NotAllowedError'));
    }
    return play.call(this);
  }; })()"""


def scenario_sound_blocked(browser):
    """A browser that refuses to play sound says so: "Click to turn on sound", never silence. B's browser refuses
    play() with sound until someone clicks (NotAllowedError, as Safari and Firefox do): the picture plays muted, the
    button shows and the refusal is said; one click turns the sound on."""
    server = Server()
    try:
        link = server.url + "call/" + server.new_room()
        a = open_call(browser, link, "A")
        a.wait_for("duet.screen === 'waiting'", 15, message="A waits")
        b = watch(browser.new_page(), "B")  # never evaluated with a user gesture until the button is clicked
        b.send("Page.addScriptToEvaluateOnNewDocument", {"source": REFUSE_AUTOPLAY})
        b.navigate(link)
        deadline = time.monotonic() + 20
        blocked = "document.body.dataset.soundBlocked === 'true' && duet.phase === 'inCall'"
        while not peek(b, blocked):
            expect(time.monotonic() < deadline, f"B's sound is refused and said so: {peek(b, 'JSON.stringify(document.body.dataset)')}")
            time.sleep(0.1)
        seen = peek(b, """(v => ({muted: v.muted, paused: v.paused, width: v.videoWidth,
            button: !document.getElementById('sound-on').hidden, name: document.getElementById('sound-on').textContent.trim(),
            said: document.getElementById('announcer').textContent}))(document.getElementById('remote-video'))""")
        log("B with sound refused", seen)
        expect(seen["muted"] and seen["button"] and seen["name"] == "Click to turn on sound", f"the button is offered: {seen}")
        # Said in its turn (announcements queue behind "The other person joined the call.").
        while not peek(b, "duet.announcements.some(t => t.includes('blocked the sound'))"):
            expect(time.monotonic() < deadline + 3, f"the refusal is said: {peek(b, 'JSON.stringify(duet.announcements)')}")
            time.sleep(0.05)
        b.wait_for("(v => !v.paused && v.videoWidth > 0)(document.getElementById('remote-video'))", 10,
                   message="B's picture plays, muted, meanwhile")
        shot(b, "sound-blocked", 1280, 800)
        b.evaluate("document.getElementById('sound-on').click()")
        b.wait_for("(v => !v.muted && !v.paused)(document.getElementById('remote-video')) && "
                   "document.getElementById('sound-on').hidden && document.body.dataset.soundBlocked === 'false'", 5,
                   message="one click turns the sound on")
        media_flows(b, what="B plays A's sound and picture")
    finally:
        server.stop()


def browser_options(name):
    return FAKE_DEVICES


# MARK: time budget
# Each scenario's limit is the sum of its waits' deadlines (the worst case of a run that passes: every condition met
# just before its deadline; a failing run stops at the first deadline it misses, sooner), plus Chromium's start
# (Browser.launch: 30 s), plus a fifth for margin, rounded up to 10 s. So a slow run always ends with the failing
# wait's own diagnosis, never with the limit. Only deadlines are counted: the evaluate() replies of a live page take
# milliseconds. start_call = 105 s: home page 10 (navigate) + 10 (loaded) + 10 (call page) + 15 (waiting), B's page
# 10 + 10, both in call 20 + 20. open_call = 20 (navigate 10, loaded 10). shot() = 10 (its screenshot's deadline).
# media_flows 20, audio_silent 10, in_call 20 unless given. CallExperienceTests.swift asks for this limit
# (`--limit NAME`, scenarios.main_with_limits) and adds 30 s (server stop 5, Chromium close 3 + 5, the reader 2,
# python's start).
WAITS_S = {
    # B open 20 + waits 15, A open 20 + pre-join 15, preview 10, mic level 10, 2 shots 20, camera 10, microphone 10,
    # v 5, in_call 20 + 20, B's placeholder 10, media_flows 20 + 20, later page open 20 + 15 + 10
    "prejoin-choices": 20 + 15 + 20 + 15 + 10 + 10 + 20 + 10 + 10 + 5 + 20 + 20 + 10 + 20 + 20 + 20 + 15 + 10,  # 270
    # start_call 105, media_flows 20, help 5 + shot 10 + Escape 5, full screen 5 + 5, panel 5 + shot 10, microphone
    # 10 + media_flows 20, c 10, camera 10 + media_flows 20 + 20, speaker 5, unplugged mic 10 + live 5 +
    # media_flows 20, Escape 5, muted 1, media gone 30 + 30, ICE restart 40, in_call 40 + 40, audio_silent 10,
    # media_flows 20
    "device-switch": 105 + 20 + 5 + 10 + 5 + 5 + 5 + 5 + 10 + 10 + 20 + 10 + 10 + 20 + 20 + 5 + 10 + 5 + 20 + 5 + 1
                     + 30 + 30 + 40 + 40 + 40 + 10 + 20,  # 516
    # start_call 105, panel 5, microphone 10, camera 10, media_flows 20, fallback 10, notice 5, said 5, heard 5,
    # shot 10, media_flows 20 + 20
    "device-removed": 105 + 5 + 10 + 10 + 20 + 10 + 5 + 5 + 5 + 10 + 20 + 20,  # 225
    # start_call 105, joined said 5, initial state 5 + 5, panel 5, microphone 10, camera 10, media_flows 20, muted 1 + camera off 1, heard 3,
    # audio_silent 10, 2 shots 20, server gone 35 + badge 5 + title 5, in_call 40 + 40, unmuted 5, media_flows 20,
    # muted 1, reload 10 + page 10 + in_call 20, shown 5, media_state seen 5, audio_silent 10, camera on 1,
    # picture 10, media_flows 20
    "remote-state": 105 + 5 + 5 + 5 + 5 + 10 + 10 + 20 + 1 + 1 + 3 + 10 + 20 + 35 + 5 + 5 + 40 + 40 + 5 + 20 + 1
                    + 10 + 10 + 20 + 5 + 5 + 10 + 1 + 10 + 20,  # 447
    # start_call 105, media_flows 20, sharing 10, told 2, screen size 15, media_flows 20, shot 10, server gone 35,
    # in_call 40 + 40, still sharing 5, camera back 5, told 2, camera size 15, media_flows 20
    "screen-share": 105 + 20 + 10 + 2 + 15 + 20 + 10 + 35 + 40 + 40 + 5 + 5 + 2 + 15 + 20,  # 344
    # start_call 105, good 15 + 15, drops 20 + 20, poor said 3, panel 5, loss shown 5, 2 shots 20, recovers 30 + 30,
    # gone 30 + the outage's 1 s, in_call 40 + media_flows 20 twice, summary 10, B told 10, 2 shots 20
    "quality": 105 + 15 + 15 + 20 + 20 + 3 + 5 + 5 + 20 + 30 + 30 + 30 + 1 + 40 + 20 + 40 + 20 + 10 + 10 + 20,  # 459
    # A open 20 + waits 15, B navigate 10, refused 20 (+ said: 3 past the same deadline), plays 10, shot 10,
    # click 5, media_flows 20
    "sound-blocked": 20 + 15 + 10 + 20 + 3 + 10 + 10 + 5 + 20,  # 113
}


if __name__ == "__main__":
    import scenarios
    scenarios.main_with_limits(globals(), WAITS_S, browser_options)
