"""Verification of drained mailbox entries (§8.7, §9.7, §9.8, §13.4).

Per entry, in the §13.4 order, failing closed at the first problem:

1. **shape** — exactly one kind member plus ``signature``, the payload's required members and
   types, and the forbidden ones absent (a ``state`` or a ``request`` injected into a directive,
   ``state``/``client_ref``/``callback`` on a ``message``): the digests bind content fields only,
   so the shape gate is what rejects unsigned injected fields;
2. **signature** — the context rebuilt from the payload received (digest recomputed), with a
   ``response``/``receipt`` entry's ``to`` rebuilt from this drain's own identity
   (``agent:<id>#<session presented>``), never the wire; any held key;
3. **window** — ``t`` within ±window of the local clock;
4. **addressee** — a directive's or message's ``to`` names this agent, and when session-qualified
   the session this drain presented (never a prior one);
5. **sender policy** — an addressed ``ask``/``task`` is acted on only from a sender the explicit,
   deployment-declared ``accept_from`` names (``"*"`` = any same-account agent); with no policy
   declared it is refused (§13.4 v0.5 amendment);
6. **replay cache** — a seen ``jti`` is rejected; a redelivery (new ``jti``) of a seen directive
   ``id``, message ``id``, ``(in_reply_to, resolution_id)`` or ``(in_reply_to, event)`` is a
   *duplicate*: ack it, do not act again. The key is reserved at verification time, so an
   overlapping delivery is deduplicated while the first is still being processed (§13.4 step 3).

Unknown members are dropped from the payload handed to the caller (unsigned, §13.4 step 1).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Collection, List, Mapping, Optional, Sequence

from .contexts import directive_context, message_context, receipt_context, response_entry_context, session_address
from .errors import SignatureError
from .jcs import JCSError, canonicalize
from .replay import ReplayCache
from .signature import REPLAY_WINDOW_SECS, VerifyingKey, check_window, parse_signature_member, verify_canonical
from .verify import Resolution, known_response_fields, record

__all__ = ["KINDS", "VerifiedEntry", "RejectedEntry", "DrainResult", "EntryVerifier"]

KINDS = ("directive", "message", "response", "receipt")
_MINOR4 = re.compile(r"\A0\.([4-9]|[1-9]\d+)\Z")
_MINOR5 = re.compile(r"\A0\.([5-9]|[1-9]\d+)\Z")
_DIRECTIVE_FIELDS = (
    "ma2h_version",
    "type",
    "id",
    "from",
    "to",
    "created_at",
    "title",
    "body",
    "priority",
    "tags",
    "context",
    "expires_at",
    "sensitive",
)
_MESSAGE_FIELDS = (
    "ma2h_version",
    "type",
    "id",
    "from",
    "to",
    "created_at",
    "agent",
    "title",
    "body",
    "priority",
    "tags",
    "context",
    "idempotency_key",
    "expires_at",
    "sensitive",
    "request",
    "action",
)
_RECEIPT_FIELDS = ("ma2h_version", "type", "id", "in_reply_to", "event", "prior", "at", "session", "to")
_RESOLUTIONS = ("answered", "declined", "cancelled", "expired", "completed", "dismissed")


@dataclass(frozen=True)
class VerifiedEntry:
    """An entry that passed every check. ``payload`` holds only known (signed or advisory) members."""

    kind: str
    payload: Mapping[str, Any]
    ack_key: str  #: what ``POST /v1/inbox/ack`` takes (§8.7.1)
    jti: str
    duplicate: bool = False
    resolution: Optional[Resolution] = None  #: for a ``response`` entry

    @property
    def sender(self) -> Optional[str]:
        """A message's attested sender principal (``from`` without ``agent:`` and the session)."""
        origin = self.payload.get("from") if self.kind == "message" else None
        return origin[len("agent:") :].split("#", 1)[0] if isinstance(origin, str) else None

    def __repr__(self) -> str:  # never the content (§9.6)
        return f"VerifiedEntry(kind={self.kind!r}, ack_key={self.ack_key!r}, duplicate={self.duplicate})"


@dataclass(frozen=True)
class RejectedEntry:
    """An entry that failed verification: never act on it, never ack it."""

    entry: Mapping[str, Any]
    error: SignatureError

    def __repr__(self) -> str:
        return f"RejectedEntry(reason={self.error.reason!r})"


@dataclass
class DrainResult:
    """One drain: verified entries (act on those not ``duplicate``) and rejected ones."""

    session: Optional[str]
    entries: List[VerifiedEntry] = field(default_factory=list)
    rejected: List[RejectedEntry] = field(default_factory=list)

    @property
    def accepted(self) -> List[VerifiedEntry]:
        return [e for e in self.entries if not e.duplicate]

    @property
    def duplicates(self) -> List[VerifiedEntry]:
        return [e for e in self.entries if e.duplicate]


