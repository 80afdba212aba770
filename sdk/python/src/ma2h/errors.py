"""Typed exceptions: configuration, transport, every §8.5 Hub error code, verification failures.

A Hub error is raised as the :class:`HubError` subclass of its ``code`` (§8.5 table plus the
Hub's ``request_timeout``). An unrecognized code is read as the base code of its status class —
the §8.5 unknown-code fallback: additive codes refine a class, they never replace it — while the
exception keeps the code the Hub actually sent in :attr:`HubError.code`.

``session_closed_by_operator`` (403 on registration, 410 on an own-session touchpoint, §16.3,
§16.4.1) is :class:`SessionClosedByOperator`, which is also a :class:`StoppedByOperator`: the
required action is **stop; do not retry; do not re-register; surface it to a human**.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
    "MA2HError",
    "ConfigError",
    "TransportError",
    "ProtocolError",
    "MisrouteError",
    "WaitTimeout",
    "SignatureError",
    "StateError",
    "StoppedByOperator",
    "SessionEnded",
    "SessionUnknown",
    "LeaseClosed",
    "HubError",
    "ValidationError",
    "VersionNotSupported",
    "Unauthenticated",
    "AgentIdMismatch",
    "NotAuthorized",
    "SessionClosedByOperator",
    "NotFound",
    "RequestTimeout",
    "IdempotencyConflict",
    "AlreadyTerminal",
    "NotAcknowledgeable",
    "Gone",
    "DestinationGone",
    "InvalidField",
    "UnknownDestination",
    "RateLimited",
    "InternalError",
    "STOPPED_BY_OPERATOR",
]

#: The §8.5 code of an operator stop (§16.3, §16.4.1).
STOPPED_BY_OPERATOR = "session_closed_by_operator"


class MA2HError(Exception):
    """Base class of every error this SDK raises."""


class ConfigError(MA2HError):
    """Missing or invalid configuration (environment, arguments, keys). Nothing was sent."""


class TransportError(MA2HError):
    """The Hub could not be reached (DNS, connect, timeout), after the retry budget if any."""


class ProtocolError(MA2HError):
    """The Hub answered something this client cannot read as the answer to its request."""


class MisrouteError(ProtocolError):
    """§8.1: an addressed (``to``) submit was acked without ``destination`` — a pre-0.5 Hub put it
    in the human inbox. ``id`` is the misrouted message; ``cancelled`` says whether the SDK
    withdrew it (an ask)."""

    def __init__(self, message: str, id: str, cancelled: bool) -> None:
        super().__init__(message)
        self.id = id
        self.cancelled = cancelled


class WaitTimeout(MA2HError):
    """``Hub.wait`` gave up while the message was still open. ``body`` is the last §8.2 read."""

    def __init__(self, message: str, body: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.body = dict(body)


class SignatureError(MA2HError):
    """Verification failed: do not act on the delivery (and do not ack a mailbox entry).

    ``reason`` is one of: ``missing_header``, ``malformed_header``, ``bad_mac`` (§9.2 ``v1``
    well-formedness), ``no_keys``, ``mismatch``, ``out_of_window``, ``replay`` (a seen ``jti``),
    ``bad_body``, ``bad_shape`` (§13.4 shape gate), ``not_for_me`` (addressee check),
    ``needs_session``, ``unknown_kind``, ``sender_not_allowed`` (§13.4 authorization policy),
    ``cache`` (the replay cache is unusable — fail closed).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StateError(MA2HError):
    """§9.3: the sealed state cannot be trusted (``reason``: ``bad_key``, ``not_sealed``,
    ``malformed``, ``tampered``). Never act on the state."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class StoppedByOperator(MA2HError):
    """The account's human stopped this agent (§16.3, §16.4.1). Do not retry or re-register;
    surface it to a human, who alone can lift the stop. ``session`` names the session the stop was
    met on (if any); ``cause`` is the Hub's error when this one is a latched repeat."""

    def __init__(self, message: str, session: Optional[str] = None, cause: Optional[BaseException] = None) -> None:
        super().__init__(message)
        self.session = session
        self.cause = cause


class SessionEnded(MA2HError):
    """The session expired or was closed by its owner (410 ``gone``/``destination_gone``):
    register a new session and continue (§16.3)."""

    def __init__(self, message: str, session: str, cause: Optional["HubError"] = None) -> None:
        super().__init__(message)
        self.session = session
        self.cause = cause


class SessionUnknown(SessionEnded):
    """The Hub does not know the session for this agent (404, or 422 on a submit): never its own,
    or ended and purged — the §16.3 self-heal is to register a new one."""


class LeaseClosed(MA2HError):
    """The :class:`~ma2h.session.SessionLease` was closed; it registers nothing more."""


