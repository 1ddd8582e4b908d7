#!/usr/bin/env python3
"""Minimal TURN Allocate (RFC 5766) over UDP with long-term credentials.

Prints "allocated" or "error <code>" and exits 0 or 1. Used by the coturn test to see the exact
401 that coturn answers for tampered or expired REST credentials (turnutils_uclient only says
"Cannot complete Allocation").
"""
import hashlib, hmac, os, socket, struct, sys

MAGIC = 0x2112A442

def attr(kind, value):
    pad = (4 - len(value) % 4) % 4
    return struct.pack("!HH", kind, len(value)) + value + b"\0" * pad

def message(kind, tid, attrs, key=None):
    body = b"".join(attrs)
    if key is not None:
        # MESSAGE-INTEGRITY covers the header with a length that already counts itself (24 bytes).
        header = struct.pack("!HHI", kind, len(body) + 24, MAGIC) + tid
        mac = hmac.new(key, header + body, hashlib.sha1).digest()
        body += attr(0x0008, mac)
    return struct.pack("!HHI", kind, len(body), MAGIC) + tid + body

def parse(data):
    kind, length, _ = struct.unpack("!HHI", data[:8])
    attrs, offset = {}, 20
    while offset < 20 + length:
        a, l = struct.unpack("!HH", data[offset:offset + 4])
        attrs[a] = data[offset + 4:offset + 4 + l]
        offset += 4 + l + (4 - l % 4) % 4
    return kind, attrs

def exchange(sock, server, packet):
    sock.sendto(packet, server)
    data, _ = sock.recvfrom(4096)
    return parse(data)

def main():
    host, port, user, password = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(3)
    transport = attr(0x0019, bytes([17, 0, 0, 0]))
    kind, attrs = exchange(sock, (host, port), message(0x0003, os.urandom(12), [transport]))
    if kind != 0x0113 or 0x0014 not in attrs:
        print("unexpected first answer 0x%04x" % kind)
        return 2
    realm, nonce = attrs[0x0014], attrs[0x0015]
    key = hashlib.md5(user.encode() + b":" + realm + b":" + password.encode()).digest()
    request = message(0x0003, os.urandom(12), [transport, attr(0x0006, user.encode()), attr(0x0014, realm), attr(0x0015, nonce)], key)
    kind, attrs = exchange(sock, (host, port), request)
    if kind == 0x0103:
        print("allocated")
        return 0
    code = attrs.get(0x0009, b"\0\0\0\0")
    print("error %d" % ((code[2] & 7) * 100 + code[3]))
    return 1

if __name__ == "__main__":
    sys.exit(main())