def _bad(why: str) -> SignatureError:
    return SignatureError("bad_shape", f"not a valid mailbox entry: {why}")


def _need_str(obj: Mapping[str, Any], key: str, pattern: Optional["re.Pattern[str]"] = None) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value or (pattern is not None and not pattern.match(value)):
        raise _bad(f"`{key}` is missing or malformed")
    return value


def _optional_types(obj: Mapping[str, Any]) -> None:
    if "body" in obj and not isinstance(obj["body"], str):
        raise _bad("`body` is not a string")
    if "priority" in obj and obj["priority"] not in ("low", "normal", "high", "urgent"):
        raise _bad("`priority` is not low|normal|high|urgent")
    if "tags" in obj and not (isinstance(obj["tags"], list) and all(isinstance(t, str) for t in obj["tags"])):
        raise _bad("`tags` is not a list of strings")
    if "context" in obj and not (
        isinstance(obj["context"], list)
        and all(isinstance(p, dict) and isinstance(p.get("kind"), str) for p in obj["context"])
    ):
        raise _bad("`context` is not a list of parts")
    if "sensitive" in obj and not isinstance(obj["sensitive"], bool):
        raise _bad("`sensitive` is not a boolean")
    title = obj.get("title")
    if not isinstance(title, str) or not 1 <= len(title) <= 200:
        raise _bad("`title` is missing or longer than 200 characters")


def _check_directive(d: Mapping[str, Any]) -> None:
    _need_str(d, "ma2h_version", _MINOR4)
    if d.get("type") != "directive":
        raise _bad("a directive's `type` is not `directive`")
    for key in ("id", "created_at"):
        _need_str(d, key)
    _need_str(d, "from", re.compile(r"\A(human|system):.+", re.S))
    _need_str(d, "to", re.compile(r"\Aagent:.+", re.S))
    for forbidden in ("request", "action", "state"):
        if forbidden in d:
            raise _bad(f"a directive carries `{forbidden}`")
    _optional_types(d)


def _check_message(m: Mapping[str, Any]) -> None:
    _need_str(m, "ma2h_version", _MINOR5)
    kind = m.get("type")
    if kind not in ("notify", "ask", "task"):
        raise _bad("a message's `type` is not notify|ask|task")
    _need_str(m, "id", re.compile(r"\Amsg_.+", re.S))
    _need_str(m, "created_at")
    _need_str(m, "to", re.compile(r"\Aagent:.+", re.S))
    origin = _need_str(m, "from", re.compile(r"\Aagent:[^#]+(#sess_.+)?\Z", re.S))
    agent = m.get("agent")
    if not isinstance(agent, dict):
        raise _bad("a message has no `agent` descriptor")
    if ("session" in agent) != ("#" in origin):
        raise _bad("`from` does not match the submit's session presentation")
    for forbidden in ("state", "client_ref"):
        if forbidden in m:
            raise _bad(f"a message carries `{forbidden}`")
    blocks = {"ask": "request", "task": "action"}
    for block in ("request", "action"):
        if block in m:
            if blocks.get(str(kind)) != block or not isinstance(m[block], dict):
                raise _bad(f"a {kind} carries `{block}`")
            if "callback" in m[block]:
                raise _bad(f"a message carries `{block}.callback`")
    if kind in blocks and blocks[str(kind)] not in m:
        raise _bad(f"a {kind} has no `{blocks[str(kind)]}`")
    _optional_types(m)


def _check_response(r: Mapping[str, Any]) -> None:
    _need_str(r, "ma2h_version", _MINOR5)
    _need_str(r, "in_reply_to", re.compile(r"\Amsg_.+", re.S))
    _need_str(r, "resolution_id", re.compile(r"\Ares_.+", re.S))
    if r.get("resolution") not in _RESOLUTIONS:
        raise _bad("`resolution` is not a §6 value")
    if not isinstance(r.get("agent"), dict):
        raise _bad("a Response has no `agent`")
    if "response" in r and not isinstance(r["response"], dict):
        raise _bad("`response` is not an object")
    if "defaulted" in r and not isinstance(r["defaulted"], bool):
        raise _bad("`defaulted` is not a boolean")


def _check_receipt(r: Mapping[str, Any]) -> None:
    _need_str(r, "ma2h_version", _MINOR5)
    if r.get("type") != "receipt" or r.get("event") != "bounced" or r.get("prior") not in ("queued", "delivered"):
        raise _bad("not a v0.5 bounce receipt")
    for key in ("id", "in_reply_to", "at", "session", "to"):
        _need_str(r, key)


_CHECKS = {
    "directive": _check_directive,
    "message": _check_message,
    "response": _check_response,
    "receipt": _check_receipt,
}


