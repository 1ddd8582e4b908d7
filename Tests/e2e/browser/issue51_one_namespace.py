"""Issue 51's report as written: one loopback-only namespace, Firefox hosts, Chromium joins; B's `online`; then all
UDP dropped 12 s. Run: unshare -n sh -c 'ip link set lo up && exec python3 Tests/e2e/browser/issue51_one_namespace.py [firefox-chromium|...]'"""
import json, os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bidi import Firefox
from cdp import Browser
from scenarios import Server, in_call, media_flows, mark, watch, stats

order = sys.argv[1] if len(sys.argv) > 1 else "firefox-chromium"
server = Server()
ff = Firefox.launch()
ch = Browser.launch()
def page(kind, link):
    return ff.new_page(link, timeout=20) if kind == "firefox" else ch.new_page(link)
ok = False
try:
    first, second = order.split("-")
    link = server.url + "call/" + server.new_room()
    a = watch(page(first, link), "A")
    a.wait_for("window.duet && duet.page === 'call' && duet.phase === 'waiting'", 20)
    b = watch(page(second, link), "B")
    for p in (a, b): in_call(p, timeout=30)
    for p in (a, b): media_flows(p, timeout=20)
    t0 = time.monotonic()
    b.evaluate("window.dispatchEvent(new Event('online'))")
    b.wait_for("duet.iceRestarts.length > 0", 5)
    time.sleep(1)
    ma, mb = mark(a), mark(b)
    media_flows(a, since=ma, timeout=30, what="A after B's restart"); media_flows(b, since=mb, timeout=30, what="B after B's restart")
    print(f"whole after B's restart {time.monotonic()-t0:.1f}s; A restarts {a.evaluate('duet.iceRestarts')} B restarts {b.evaluate('duet.iceRestarts')}", flush=True)
    subprocess.run(["iptables", "-I", "INPUT", "-p", "udp", "-j", "DROP"], check=True)
    time.sleep(12)
    subprocess.run(["iptables", "-D", "INPUT", "-p", "udp", "-j", "DROP"], check=True)
    t1 = time.monotonic()
    ma, mb = mark(a), mark(b)
    try:
        media_flows(a, since=ma, timeout=60, what="A after the outage"); media_flows(b, since=mb, timeout=60, what="B after the outage")
        print(f"HEALED {time.monotonic()-t1:.1f}s after the outage", flush=True)
        ok = True
    except Exception as e:
        print("NOT HEALED:", str(e)[:600], flush=True)
    for p, n in ((a, "A"), (b, "B")):
        print(n, json.dumps({k: p.evaluate(f"duet.{k}") for k in ("iceRestarts", "reconnects", "connectionStatus", "iceConnectionState", "ice")})[:800])
    if not ok:
        for p, n in ((a, "A"), (b, "B")):
            try:
                print(n, "paths", json.dumps(p.evaluate("duet.paths ? duet.paths() : null"))[:1500])
                print(n, "rtcLog", json.dumps(p.evaluate("duet.rtcLog || null"))[-3000:])
            except Exception as e:
                print(n, "diag failed", e)
finally:
    for x in (ff, ch):
        try: x.close()
        except Exception: pass
    server.stop()
print("RESULT", "ok" if ok else "FAILED")
