"""Builders for the three verbs (§4–§5): ``notify``, ``ask`` (select / confirm / input), ``task``.

A built :class:`~ma2h.messages.Message` is a finished envelope: ``created_at`` is stamped and an
ask/task gets a random ``idempotency_key`` at build time, so submitting the same ``Message`` again
— after a lost ack, a crash, a retry — is the **same** submit and returns the original ack
(§8.1). The rules the client can check locally (§5.2 mode rules, a notify carrying no request
fields) fail here, before anything is sent; the Hub remains the authority on everything else.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from .errors import ConfigError
from .messages import (
    _MODES,
    _PRIORITIES,
    MA2H_VERSION,
    UNSET,
    AgentRef,
    Callback,
    Message,
    Option,
    OptionLike,
    random_token,
    rfc3339,
)

__all__ = ["build_notify", "build_ask", "build_task"]

_UNSET = UNSET


def _option(o: OptionLike) -> Dict[str, Any]:
    if isinstance(o, Option):
        return o.to_json()
    if isinstance(o, str):
        return {"value": o, "label": o}
    if isinstance(o, tuple) and len(o) == 2:
        return {"value": o[0], "label": o[1]}
    if isinstance(o, Mapping) and isinstance(o.get("value"), str):
        return dict(o) if "label" in o else {**o, "label": o["value"]}
    raise ConfigError(f"not an option: {o!r}")


def _common(
    kind: str,
    agent: AgentRef,
    title: str,
    *,
    body: Optional[str],
    priority: Optional[str],
    tags: Iterable[str],
    context: Iterable[Mapping[str, Any]],
    sensitive: Optional[bool],
    to: Optional[str],
    session: Optional[str],
    created_at: Optional[datetime],
    client_ref: Optional[str],
    extra: Optional[Mapping[str, Any]],
) -> Dict[str, Any]:
    if not isinstance(title, str) or not title.strip():
        raise ConfigError("a message needs a non-empty title (§4)")
    if priority is not None and priority not in _PRIORITIES:
        raise ConfigError(f"priority must be one of {', '.join(_PRIORITIES)}")
    env: Dict[str, Any] = {
        "ma2h_version": MA2H_VERSION,
        "type": kind,
        "created_at": rfc3339(created_at or datetime.now(timezone.utc)),
        "agent": agent.to_json(session),
        "title": title,
    }
    for key, value in (
        ("body", body),
        ("priority", priority),
        ("to", to),
        ("client_ref", client_ref),
        ("sensitive", sensitive),
    ):
        if value is not None:
            env[key] = value
    tag_list = list(tags)
    if tag_list:
        env["tags"] = tag_list
    parts = [dict(p) for p in context]
    if parts:
        env["context"] = parts
    for key, value in (extra or {}).items():
        env[key] = value
    return env


def _expiry(env: Dict[str, Any], expires_at: Optional[datetime], expires_in: Optional[float]) -> None:
    if expires_at is not None and expires_in is not None:
        raise ConfigError("give expires_at or expires_in, not both")
    if expires_in is not None:
        expires_at = datetime.now(timezone.utc) + timedelta(seconds=expires_in)
        # Round up to the whole second rfc3339() keeps: truncating would leave expires_in=1 as
        # little as a few milliseconds of life, and the Hub refuses a past expires_at (422).
        if expires_at.microsecond:
            expires_at = expires_at.replace(microsecond=0) + timedelta(seconds=1)
    if expires_at is not None:
        env["expires_at"] = rfc3339(expires_at)


def build_notify(
    agent: AgentRef,
    title: str,
    *,
    body: Optional[str] = None,
    priority: Optional[str] = None,
    tags: Iterable[str] = (),
    context: Iterable[Mapping[str, Any]] = (),
    sensitive: Optional[bool] = None,
    to: Optional[str] = None,
    session: Optional[str] = None,
    created_at: Optional[datetime] = None,
    client_ref: Optional[str] = None,
    expires_at: Optional[datetime] = None,
    expires_in: Optional[float] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> Message:
    """§5.1: informational, no Response."""
    env = _common(
        "notify",
        agent,
        title,
        body=body,
        priority=priority,
        tags=tags,
        context=context,
        sensitive=sensitive,
        to=to,
        session=session,
        created_at=created_at,
        client_ref=client_ref,
        extra=extra,
    )
    _expiry(env, expires_at, expires_in)
    return Message(env)


def _resolvable(
    env: Dict[str, Any],
    block: Dict[str, Any],
    *,
    allowed_resolvers: Sequence[str],
    callback: Optional[Callback],
    state: Any,
    idempotency_key: Optional[str],
    expires_at: Optional[datetime],
    expires_in: Optional[float],
) -> None:
    if allowed_resolvers:
        block["allowed_resolvers"] = list(allowed_resolvers)
    if callback is not None:
        block["callback"] = callback.to_json()
    if state is not _UNSET:
        env["state"] = state
    env["idempotency_key"] = idempotency_key or f"ma2h-{random_token(16)}"
    _expiry(env, expires_at, expires_in)


def build_ask(
    agent: AgentRef,
    title: str,
    *,
    mode: Optional[str] = None,
    options: Sequence[OptionLike] = (),
    schema: Optional[Mapping[str, Any]] = None,
    default_on_expire: Any = _UNSET,
    permissions: Optional[Mapping[str, Any]] = None,
    allowed_resolvers: Sequence[str] = (),
    callback: Optional[Callback] = None,
    state: Any = _UNSET,
    idempotency_key: Optional[str] = None,
    expires_at: Optional[datetime] = None,
    expires_in: Optional[float] = None,
    body: Optional[str] = None,
    priority: Optional[str] = None,
    tags: Iterable[str] = (),
    context: Iterable[Mapping[str, Any]] = (),
    sensitive: Optional[bool] = None,
    to: Optional[str] = None,
    session: Optional[str] = None,
    created_at: Optional[datetime] = None,
    client_ref: Optional[str] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> Message:
    """§5.2: a decision. ``mode`` defaults to ``select`` with options, ``input`` with a schema,
    else ``confirm``. ``state`` is placed as given — seal it first (``Hub.ask`` does)."""
    opts = [_option(o) for o in options]
    mode = mode or ("select" if opts else "input" if schema is not None else "confirm")
    if mode not in _MODES:
        raise ConfigError(f"mode must be one of {', '.join(_MODES)}")
    if mode == "select" and not opts:
        raise ConfigError("an ask in select mode needs at least one option (§5.2)")
    if mode == "confirm" and len(opts) not in (0, 2):
        raise ConfigError(f"confirm takes no options or exactly two, got {len(opts)} (§5.2)")
    if mode == "input" and schema is None:
        raise ConfigError("an ask in input mode needs a schema (§5.2)")
    env = _common(
        "ask",
        agent,
        title,
        body=body,
        priority=priority,
        tags=tags,
        context=context,
        sensitive=sensitive,
        to=to,
        session=session,
        created_at=created_at,
        client_ref=client_ref,
        extra=extra,
    )
    request: Dict[str, Any] = {"mode": mode}
    if opts:
        request["options"] = opts
    if schema is not None:
        request["schema"] = dict(schema)
    if permissions is not None:
        request["permissions"] = dict(permissions)
    if default_on_expire is not _UNSET:
        request["default_on_expire"] = default_on_expire
    _resolvable(
        env,
        request,
        allowed_resolvers=allowed_resolvers,
        callback=callback,
        state=state,
        idempotency_key=idempotency_key,
        expires_at=expires_at,
        expires_in=expires_in,
    )
    env["request"] = request
    return Message(env)


def build_task(
    agent: AgentRef,
    title: str,
    instructions: str,
    *,
    checklist: Sequence[str] = (),
    verification: Optional[str] = None,
    allowed_resolvers: Sequence[str] = (),
    callback: Optional[Callback] = None,
    state: Any = _UNSET,
    idempotency_key: Optional[str] = None,
    expires_at: Optional[datetime] = None,
    expires_in: Optional[float] = None,
    body: Optional[str] = None,
    priority: Optional[str] = None,
    tags: Iterable[str] = (),
    context: Iterable[Mapping[str, Any]] = (),
    sensitive: Optional[bool] = None,
    to: Optional[str] = None,
    session: Optional[str] = None,
    created_at: Optional[datetime] = None,
    client_ref: Optional[str] = None,
    extra: Optional[Mapping[str, Any]] = None,
) -> Message:
    """§5.3: a manual action for a human."""
    if not isinstance(instructions, str) or not instructions.strip():
        raise ConfigError("a task needs instructions (§5.3)")
    env = _common(
        "task",
        agent,
        title,
        body=body,
        priority=priority,
        tags=tags,
        context=context,
        sensitive=sensitive,
        to=to,
        session=session,
        created_at=created_at,
        client_ref=client_ref,
        extra=extra,
    )
    action: Dict[str, Any] = {"instructions": instructions}
    items: List[Dict[str, Any]] = [{"text": t, "done": False} for t in checklist]
    if items:
        action["checklist"] = items
    if verification is not None:
        action["verification"] = verification
    _resolvable(
        env,
        action,
        allowed_resolvers=allowed_resolvers,
        callback=callback,
        state=state,
        idempotency_key=idempotency_key,
        expires_at=expires_at,
        expires_in=expires_in,
    )
    env["action"] = action
    return Message(env)
