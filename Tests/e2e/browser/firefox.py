"""Every browser (issue 32): Firefox ESR in the calls Duet promises, driven through WebDriver BiDi (bidi.py) beside
Chromium (cdp.py), in a network namespace of its own (FirefoxBrowserTests runs each scenario under `unshare -n`):
    unshare -n sh -c 'ip link set lo up && exec python3 firefox.py firefox-chromium'
First step of the browser matrix: the call connects with video and decoded audio both ways in every pairing and join
order. (The faults of the chaos suite across browsers are the next step: docs/resilience.md says what is covered.)
"""
import contextlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bidi import Firefox  # noqa: E402
from scenarios import Server, expect, in_call, main_with_limits, media_flows, watch  # noqa: E402


def call_between(first, second, server):
    """`first` joins (and so hosts), then `second`; both end up in the call with media both ways."""
    link = server.url + "call/" + server.new_room()
    a = watch(first(link), "A")
    a.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting'", 20, message="A waits")
    b = watch(second(link), "B")
    for page, who in ((a, "A"), (b, "B")):
        in_call(page, timeout=30, what=f"{who} in call")
    for page, who in ((a, "A"), (b, "B")):
        media_flows(page, timeout=20, what=f"{who} receives video and decoded audio")
    expect(a.evaluate("duet.hostCid === duet.cid") is True, "the first to join hosts (makes the offer)")
    return a, b


def firefox_page(firefox):
    return lambda link: firefox.new_page(link, timeout=20)


def chromium_page(chromium):
    return lambda link: chromium.new_page(link)


def with_firefoxes(count, body):
    """`body(server, *firefoxes)` with a server and `count` Firefoxes (profiles of their own), all stopped after."""
    server = Server()
    try:
        with contextlib.ExitStack() as stack:
            body(server, *(stack.enter_context(Firefox.launch()) for _ in range(count)))
    finally:
        server.stop()


def scenario_firefox_chromium(chromium):
    """Firefox joins first and hosts, Chromium joins: in call, video and decoded audio both ways."""
    with_firefoxes(1, lambda server, firefox: call_between(firefox_page(firefox), chromium_page(chromium), server))


def scenario_chromium_firefox(chromium):
    """Chromium joins first and hosts, Firefox joins: in call, video and decoded audio both ways."""
    with_firefoxes(1, lambda server, firefox: call_between(chromium_page(chromium), firefox_page(firefox), server))


def scenario_firefox_firefox(_):
    """Two Firefoxes (profiles of their own): in call, video and decoded audio both ways."""
    with_firefoxes(2, lambda server, one, two: call_between(firefox_page(one), firefox_page(two), server))


# Each scenario's waits summed (seconds), with Firefox's start: its time limit (scenarios.limit_of).
WAITS = {"firefox-chromium": 120, "chromium-firefox": 120, "firefox-firefox": 130}

if __name__ == "__main__":
    main_with_limits(globals(), WAITS, lambda name: None if name == "firefox-firefox" else {}, suite="browser")
