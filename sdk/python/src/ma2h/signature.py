"""The detached ``MA2H-Signature`` (§9.2), reused by §9.7 directives and §9.8 mailbox entries.

Wire form: ``MA2H-Signature: t=<unix>,jti=<nonce>,v1=<base64url(signature)>``; the signature is
HMAC-SHA256 (32 bytes) or Ed25519 (64 bytes) over the RFC 8785 bytes of a signed context
(:mod:`ma2h.contexts` builds them, recomputing every payload digest from the payload received).

Verification fails closed, and the rules are exactly the spec's:

- ``v1`` well-formedness (§9.2, pinned by ``dp-025``): alphabet ``[A-Za-z0-9_-]``; either no
  padding or exactly the RFC 4648 structural pad count; decodes to at least 32 bytes — and
  nothing more (no canonical round-trip check, so a hex-shaped value is valid base64url);
- a signature verifies if ANY held key verifies it (rotation overlap, §9.2); HMAC tags are
  compared with :func:`hmac.compare_digest` (constant time);
- ``t`` must lie within ±window of the verifier's own clock (inclusive edges, §9.2, §9.5).

The ``jti`` replay cache is :mod:`ma2h.replay`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .contexts import (  # re-exported: the signed contexts belong to this module's story
    ack_context,
    directive_context,
    message_context,
    receipt_context,
    response_context,
    response_entry_context,
)
from .errors import SignatureError

__all__ = [
    "SIGNATURE_HEADER",
    "REPLAY_WINDOW_SECS",
    "MIN_MAC_LEN",
    "ALG_HMAC_SHA256",
    "ALG_ED25519",
    "ParsedSignature",
    "HmacKey",
    "Ed25519Key",
    "VerifyingKey",
    "decode_mac",
    "is_well_formed_mac",
    "b64url",
    "parse_header",
    "parse_signature_member",
    "format_header",
    "sign_hmac",
    "verify_canonical",
    "check_window",
    "keys_from_capability",
    "response_context",
    "response_entry_context",
    "directive_context",
    "message_context",
    "receipt_context",
    "ack_context",
]

SIGNATURE_HEADER = "MA2H-Signature"
#: §9.2: reject ``t`` outside ±120 s of the local clock (a Hub may advertise its own, §8.0).
REPLAY_WINDOW_SECS = 120
#: §9.2: a well-formed ``v1`` decodes to at least 32 bytes.
MIN_MAC_LEN = 32
ALG_HMAC_SHA256 = "hmac-sha256"
ALG_ED25519 = "ed25519"
MAX_HEADER_LEN = 4096
MAX_JTI_LEN = 256
_B64URL_ALPHABET = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def b64url(data: bytes) -> str:
    """Unpadded base64url, the form every ``v1``, nonce and ciphertext is emitted in."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def decode_mac(v1: str) -> Optional[bytes]:
    """The §9.2 ``v1`` rule (``dp-025``): the raw MAC bytes, or ``None`` if ill-formed."""
    raw = v1.encode("ascii", "replace") if isinstance(v1, str) else b""
    body = raw.rstrip(b"=")
    pad = len(raw) - len(body)
    if not body or not all(b in _B64URL_ALPHABET for b in body):
        return None  # also catches any '=' before the trailing run, '+', '/'
    if len(body) % 4 == 1:
        return None  # RFC 4648 §4: a final quantum of one character is impossible
    if pad and pad != (4 - len(body) % 4) % 4:
        return None
    try:
        # Re-pad and decode; non-zero trailing bits are accepted (no canonical round-trip, §9.2).
        mac = base64.urlsafe_b64decode(body + b"=" * ((4 - len(body) % 4) % 4))
    except (binascii.Error, ValueError):
        return None
    return mac if len(mac) >= MIN_MAC_LEN else None


def is_well_formed_mac(v1: str) -> bool:
    """``True`` iff :func:`decode_mac` accepts ``v1``."""
    return decode_mac(v1) is not None


@dataclass(frozen=True)
class ParsedSignature:
    """A parsed ``MA2H-Signature`` value."""

    t: str  #: verbatim (it goes into the reconstructed context as a string)
    t_unix: int
    jti: str
    v1: str
    mac: bytes


def parse_header(value: str) -> ParsedSignature:
    """Parse ``t=<unix>,jti=<nonce>,v1=<b64url>`` (any order, each exactly once, no other keys)."""

    def bad(why: str) -> SignatureError:
        return SignatureError("malformed_header", f"malformed MA2H-Signature header: {why}")

    if not isinstance(value, str) or len(value) > MAX_HEADER_LEN:
        raise bad("missing or too long")
    fields: Dict[str, str] = {}
    for part in value.split(","):
        key, sep, val = part.strip(" \t").partition("=")
        if not sep:
            raise bad("segment without '='")
        if key not in ("t", "jti", "v1"):
            raise bad(f"unknown key {key!r}")
        if key in fields:
            raise bad(f"duplicate key {key!r}")
        fields[key] = val
    for key in ("t", "jti", "v1"):
        if key not in fields:
            raise bad(f"missing {key}")
    t, jti, v1 = fields["t"], fields["jti"], fields["v1"]
    if not t or not t.isascii() or not t.isdigit() or (len(t) > 1 and t[0] == "0") or len(t) > 19:
        raise bad("t is not a decimal unix timestamp")
    if not 0 < len(jti) <= MAX_JTI_LEN or not all(0x21 <= ord(c) <= 0x7E for c in jti):
        raise bad("jti must be 1..256 visible ASCII characters")
    mac = decode_mac(v1)
    if mac is None:
        raise SignatureError("bad_mac", "v1 is not a well-formed base64url MAC (spec §9.2)")
    return ParsedSignature(t=t, t_unix=int(t), jti=jti, v1=v1, mac=mac)


