"""RFC 6455 for the tests' own WebSocket ends (stdlib only): the frames, and a client's upgrade.

One copy for the scripts that speak WebSocket by hand — a signaling client through nginx (cluster/cluster.py), the
join in an installed package's root (package/package_install.py, where nothing but the standard library is assumed),
and the push service Firefox connects to (push/mozilla_push_service.py, the server's side).
"""
import base64
import hashlib
import os
import struct

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  # RFC 6455 §1.3
TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


def frame(opcode, payload, masked):
    """One final frame. A client masks every frame it sends (masked=True); a server never does."""
    length = len(payload)
    bit = 0x80 if masked else 0
    header = bytes([0x80 | opcode])
    if length < 126:
        header += bytes([bit | length])
    elif length < 65536:
        header += bytes([bit | 126]) + struct.pack("!H", length)
    else:
        header += bytes([bit | 127]) + struct.pack("!Q", length)
    if not masked:
        return header + payload
    mask = os.urandom(4)
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def read_frame(read):
    """(opcode, payload) of the next frame, unmasked; `read(n)` returns exactly n bytes or raises EOFError."""
    first, second = read(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack("!H", read(2))[0]
    elif length == 127:
        length = struct.unpack("!Q", read(8))[0]
    mask = read(4) if second & 0x80 else None
    payload = read(length)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return first & 0x0F, payload


def accept_for(key):
    """The Sec-WebSocket-Accept a server answers to a Sec-WebSocket-Key."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def upgrade(sock, host, path, origin=None):
    """A client's upgrade on a connected socket. Returns (status line, what was read past the response's head);
    a 101 whose Sec-WebSocket-Accept is not the key's raises ConnectionError."""
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  + (f"Origin: {origin}\r\n" if origin else "") + "\r\n").encode())
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError(f"{path}: closed during the WebSocket upgrade: {received[:200]!r}")
        received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    if " 101 " in lines[0]:
        headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
        if headers.get("sec-websocket-accept") != accept_for(key):
            raise ConnectionError(f"{path}: a 101 with the wrong Sec-WebSocket-Accept: {headers.get('sec-websocket-accept')}")
    return lines[0], rest
