"""The signed contexts a verifier reconstructs (§9.2, §9.7, §9.8, §14.4) and their digests.

Each builder takes the payload **as received** plus the header's ``t``/``jti`` (and, where the
context binds a destination, the verifier's **own** identity — never the wire) and returns the
context object whose RFC 8785 bytes were signed. Every digest is recomputed here from the
received payload; a transmitted digest is never read (there is none on the wire, by design).

============================  ================================================================
§9.2 Response (push)          ``{ma2h_version, callback_url, id, in_reply_to, jti,
                              payload_sha256, resolution, resolution_id, resolved_at, t}``
§9.7 directive                ``{from, id, jti, ma2h_version, payload_sha256, t, to}``
§9.8 ``message`` entry        ``{from, id, jti, ma2h_version, payload_sha256, t, to}``
§9.8 ``response`` entry       §9.2's context with ``to`` in place of ``callback_url``
§9.8 ``receipt`` entry        ``{in_reply_to, jti, ma2h_version, receipt_sha256, t, to}``
§14.4 pushed ack              ``{ack_sha256, by, in_reply_to, jti, ma2h_version, t}``
============================  ================================================================

A missing or non-string bound member raises :class:`~ma2h.errors.SignatureError` (``bad_body``):
there is nothing to verify against, so nothing is accepted.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from .errors import SignatureError
from .jcs import canonical_sha256

__all__ = [
    "DIRECTIVE_BOUND",
    "MESSAGE_CONTENT_FIELDS",
    "RECEIPT_DIGEST_FIELDS",
    "ACK_DIGEST_FIELDS",
    "payload_sha256",
    "directive_sha256",
    "message_sha256",
    "receipt_sha256",
    "ack_sha256",
    "response_context",
    "response_entry_context",
    "directive_context",
    "message_context",
    "receipt_context",
    "ack_context",
    "session_address",
]

#: §9.7: the directive members ``payload_sha256`` binds (present ones only).
DIRECTIVE_BOUND = ("title", "body", "priority", "tags", "context")
#: §9.8: the instruction surface of a ``message`` entry (present ones only).
MESSAGE_CONTENT_FIELDS = ("type", "title", "body", "priority", "tags", "context", "request", "action", "sensitive")
#: §9.8: the receipt digest's fixed six keys (absent → ``null``).
RECEIPT_DIGEST_FIELDS = ("at", "event", "id", "in_reply_to", "prior", "session")
#: §14.4: the ack digest's fixed five keys (absent → ``null``).
ACK_DIGEST_FIELDS = ("acked_at", "by", "in_reply_to", "note", "resolution_id")


def _str(obj: Mapping[str, Any], key: str, what: str) -> str:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    if not isinstance(value, str):
        raise SignatureError("bad_body", f"the {what} has no string `{key}`")
    return value


def session_address(agent_id: str, session_id: str) -> str:
    """The session-qualified address ``agent:<agent_id>#<session_id>`` (§4)."""
    return f"agent:{agent_id}#{session_id}"


def payload_sha256(response: Any, state: Any) -> str:
    """§9.2: SHA-256 of ``JCS({"response": <response|null>, "state": <state|null>})``."""
    return canonical_sha256({"response": response, "state": state})


def directive_sha256(directive: Mapping[str, Any]) -> str:
    """§9.7: SHA-256 of ``JCS({"directive": {present bound members}})``."""
    return canonical_sha256({"directive": {k: directive[k] for k in DIRECTIVE_BOUND if k in directive}})


def message_sha256(message: Mapping[str, Any]) -> str:
    """§9.8: SHA-256 of ``JCS({"message": {present content fields}})``."""
    return canonical_sha256({"message": {k: message[k] for k in MESSAGE_CONTENT_FIELDS if k in message}})


def receipt_sha256(receipt: Mapping[str, Any]) -> str:
    """§9.8: SHA-256 of the JCS of the six-key wrapper, absent members ``null``."""
    return canonical_sha256({k: receipt.get(k) for k in RECEIPT_DIGEST_FIELDS})


def ack_sha256(ack: Mapping[str, Any]) -> str:
    """§14.4: SHA-256 of the JCS of the five-key wrapper, absent optionals ``null``."""
    return canonical_sha256({k: ack.get(k) for k in ACK_DIGEST_FIELDS})


