"""The agent mailbox (§8.7, §8.7.1): drain, verify every entry (:mod:`ma2h.entries`), ack.

``drain`` never hands back an unverified entry: each one is verified (§9.7 directive, §9.8
``message``/``response``/``receipt``) and lands in :attr:`DrainResult.entries` — act on those not
``duplicate``, ack all of them — or in :attr:`DrainResult.rejected` — never act, never ack (an
un-acked entry is redelivered after the visibility timeout and rejected again; the Hub keeps
it until it expires).

The safe order per entry is §13.4's: verify → confirm addressee → act (durably or idempotently)
→ ack. Acking is the explicit consume; ``POST /v1/inbox/ack`` takes each entry's ack key (a
directive's or message's ``id``, a response entry's ``resolution_id``, a receipt's ``id``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from ._base import HubBase
from ._transport import quote
from .entries import DrainResult, EntryVerifier, RejectedEntry, VerifiedEntry
from .errors import ProtocolError, SignatureError

__all__ = ["InboxMixin"]


class InboxMixin(HubBase):
    """The mailbox half of :class:`ma2h.Hub`."""

    def entry_verifier(self) -> EntryVerifier:
        """The verifier this client's drains use (its keys, replay cache, window and policy)."""
        return EntryVerifier(self.require_agent_id(), self.keys, self.replay_cache, self.window_secs, self.accept_from)

    def drain_raw(
        self, max: Optional[int] = None, wait: Optional[int] = None, session: Optional[str] = None
    ) -> List[Dict[str, Any]]:
        """``GET /v1/inbox[?max&wait&session]``: the entries exactly as received — **unverified**.
        Prefer :meth:`drain`."""
        query = []
        if max is not None:
            query.append(f"max={int(max)}")
        if wait:
            query.append(f"wait={int(wait)}")
        if session:
            query.append(f"session={quote(session)}")
        path = "/v1/inbox" + ("?" + "&".join(query) if query else "")
        reply = self._request("GET", path, timeout=(wait or 0) + self.request_timeout)
        if reply.status != 200:
            raise self._error(reply)
        body = self._json(reply)
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list):
            raise ProtocolError("the drain's answer has no `messages` list")
        return messages

    def drain(
        self,
        max: Optional[int] = None,
        wait: Optional[int] = None,
        session: Optional[str] = None,
        now: Optional[int] = None,
    ) -> DrainResult:
        """Drain and verify. A session-less drain returns directives only (the v0.4 shape); with
        ``session`` (own, live) also ``message``/``response``/``receipt`` entries, and it renews the
        lease (§16.2). Presenting an ended session raises the Hub's 410/404 — or use a
        :class:`~ma2h.session.SessionLease`, which handles that."""
        raw = self.drain_raw(max=max, wait=wait, session=session)
        verifier = self.entry_verifier()
        result = DrainResult(session=session)
        for entry in raw:
            try:
                result.entries.append(verifier.verify(entry, session, self.now() if now is None else now))
            except SignatureError as e:
                result.rejected.append(RejectedEntry(entry if isinstance(entry, dict) else {}, e))
        return result

    def ack(self, ids: Iterable[Any], note: Optional[str] = None, session: Optional[str] = None) -> int:
        """``POST /v1/inbox/ack[?session=…]``: consume entries by ack key (strings or
        :class:`VerifiedEntry`); returns how many the Hub acknowledged. Idempotent."""
        keys = [i.ack_key if isinstance(i, VerifiedEntry) else i for i in ids]
        if not all(isinstance(k, str) and k for k in keys):
            raise ValueError("ack keys are non-empty strings")
        body: Dict[str, Any] = {"ids": keys}
        if note is not None:
            body["note"] = note
        path = "/v1/inbox/ack" + (f"?session={quote(session)}" if session else "")
        reply = self._request("POST", path, body)
        if reply.status != 200:
            raise self._error(reply)
        out = self._json(reply)
        acked = out.get("acked") if isinstance(out, dict) else None
        if not isinstance(acked, int) or isinstance(acked, bool):
            raise ProtocolError("the ack's answer has no `acked` count")
        return acked
