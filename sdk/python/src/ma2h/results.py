"""What the Hub's agent-facing calls return: the §8.1 ack, and the outcomes of §8.4 cancel and
§8.8 resolve — where "another terminal won first" is an outcome to read, not an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

__all__ = ["Ack", "CancelOutcome", "ResolveOutcome"]


@dataclass(frozen=True)
class Ack:
    """The §8.1 ``202`` ack."""

    id: str
    status: str
    poll_url: Optional[str]
    review_url: Optional[str]
    idempotency_key: Optional[str]
    attempts: int  #: POSTs it took (1 unless the lost-ack recipe retried)
    destination: Optional[Mapping[str, Any]]  #: the v0.5 reachability snapshot of an addressed submit
    raw: Mapping[str, Any]


@dataclass(frozen=True)
class CancelOutcome:
    """§8.4: ``cancelled`` is ``False`` when another terminal won (409 ``already_terminal``)."""

    cancelled: bool
    id: str
    status: Optional[str]
    resolution: Optional[str]
    body: Mapping[str, Any]


@dataclass(frozen=True)
class ResolveOutcome:
    """§8.8: ``resolved`` is ``False`` when another terminal won first (the real outcome is in ``body``)."""

    resolved: bool
    id: str
    status: Optional[str]
    resolution_id: Optional[str]
    body: Mapping[str, Any]
