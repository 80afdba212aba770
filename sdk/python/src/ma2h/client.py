"""The agent's Hub client: discovery (§8.0), submit (§8.1), read and long-poll (§8.2), cancel
(§8.4), resolve (§8.8), the response-leg ack (§14.3), push verification (§9.2), plus the mailbox
(:mod:`ma2h.inbox`) and sessions (:mod:`ma2h.session`).

Submit follows the §8.1 lost-ack recipe: the same bytes (same ``idempotency_key``) are re-sent on a
network error or a 5xx until a 202 or a 409 is observed; a 429 waits out ``Retry-After`` (§8.6)
and is never retried at once. Everything else is final.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import seal as _seal
from ._base import HubBase, RetryPolicy
from ._transport import quote
from .builders import build_ask, build_notify, build_task
from .errors import (
    AlreadyTerminal,
    ConfigError,
    HubError,
    MA2HError,
    MisrouteError,
    ProtocolError,
    TransportError,
    WaitTimeout,
)
from .inbox import InboxMixin
from .messages import UNSET as _UNSET
from .messages import Callback, Message, OptionLike, random_token
from .replay import ReplayCache
from .results import Ack, CancelOutcome, ResolveOutcome
from .seal import StateKey, seal
from .session import SessionMixin
from .signature import Ed25519Key, keys_from_capability
from .verify import CallbackVerifier, Resolution, known_response_fields

__all__ = ["Hub", "Ack", "CancelOutcome", "ResolveOutcome", "RetryPolicy"]

_OPEN = ("open", "queued")


def _check_id(id: str) -> str:
    if (
        not isinstance(id, str)
        or id in ("", ".", "..")
        or len(id) > 512
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in id)
    ):
        raise ConfigError(f"{id!r} is not a message id (msg_…)")
    return id


def _env_list(name: str) -> List[str]:
    return [v.strip() for v in os.environ.get(name, "").split(",") if v.strip()]


class Hub(InboxMixin, SessionMixin, HubBase):
    """A client bound to one agent credential (``Hub(url, key, agent_id, signing_secret, hub_public_keys,
    …)`` or :meth:`from_env`); the options are documented on :class:`ma2h._base.HubBase`.

    Agent-facing calls: :meth:`discover`, :meth:`notify`/:meth:`ask`/:meth:`task` + :meth:`submit`,
    :meth:`get`, :meth:`wait`, :meth:`cancel`, :meth:`resolve`, :meth:`ack_response`,
    :meth:`verify_callback`; the mailbox (:meth:`drain`, :meth:`ack`); sessions
    (:meth:`register_session`, :meth:`renew_session`, :meth:`list_sessions`, :meth:`close_session`,
    :meth:`lease`)."""

    @classmethod
    def from_env(cls, **overrides: Any) -> "Hub":
        """From ``MA2H_HUB_URL``, ``MA2H_API_KEY``, ``MA2H_AGENT_ID``, ``MA2H_SIGNING_SECRET``,
        ``MA2H_STATE_KEY``, ``MA2H_RESOLVERS``, ``MA2H_RUN_ID``, ``MA2H_CALLBACK_URL``,
        ``MA2H_CALLBACK_SECRET`` (+``_PREVIOUS``), ``MA2H_ACCEPT_FROM`` and ``MA2H_STATE_DIR`` (a
        persistent replay cache, shared with the Rust CLI). Keyword arguments win."""

        def env(name: str) -> Optional[str]:
            return os.environ.get(name, "").strip() or None

        options: Dict[str, Any] = {
            "url": env("MA2H_HUB_URL") or "",
            "key": env("MA2H_API_KEY") or "",
            "agent_id": env("MA2H_AGENT_ID"),
            "signing_secret": env("MA2H_SIGNING_SECRET"),
            "state_key": env("MA2H_STATE_KEY"),
            "resolvers": _env_list("MA2H_RESOLVERS"),
            "run_id": env("MA2H_RUN_ID") or env("GITHUB_RUN_ID"),
            "callback_url": env("MA2H_CALLBACK_URL"),
            "callback_secrets": [s for s in (env("MA2H_CALLBACK_SECRET"), env("MA2H_CALLBACK_SECRET_PREVIOUS")) if s],
        }
        if env("MA2H_ACCEPT_FROM"):
            options["accept_from"] = _env_list("MA2H_ACCEPT_FROM")
        if env("MA2H_STATE_DIR"):
            options["replay_cache"] = ReplayCache(env("MA2H_STATE_DIR"))
        options.update(overrides)
        return cls(**options)

    # -- §8.0 -------------------------------------------------------------------------------------
    def discover(self) -> Dict[str, Any]:
        """``GET /.well-known/ma2h``: the capability document (kept in :attr:`capability`)."""
        reply = self._request("GET", "/.well-known/ma2h", auth=False)
        if reply.status != 200:
            raise self._error(reply)
        doc = self._json(reply)
        if not isinstance(doc, dict) or not isinstance(doc.get("ma2h_version"), str):
            raise ProtocolError("the capability document has no ma2h_version")
        self.capability = doc
        return doc

    def trust_published_keys(self) -> List[Ed25519Key]:
        """Add the Hub's published Ed25519 keys (``signing_keys``, current and previous) to the
        verification keys — for agents the operator switched to ``ed25519`` signing."""
        keys = [k for k in keys_from_capability(self.discover()) if k not in self.keys]
        self.keys.extend(keys)
        return keys

    # -- builders (§4–§5) -------------------------------------------------------------------------
    def _state(self, state: Any, seal_state: bool) -> Any:
        if state is _UNSET or not seal_state:
            return state
        if self.state_key is None:
            raise ConfigError("state is sealed with MA2H_STATE_KEY (§9.3); set state_key, or pass seal=False")
        return seal(self.state_key, self.require_agent_id(), state)

    def _resolvers(self, given: Optional[Sequence[str]], fields: Mapping[str, Any]) -> Sequence[str]:
        if given is not None:
            return given
        return () if fields.get("to") else self.resolvers

    def notify(self, title: str, **fields: Any) -> Message:
        """A §5.1 notify for this agent (fields: :func:`ma2h.builders.build_notify`)."""
        return build_notify(self.agent, title, **fields)

    def ask(
        self,
        title: str,
        *,
        options: Sequence[OptionLike] = (),
        state: Any = _UNSET,
        seal: bool = True,
        allowed_resolvers: Optional[Sequence[str]] = None,
        callback: Optional[Callback] = None,
        **fields: Any,
    ) -> Message:
        """A §5.2 ask; ``state`` is sealed with the state key unless ``seal=False``; resolvers
        default to ``MA2H_RESOLVERS`` (absent, only the agent itself may answer, §9.1) — except
        for an addressed ask (``to=``), whose default resolver is its addressee (§9.1, v0.5)."""
        resolvers = self._resolvers(allowed_resolvers, fields)
        return build_ask(
            self.agent,
            title,
            options=options,
            state=self._state(state, seal),
            allowed_resolvers=resolvers,
            callback=callback,
            **fields,
        )

    def task(
        self,
        title: str,
        instructions: str,
        *,
        state: Any = _UNSET,
        seal: bool = True,
        allowed_resolvers: Optional[Sequence[str]] = None,
        **fields: Any,
    ) -> Message:
        """A §5.3 task (state and resolvers as :meth:`ask`)."""
        resolvers = self._resolvers(allowed_resolvers, fields)
        return build_task(
            self.agent, title, instructions, state=self._state(state, seal), allowed_resolvers=resolvers, **fields
        )

    # -- §8.1 ---------------------------------------------------------------------------------------
    def submit(self, message: Union[Message, Mapping[str, Any]]) -> Ack:
        """``POST /v1/messages`` with the §8.1 lost-ack recipe and §8.6 ``Retry-After`` handling."""
        msg = message if isinstance(message, Message) else Message(message)
        env = msg.envelope
        if env["type"] != "notify" and not isinstance(env.get("idempotency_key"), str):
            env["idempotency_key"] = f"ma2h-{random_token(16)}"
        data = Message(env).to_bytes()
        started, attempt = time.monotonic(), 0
        while True:
            attempt += 1
            try:
                reply = self._request("POST", "/v1/messages", data)
            except TransportError as e:
                err: MA2HError = e
                delay = self.retry.backoff(attempt)
            else:
                if reply.status in (200, 202):
                    return self._ack(reply, env, attempt)
                err = self._error(reply)
                if reply.status == 429:
                    delay = reply.retry_after if reply.retry_after is not None else self.retry.backoff(attempt)
                elif reply.status >= 500:
                    delay = self.retry.backoff(attempt)
                else:
                    raise err  # 409 included: final (§8.1 stops at 202 or 409)
            if attempt >= self.retry.max_attempts or time.monotonic() - started + delay > self.retry.max_total:
                raise err
            self._sleep(delay)

    def _ack(self, reply: Any, env: Mapping[str, Any], attempts: int) -> Ack:
        raw = self._json(reply)
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("status"), str):
            raise ProtocolError("the Hub's answer to a submit is not a §8.1 ack")
        destination = raw.get("destination")
        ack = Ack(
            id=raw["id"],
            status=raw["status"],
            poll_url=raw.get("poll_url"),
            review_url=raw.get("review_url"),
            idempotency_key=env.get("idempotency_key"),
            attempts=attempts,
            destination=destination if isinstance(destination, dict) else None,
            raw=raw,
        )
        if "to" in env and ack.destination is None:
            # §8.1: a `to` acked without `destination` was routed by a pre-0.5 Hub to the human inbox.
            cancelled = False
            if env["type"] == "ask":
                try:
                    cancelled = self.cancel(ack.id).cancelled
                except MA2HError:
                    cancelled = False
            raise MisrouteError(
                f"the Hub did not route `to` for {ack.id} (no destination in the ack)", ack.id, cancelled
            )
        return ack

    # -- §8.2 ---------------------------------------------------------------------------------------
    def get(self, id: str, wait: Optional[int] = None) -> Dict[str, Any]:
        """``GET /v1/messages/{id}[?wait=s]``: the message, its status and, once terminal, its Response."""
        path = f"/v1/messages/{quote(_check_id(id))}"
        if wait:
            path += f"?wait={int(wait)}"
        reply = self._request("GET", path, timeout=(wait or 0) + self.request_timeout)
        if reply.status != 200:
            raise self._error(reply)
        body = self._json(reply)
        status = body.get("status") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("id") != id or not isinstance(status, str):
            raise ProtocolError(f"the answer to a read of {id} is not that message")
        if body.get("type") != "notify" and status not in _OPEN and not isinstance(body.get("response"), dict):
            raise ProtocolError(f"{id} reads as terminal without its response")
        return body

    def resolution_of(self, body: Mapping[str, Any]) -> Resolution:
        """The §6 Response of a terminal §8.2 body, checked against its message and deduplicated
        against pushes and mailbox entries (a pull is trusted via transport, §9.2)."""
        response = body.get("response")
        if not isinstance(response, dict):
            raise ProtocolError(f"{body.get('id')} has no Response yet (status {body.get('status')})")
        in_reply_to, resolution_id, resolution = (
            response.get("in_reply_to"),
            response.get("resolution_id"),
            response.get("resolution"),
        )
        if (
            not isinstance(in_reply_to, str)
            or in_reply_to != body.get("id")
            or not isinstance(resolution_id, str)
            or not isinstance(resolution, str)
        ):
            raise ProtocolError(f"the Response embedded in {body.get('id')} is not its own")
        new = self.replay_cache.mark_resolution(in_reply_to, resolution_id, self.now())
        return Resolution(
            in_reply_to=in_reply_to,
            resolution_id=resolution_id,
            resolution=resolution,
            body=known_response_fields(response),
            channel="pull",
            duplicate=not new,
        )

    def wait(
        self, id: str, timeout: Optional[float] = None, on_status: Optional[Callable[[Mapping[str, Any]], None]] = None
    ) -> Resolution:
        """Long-poll until the ask/task is terminal; raises :class:`WaitTimeout` after ``timeout``
        seconds (``None``: no limit). Transient failures are retried up to the retry policy."""
        deadline = None if timeout is None else time.monotonic() + timeout
        failures = 0
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            poll = self.long_poll_max if remaining is None else min(self.long_poll_max, int(-(-remaining // 1)))
            try:
                body = self.get(id, wait=poll)
            except (TransportError, HubError) as e:
                status = getattr(e, "status", 0)
                if isinstance(e, HubError) and status != 429 and status < 500:
                    raise
                failures += 1
                if failures >= self.retry.max_attempts:
                    raise
                retry_after = getattr(e, "retry_after", None)
                self._sleep(retry_after if status == 429 and retry_after is not None else self.retry.backoff(failures))
                continue
            failures = 0
            if on_status is not None:
                on_status(body)
            if body.get("type") == "notify":
                raise ConfigError(f"{id} is a notify: it has no Response to wait for")
            if body["status"] not in _OPEN:
                return self.resolution_of(body)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(f"{id} is still {body['status']} after {timeout}s", body)

    # -- §8.4, §8.8, §14.3 ---------------------------------------------------------------------------
    def cancel(self, id: str) -> CancelOutcome:
        """``POST /v1/messages/{id}/cancel``; idempotent. A different terminal is not an error."""
        reply = self._request("POST", f"/v1/messages/{quote(_check_id(id))}/cancel", {})
        if reply.status == 200:
            body = self._json(reply)
            if not isinstance(body, dict) or body.get("id") != id or body.get("status") != "cancelled":
                raise ProtocolError(f"the answer to a cancel of {id} is not its cancellation")
            return CancelOutcome(True, id, "cancelled", "cancelled", body)
        err = self._error(reply)
        if isinstance(err, AlreadyTerminal) and isinstance(err.body, dict):
            return CancelOutcome(False, id, err.body.get("status"), err.body.get("resolution"), err.body)
        raise err

    def resolve(
        self,
        id: str,
        resolution: str,
        value: Any = _UNSET,
        *,
        comment: Optional[str] = None,
        checklist: Optional[Sequence[Mapping[str, Any]]] = None,
        session: Optional[str] = None,
    ) -> ResolveOutcome:
        """``POST /v1/messages/{id}/resolve[?session=…]`` (§8.8) as an agent resolver. Not retried:
        a lost answer is recovered by reading the message, and a repeat meets ``already_terminal``."""
        body: Dict[str, Any] = {"resolution": resolution}
        if value is not _UNSET:
            body["value"] = value
        if comment is not None:
            body["comment"] = comment
        if checklist is not None:
            body["checklist"] = [dict(c) for c in checklist]
        path = f"/v1/messages/{quote(_check_id(id))}/resolve"
        if session:
            path += f"?session={quote(session)}"
        reply = self._request("POST", path, body)
        if reply.status == 200:
            out = self._json(reply)
            if not isinstance(out, dict):
                raise ProtocolError(f"the answer to a resolve of {id} is not an object")
            return ResolveOutcome(True, id, out.get("status"), out.get("resolution_id"), out)
        err = self._error(reply)
        if isinstance(err, AlreadyTerminal) and isinstance(err.body, dict):
            return ResolveOutcome(False, id, err.body.get("status"), None, err.body)
        raise err

    def ack_response(self, id: str, note: Optional[str] = None, resolution_id: Optional[str] = None) -> Dict[str, Any]:
        """``POST /v1/messages/{id}/ack`` (§14.3): tell the human the answer arrived."""
        body = {k: v for k, v in (("note", note), ("resolution_id", resolution_id)) if v is not None}
        reply = self._request("POST", f"/v1/messages/{quote(_check_id(id))}/ack", body)
        if reply.status != 200:
            raise self._error(reply)
        out = self._json(reply)
        if not isinstance(out, dict):
            raise ProtocolError("the ack answer is not an object")
        return out

    # -- §9.2 ---------------------------------------------------------------------------------------
    def verify_callback(
        self, headers: Any, body: Union[bytes, str], callback_url: Optional[str] = None, now: Optional[int] = None
    ) -> Resolution:
        """Verify a pushed Response (see :mod:`ma2h.verify`); ``callback_url`` defaults to the one
        configured (``MA2H_CALLBACK_URL``). Raises :class:`~ma2h.errors.SignatureError`."""
        url = callback_url or self.callback_url
        if not url:
            raise ConfigError("verify_callback needs the receiver's own callback URL (MA2H_CALLBACK_URL)")
        verifier = CallbackVerifier(url, self.keys, self.replay_cache, self.window_secs)
        return verifier.verify(headers, body, self.now() if now is None else now)

    def seal_state(self, state: Any) -> Dict[str, Any]:
        """§9.3: seal ``state`` with this agent's state key."""
        if self.state_key is None:
            raise ConfigError("no state key (MA2H_STATE_KEY)")
        return seal(self.state_key, self.require_agent_id(), state)

    def open_state(self, sealed: Any) -> Any:
        """§9.3: verify and open a sealed state; raises :class:`~ma2h.errors.StateError`."""
        if not isinstance(self.state_key, StateKey):
            raise ConfigError("no state key (MA2H_STATE_KEY)")
        return _seal.open(self.state_key, self.require_agent_id(), sealed)
