"""§16 sessions: register, list, read, close — and :class:`SessionLease`, a session kept alive by use.

A session is a Hub-minted, lease-bound address ``agent:<id>#sess_…`` under the agent's one
credential. Only client traffic that **presents** it renews the lease (§16.2): a drain or ack
with ``?session=``, a resolve with ``?session=``, a submit whose ``agent.session`` names it. There
is no heartbeat: a lease presents its session on every call it makes.

How a session ends decides what its owner must do (§16.3, §16.4.1):

=====================================================  ==============================================
the Hub says                                            a :class:`SessionLease`…
=====================================================  ==============================================
410 ``gone`` / ``destination_gone`` (expired, closed)   registers a new session and retries once
404 (presenting) / 422 (submit) for its own session     the same (the §16.3 self-heal)
403 or 410 ``session_closed_by_operator``               latches the stop, raises
                                                        :class:`~ma2h.errors.StoppedByOperator`, and
                                                        never calls the Hub again — in particular it
                                                        never re-registers (§16.4.1 hard stop)
=====================================================  ==============================================
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Tuple, TypeVar, Union

from ._base import HubBase
from ._transport import quote
from .errors import HubError, LeaseClosed, MA2HError, ProtocolError, SessionEnded, SessionUnknown, StoppedByOperator

if TYPE_CHECKING:
    from .client import Hub
    from .entries import DrainResult
    from .messages import Message
    from .results import Ack, ResolveOutcome

__all__ = ["Session", "SessionList", "SessionMixin", "SessionLease"]

T = TypeVar("T")


@dataclass(frozen=True)
class Session:
    """A session resource (``session.schema.json``); times are RFC 3339 strings as sent."""

    id: str
    agent_id: str
    state: str  #: ``active``, ``closed`` or ``expired`` (an unknown state reads as not live)
    created_at: str
    expires_at: str  #: as of this read; presenting the session moves it
    ttl_seconds: Optional[int] = None
    closed_by_operator: bool = False  #: true-only on the wire (§16.4)
    last_seen: Optional[str] = None
    closed_at: Optional[str] = None
    label: Optional[str] = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, v: Any) -> "Session":
        if not isinstance(v, dict):
            raise ProtocolError("a session is not a JSON object")

        def s(key: str) -> Optional[str]:
            value = v.get(key)
            return value if isinstance(value, str) else None

        sid, agent_id, state, created, expires = s("id"), s("agent_id"), s("state"), s("created_at"), s("expires_at")
        if not sid or not sid.startswith("sess_") or not agent_id or not state or not created or not expires:
            raise ProtocolError("not a session resource (id sess_…, agent_id, state, created_at, expires_at)")
        ttl = v.get("ttl_seconds")
        return cls(
            id=sid,
            agent_id=agent_id,
            state=state,
            created_at=created,
            expires_at=expires,
            ttl_seconds=ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None,
            closed_by_operator=v.get("closed_by_operator") is True,
            last_seen=s("last_seen"),
            closed_at=s("closed_at"),
            label=s("label"),
            raw=v,
        )

    @classmethod
    def from_envelope(cls, body: Any) -> "Session":
        if not isinstance(body, dict) or "session" not in body:
            raise ProtocolError("the answer has no `session`")
        return cls.from_json(body["session"])

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @property
    def address(self) -> str:
        return f"agent:{self.agent_id}#{self.id}"


@dataclass(frozen=True)
class SessionList:
    """``GET /v1/sessions``. ``scope`` is ``None`` when the Hub made no claim: then it is unknown
    and MUST NOT be taken for ``account`` (§16.4)."""

    sessions: List[Session]
    scope: Optional[str]


def classify_presenting(session: str, err: MA2HError) -> MA2HError:
    """The failure of a call that presented ``session`` as ``?session=`` (drain, ack): a stop,
    an ended session (410), an unknown one (404) — or the error unchanged (§8.7.1, §16.3)."""
    if isinstance(err, StoppedByOperator):
        err.session = session
        return err
    if isinstance(err, HubError) and err.status == 410:
        return SessionEnded(f"session {session} has ended ({err.code}): register a new session", session, err)
    if isinstance(err, HubError) and err.status == 404:
        return SessionUnknown(f"session {session} is unknown to this agent: register a new session", session, err)
    return err


class SessionMixin(HubBase):
    """The session half of :class:`ma2h.Hub`."""

    def register_session(
        self,
        *,
        run_id: Optional[str] = None,
        label: Optional[str] = None,
        kind: Optional[str] = None,
        project: Optional[str] = None,
        labels: Optional[Mapping[str, str]] = None,
        ttl_seconds: Optional[int] = None,
    ) -> Session:
        """``POST /v1/sessions`` (§16.1). Not retried. A stopped agent raises
        :class:`~ma2h.errors.SessionClosedByOperator` (403, a :class:`StoppedByOperator`); over the
        live-session cap :class:`~ma2h.errors.RateLimited` (with ``retry_after``)."""
        body: Dict[str, Any] = {
            k: v
            for k, v in (
                ("run_id", run_id),
                ("label", label),
                ("kind", kind),
                ("project", project),
                ("ttl_seconds", ttl_seconds),
            )
            if v is not None
        }
        if labels:
            body["labels"] = dict(labels)
        reply = self._request("POST", "/v1/sessions", body)
        if reply.status not in (200, 201):
            raise self._error(reply)
        return Session.from_envelope(self._json(reply))

    def list_sessions(self) -> SessionList:
        """``GET /v1/sessions``: this agent's sessions, live and recently ended (§16.4)."""
        reply = self._request("GET", "/v1/sessions")
        if reply.status != 200:
            raise self._error(reply)
        body = self._json(reply)
        if not isinstance(body, dict) or not isinstance(body.get("sessions"), list):
            raise ProtocolError("not a session list")
        scope = body.get("scope")
        return SessionList(
            [Session.from_json(s) for s in body["sessions"]], scope if scope in ("own", "account") else None
        )

    def get_session(self, id: str) -> Session:
        """``GET /v1/sessions/{id}``; a foreign or unknown id is :class:`~ma2h.errors.NotFound`."""
        reply = self._request("GET", f"/v1/sessions/{quote(id)}")
        if reply.status != 200:
            raise self._error(reply)
        return Session.from_envelope(self._json(reply))

    def close_session(self, id: str) -> Session:
        """``DELETE /v1/sessions/{id}`` (idempotent) → the session as it now stands."""
        reply = self._request("DELETE", f"/v1/sessions/{quote(id)}")
        if reply.status != 200:
            raise self._error(reply)
        return Session.from_envelope(self._json(reply))

    def renew_session(self, id: str) -> None:
        """Renew a session's lease without consuming anything: an empty inbox ack presenting it
        (§8.7: an ack presenting a session renews its lease; §16.2: there is no heartbeat endpoint).
        An ended session raises :class:`SessionEnded`/:class:`SessionUnknown`, a stop
        :class:`StoppedByOperator`."""
        reply = self._request("POST", f"/v1/inbox/ack?session={quote(id)}", {"ids": []})
        if reply.status != 200:
            raise classify_presenting(id, self._error(reply))

    def explain_session_error(self, session: str, err: MA2HError) -> MA2HError:
        """For a call that named ``session`` but whose error is ambiguous (a submit's 410/422 may
        be about ``to`` or a field, a resolve's 404/410 about the message): read the session and
        report it ended/unknown/stopped only when the session is what is gone."""
        if isinstance(err, StoppedByOperator):
            err.session = session
            return err
        if not isinstance(err, HubError) or err.status not in (404, 410, 422):
            return err
        try:
            current = self.get_session(session)
        except HubError as probe:
            return (
                SessionUnknown(f"session {session} is unknown to this agent", session, err)
                if probe.status == 404
                else err
            )
        except MA2HError:
            return err
        if current.closed_by_operator:
            return StoppedByOperator(f"session {session} was closed by the operator: do not re-register", session, err)
        if current.is_active:
            return err
        return SessionEnded(f"session {session} has ended ({current.state}): register a new session", session, err)

    def lease(self, **register: Any) -> "SessionLease":
        """Register a session (:meth:`register_session` arguments) and hold it."""
        return SessionLease.register(self, **register)  # type: ignore[arg-type]