def parse_signature_member(member: str) -> ParsedSignature:
    """A mailbox entry's ``signature`` (the full header line, §8.7) or a bare header value."""
    if not isinstance(member, str):
        raise SignatureError("malformed_header", "the signature is not a string")
    text = member.strip()
    name, sep, rest = text.partition(":")
    if sep and name.strip().lower() == SIGNATURE_HEADER.lower():
        text = rest
    return parse_header(text.strip())


def format_header(t: Union[int, str], jti: str, v1: str, *, with_name: bool = False) -> str:
    """The header value ``t=…,jti=…,v1=…`` (with ``MA2H-Signature: `` in front if asked)."""
    value = f"t={t},jti={jti},v1={v1}"
    return f"{SIGNATURE_HEADER}: {value}" if with_name else value


class HmacKey:
    """An ``hmac-sha256`` key: ``MA2H_SIGNING_SECRET`` or a callback ``secret_ref`` secret.

    The secret is used as its UTF-8 bytes, exactly as the Hub does. ``repr`` never shows it.
    """

    alg = ALG_HMAC_SHA256

    def __init__(self, secret: Union[str, bytes]) -> None:
        data = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if not data:
            raise ValueError("an HMAC secret must not be empty")
        self._secret = data

    def __repr__(self) -> str:
        return "HmacKey(<redacted>)"

    def sign(self, canonical: bytes) -> bytes:
        return hmac.new(self._secret, canonical, hashlib.sha256).digest()

    def verify(self, canonical: bytes, mac: bytes) -> bool:
        return hmac.compare_digest(self.sign(canonical), mac)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HmacKey) and hmac.compare_digest(self._secret, other._secret)

    def __hash__(self) -> int:
        return hash(("hmac", hashlib.sha256(self._secret).digest()))


class Ed25519Key:
    """An Ed25519 public key, as the capability document publishes it in ``signing_keys`` (§8.0)."""

    alg = ALG_ED25519

    def __init__(self, public_key: bytes) -> None:
        if len(public_key) != 32:
            raise ValueError("an Ed25519 public key is 32 bytes")
        self._raw = bytes(public_key)
        self._key = Ed25519PublicKey.from_public_bytes(self._raw)

    @classmethod
    def from_b64url(cls, text: str) -> "Ed25519Key":
        """From base64url (padding tolerated)."""
        body = text.strip().rstrip("=")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * ((4 - len(body) % 4) % 4))
        except (binascii.Error, ValueError):
            raise ValueError("not base64url") from None
        return cls(raw)

    @property
    def public_bytes(self) -> bytes:
        return self._raw

    def __repr__(self) -> str:
        return f"Ed25519Key({b64url(self._raw)})"

    def verify(self, canonical: bytes, mac: bytes) -> bool:
        if len(mac) != 64:
            return False
        try:
            self._key.verify(mac, canonical)
            return True
        except InvalidSignature:
            return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Ed25519Key) and self._raw == other._raw

    def __hash__(self) -> int:
        return hash(("ed25519", self._raw))


VerifyingKey = Union[HmacKey, Ed25519Key]


def keys_from_capability(doc: Mapping[str, Any]) -> List[Ed25519Key]:
    """Every Ed25519 key in a capability document's ``signing_keys`` (current and previous)."""
    out: List[Ed25519Key] = []
    entries = doc.get("signing_keys") if isinstance(doc, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or entry.get("alg") != ALG_ED25519:
            continue
        public = entry.get("public_key")
        if isinstance(public, str):
            try:
                out.append(Ed25519Key.from_b64url(public))
            except ValueError:
                continue  # not a key: skip it, the others may still verify
    return out


def sign_hmac(canonical: bytes, key: HmacKey) -> str:
    """The ``v1`` of HMAC-SHA256 over canonical bytes (tests, stand-in Hubs)."""
    return b64url(key.sign(canonical))


def verify_canonical(canonical: bytes, v1: str, keys: Sequence[VerifyingKey]) -> None:
    """Raise :class:`SignatureError` unless some key in ``keys`` verifies ``v1`` over ``canonical``."""
    mac = decode_mac(v1)
    if mac is None:
        raise SignatureError("bad_mac", "v1 is not a well-formed base64url MAC (spec §9.2)")
    if not keys:
        raise SignatureError("no_keys", "no verification key configured")
    # Every key is tried (no early exit), so timing does not reveal which key matched.
    results = [key.verify(canonical, mac) for key in keys]
    if not any(results):
        raise SignatureError("mismatch", "signature mismatch")


def check_window(t: int, now: int, window_secs: int = REPLAY_WINDOW_SECS) -> None:
    """§9.2: accept iff ``|t − now| ≤ window`` (inclusive edges)."""
    if window_secs < 0 or abs(t - now) > window_secs:
        raise SignatureError("out_of_window", f"signature timestamp {t} outside ±{window_secs}s of now ({now})")


def normalize_keys(keys: Iterable[Union[VerifyingKey, str, bytes]]) -> List[VerifyingKey]:
    """Keys as given: :class:`HmacKey`/:class:`Ed25519Key` pass through; ``str``/``bytes`` are
    HMAC secrets."""
    out: List[VerifyingKey] = []
    for key in keys:
        out.append(key if isinstance(key, (HmacKey, Ed25519Key)) else HmacKey(key))
    return out
