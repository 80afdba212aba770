"""§9.2 Response verification for a push receiver, and the :class:`Resolution` every channel yields.

A pushed Response is accepted only after, in order:

1. the ``MA2H-Signature`` header parses and its ``v1`` is well-formed (§9.2, ``dp-025``);
2. the body is strict JSON and a §6 Response (``in_reply_to``, ``resolution_id``, ``resolution``);
3. the ``signed_context`` is rebuilt from the receiver's **own** configured callback URL (never the
   request), ``id = in_reply_to``, and ``payload_sha256`` **recomputed** from the received
   ``response``/``state``;
4. ``t`` is within ±window of the local clock, and some held key verifies ``v1`` (rotation);
5. only then the replay cache: a seen ``jti`` is a replay (rejected); a new ``jti`` for a seen
   ``(in_reply_to, resolution_id)`` is a duplicate — authentic, acknowledge it, do not act (§6).

Anything else raises :class:`~ma2h.errors.SignatureError`: answer 4xx and do not act.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import seal as _seal
from .contexts import response_context
from .errors import SignatureError
from .jcs import JCSError, canonicalize, loads
from .replay import JTI_TTL_SLACK_SECS, ReplayCache, ReplayCacheError, Seen
from .signature import (
    REPLAY_WINDOW_SECS,
    SIGNATURE_HEADER,
    VerifyingKey,
    check_window,
    parse_signature_member,
    verify_canonical,
)

__all__ = ["Resolution", "CallbackVerifier", "header_value", "record", "RESPONSE_FIELDS"]

#: The §6 Response members; anything else at the top level is unsigned and is dropped (§13.4 step 1
#: applied to the return leg: unknown fields are tolerated, never surfaced).
RESPONSE_FIELDS = (
    "ma2h_version",
    "in_reply_to",
    "resolution_id",
    "agent",
    "resolution",
    "response",
    "defaulted",
    "state",
)


def known_response_fields(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """The §6 members of a Response, nothing else."""
    return {k: doc[k] for k in RESPONSE_FIELDS if k in doc}


@dataclass(frozen=True)
class Resolution:
    """A §6 Response, from a verified push, a verified ``response`` mailbox entry, or a pull.

    ``state`` is still untrusted (§9.3): use :meth:`open_state`. ``duplicate`` is ``True`` when this
    ``(in_reply_to, resolution_id)`` was already accepted on some channel — do not act again.
    """

    in_reply_to: str
    resolution_id: str
    resolution: str
    body: Mapping[str, Any]
    channel: str  #: ``push``, ``mailbox`` or ``pull``
    duplicate: bool = False
    jti: Optional[str] = None

    @property
    def response(self) -> Optional[Mapping[str, Any]]:
        detail = self.body.get("response")
        return detail if isinstance(detail, Mapping) else None

    @property
    def value(self) -> Any:
        """``response.value``: the chosen option value or the input object (ask, answered)."""
        return self.response.get("value") if self.response else None

    @property
    def actor(self) -> Optional[str]:
        """The bound, Hub-attested ``response.actor`` (§9.2: use it, never the unbound ``defaulted``)."""
        actor = self.response.get("actor") if self.response else None
        return actor if isinstance(actor, str) else None

    @property
    def comment(self) -> Optional[str]:
        comment = self.response.get("comment") if self.response else None
        return comment if isinstance(comment, str) else None

    @property
    def answered(self) -> bool:
        return self.resolution in ("answered", "completed")

    @property
    def defaulted_on_expiry(self) -> bool:
        """Derived from the bound actor, as §9.2 requires (fail closed on ``expired``, §6)."""
        return self.actor == "system:default_on_expire"

    @property
    def state(self) -> Any:
        """The round-tripped ``state`` — untrusted until :meth:`open_state` verifies it."""
        return self.body.get("state")

    def open_state(self, key: "_seal.StateKey", agent_id: str) -> Any:
        """§9.3: verify and open the sealed state; raises :class:`~ma2h.errors.StateError`."""
        return _seal.open(key, agent_id, self.state)

    def __repr__(self) -> str:  # never the state or the answer's content (§9.6)
        return (
            f"Resolution(in_reply_to={self.in_reply_to!r}, resolution={self.resolution!r}, "
            f"actor={self.actor!r}, channel={self.channel!r}, duplicate={self.duplicate})"
        )


def header_value(headers: Any) -> Optional[str]:
    """The ``MA2H-Signature`` value from a mapping or ``email.message.Message`` (case-insensitive)."""
    if headers is None:
        return None
    getter = getattr(headers, "get_all", None)
    if callable(getter):  # http.server / email headers: refuse a repeated header
        values = getter(SIGNATURE_HEADER) or []
        if len(values) > 1:
            raise SignatureError("malformed_header", "more than one MA2H-Signature header")
        return values[0] if values else None
    if isinstance(headers, Mapping):
        found = [v for k, v in headers.items() if isinstance(k, str) and k.lower() == SIGNATURE_HEADER.lower()]
        if len(found) > 1:
            raise SignatureError("malformed_header", "more than one MA2H-Signature header")
        return found[0] if found else None
    raise TypeError("headers must be a mapping or an email.message.Message")


def record(cache: Optional[ReplayCache], jti: str, t_unix: int, now: int, window: int, key: str, mark: str) -> bool:
    """Consult the replay cache for a verified delivery; ``True`` for a duplicate. Raises
    ``SignatureError("replay")`` for a seen ``jti`` and ``SignatureError("cache")`` (fail closed)."""
    if cache is None:
        return False
    expires = max(t_unix, now) + window + JTI_TTL_SLACK_SECS
    try:
        seen = cache.check_and_record(jti, expires, key, mark, now)
    except ReplayCacheError as e:
        raise SignatureError("cache", f"replay cache unavailable: {e}") from None
    if seen is Seen.REPLAYED_JTI:
        raise SignatureError("replay", f"replayed jti {jti!r} (already accepted, §9.2)")
    return seen is Seen.DUPLICATE


class CallbackVerifier:
    """§9.2 verification for one callback endpoint."""

    def __init__(
        self,
        callback_url: str,
        keys: Sequence[VerifyingKey],
        cache: Optional[ReplayCache] = None,
        window_secs: int = REPLAY_WINDOW_SECS,
    ) -> None:
        if not callback_url:
            raise ValueError("the receiver's own callback URL is required (§9.2 binds it)")
        self.callback_url = callback_url
        self.keys = list(keys)
        self.cache = cache
        self.window_secs = window_secs

    def verify(self, headers: Any, body: Union[bytes, bytearray, str], now: Optional[int] = None) -> Resolution:
        """Verify one delivery: ``body`` exactly as received. Raises :class:`SignatureError`."""
        now = int(time.time()) if now is None else int(now)
        header = header_value(headers)
        if header is None or not header.strip():
            raise SignatureError("missing_header", "missing MA2H-Signature header")
        parsed = parse_signature_member(header)
        try:
            doc = loads(body)
        except JCSError as e:
            raise SignatureError("bad_body", f"the body is not a §6 Response: {e}") from None
        if not isinstance(doc, dict):
            raise SignatureError("bad_body", "the body is not a §6 Response object")
        try:
            ctx = response_context(doc, self.callback_url, parsed.jti, parsed.t)
            canonical = canonicalize(ctx)
        except JCSError as e:
            raise SignatureError("bad_body", f"the Response cannot be canonicalized: {e}") from None
        check_window(parsed.t_unix, now, self.window_secs)
        verify_canonical(canonical, parsed.v1, self.keys)
        duplicate = record(
            self.cache, parsed.jti, parsed.t_unix, now, self.window_secs, ctx["in_reply_to"], ctx["resolution_id"]
        )
        return Resolution(
            in_reply_to=ctx["in_reply_to"],
            resolution_id=ctx["resolution_id"],
            resolution=ctx["resolution"],
            body=known_response_fields(doc),
            channel="push",
            duplicate=duplicate,
            jti=parsed.jti,
        )
