#!/usr/bin/env python3
"""Writes Tests/fixtures/ringing/snapshot.json: snapshots sealed by Python's `cryptography` (snapshot_crypto.py) as
the server's `?format=envelope` gives them, with the recipient's private key, which snapshot.test.mjs requires the
browser's snapshot.js to open (and to refuse when altered). Run it again only to add cases."""
import base64
import json
import os

import snapshot_crypto as sc

cases = []
for rid, endpoint in [("TsZdBD-LsgwBE_KQ3QvIiic31sU", "https://push.example/abc"), ("AAAAAAAAAAAAAAAAAAAAAAAAAAA", "https://fcm.example/x?y=1")]:
    _, public, private = sc.device_key()
    _, other_public, _ = sc.device_key()
    link_key = os.urandom(32)
    image = os.urandom(64) + b"\xff\xd8 a picture"
    at = 1_800_000_000_000 + len(cases)
    mine = sc.recipient_id(rid, endpoint)
    purpose = "ring:call-1" if not cases else "join"
    body = sc.seal(image, rid, [(mine, public), ("someone-else", other_public)], link_key, at, purpose)
    envelope = {"id": f"SNAP-{len(cases)}", "rid": rid, "mime": body["snapshotMime"], "ciphertext": body["ciphertext"],
                "iv": body["snapshotIv"], "salt": body["snapshotSalt"], "ephemeralPublicKey": body["snapshotEphemeralPubKey"],
                "auth": body["snapshotAuth"], "at": at, "purpose": purpose, "recipients": body["recipients"]}
    cases.append({"rid": rid, "endpoint": endpoint, "recipientId": mine, "privateJwk": private, "publicJwk": public,
                  "keyAuth": sc.key_auth(link_key, rid, public), "linkKey": sc.b64url(link_key), "purpose": purpose,
                  "image": base64.b64encode(image).decode(), "envelope": envelope})
path = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "ringing", "snapshot.json")
with open(path, "w") as f:
    json.dump({"generator": "Tests/e2e/push/make_snapshot_vectors.py (cryptography)", "cases": cases}, f, indent=1)