class SessionLease:
    """A registered session kept alive by use (§16.2); thread-safe. Use it as a context manager
    to close it at the end. See the module docs for how ends and stops are handled."""

    def __init__(self, hub: "Hub", session: Session, request: Mapping[str, Any]) -> None:
        self.hub = hub
        self.reregister = True  #: replace an ended session transparently (else raise SessionEnded)
        self._request = dict(request)
        self._session = session
        self._previous: List[str] = []
        self._stop: Optional[StoppedByOperator] = None
        self._closed = False
        self._state = threading.Lock()
        self._renew = threading.Lock()

    @classmethod
    def register(cls, hub: "Hub", **request: Any) -> "SessionLease":
        return cls(hub, hub.register_session(**request), request)

    @property
    def id(self) -> str:
        with self._state:
            return self._session.id

    @property
    def session(self) -> Session:
        with self._state:
            return self._session

    @property
    def address(self) -> str:
        return self.session.address

    @property
    def previous_ids(self) -> List[str]:
        with self._state:
            return list(self._previous)

    @property
    def stopped(self) -> Optional[StoppedByOperator]:
        """The operator's stop, once seen (latched for good)."""
        with self._state:
            return self._stop

    def _usable(self) -> str:
        with self._state:
            if self._stop is not None:
                raise StoppedByOperator(
                    "stopped by the operator (session_closed_by_operator): this lease does not call the Hub again, "
                    "and never re-registers; a human must lift the stop",
                    self._session.id,
                    self._stop,
                )
            if self._closed:
                raise LeaseClosed("this session lease was closed")
            return self._session.id

    def _latch(self, err: BaseException) -> None:
        if isinstance(err, StoppedByOperator):
            with self._state:
                if self._stop is None:
                    self._stop = err

    def _reregister(self, failed: str) -> str:
        with self._renew:
            current = self._usable()
            if current != failed:
                return current  # a concurrent caller already replaced it
            try:
                fresh = self.hub.register_session(**self._request)
            except MA2HError as e:
                self._latch(e)
                raise
            with self._state:
                self._previous.append(self._session.id)
                self._session = fresh
                return fresh.id

    def _with_session(self, ambiguous: bool, op: Callable[[str], T]) -> Tuple[str, T]:
        sid = self._usable()
        renewed = False
        while True:
            try:
                return sid, op(sid)
            except MA2HError as e:
                err = self.hub.explain_session_error(sid, e) if ambiguous else classify_presenting(sid, e)
            self._latch(err)
            if isinstance(err, SessionEnded) and not renewed and self.reregister:
                sid = self._reregister(sid)
                renewed = True
                continue
            raise err

    def renew(self) -> str:
        """Renew the lease now (normally unnecessary: every call made through the lease renews
        it); returns the session id, which is a new one if the old session had ended."""
        return self._with_session(False, lambda s: self.hub.renew_session(s))[0]

    def drain(self, max: Optional[int] = None, wait: Optional[int] = None) -> "DrainResult":
        """Drain presenting the session; entries are verified against the session drained with."""
        sid, result = self._with_session(False, lambda s: self.hub.drain(max=max, wait=wait, session=s))
        return result

    def ack(self, ids: Any, note: Optional[str] = None) -> int:
        return self._with_session(False, lambda s: self.hub.ack(ids, note=note, session=s))[1]

    def resolve(self, id: str, resolution: str, *args: Any, **kwargs: Any) -> "ResolveOutcome":
        """Resolve as this session (the Hub attests ``agent:<id>#<sess>``, §8.8)."""
        return self._with_session(True, lambda s: self.hub.resolve(id, resolution, *args, session=s, **kwargs))[1]

    def submit(self, message: Union["Message", Mapping[str, Any]]) -> "Ack":
        """Submit with ``agent.session`` set to the current session (§4.1); the answer to an
        ask/task then also arrives as a ``response`` entry on this session's drain."""
        from .messages import Message, random_token

        msg = message if isinstance(message, Message) else Message(message)
        if msg.type != "notify" and msg.idempotency_key is None:
            env = msg.envelope  # keyed once, so a retry after re-registration is the same submit (§8.1)
            env["idempotency_key"] = f"ma2h-{random_token(16)}"
            msg = Message(env)
        return self._with_session(True, lambda s: self.hub.submit(msg.with_session(s)))[1]

    def close(self) -> Optional[Session]:
        """``DELETE`` the session and end the lease (a stopped lease just ends: no Hub call)."""
        with self._state:
            if self._closed:
                return None
            self._closed = True
            stopped = self._stop is not None
            sid = self._session.id
        if stopped:
            return None
        closed = self.hub.close_session(sid)
        with self._state:
            if self._session.id == sid:
                self._session = closed
        return closed

    def __enter__(self) -> "SessionLease":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.close()
        except MA2HError:
            if exc_type is None:
                raise
