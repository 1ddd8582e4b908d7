#!/usr/bin/env python3
"""A WebSocket client that completes the handshake and then never answers a ping.

Usage: silent_websocket.py HOST PORT. Prints "pings=<n> close=<code> after=<seconds>" once the
server closes the socket (the server must cut a peer that stays silent).
"""
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ws_frames  # noqa: E402

host, port = sys.argv[1], int(sys.argv[2])
sock = socket.create_connection((host, port), timeout=60)
status, buffer = ws_frames.upgrade(sock, f"{host}:{port}", "/ws")
if " 101 " not in status:
    print("handshake failed: " + status)
    sys.exit(1)
start, pings = time.monotonic(), 0


def read(n):
    global buffer
    while len(buffer) < n:
        chunk = sock.recv(4096)
        if not chunk:
            raise EOFError
        buffer += chunk
    out, buffer = buffer[:n], buffer[n:]
    return out


try:
    while True:
        opcode, payload = ws_frames.read_frame(read)
        if opcode == ws_frames.PING:
            pings += 1
        elif opcode == ws_frames.CLOSE:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 0
            print(f"pings={pings} close={code} after={time.monotonic() - start:.2f}")
            sys.exit(0)
except (EOFError, ConnectionResetError):
    print(f"pings={pings} close=none after={time.monotonic() - start:.2f}")