def _response_parts(body: Mapping[str, Any]) -> Dict[str, Any]:
    """What §9.2 and the §9.8 response entry share, derived from a §6 Response as received."""
    if not isinstance(body, Mapping):
        raise SignatureError("bad_body", "the Response is not a JSON object")
    detail = body.get("response")
    if detail is not None and not isinstance(detail, Mapping):
        raise SignatureError("bad_body", "the Response's `response` is not an object")
    resolved_at: Optional[str] = None
    if detail is not None and "resolved_at" in detail:
        resolved_at = _str(detail, "resolved_at", "response detail")
    in_reply_to = _str(body, "in_reply_to", "Response")
    return {
        "ma2h_version": _str(body, "ma2h_version", "Response"),
        # §9.8 pins it (and §9.2 practice): `id` is the message id, always `in_reply_to`.
        "id": in_reply_to,
        "in_reply_to": in_reply_to,
        # §9.2: recompute the digest from the received payload; absent members are `null`.
        "payload_sha256": payload_sha256(detail, body.get("state")),
        "resolution": _str(body, "resolution", "Response"),
        "resolution_id": _str(body, "resolution_id", "Response"),
        # §9.8: `null` when the Response carries no `response` object (dp-015).
        "resolved_at": resolved_at,
    }


def response_context(body: Mapping[str, Any], callback_url: str, jti: str, t: str) -> Dict[str, Any]:
    """§9.2 ``signed_context`` of a pushed Response; ``callback_url`` is the receiver's OWN URL,
    exactly as it was put in ``callback.url`` — never taken from the request."""
    ctx = _response_parts(body)
    ctx.update(callback_url=callback_url, jti=jti, t=t)
    return ctx


def response_entry_context(body: Mapping[str, Any], to: str, jti: str, t: str) -> Dict[str, Any]:
    """§9.8 ``response_signed_context``; ``to`` is rebuilt from the drain's own identity
    (:func:`session_address` of this agent and the session it presented)."""
    ctx = _response_parts(body)
    ctx.update(to=to, jti=jti, t=t)
    return ctx


def directive_context(directive: Mapping[str, Any], jti: str, t: str) -> Dict[str, Any]:
    """§9.7 ``inbound_signed_context`` of a delivered directive."""
    if not isinstance(directive, Mapping):
        raise SignatureError("bad_body", "the directive is not a JSON object")
    return {
        "from": _str(directive, "from", "directive"),
        "id": _str(directive, "id", "directive"),
        "jti": jti,
        "ma2h_version": _str(directive, "ma2h_version", "directive"),
        "payload_sha256": directive_sha256(directive),
        "t": t,
        "to": _str(directive, "to", "directive"),
    }


def message_context(message: Mapping[str, Any], jti: str, t: str) -> Dict[str, Any]:
    """§9.8 ``message_signed_context`` (the §9.7 key set, the message digest)."""
    if not isinstance(message, Mapping):
        raise SignatureError("bad_body", "the message is not a JSON object")
    return {
        "from": _str(message, "from", "message"),
        "id": _str(message, "id", "message"),
        "jti": jti,
        "ma2h_version": _str(message, "ma2h_version", "message"),
        "payload_sha256": message_sha256(message),
        "t": t,
        "to": _str(message, "to", "message"),
    }


def receipt_context(receipt: Mapping[str, Any], to: str, jti: str, t: str) -> Dict[str, Any]:
    """§9.8 ``receipt_signed_context``; ``to`` from the drain's own identity, never the body's."""
    if not isinstance(receipt, Mapping):
        raise SignatureError("bad_body", "the receipt is not a JSON object")
    return {
        "in_reply_to": _str(receipt, "in_reply_to", "receipt"),
        "jti": jti,
        "ma2h_version": _str(receipt, "ma2h_version", "receipt"),
        "receipt_sha256": receipt_sha256(receipt),
        "t": t,
        "to": to,
    }


def ack_context(ack: Mapping[str, Any], jti: str, t: str) -> Dict[str, Any]:
    """§14.4 ``ack_signed_context`` of a pushed ack (a human client's concern; here for parity)."""
    if not isinstance(ack, Mapping):
        raise SignatureError("bad_body", "the ack is not a JSON object")
    return {
        "ack_sha256": ack_sha256(ack),
        "by": _str(ack, "by", "ack"),
        "in_reply_to": _str(ack, "in_reply_to", "ack"),
        "jti": jti,
        "ma2h_version": _str(ack, "ma2h_version", "ack"),
        "t": t,
    }