class HubError(MA2HError):
    """A §8.5 error envelope ``{"error": {"code", "message"}}`` and its HTTP status."""

    #: The base code this class stands for (the §8.5 fallback target).
    base_code = "internal_error"

    def __init__(
        self, status: int, code: str, message: str, body: Any = None, retry_after: Optional[float] = None
    ) -> None:
        super().__init__(f"hub error {status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        #: The whole body (a 409 ``already_terminal`` also carries ``{id, status, resolution}``).
        self.body = body
        #: Seconds from ``Retry-After`` (429), when the Hub sent one.
        self.retry_after = retry_after

    @staticmethod
    def from_response(status: int, body: bytes, retry_after: Optional[float] = None) -> "HubError":
        """Parse an error response into the subclass of its code (§8.5 fallback for unknown codes)."""
        try:
            parsed: Any = json.loads(body.decode("utf-8")) if body else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        err = parsed.get("error") if isinstance(parsed, dict) else None
        code = err.get("code") if isinstance(err, dict) else None
        message = err.get("message") if isinstance(err, dict) else None
        if not isinstance(code, str) or not code:
            code = _BASE_BY_STATUS.get(status, "internal_error")
        if not isinstance(message, str):
            message = f"HTTP {status}"
        cls = _BY_CODE.get((status, code)) or _BY_CODE_ANY.get(code)
        if cls is None or (cls.statuses and status not in cls.statuses):
            cls = _BY_STATUS.get(status, InternalError if status >= 500 else HubError)
        return cls(status, code, message, parsed, retry_after)

    statuses: "tuple[int, ...]" = ()


class ValidationError(HubError):
    """400: the envelope is malformed."""

    base_code = "validation_error"
    statuses = (400,)


class VersionNotSupported(ValidationError):
    """400: unknown major ``ma2h_version`` (§10)."""

    base_code = "version_not_supported"


class Unauthenticated(HubError):
    """401: missing, invalid or revoked credential."""

    base_code = "unauthenticated"
    statuses = (401,)


class NotAuthorized(HubError):
    """403: this credential may not do that (e.g. not in ``allowed_resolvers``, §9.1)."""

    base_code = "not_authorized"
    statuses = (403,)


class AgentIdMismatch(NotAuthorized):
    """403: the envelope's ``agent.id`` is not the credential's (§9.1)."""

    base_code = "agent_id_mismatch"


class NotFound(HubError):
    """404: unknown id (or another principal's — indistinguishable, §9.1)."""

    base_code = "not_found"
    statuses = (404,)


class RequestTimeout(HubError):
    """408: the request body was not sent in time (a Hub extension)."""

    base_code = "request_timeout"
    statuses = (408,)


class IdempotencyConflict(HubError):
    """409: the idempotency key was used with a different payload (§8.1)."""

    base_code = "idempotency_conflict"
    statuses = (409,)


class AlreadyTerminal(HubError):
    """409: another terminal won first; ``body`` carries ``{id, status, resolution}`` (§8.4, §8.8)."""

    base_code = "already_terminal"
    statuses = (409,)


class NotAcknowledgeable(HubError):
    """409: the message cannot be acknowledged yet (§14.3)."""

    base_code = "not_acknowledgeable"
    statuses = (409,)


class Gone(HubError):
    """410: the message was deleted / retention passed, or a presented session ended (§8.2, §16.3)."""

    base_code = "gone"
    statuses = (410,)


class DestinationGone(Gone):
    """410: ``to`` or ``agent.session`` names an own-but-terminal session (§4, §16.3)."""

    base_code = "destination_gone"


class SessionClosedByOperator(HubError, StoppedByOperator):
    """403/410 ``session_closed_by_operator``: the operator's kill-switch or durable stop."""

    base_code = STOPPED_BY_OPERATOR
    statuses = (403, 410)


class InvalidField(HubError):
    """422: a field was rejected; the message (and ``error.fields``) name it."""

    base_code = "invalid_field"
    statuses = (422,)


class UnknownDestination(InvalidField):
    """422: ``to`` names no reachable agent or session (§4, §8.0)."""

    base_code = "unknown_destination"


class RateLimited(HubError):
    """429: over a published limit; ``retry_after`` holds the Hub's ``Retry-After`` (§8.6)."""

    base_code = "rate_limited"
    statuses = (429,)


class InternalError(HubError):
    """5xx: the Hub failed; retry later."""

    base_code = "internal_error"


_ALL: "tuple[Type[HubError], ...]" = (
    ValidationError,
    VersionNotSupported,
    Unauthenticated,
    NotAuthorized,
    AgentIdMismatch,
    NotFound,
    RequestTimeout,
    IdempotencyConflict,
    AlreadyTerminal,
    NotAcknowledgeable,
    Gone,
    DestinationGone,
    SessionClosedByOperator,
    InvalidField,
    UnknownDestination,
    RateLimited,
)
_BY_CODE_ANY: Dict[str, Type[HubError]] = {c.base_code: c for c in _ALL}
_BY_CODE: Dict["tuple[int, str]", Type[HubError]] = {(s, c.base_code): c for c in _ALL for s in c.statuses}
_BASE_BY_STATUS: Dict[int, str] = {
    400: "validation_error",
    401: "unauthenticated",
    403: "not_authorized",
    404: "not_found",
    408: "request_timeout",
    409: "already_terminal",
    410: "gone",
    422: "invalid_field",
    429: "rate_limited",
}
_BY_STATUS: Dict[int, Type[HubError]] = {
    400: ValidationError,
    401: Unauthenticated,
    403: NotAuthorized,
    404: NotFound,
    408: RequestTimeout,
    409: HubError,
    410: Gone,
    422: InvalidField,
    429: RateLimited,
}