class EntryVerifier:
    """Verifies the entries of one agent's drains."""

    def __init__(
        self,
        agent_id: str,
        keys: Sequence[VerifyingKey],
        cache: Optional[ReplayCache] = None,
        window_secs: int = REPLAY_WINDOW_SECS,
        accept_from: Optional[Collection[str]] = None,
    ) -> None:
        self.agent_id = agent_id
        self.keys = list(keys)
        self.cache = cache
        self.window_secs = window_secs
        self.accept_from = None if accept_from is None else frozenset(accept_from)

    def verify(self, entry: Any, session: Optional[str] = None, now: Optional[int] = None) -> VerifiedEntry:
        """Verify one drained entry of a drain that presented ``session`` (or none)."""
        now = int(time.time()) if now is None else int(now)
        if not isinstance(entry, dict):
            raise _bad("not an object")
        kinds = [k for k in KINDS if k in entry]
        if not kinds:
            other = next((k for k in entry if k != "signature"), "none")
            raise SignatureError("unknown_kind", f"entry kind {other!r} is not handled by this client")
        if len(kinds) > 1:
            raise _bad("more than one kind member")
        kind = kinds[0]
        payload = entry[kind]
        if not isinstance(payload, dict):
            raise _bad(f"`{kind}` is not an object")
        if kind != "directive" and session is None:
            raise SignatureError("needs_session", f"a `{kind}` entry is verified against the presented session")
        _CHECKS[kind](payload)
        parsed = parse_signature_member(entry.get("signature", ""))
        to = session_address(self.agent_id, session) if session else ""
        try:
            if kind == "directive":
                ctx = directive_context(payload, parsed.jti, parsed.t)
            elif kind == "message":
                ctx = message_context(payload, parsed.jti, parsed.t)
            elif kind == "response":
                ctx = response_entry_context(payload, to, parsed.jti, parsed.t)
            else:
                ctx = receipt_context(payload, to, parsed.jti, parsed.t)
            canonical = canonicalize(ctx)
        except JCSError as e:
            raise _bad(f"cannot be canonicalized: {e}") from None
        verify_canonical(canonical, parsed.v1, self.keys)
        check_window(parsed.t_unix, now, self.window_secs)
        if kind in ("directive", "message"):
            self._check_addressee(str(ctx["to"]), session)
        if kind == "message" and payload["type"] in ("ask", "task"):
            self._check_sender(str(payload["from"]))
        if kind == "directive":
            key, mark, ack_key = ctx["id"], "directive", ctx["id"]
            kept = {k: payload[k] for k in _DIRECTIVE_FIELDS if k in payload}
        elif kind == "message":
            key, mark, ack_key = ctx["id"], "message", ctx["id"]
            kept = {k: payload[k] for k in _MESSAGE_FIELDS if k in payload}
        elif kind == "response":
            key, mark, ack_key = ctx["in_reply_to"], ctx["resolution_id"], ctx["resolution_id"]
            kept = known_response_fields(payload)
        else:
            key, mark, ack_key = ctx["in_reply_to"], f"receipt:{payload['event']}", payload["id"]
            kept = {k: payload[k] for k in _RECEIPT_FIELDS if k in payload}
        duplicate = record(self.cache, parsed.jti, parsed.t_unix, now, self.window_secs, key, mark)
        resolution = None
        if kind == "response":
            resolution = Resolution(
                in_reply_to=ctx["in_reply_to"],
                resolution_id=ctx["resolution_id"],
                resolution=ctx["resolution"],
                body=kept,
                channel="mailbox",
                duplicate=duplicate,
                jti=parsed.jti,
            )
        return VerifiedEntry(
            kind=kind, payload=kept, ack_key=ack_key, jti=parsed.jti, duplicate=duplicate, resolution=resolution
        )

    def _check_addressee(self, to: str, session: Optional[str]) -> None:
        """§13.4 step 2 (with the v0.5 session amendment)."""
        principal = f"agent:{self.agent_id}"
        if to == principal:
            return
        if session is not None and to == session_address(self.agent_id, session):
            return
        raise SignatureError("not_for_me", f"addressed to {to!r}, not to this agent's current session")

    def _check_sender(self, origin: str) -> None:
        """§13.4 (v0.5): an explicit, deployment-declared policy before acting on an addressed ask/task."""
        policy = self.accept_from
        principal = origin[len("agent:") :].split("#", 1)[0]
        if policy is not None and (
            "*" in policy or principal in policy or f"agent:{principal}" in policy or origin in policy
        ):
            return
        raise SignatureError(
            "sender_not_allowed",
            f"{origin} is not in this agent's accept_from policy (§13.4: declare whom it obeys, '*' for any)",
        )
