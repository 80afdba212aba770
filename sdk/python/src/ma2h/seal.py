"""§9.3 sealed state: XChaCha20-Poly1305 under a per-agent key the Hub never sees.

The resume blob (``state``) comes back from the Hub **untrusted**; an agent must verify integrity it
applied itself before acting on it (§9.3, §2.1 step 5). :func:`seal` encrypts and authenticates it
under a 32-byte key pre-positioned in the agent runtime (``MA2H_STATE_KEY`` — never inside
``state``, never sent to the Hub) with the ``agent.id`` bound as associated data, so one agent's
state cannot be replayed into another's run; :func:`open` returns nothing unless the tag verifies.

Sealed form (the ``state`` member of an envelope), byte-compatible with the Hub's Rust client
(``ma2h seal-state`` / ``ma2h open-state``)::

    {"ma2h_sealed": "v1", "alg": "xchacha20poly1305",
     "nonce": <unpadded base64url, 24 bytes>, "ciphertext": <unpadded base64url, ciphertext‖tag>}

    associated data = b"ma2h-state/v1\\x00" + agent_id (UTF-8)
    plaintext       = the state's compact JSON

XChaCha20-Poly1305 is the draft-irtf-cfrg-xchacha construction: HChaCha20 (below, in pure Python)
derives a subkey from the key and the first 16 nonce bytes, then ChaCha20-Poly1305 (RFC 8439, from
``cryptography``) runs under that subkey with the nonce ``0x00000000 ‖ nonce[16:24]``.

Nothing here logs or prints a key or a state; ``repr(StateKey)`` is redacted.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import json
import os
import re
import struct
from typing import Any, Dict, List, Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from .errors import StateError

__all__ = ["StateKey", "seal", "open", "open_state", "is_sealed", "hchacha20", "SEALED_VERSION", "SEALED_ALG"]

SEALED_VERSION = "v1"
SEALED_ALG = "xchacha20poly1305"
NONCE_LEN = 24
_HEX64 = re.compile(r"\A[0-9a-fA-F]{64}\Z")
_B64URL = re.compile(r"\A[A-Za-z0-9_-]*\Z")
_SIGMA = struct.unpack("<4I", b"expand 32-byte k")
_M32 = 0xFFFFFFFF


def _rotl(v: int, n: int) -> int:
    return ((v << n) & _M32) | (v >> (32 - n))


def _quarter(s: List[int], a: int, b: int, c: int, d: int) -> None:
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 16)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 12)
    s[a] = (s[a] + s[b]) & _M32
    s[d] = _rotl(s[d] ^ s[a], 8)
    s[c] = (s[c] + s[d]) & _M32
    s[b] = _rotl(s[b] ^ s[c], 7)


def hchacha20(key: bytes, nonce16: bytes) -> bytes:
    """HChaCha20 (draft-irtf-cfrg-xchacha §2.2): 20 ChaCha rounds over constants‖key‖nonce,
    output words 0–3 and 12–15, without the final addition."""
    if len(key) != 32 or len(nonce16) != 16:
        raise ValueError("HChaCha20 takes a 32-byte key and a 16-byte nonce")
    s = list(_SIGMA) + list(struct.unpack("<8I", key)) + list(struct.unpack("<4I", nonce16))
    for _ in range(10):
        _quarter(s, 0, 4, 8, 12)
        _quarter(s, 1, 5, 9, 13)
        _quarter(s, 2, 6, 10, 14)
        _quarter(s, 3, 7, 11, 15)
        _quarter(s, 0, 5, 10, 15)
        _quarter(s, 1, 6, 11, 12)
        _quarter(s, 2, 7, 8, 13)
        _quarter(s, 3, 4, 9, 14)
    return struct.pack("<8I", *(s[0:4] + s[12:16]))


def _xchacha(key: bytes, nonce: bytes) -> "tuple[ChaCha20Poly1305, bytes]":
    return ChaCha20Poly1305(hchacha20(key, nonce[:16])), b"\x00\x00\x00\x00" + nonce[16:]


def xchacha20poly1305_encrypt(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """XChaCha20-Poly1305 encryption: ciphertext ‖ 16-byte tag."""
    aead, n12 = _xchacha(key, nonce)
    return aead.encrypt(n12, plaintext, aad)


def xchacha20poly1305_decrypt(key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    """XChaCha20-Poly1305 decryption; raises :class:`cryptography.exceptions.InvalidTag`."""
    aead, n12 = _xchacha(key, nonce)
    return aead.decrypt(n12, ciphertext, aad)


class StateKey:
    """The 32-byte per-agent state key (§9.3). Never printed."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
            raise StateError("bad_key", "a state key is exactly 32 bytes")
        self._key = bytes(key)

    @classmethod
    def parse(cls, text: str) -> "StateKey":
        """``MA2H_STATE_KEY``: 64 hex digits, or base64 (standard or url-safe, padded or not)."""
        s = text.strip() if isinstance(text, str) else ""
        raw = None
        if _HEX64.match(s):
            raw = bytes.fromhex(s)
        else:
            try:
                raw = base64.b64decode(s, validate=True)
            except (binascii.Error, ValueError):
                body = s.rstrip("=")
                if _B64URL.match(body) and len(body) % 4 != 1:
                    raw = base64.urlsafe_b64decode(body + "=" * ((4 - len(body) % 4) % 4))
        if raw is None or len(raw) != 32:
            raise StateError(
                "bad_key", "MA2H_STATE_KEY must be 32 bytes, base64 (standard or url-safe) or 64 hex digits"
            )
        return cls(raw)

    @classmethod
    def generate(cls) -> "StateKey":
        """A fresh random key from the OS CSPRNG."""
        return cls(os.urandom(32))

    @staticmethod
    def generate_base64() -> str:
        """A fresh key, standard base64 (what ``ma2h seal-state --generate-key`` prints)."""
        return base64.b64encode(os.urandom(32)).decode("ascii")

    def to_base64(self) -> str:
        """The key as standard base64 — for storing it in a secret store, never in ``state``."""
        return base64.b64encode(self._key).decode("ascii")

    def __repr__(self) -> str:
        return "StateKey(<redacted>)"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateKey) and hmac.compare_digest(self._key, other._key)

    __hash__ = None  # type: ignore[assignment]  # keys are compared, never used as dict keys

    def __reduce__(self) -> Any:
        raise TypeError("a StateKey is not picklable (keep it out of state and checkpoints)")

    def _bytes(self) -> bytes:
        return self._key


