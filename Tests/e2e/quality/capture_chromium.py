"""Captures real Chromium WebRTC stats for the call-quality fixtures (Tests/fixtures/quality).

Two headless pages call each other through a real `duet serve`; once a second for ~10 s one page's
`[...(await pc.getStats()).values()]` is written, with the time it was taken. `lossy` first drops a share of all
UDP on the namespace's loopback as it arrives
(iptables statistic on INPUT — netem is not in this kernel; dropped on OUTPUT, a send fails with EPERM and the
sender knows), so media loses packets both ways.
Run inside a network namespace of its own (never the machine's):
    unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/quality/capture_chromium.py clean OUT.json'
    unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/quality/capture_chromium.py lossy OUT.json 0.15'
Then Tests/e2e/quality/make_fixture.mjs turns OUT.json into a fixture.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
from cdp import Browser, in_private_netns  # noqa: E402
from scenarios import Server, in_call, log  # noqa: E402

# The call page keeps its RTCPeerConnection to itself: keep a reference to every one made, before any page script.
KEEP_PEERS = """
(() => {
  const Native = window.RTCPeerConnection;
  window.__qualityPeers = [];
  window.RTCPeerConnection = class extends Native {
    constructor(...args) { super(...args); window.__qualityPeers.push(this); }
  };
})();
"""

SNAPSHOT = """
(async () => {
  const pc = window.__qualityPeers.filter((p) => p.connectionState !== 'closed').at(-1);
  if (!pc) return null;
  const report = await pc.getStats();
  // Certificates are kilobytes of base64 that say nothing about quality.
  return { atMs: Date.now(), report: [...report.values()].filter((s) => s.type !== 'certificate') };
})()
"""


def open_with_peers_kept(browser, url, name):
    page = browser.new_page()
    page.send("Page.addScriptToEvaluateOnNewDocument", {"source": KEEP_PEERS})
    page.navigate(url)
    page.wait_for("window.duet && duet.page === 'call'", 10, message=f"{name}: call page loads")
    return page


def main():
    mode, out = sys.argv[1], sys.argv[2]
    loss = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    if not in_private_netns():
        raise SystemExit("run me inside `unshare -n` (see the docstring)")
    server = Server()
    rule = ["INPUT", "-p", "udp", "-m", "statistic", "--mode", "random", "--probability", str(loss), "-j", "DROP"]
    try:
        with Browser.launch() as browser:
            link = server.url + "call/" + server.new_room()
            a = open_with_peers_kept(browser, link, "A")
            a.wait_for("duet.phase === 'waiting'", 15, message="A waits")
            b = open_with_peers_kept(browser, link, "B")
            in_call(a, what="A in call")
            in_call(b, what="B in call")
            if mode == "lossy":
                subprocess.run(["iptables", "-A", *rule], check=True)
                log(f"dropping {loss:.0%} of UDP on lo")
            time.sleep(2)  # past the first second's ramp-up (and the loss already biting)
            captures = []
            started = time.monotonic()
            for i in range(11):
                time.sleep(max(0.0, started + i - time.monotonic()))
                captures.append(a.evaluate(SNAPSHOT))
            version = browser.version()["product"]
    finally:
        if mode == "lossy":
            subprocess.run(["iptables", "-D", *rule])
        server.stop()
    network = "loopback in a private network namespace" + (f", {loss:.0%} of UDP dropped (iptables statistic)" if mode == "lossy" else "")
    with open(out, "w") as f:
        json.dump({"source": "chromium", "engine": version, "network": network,
                   "captured": time.strftime("%Y-%m-%d", time.gmtime()), "raw": captures}, f)
    log(f"wrote {len(captures)} reports to {out}")


if __name__ == "__main__":
    main()
