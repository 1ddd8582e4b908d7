#!/usr/bin/env python3
"""Writes Tests/fixtures/push/aes128gcm.json: Web Push bodies (RFC 8291, aes128gcm) made by http_ece with fixed keys
and salts, which WebPushCryptoTests requires DuetServer's WebPushEncryption to reproduce byte for byte. Run it again
only to add cases: `python3 Tests/e2e/push/make_vectors.py`."""
import base64
import json
import os

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def point(key):
    return key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


# No empty plaintext: http_ece 1.2.1 writes no record at all for one (only the header), where RFC 8188 wants a last
# record holding the delimiter; Duet never sends an empty push.
cases = []
for index, plaintext in enumerate([b"When I grow up, I want to be a watermelon", b'{"kind":"ring","roomId":"x"}', b"x", bytes(range(256)) * 15]):
    receiver = ec.generate_private_key(ec.SECP256R1())
    sender = ec.generate_private_key(ec.SECP256R1())
    auth = os.urandom(16)
    salt = os.urandom(16)
    body = http_ece.encrypt(plaintext, salt=salt, private_key=sender, dh=point(receiver), auth_secret=auth, version="aes128gcm", rs=4096)
    cases.append({
        "plaintext": b64url(plaintext),
        "receiverPublicKey": b64url(point(receiver)),
        "receiverPrivateKey": b64url(receiver.private_numbers().private_value.to_bytes(32, "big")),
        "auth": b64url(auth),
        "senderPrivateKey": b64url(sender.private_numbers().private_value.to_bytes(32, "big")),
        "salt": b64url(salt),
        "body": b64url(body),
    })
path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "push", "aes128gcm.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump({"generator": "Tests/e2e/push/make_vectors.py (http_ece " + getattr(http_ece, "__version__", "1.2.1") + ")", "cases": cases}, f, indent=1)
    f.write("\n")
