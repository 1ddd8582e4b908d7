"""Self-test for cdp.py: a local two-PeerConnection call in real headless Chromium.

Run it only inside a private network namespace:
    unshare -n sh -c 'ip link set lo up; python3 Tests/e2e/browser/selftest.py'
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError, in_private_netns  # noqa: E402

PAGE = """<!doctype html>
<meta charset="utf-8"><title>cdp selftest</title>
<body style="margin:0;background:#222">
<video id="remote" autoplay playsinline muted style="width:320px;height:240px"></video>
<script>
window.framesDecoded = 0;
window.audioSamples = 0;
(async () => {
  // Empty iceServers: never contact public STUN; host candidates on lo suffice.
  const pc1 = new RTCPeerConnection({iceServers: []});
  const pc2 = new RTCPeerConnection({iceServers: []});
  pc1.onicecandidate = e => e.candidate && pc2.addIceCandidate(e.candidate);
  pc2.onicecandidate = e => e.candidate && pc1.addIceCandidate(e.candidate);
  pc2.ontrack = e => { document.getElementById('remote').srcObject = e.streams[0]; };
  const stream = await navigator.mediaDevices.getUserMedia({audio: true, video: true});
  stream.getTracks().forEach(t => pc1.addTrack(t, stream));
  await pc1.setLocalDescription();
  await pc2.setRemoteDescription(pc1.localDescription);
  await pc2.setLocalDescription();
  await pc1.setRemoteDescription(pc2.localDescription);
  console.log('negotiated', pc1.signalingState);
  setInterval(async () => {
    (await pc2.getStats()).forEach(s => {
      if (s.type !== 'inbound-rtp') return;
      if (s.kind === 'video') window.framesDecoded = s.framesDecoded || 0;
      if (s.kind === 'audio') window.audioSamples = s.totalSamplesReceived || 0;
    });
    document.body.dataset.framesDecoded = window.framesDecoded;
    document.body.dataset.ice = pc2.iceConnectionState;
  }, 100);
})().catch(e => { document.body.dataset.error = String(e); throw e; });
</script>
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    if not in_private_netns():
        sys.exit("run me inside `unshare -n sh -c 'ip link set lo up; ...'`")
    root = tempfile.mkdtemp(prefix="cdp-selftest-")
    with open(os.path.join(root, "index.html"), "w") as f:
        f.write(PAGE)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", root], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):            # wait until the server accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), 0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        url = f"http://127.0.0.1:{port}/index.html"
        t0 = time.monotonic()
        with Browser.launch() as browser:
            print(f"launch: {browser.launch_seconds:.2f}s  {browser.version()['product']}")
            page = browser.new_page(url)
            page.set_viewport(640, 360)
            t1 = time.monotonic()
            frames = page.wait_for("window.framesDecoded > 10 && window.framesDecoded", timeout=15,
                                   message="remote video never decoded")
            print(f"page: {t1 - t0:.2f}s after launch start; >10 frames decoded in {time.monotonic() - t1:.2f}s"
                  f" (framesDecoded={frames}, audioSamples={page.evaluate('window.audioSamples')})")

            shot = page.screenshot("/tmp/cdp-selftest.png")
            with open(shot, "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n", "screenshot is not a PNG"

            try:
                page.evaluate("(() => { throw new Error('boom from selftest') })()")
                raise AssertionError("expected CDPError")
            except CDPError as e:
                assert "boom from selftest" in str(e), e
            try:
                page.evaluate("Promise.reject(new RangeError('async boom'))")
                raise AssertionError("expected CDPError")
            except CDPError as e:
                assert "async boom" in str(e), e

            # wait_for timeout carries a diagnostic: last value, dataset, console.
            try:
                page.wait_for("window.neverSet", timeout=0.5, message="expected timeout")
                raise AssertionError("expected TimeoutError")
            except TimeoutError as e:
                text = str(e)
                assert "expected timeout" in text and "framesDecoded" in text and "negotiated" in text, text

            page.evaluate("setTimeout(() => { throw new Error('uncaught later') }, 0)")
            page.wait_for("new Promise(r => setTimeout(() => r(true), 50))")
            assert any("uncaught later" in m for m in page.console), page.console

            page.reload()
            assert page.evaluate("window.framesDecoded") == 0, "reload did not reset the page"
            page.wait_for("window.framesDecoded > 10", timeout=15, message="no video after reload")
            page.navigate("about:blank")
            assert page.evaluate("location.href") == "about:blank"
            try:
                page.navigate(f"http://127.0.0.1:{free_port()}/")   # nothing listens there
                raise AssertionError("expected CDPError for refused connection")
            except CDPError as e:
                assert "ERR_CONNECTION_REFUSED" in str(e), e
            page.close()
            pid = browser.proc.pid
        assert browser.proc.poll() is not None, "Chromium still running after close()"
        assert not os.path.exists(browser.profile), "profile dir left behind"
        try:
            os.kill(pid, 0)
            raise AssertionError("Chromium pid still exists")
        except ProcessLookupError:
            pass
        print(f"screenshot: {shot}; total {time.monotonic() - t0:.2f}s")
        print("selftest ok")
    finally:
        server.terminate()
        server.wait(5)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
