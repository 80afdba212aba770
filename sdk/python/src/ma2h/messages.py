"""The message types (§4): the ``agent`` descriptor, options, push callbacks, and :class:`Message`.

Messages are built by :mod:`ma2h.builders` (or ``Hub.notify``/``ask``/``task``); a :class:`Message`
wraps the finished envelope and is what ``Hub.submit`` sends.
"""

from __future__ import annotations

import base64
import copy
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .errors import ConfigError

__all__ = ["MA2H_VERSION", "RUNTIMES", "UNSET", "AgentRef", "Option", "Callback", "Message", "random_token", "rfc3339"]

#: The protocol version this SDK speaks.
MA2H_VERSION = "0.5"
_PRIORITIES = ("low", "normal", "high", "urgent")
#: §4.1 ``agent.runtime`` values.
RUNTIMES = ("github-actions", "cli", "cloud", "desktop", "openclaw", "other")
_MODES = ("select", "confirm", "input")
#: "not given" (``None`` is a value: ``default_on_expire=None`` means JSON null).
UNSET: Any = object()
_UNSET = UNSET


def random_token(nbytes: int = 16) -> str:
    """A fresh random unpadded-base64url token."""
    return base64.urlsafe_b64encode(os.urandom(nbytes)).rstrip(b"=").decode("ascii")


def rfc3339(at: datetime) -> str:
    """UTC RFC 3339 with seconds precision (``2026-06-04T12:00:00Z``)."""
    if at.tzinfo is None:
        raise ConfigError("timestamps must be timezone-aware")
    return at.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class AgentRef:
    """The ``agent`` descriptor (§4.1) stamped on every message."""

    id: str
    run_id: str
    runtime: str = "other"
    project: Optional[str] = None

    @classmethod
    def new(
        cls, id: str, run_id: Optional[str] = None, runtime: Optional[str] = None, project: Optional[str] = None
    ) -> "AgentRef":
        """``run_id`` defaults to a fresh random id; ``runtime`` to ``github-actions`` inside
        GitHub Actions, else ``other``."""
        if runtime is None:
            runtime = "github-actions" if os.environ.get("GITHUB_ACTIONS") == "true" else "other"
        if runtime not in RUNTIMES:
            raise ConfigError(f"agent.runtime must be one of {', '.join(RUNTIMES)} (§4.1)")
        return cls(id=id, run_id=run_id or f"run_{random_token(12)}", runtime=runtime, project=project)

    def to_json(self, session: Optional[str] = None) -> Dict[str, Any]:
        out: Dict[str, Any] = {"id": self.id, "run_id": self.run_id, "runtime": self.runtime}
        if self.project:
            out["project"] = self.project
        if session:
            out["session"] = session
        return out


@dataclass(frozen=True)
class Option:
    """A §5.2 select/confirm option."""

    value: str
    label: str
    description: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"value": self.value, "label": self.label}
        if self.description is not None:
            out["description"] = self.description
        return out


OptionLike = Union[Option, str, Tuple[str, str], Mapping[str, Any]]


@dataclass(frozen=True)
class Callback:
    """§8.3 push callback. ``url`` is the receiver's own URL — pass the same string to
    ``Hub.verify_callback`` (§9.2 binds it). ``scheme`` ``hmac`` signs with the secret an operator
    registered under ``secret_ref``; without ``auth`` the Hub signs with the agent's signing secret."""

    url: str
    scheme: Optional[str] = None  # hmac | bearer | apikey
    secret_ref: Optional[str] = None
    token_ref: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"mode": "push", "url": self.url}
        scheme = self.scheme or ("hmac" if self.secret_ref else None)
        if scheme:
            auth: Dict[str, Any] = {"scheme": scheme}
            if self.secret_ref:
                auth["secret_ref"] = self.secret_ref
            if self.token_ref:
                auth["token_ref"] = self.token_ref
            out["auth"] = auth
        return out


class Message:
    """A built envelope (§4). Treat it as immutable: :attr:`envelope` returns a copy."""

    __slots__ = ("_envelope",)

    def __init__(self, envelope: Mapping[str, Any]) -> None:
        if not isinstance(envelope, Mapping) or envelope.get("type") not in ("notify", "ask", "task"):
            raise ConfigError("a message envelope needs `type` notify, ask or task")
        self._envelope = copy.deepcopy(dict(envelope))

    @property
    def envelope(self) -> Dict[str, Any]:
        return copy.deepcopy(self._envelope)

    @property
    def type(self) -> str:
        return str(self._envelope["type"])

    @property
    def idempotency_key(self) -> Optional[str]:
        key = self._envelope.get("idempotency_key")
        return key if isinstance(key, str) else None

    @property
    def to(self) -> Optional[str]:
        to = self._envelope.get("to")
        return to if isinstance(to, str) else None

    def with_session(self, session: str) -> "Message":
        """The same message presenting ``session`` in ``agent.session`` (§4.1). The session is
        excluded from the §8.1 payload comparison, so the idempotency key still matches."""
        env = self.envelope
        env.setdefault("agent", {})["session"] = session
        return Message(env)

    def to_bytes(self) -> bytes:
        return json.dumps(self._envelope, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")

    def __repr__(self) -> str:  # never the state, body or context (§9.6)
        title = self._envelope.get("title")
        return f"Message(type={self.type!r}, title={title!r}, idempotency_key={self.idempotency_key!r})"
