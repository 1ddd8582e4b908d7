#!/usr/bin/env python3
"""Writes the web app's PNG icons (Sources/DuetWeb/Web/img/duet-192.png and duet-512.png): two overlapping rings
on Duet's background, drawn pixel by pixel with the standard library only. Run it again only to change them."""
import math
import os
import struct
import zlib

HERE = os.path.join(os.path.dirname(__file__), "..", "Sources", "DuetWeb", "Web", "img")
BACKGROUND = (16, 20, 24)
RINGS = [((0.40, 0.5), (77, 163, 255)), ((0.60, 0.5), (125, 220, 139))]


def pixel(x, y, size):
    u, v = (x + 0.5) / size, (y + 0.5) / size
    color = BACKGROUND
    for (cx, cy), ring in RINGS:
        distance = math.hypot(u - cx, v - cy)
        if 0.17 <= distance <= 0.25:
            color = ring
    return color


def png(size):
    rows = b"".join(b"\x00" + bytes(c for x in range(size) for c in pixel(x, y, size)) for y in range(size))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


for size in (192, 512):
    with open(os.path.join(HERE, f"duet-{size}.png"), "wb") as f:
        f.write(png(size))
