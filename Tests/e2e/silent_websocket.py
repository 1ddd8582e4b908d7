#!/usr/bin/env python3
"""A WebSocket client that completes the handshake and then never answers a ping.

Usage: silent_websocket.py HOST PORT. Prints "pings=<n> close=<code> after=<seconds>" once the
server closes the socket (the server must cut a peer that stays silent).
"""
import base64, os, socket, struct, sys, time

host, port = sys.argv[1], int(sys.argv[2])
sock = socket.create_connection((host, port), timeout=60)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall((f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
response = b""
while b"\r\n\r\n" not in response:
    response += sock.recv(1)
if b" 101 " not in response.split(b"\r\n")[0]:
    print("handshake failed: " + response.split(b"\r\n")[0].decode())
    sys.exit(1)
start, pings, buffer = time.monotonic(), 0, b""

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
        first, second = read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", read(8))[0]
        payload = read(length)
        opcode = first & 0x0F
        if opcode == 0x9:
            pings += 1
        elif opcode == 0x8:
            code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 0
            print(f"pings={pings} close={code} after={time.monotonic() - start:.2f}")
            sys.exit(0)
except (EOFError, ConnectionResetError):
    print(f"pings={pings} close=none after={time.monotonic() - start:.2f}")
