"""Captures real GStreamer webrtcbin stats for the call-quality fixtures (Tests/fixtures/quality).

Two `duet call` peers call each other through a real `duet serve`; peer A runs with `--raw-stats`, so each second it
writes webrtcbin's whole `get-stats` reply (as the C shim turns it into JSON), what the shim saw on its own pads
beside it (decoded frames and size, each inbound stream's SSRC and codec), and the sample DuetClient's
WebRtcBinStats made of them. `lossy` first drops a share of all UDP on
the namespace's loopback as it arrives
(iptables statistic on INPUT: dropped on OUTPUT, a send fails with EPERM and the sender knows). Run inside a network namespace of its own (never the machine's):
    unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/quality/capture_webrtcbin.py clean OUT.json'
    unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/quality/capture_webrtcbin.py lossy OUT.json 0.15'
Then Tests/e2e/quality/make_fixture.mjs turns OUT.json into a fixture.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peer"))
sys.path.insert(0, os.path.join(HERE, "..", "browser"))
from cdp import in_private_netns  # noqa: E402
from peer_scenarios import Peer  # noqa: E402
from scenarios import Server, log  # noqa: E402


def main():
    mode, out = sys.argv[1], sys.argv[2]
    loss = float(sys.argv[3]) if len(sys.argv) > 3 else 0.15
    if not in_private_netns():
        raise SystemExit("run me inside `unshare -n` (see the docstring)")
    server = Server()
    rule = ["INPUT", "-p", "udp", "-m", "statistic", "--mode", "random", "--probability", str(loss), "-j", "DROP"]
    a = b = None
    try:
        link = server.url + "call/" + server.new_room()
        a = Peer(link, "--raw-stats")
        a.wait(lambda p: p.value("phase") == "Waiting", 15, "A waits")
        b = Peer(link)
        a.in_call()
        b.in_call()
        a.wait_media(what="A receives B's media")
        if mode == "lossy":
            subprocess.run(["iptables", "-A", *rule], check=True)
            log(f"dropping {loss:.0%} of UDP on lo")
        time.sleep(2)
        first = len(a.snapshot())
        a.wait(lambda p: sum(1 for e in p.snapshot()[first:] if e.get("event") == "rawStats") >= 11, 20,
               "eleven raw stats reports")
        raw = [e for e in a.snapshot()[first:] if e.get("event") == "rawStats"][:11]
    finally:
        if mode == "lossy":
            subprocess.run(["iptables", "-D", *rule])
        for peer in (b, a):
            if peer:
                peer.stop()
        server.stop()
    version = "GStreamer webrtcbin " + subprocess.run(["pkg-config", "--modversion", "gstreamer-webrtc-1.0"], capture_output=True, text=True).stdout.strip()
    network = "loopback in a private network namespace" + (f", {loss:.0%} of UDP dropped (iptables statistic)" if mode == "lossy" else "")
    captures = [{key: e[key] for key in ("atMs", "decoded", "report", "sample")} for e in raw]
    with open(out, "w") as f:
        json.dump({"source": "webrtcbin", "engine": version, "network": network,
                   "captured": time.strftime("%Y-%m-%d", time.gmtime()), "raw": captures}, f)
    log(f"wrote {len(captures)} reports to {out}")


if __name__ == "__main__":
    main()
