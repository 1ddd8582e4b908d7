#!/usr/bin/env python3
"""Verifies a VAPID Authorization header with py_vapid (not Duet's code): `vapid_check.py HEADER AUDIENCE`.
Prints {"ok": bool, "claims": {...}} and exits 0 when the signature verifies and aud matches."""
import base64
import json
import sys

import py_vapid

header, audience = sys.argv[1], sys.argv[2]
ok = bool(py_vapid.Vapid02.verify(header))
token = dict(part.split("=", 1) for part in header.split(" ", 1)[1].split(","))["t"]
claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=" * (-len(token.split(".")[1]) % 4)))
ok = ok and claims.get("aud") == audience
print(json.dumps({"ok": ok, "claims": claims}))
sys.exit(0 if ok else 1)
