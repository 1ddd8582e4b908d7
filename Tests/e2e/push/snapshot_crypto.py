#!/usr/bin/env python3
"""Join and ring snapshots (js/ringing/snapshot.js) made and opened with Python's `cryptography`, an implementation
independent of the browser's and of Duet's: make_snapshot_vectors.py writes snapshots the browser must open, and the
server tests (SnapshotTests) upload one made here and open what the push service receives.

Scheme: the picture under AES-256-GCM with a random content key; for each device, ECDH (P-256) of a fresh ephemeral
key with the device's key, HKDF-SHA-256 (the upload's salt, info "duet snapshot wrap v1") seals the content key with
AES-256-GCM; HMAC-SHA-256 with HKDF(link key, info "duet snapshot v1") over
"duet-snapshot|rid|purpose|at|b64url(iv)|mime|b64url(sha256(ciphertext))" (purpose: "join" or "ring:<callId>"). A
device vouches for its key with HMAC-SHA-256 under HKDF(link key, info "duet device key v1") over
"duet-device-key|rid|x|y"."""
import base64
import hashlib
import hmac
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text):
    text = text.replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def recipient_id(rid, endpoint):
    return b64url(hashlib.sha256(f"duet-recipient|{rid}|{endpoint}".encode()).digest())[:22]


def device_key():
    """A device's key pair: (private key, public JWK, private JWK)."""
    private = ec.generate_private_key(ec.SECP256R1())
    numbers = private.public_key().public_numbers()
    public = {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}
    return private, public, {**public, "d": b64url(private.private_numbers().private_value.to_bytes(32, "big"))}


def private_from_jwk(jwk):
    return ec.derive_private_key(int.from_bytes(unb64(jwk["d"]), "big"), ec.SECP256R1())


def _wrap_key(private, public, salt):
    shared = private.exchange(ec.ECDH(), public)
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=b"duet snapshot wrap v1").derive(shared)


def _mac_key(link_key, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(link_key)


def _auth(link_key, rid, purpose, at, iv, mime, ciphertext):
    data = f"duet-snapshot|{rid}|{purpose}|{at}|{b64url(iv)}|{mime}|{b64url(hashlib.sha256(ciphertext).digest())}".encode()
    return hmac.new(_mac_key(link_key, b"duet snapshot v1"), data, hashlib.sha256).digest()


def key_auth(link_key, rid, jwk):
    """A device's MAC of its public key (`encKeyAuth`)."""
    data = f"duet-device-key|{rid}|{jwk['x']}|{jwk['y']}".encode()
    return b64url(hmac.new(_mac_key(link_key, b"duet device key v1"), data, hashlib.sha256).digest())


def seal(image, rid, recipients, link_key, at, purpose, mime="image/jpeg"):
    """The upload body for `image` sealed to recipients [(id, public JWK)], in base64 as Serenada's clients send it."""
    content, iv, salt = os.urandom(32), os.urandom(12), os.urandom(16)
    ciphertext = AESGCM(content).encrypt(iv, image, None)
    ephemeral = ec.generate_private_key(ec.SECP256R1())
    ephemeral_raw = ephemeral.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    sealed = []
    for rid_id, jwk in recipients:
        public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + unb64(jwk["x"]) + unb64(jwk["y"]))
        wrap_iv = os.urandom(12)
        wrapped = AESGCM(_wrap_key(ephemeral, public, salt)).encrypt(wrap_iv, content, None)
        sealed.append({"id": rid_id, "wrappedKey": base64.b64encode(wrapped).decode(), "wrappedKeyIv": base64.b64encode(wrap_iv).decode()})
    body = {"ciphertext": base64.b64encode(ciphertext).decode(), "snapshotIv": base64.b64encode(iv).decode(),
            "snapshotSalt": base64.b64encode(salt).decode(), "snapshotEphemeralPubKey": base64.b64encode(ephemeral_raw).decode(),
            "snapshotMime": mime, "snapshotAt": at, "snapshotPurpose": purpose, "recipients": sealed}
    if link_key is not None:
        body["snapshotAuth"] = b64url(_auth(link_key, rid, purpose, at, iv, mime, ciphertext))
    return body


def open_push(fields, ciphertext, private, link_key, rid, purpose):
    """The picture from a push's Serenada fields and the fetched ciphertext, checking the link key's MAC and that it
    was made for `purpose`; raises if anything does not hold."""
    if fields.get("snapshotPurpose") != purpose:
        raise ValueError(f"made for {fields.get('snapshotPurpose')}, not {purpose}")
    iv = unb64(fields["snapshotIv"])
    expected = _auth(link_key, rid, purpose, fields["snapshotAt"], iv, fields["snapshotMime"], ciphertext)
    if not hmac.compare_digest(expected, unb64(fields["snapshotAuth"])):
        raise ValueError("snapshotAuth does not hold")
    ephemeral = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(fields["snapshotEphemeralPubKey"]))
    content = AESGCM(_wrap_key(private, ephemeral, unb64(fields["snapshotSalt"]))).decrypt(
        unb64(fields["snapshotKeyIv"]), unb64(fields["snapshotKey"]), None)
    return AESGCM(content).decrypt(iv, ciphertext, None)


if __name__ == "__main__":
    # `keypair` → {public, private} (JWKs).
    # `keyauth` JSON: {linkKey, rid, jwk} → {keyAuth}.
    # `seal` JSON (or on stdin): {image (base64), rid, recipients: [[id, jwk]], linkKey (base64url), at, purpose} → the upload body.
    # `open` JSON (or on stdin): {fields, ciphertext (base64), privateJwk, linkKey, rid, purpose} → {image (base64)}.
    if sys.argv[1] == "keypair":
        _, public, private = device_key()
        print(json.dumps({"public": public, "private": private}))
        sys.exit(0)
    if sys.argv[1] == "keyauth":
        request = json.loads(sys.argv[2])
        print(json.dumps({"keyAuth": key_auth(unb64(request["linkKey"]), request["rid"], request["jwk"])}))
        sys.exit(0)
    request = json.loads(sys.argv[2]) if len(sys.argv) > 2 else json.load(sys.stdin)
    if sys.argv[1] == "seal":
        print(json.dumps(seal(base64.b64decode(request["image"]), request["rid"], request["recipients"], unb64(request["linkKey"]), request["at"],
                              request["purpose"])))
    else:
        image = open_push(request["fields"], base64.b64decode(request["ciphertext"]), private_from_jwk(request["privateJwk"]),
                          unb64(request["linkKey"]), request["rid"], request["purpose"])
        print(json.dumps({"image": base64.b64encode(image).decode()}))
