"""A storm of first WebSocket upgrades on fresh `duet serve` processes.

Why: the Swift runtime on Linux can crash when two threads make the first use of the same generic metadata at once;
`duet serve` crashed that way once when its first upgrades arrived on two NIO threads together (the server now sets
the pipeline up once before it accepts: Sources/DuetServer/Transports/UpgradePipelineWarmUp.swift). Each round starts a
fresh server, opens N connections, releases all N upgrade requests at the same moment, and requires every one to be
answered with an HTTP status line (101, or a refusal such as 429/503 from the admission limits) and the server to be
alive afterwards. Loopback only, bounded: ROUNDS x N connections, each round killed when it is checked.

usage: upgrade_storm.py ROUNDS N   (DUET_BINARY: the duet executable)
prints one line per round and `storm: ok` at the end; exits 1 on any crash or unanswered upgrade.
"""
import base64
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time


def start_server(binary, data_dir):
    server = subprocess.Popen(
        [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--stun-port", "0", "--data-dir", data_dir],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if match:
            # Keep draining its output so a chatty server never blocks on a full pipe.
            threading.Thread(target=lambda: [seen.append(l) for l in server.stdout], daemon=True).start()
            return server, int(match.group(1)), seen
    server.kill()
    raise SystemExit(f"the server did not start:\n{''.join(seen)}")


def storm(port, n):
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]
    request = ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:{port}\r\n\r\n")
    barrier = threading.Barrier(n)
    answers = [None] * n

    def upgrade(index):
        key = base64.b64encode(os.urandom(16)).decode()
        barrier.wait()
        try:
            sockets[index].sendall(request.format(port=port, key=key).encode())
            answers[index] = sockets[index].recv(64).split(b"\r\n")[0].decode(errors="replace")
        except OSError as error:
            answers[index] = f"error: {error}"

    threads = [threading.Thread(target=upgrade, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sock in sockets:
        sock.close()
    return answers


def main():
    rounds, n = int(sys.argv[1]), int(sys.argv[2])
    binary = os.environ["DUET_BINARY"]
    failures = 0
    with tempfile.TemporaryDirectory(prefix="duet-storm-") as data_dir:
        for round_number in range(rounds):
            server, port, output = start_server(binary, data_dir)
            answers = storm(port, n)
            statuses = {}
            for answer in answers:
                match = re.match(r"HTTP/1\.1 (\d{3})", answer or "")
                key = match.group(1) if match else f"unanswered ({answer!r})"
                statuses[key] = statuses.get(key, 0) + 1
            # Alive means it still answers a plain request, not only that the process exists.
            alive = server.poll() is None
            if alive:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=5) as probe:
                        probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        alive = probe.recv(64).startswith(b"HTTP/1.1 ")
                except OSError:
                    alive = False
            ok = alive and all(key.isdigit() for key in statuses) and "101" in statuses
            print(f"round {round_number}: {'ok' if ok else 'FAILED'} answers={statuses} alive={alive} rc={server.poll()}",
                  flush=True)
            if not ok:
                failures += 1
                print("".join(output[-40:]), flush=True)
            server.kill()
            server.wait()
    if failures:
        print(f"storm: {failures} of {rounds} rounds failed")
        sys.exit(1)
    print("storm: ok")


if __name__ == "__main__":
    main()
