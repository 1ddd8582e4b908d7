#!/usr/bin/env python3
"""Writes Tests/fixtures/ringing/caller-seal.json: a ring's sealed caller name (js/ringing/caller-seal.js) made with
Python's `cryptography` (HKDF-SHA-256 of the link key, info "duet caller v1", no salt; AES-256-GCM with the room and
call id as additional data, the name and when it was sealed inside), which caller-seal.test.mjs requires the browser to open (and its own seals to match
in layout). Run it again only to add cases."""
import base64
import json
import os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


cases = []
for name, rid, call_id in [("Ann", "TsZdBD-LsgwBE_KQ3QvIiic31sU", "call-1"), ("Zoë 👋", "AAAAAAAAAAAAAAAAAAAAAAAAAAA", "x")]:
    link_key = os.urandom(32)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"duet caller v1").derive(link_key)
    iv = os.urandom(12)
    at = 1_800_000_000_000 + len(cases)
    ct = AESGCM(key).encrypt(iv, json.dumps({"name": name, "at": at}, ensure_ascii=False).encode(), f"duet-caller|{rid}|{call_id}".encode())
    cases.append({"linkKey": b64url(link_key), "rid": rid, "callId": call_id, "name": name, "at": at,
                  "caller": {"v": 1, "iv": b64url(iv), "ct": b64url(ct)}})
path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "ringing", "caller-seal.json")
with open(path, "w") as f:
    json.dump({"generator": "Tests/e2e/push/make_caller_vectors.py (cryptography)", "cases": cases}, f, indent=1, ensure_ascii=False)
    f.write("\n")
