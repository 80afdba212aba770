"""ma2h — the Python SDK for MA2H (Multi-agent to Human Protocol, v0.5) Hubs.

Agents reach humans (``notify``/``ask``/``task``), get verified answers back (pull, push or a
session's mailbox), take signed directives from their mailbox, keep sessions alive, and seal their
resume state. Start with :class:`Hub`::

    from ma2h import Hub

    hub = Hub.from_env()                    # MA2H_HUB_URL, MA2H_API_KEY, MA2H_AGENT_ID, …
    ack = hub.submit(hub.ask("Ship build 412?", options=["ship", "hold"]))
    answer = hub.wait(ack.id, timeout=3600)
    if answer.resolution == "answered" and answer.value == "ship":
        ...

Only runtime dependency: ``cryptography`` (Ed25519, ChaCha20-Poly1305). HTTP is ``urllib``.
"""

from __future__ import annotations

from . import errors
from ._base import RetryPolicy
from .builders import build_ask, build_notify, build_task
from .client import Ack, CancelOutcome, Hub, ResolveOutcome
from .entries import DrainResult, EntryVerifier, RejectedEntry, VerifiedEntry
from .errors import *  # noqa: F403 — every exception, listed once in errors.__all__
from .messages import AgentRef, Callback, Message, Option
from .replay import ReplayCache
from .seal import StateKey
from .session import Session, SessionLease, SessionList
from .signature import Ed25519Key, HmacKey
from .verify import CallbackVerifier, Resolution

__version__ = "0.1.0"

__all__ = [
    "Hub",
    "Ack",
    "CancelOutcome",
    "ResolveOutcome",
    "RetryPolicy",
    "Resolution",
    "CallbackVerifier",
    "DrainResult",
    "EntryVerifier",
    "RejectedEntry",
    "VerifiedEntry",
    "Session",
    "SessionLease",
    "SessionList",
    "AgentRef",
    "Callback",
    "Message",
    "Option",
    "build_ask",
    "build_notify",
    "build_task",
    "ReplayCache",
    "StateKey",
    "Ed25519Key",
    "HmacKey",
    "__version__",
]
__all__ += errors.__all__