def _aad(agent_id: str) -> bytes:
    if not isinstance(agent_id, str) or not agent_id:
        raise StateError("bad_key", "sealing needs the agent.id it binds the state to")
    return f"ma2h-state/{SEALED_VERSION}\x00{agent_id}".encode("utf-8")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_strict(value: Any) -> bytes:
    """Unpadded, canonical base64url (what the Rust client emits and accepts)."""
    if not isinstance(value, str) or not _B64URL.match(value) or len(value) % 4 == 1:
        raise StateError("malformed", "sealed state is malformed: nonce/ciphertext must be unpadded base64url")
    raw = base64.urlsafe_b64decode(value + "=" * ((4 - len(value) % 4) % 4))
    if _b64url(raw) != value:
        raise StateError("malformed", "sealed state is malformed: nonce/ciphertext must be unpadded base64url")
    return raw


def seal(key: StateKey, agent_id: str, state: Any) -> Dict[str, str]:
    """Seal any JSON value ``state`` for ``agent_id``; the result goes into the envelope's ``state``."""
    if not isinstance(key, StateKey):
        raise StateError("bad_key", "seal needs a StateKey")
    try:
        plain = json.dumps(state, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as e:
        raise StateError("malformed", f"state is not JSON-serializable: {type(e).__name__}") from None
    nonce = os.urandom(NONCE_LEN)
    ciphertext = xchacha20poly1305_encrypt(key._bytes(), nonce, plain, _aad(agent_id))
    return {
        "ma2h_sealed": SEALED_VERSION,
        "alg": SEALED_ALG,
        "nonce": _b64url(nonce),
        "ciphertext": _b64url(ciphertext),
    }


def is_sealed(value: Any) -> bool:
    """Whether ``value`` claims to be a v1 sealed state (it still has to :func:`open`)."""
    return isinstance(value, Mapping) and value.get("ma2h_sealed") == SEALED_VERSION and value.get("alg") == SEALED_ALG


def open(key: StateKey, agent_id: str, sealed: Any) -> Any:  # noqa: A001 - the §9.3 verb
    """Verify and open a sealed state. Raises :class:`StateError` — and returns nothing — when it
    is not sealed, malformed, tampered, sealed under another key, or sealed for another agent."""
    if not isinstance(key, StateKey):
        raise StateError("bad_key", "open needs a StateKey")
    if not is_sealed(sealed):
        raise StateError(
            "not_sealed", f"state is not a sealed ma2h state object (expected ma2h_sealed v1 / {SEALED_ALG})"
        )
    nonce = _b64url_strict(sealed.get("nonce"))
    if len(nonce) != NONCE_LEN:
        raise StateError("malformed", "sealed state is malformed: nonce must be 24 bytes")
    ciphertext = _b64url_strict(sealed.get("ciphertext"))
    try:
        plain = xchacha20poly1305_decrypt(key._bytes(), nonce, ciphertext, _aad(agent_id))
    except InvalidTag:
        raise StateError(
            "tampered", "sealed state failed authentication: tampered, wrong key, or sealed for another agent"
        ) from None
    try:
        return json.loads(plain.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise StateError("malformed", "sealed state is malformed: plaintext is not JSON") from None


open_state = open
