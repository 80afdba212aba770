#!/usr/bin/env python3
"""A Web Push service stand-in (issue 41): the push service *and* the browser on the other end,
for trying and testing the Hub's Web Push channel without Chrome's or Apple's push services.
Needs the `cryptography` package (in the project's .venv and .venv-mail).

  POST /subscribe      → a new subscription, as a browser's PushSubscription.toJSON():
                         {"endpoint": "http://127.0.0.1:<port>/push/<id>", "keys": {"p256dh", "auth"}}
                         (a fresh P-256 key pair and 16-byte auth secret, kept here)
  POST /push/<id>      → what the Hub sends. Checked like a real push service would, and more:
                         `Content-Encoding: aes128gcm`, a `TTL`, and `Authorization: vapid t=<JWT>,
                         k=<key>` whose ES256 signature verifies with k, whose `aud` is this
                         service's origin, `exp` within 24 h, `sub` a mailto: or https: URL. The
                         body is decrypted per RFC 8291 with the subscription's private key; the
                         plaintext must be JSON. 201 when all holds, 400 (with the reason) if not,
                         410 once the subscription is marked gone.
  POST /gone/<id>      → later pushes to it are answered 410 (an unsubscribed browser)
  GET  /received       → every push taken: [{"id", "ttl", "urgency", "payload"}]

Run by hand: `python3 scripts/webpush_standin.py serve --port 8790` (prints each push as a JSON
line). scripts/ui-test.sh uses it for the browser test of notifications.
"""
import argparse
import base64
import http.server
import json
import os
import sys
import threading
import time

from cryptography.hazmat.primitives import hashes, hmac as chmac
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

SUBSCRIPTIONS = {}  # id -> {"key": private key, "auth": bytes, "gone": bool}
RECEIVED = []
LOCK = threading.Lock()


def b64d(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def b64e(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def hmac_sha256(key, data):
    h = chmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def decrypt(sub, body):
    """RFC 8291 (RFC 8188 aes128gcm, one record) with the subscription's keys."""
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    server_key = body[21 : 21 + idlen]
    ciphertext = body[21 + idlen :]
    if idlen != 65 or rs < 18 or len(ciphertext) > rs:
        raise ValueError("a malformed aes128gcm header")
    ua_private = sub["key"]
    ua_public = ua_private.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
    shared = ua_private.exchange(ec.ECDH(), ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), server_key))
    prk_key = hmac_sha256(sub["auth"], shared)
    ikm = hmac_sha256(prk_key, b"WebPush: info\x00" + ua_public + server_key + b"\x01")
    prk = hmac_sha256(salt, ikm)
    cek = hmac_sha256(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = hmac_sha256(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    padded = AESGCM(cek).decrypt(nonce, ciphertext, None)
    stripped = padded.rstrip(b"\x00")
    if not stripped.endswith(b"\x02"):
        raise ValueError("not the last record (delimiter 0x02 missing)")
    return stripped[:-1]


def check_vapid(header, origin):
    """RFC 8292: `vapid t=<JWT>, k=<uncompressed P-256 key>`; the JWT verified with k."""
    if not header.startswith("vapid "):
        raise ValueError("Authorization is not `vapid t=…, k=…`")
    parts = dict(p.strip().split("=", 1) for p in header[len("vapid ") :].split(","))
    token, key = parts["t"], b64d(parts["k"])
    head_b64, claims_b64, sig_b64 = token.split(".")
    head, claims, sig = json.loads(b64d(head_b64)), json.loads(b64d(claims_b64)), b64d(sig_b64)
    if head.get("alg") != "ES256" or len(sig) != 64:
        raise ValueError(f"the JWT is not ES256: {head}")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), key)
    der = encode_dss_signature(int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big"))
    public.verify(der, f"{head_b64}.{claims_b64}".encode(), ec.ECDSA(hashes.SHA256()))
    # RFC 8292's `aud` is the push resource's origin; the Hub's library leaves out a non-default
    # port (real push services are all on 443), so this stand-in on a high port takes either
    if claims.get("aud") not in (origin, origin.rsplit(":", 1)[0]):
        raise ValueError(f"aud {claims.get('aud')!r} is not {origin!r}")
    now = time.time()
    if not now < claims.get("exp", 0) <= now + 24 * 3600:
        raise ValueError("exp is not within the next 24 hours")
    sub = str(claims.get("sub", ""))
    if not (sub.startswith("mailto:") or sub.startswith("https://")):
        raise ValueError(f"sub {sub!r} is not a mailto: or https: URL")
    return parts["k"]


class PushService(http.server.BaseHTTPRequestHandler):
    echo = False

    def reply(self, status, body=None):
        raw = json.dumps(body if body is not None else {}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):
        if self.path == "/received":
            with LOCK:
                return self.reply(200, RECEIVED)
        self.reply(404)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        port = self.server.server_address[1]
        if self.path == "/subscribe":
            sid = b64e(os.urandom(9))
            key, auth = ec.generate_private_key(ec.SECP256R1()), os.urandom(16)
            with LOCK:
                SUBSCRIPTIONS[sid] = {"key": key, "auth": auth, "gone": False}
            public = key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
            return self.reply(201, {"endpoint": f"http://127.0.0.1:{port}/push/{sid}",
                                    "keys": {"p256dh": b64e(public), "auth": b64e(auth)}})
        kind, _, sid = self.path.strip("/").partition("/")
        with LOCK:
            sub = SUBSCRIPTIONS.get(sid)
        if sub is None:
            return self.reply(404, {"error": "no such subscription"})
        if kind == "gone":
            sub["gone"] = True
            return self.reply(200)
        if kind != "push":
            return self.reply(404)
        if sub["gone"]:
            return self.reply(410, {"error": "unsubscribed"})
        try:
            if self.headers.get("Content-Encoding") != "aes128gcm":
                raise ValueError("Content-Encoding is not aes128gcm")
            if not (self.headers.get("TTL") or "").isdigit():
                raise ValueError("no TTL")
            check_vapid(self.headers.get("Authorization") or "", f"http://127.0.0.1:{port}")
            payload = json.loads(decrypt(sub, raw))
        except Exception as e:  # every refusal says why (to the sender, and on stderr)
            reason = f"{type(e).__name__}: {e}"
            print(f"refused a push to {sid}: {reason}", file=sys.stderr, flush=True)
            return self.reply(400, {"error": reason})
        entry = {"id": sid, "ttl": int(self.headers["TTL"]), "urgency": self.headers.get("Urgency"), "payload": payload}
        with LOCK:
            RECEIVED.append(entry)
        if self.echo:
            print(json.dumps(entry), flush=True)
        self.reply(201)

    def log_message(self, *args):
        pass


def serve(port, echo=False):
    PushService.echo = echo
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), PushService)
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = serve(args.port, echo=True)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
