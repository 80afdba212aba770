"""The configuration and HTTP plumbing every part of :class:`ma2h.Hub` shares."""

from __future__ import annotations

import json
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Collection, Dict, List, Optional, Sequence, Union

from ._transport import Reply, Transport, UrllibTransport
from .errors import ConfigError, HubError, ProtocolError
from .messages import AgentRef
from .replay import ReplayCache
from .seal import StateKey
from .signature import REPLAY_WINDOW_SECS, Ed25519Key, HmacKey, VerifyingKey

__all__ = ["HubBase", "RetryPolicy"]

KeyLike = Union[HmacKey, Ed25519Key, str, bytes]


@dataclass(frozen=True)
class RetryPolicy:
    """How submit and the wait loop retry transient failures (unreachable, 5xx, 429)."""

    max_attempts: int = 6  #: attempts in total, the first included
    base_delay: float = 0.5  #: first backoff in seconds; doubles per attempt
    max_delay: float = 10.0  #: cap on one backoff (a ``Retry-After`` may exceed it)
    max_total: float = 180.0  #: give up when the next attempt would start after this long

    def backoff(self, attempt: int) -> float:
        return float(min(self.base_delay * float(2 ** max(0, min(attempt - 1, 16))), self.max_delay))


def _ed25519(key: Union[Ed25519Key, str, bytes]) -> Ed25519Key:
    if isinstance(key, Ed25519Key):
        return key
    if isinstance(key, bytes):
        return Ed25519Key(key)
    return Ed25519Key.from_b64url(key)


class HubBase:
    """Holds one agent credential and the verification material; see :class:`ma2h.Hub`.

    :param url: the Hub's base URL (``MA2H_HUB_URL``).
    :param key: the agent's API key (``MA2H_API_KEY``), sent as ``Authorization: Bearer``.
    :param agent_id: the ``agent.id`` the key is scoped to — needed to build messages, verify
        mailbox entries (their ``to``) and seal state.
    :param signing_secret: the agent's Hub-issued signing secret (``MA2H_SIGNING_SECRET``): the
        HMAC key of pushes without an ``hmac`` ``secret_ref`` and of every mailbox entry.
    :param hub_public_keys: Ed25519 public keys (base64url, raw bytes or :class:`Ed25519Key`) for
        an agent the operator switched to Ed25519; see also ``Hub.trust_published_keys()``.
    :param callback_secrets: secrets registered for ``hmac`` callbacks (``secret_ref``), the
        previous one too during a rotation.
    :param callback_url: this receiver's own callback URL, as put in ``callback.url`` (§9.2).
    :param state_key: the §9.3 state key (:class:`StateKey` or its base64/hex text).
    :param replay_cache: where seen ``jti``s and deliveries are remembered (default: in memory).
    :param resolvers: default ``allowed_resolvers`` for asks and tasks (``MA2H_RESOLVERS``).
    :param accept_from: the explicit §13.4 policy of senders whose addressed asks/tasks this agent
        acts on (``"*"``: any agent of the account); ``None`` refuses them all.
    :param run_id, runtime, project: the §4.1 ``agent`` descriptor (``run_id`` defaults to random).
    :param window_secs: the replay window (±120 s, §9.2).
    :param retry: the retry policy of submit and the wait loop.
    :param request_timeout: seconds per exchange (a long-poll adds its ``wait``).
    :param long_poll_max: the longest single ``?wait=`` ``wait()`` asks for (the Hub caps it).
    :param transport, clock, sleep: injection points for tests.
    """

    def __init__(
        self,
        url: str,
        key: str,
        agent_id: Optional[str] = None,
        signing_secret: Optional[Union[str, bytes]] = None,
        hub_public_keys: Optional[Sequence[Union[Ed25519Key, str, bytes]]] = None,
        *,
        callback_secrets: Sequence[Union[str, bytes]] = (),
        callback_url: Optional[str] = None,
        state_key: Optional[Union[StateKey, str]] = None,
        replay_cache: Optional[ReplayCache] = None,
        resolvers: Sequence[str] = (),
        accept_from: Optional[Collection[str]] = None,
        run_id: Optional[str] = None,
        runtime: Optional[str] = None,
        project: Optional[str] = None,
        window_secs: int = REPLAY_WINDOW_SECS,
        retry: Optional[RetryPolicy] = None,
        request_timeout: float = 30.0,
        long_poll_max: int = 30,
        transport: Optional[Transport] = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parts = urllib.parse.urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError("the Hub URL must be http(s)://host[:port] (MA2H_HUB_URL)")
        if not isinstance(key, str) or not key.strip():
            raise ConfigError("the agent's API key is required (MA2H_API_KEY)")
        if agent_id is not None and (not agent_id or "#" in agent_id):
            raise ConfigError("agent_id must be non-empty and may not contain '#' (§4)")
        self.url = url.rstrip("/")
        self._key = key.strip()
        self.agent_id = agent_id
        self.keys: List[VerifyingKey] = []
        if signing_secret:
            self.keys.append(HmacKey(signing_secret))
        for secret in callback_secrets:
            if secret:
                self.keys.append(HmacKey(secret))
        for public in hub_public_keys or ():
            self.keys.append(_ed25519(public))
        self.callback_url = callback_url
        self.state_key = StateKey.parse(state_key) if isinstance(state_key, str) else state_key
        self.replay_cache = replay_cache if replay_cache is not None else ReplayCache()
        self.resolvers = list(resolvers)
        self.accept_from = None if accept_from is None else frozenset(accept_from)
        self._agent = AgentRef.new(agent_id, run_id, runtime, project) if agent_id else None
        self.window_secs = window_secs
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        self.long_poll_max = long_poll_max
        self._transport: Transport = transport or UrllibTransport()
        self._clock = clock
        self._sleep = sleep
        self.capability: Optional[Dict[str, Any]] = None

    def __repr__(self) -> str:  # never the API key, secrets or the state key
        return f"{type(self).__name__}(url={self.url!r}, agent_id={self.agent_id!r})"

    @property
    def agent(self) -> AgentRef:
        """The ``agent`` descriptor this client stamps (§4.1); needs ``agent_id``."""
        if self._agent is None:
            raise ConfigError("agent_id is required for this (MA2H_AGENT_ID)")
        return self._agent

    def require_agent_id(self) -> str:
        return self.agent.id

    def add_verification_key(self, key: KeyLike) -> None:
        """Hold one more key (rotation overlap, §9.2): ``str``/``bytes`` are HMAC secrets."""
        self.keys.append(key if isinstance(key, (HmacKey, Ed25519Key)) else HmacKey(key))

    def now(self) -> int:
        return int(self._clock())

    # -- HTTP ---------------------------------------------------------------------------------
    def _request(
        self, method: str, path: str, body: Any = None, timeout: Optional[float] = None, auth: bool = True
    ) -> Reply:
        headers = {"Accept": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self._key}"
        data: Optional[bytes] = None
        if body is not None:
            data = (
                body
                if isinstance(body, bytes)
                else json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
            )
            headers["Content-Type"] = "application/json"
        return self._transport(method, self.url + path, headers, data, timeout or self.request_timeout)

    @staticmethod
    def _json(reply: Reply) -> Any:
        try:
            return json.loads(reply.body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise ProtocolError(f"the Hub's {reply.status} answer is not JSON") from None

    @staticmethod
    def _error(reply: Reply) -> HubError:
        return HubError.from_response(reply.status, reply.body, reply.retry_after)
