#!/usr/bin/env python3
"""A local RFC 8030 push service that is not Duet's code: it checks each push's VAPID JWT (py_vapid, and the claims
by hand) and decrypts its aes128gcm body (http_ece), as a browser's push service and the browser would.

    push_service.py DIR [--script NAME=STATUS[:RETRY_AFTER],STATUS...]...

- Makes a self-signed certificate for 127.0.0.1 and localhost (DIR/ca.pem: what the server under test trusts).
- Makes one subscription (a P-256 key pair and an auth secret, as a browser would) per scripted name, endpoint
  https://127.0.0.1:PORT/push/NAME, and writes DIR/ready.json: {port, subscriptions: {NAME: {endpoint, keys}}}.
- Answers each POST to /push/NAME with the next status of its script (the last one repeats; 201 when unscripted).
- Appends one JSON line per request to DIR/pushes.jsonl: the name, status answered, headers that matter, whether
  VAPID verified (and why not), the audience, and the decrypted payload when it decrypted.
Stops when stdin closes (the test ends) or after 10 minutes.
"""
import base64
import datetime
import http.server
import ipaddress
import json
import os
import ssl
import sys
import threading
import time

import http_ece
import py_vapid
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def make_certificate(directory):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "duet test push service")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(directory, "ca.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


def check_vapid(header, port):
    """(ok, why, claims): py_vapid verifies the signature; the claims are checked as RFC 8292 §2 asks."""
    if not header or not header.lower().startswith("vapid "):
        return False, "no vapid Authorization", None
    try:
        if not py_vapid.Vapid02.verify(header):
            return False, "signature does not verify", None
    except Exception as error:  # a malformed header
        return False, f"py_vapid refused it: {error!r}", None
    parts = dict(part.split("=", 1) for part in header.split(" ", 1)[1].split(","))
    claims = json.loads(unb64url(parts["t"].split(".")[1]))
    header_json = json.loads(unb64url(parts["t"].split(".")[0]))
    if header_json.get("alg") != "ES256":
        return False, "alg is not ES256", claims
    if claims.get("aud") != f"https://127.0.0.1:{port}":
        return False, f"aud {claims.get('aud')!r} is not the endpoint's origin", claims
    exp = claims.get("exp", 0)
    if not (time.time() < exp <= time.time() + 24 * 3600 + 60):
        return False, f"exp {exp} is not within 24 h ahead", claims
    if not str(claims.get("sub", "")).startswith(("mailto:", "https:")):
        return False, "sub is not a mailto: or https: URI", claims
    return True, "", claims


def push_headers(headers):
    """The headers of a push that the tests read (RFC 8030 §5.2, §5.3, §5.4; RFC 8188)."""
    return {"ttl": headers.get("TTL"), "urgency": headers.get("Urgency"), "topic": headers.get("Topic"),
            "contentEncoding": headers.get("Content-Encoding")}


def serve_pushes(directory, handle):
    """The RFC 8030 side of a push service: HTTPS on 127.0.0.1 with a certificate of its own (DIR/ca.pem, which the
    server under test is told to trust). `handle(path, headers, body, port)` answers each POST with
    (status, extra headers); a 201 gets a Location. Returns the port."""
    cert_path, key_path = make_certificate(directory)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status, extra = handle(self.path, self.headers, body, server.server_address[1])
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            if status == 201 and "Location" not in extra:
                self.send_header("Location", f"/message/{time.time_ns()}")
            self.end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def ready_then_wait(directory, ready):
    """Writes DIR/ready.json (atomically: the test polls for it), then lives until stdin closes (the test ended) or
    for 10 minutes."""
    with open(os.path.join(directory, "ready.json.tmp"), "w") as f:
        json.dump(ready, f)
    os.rename(os.path.join(directory, "ready.json.tmp"), os.path.join(directory, "ready.json"))

    def watch_stdin():
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch_stdin, daemon=True).start()
    deadline = time.time() + 600
    while time.time() < deadline:
        time.sleep(1)


def main():
    directory = sys.argv[1]
    scripts = {}
    args = sys.argv[2:]
    while args:
        flag = args.pop(0)
        if flag != "--script":
            sys.exit(f"unknown argument {flag}")
        name, _, steps = args.pop(0).partition("=")
        scripts[name] = [tuple(step.split(":")) for step in steps.split(",")]
    subscribers = {}
    for name in scripts:
        private_key = ec.generate_private_key(ec.SECP256R1())
        subscribers[name] = {"key": private_key, "auth": os.urandom(16), "calls": 0}
    lock = threading.Lock()
    log_path = os.path.join(directory, "pushes.jsonl")

    def handle(path, headers, body, port):
        name = path.rsplit("/", 1)[-1]
        record = {"name": name, "path": path, **push_headers(headers), "bodyBytes": len(body)}
        with lock:
            subscriber = subscribers.get(name)
            steps = scripts.get(name, [("404",)])
            index = subscriber["calls"] if subscriber else 0
            step = steps[min(index, len(steps) - 1)]
            if subscriber:
                subscriber["calls"] += 1
        status = int(step[0])
        ok, why, claims = check_vapid(headers.get("Authorization"), port)
        record.update({"vapid": ok, "vapidProblem": why, "claims": claims, "status": status})
        if subscriber and ok:
            try:
                plaintext = http_ece.decrypt(body, private_key=subscriber["key"], auth_secret=subscriber["auth"], version="aes128gcm")
                record["payload"] = json.loads(plaintext)
            except Exception as error:
                record["decryptError"] = repr(error)
        if status in (200, 201, 202) and not ok:
            status = 403  # a real push service refuses a push without valid VAPID
            record["status"] = status
        with lock, open(log_path, "a") as log:
            log.write(json.dumps(record) + "\n")
        return status, ({"Retry-After": step[1]} if len(step) > 1 else {})

    port = serve_pushes(directory, handle)
    ready = {"port": port, "subscriptions": {}}
    for name, subscriber in subscribers.items():
        public = subscriber["key"].public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
        ready["subscriptions"][name] = {"endpoint": f"https://127.0.0.1:{port}/push/{name}",
                                        "keys": {"p256dh": b64url(public), "auth": b64url(subscriber["auth"])}}
    ready_then_wait(directory, ready)


if __name__ == "__main__":
    main()
