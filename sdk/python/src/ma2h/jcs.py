"""RFC 8785 JSON Canonicalization Scheme (JCS) and a strict JSON reader.

Every MA2H signature (§9.2 Response, §9.7 directive, §9.8 mailbox entries, §14.4 ack) is computed
over the JCS bytes of a small JSON object, and the payload digests (`payload_sha256`,
`receipt_sha256`, …) over the JCS bytes of a fixed-key wrapper, so signer and verifier must agree
byte for byte (§9.2):

- object members are sorted by their UTF-16 code units (RFC 8785 §3.2.3);
- numbers are serialized as the IEEE-754 double's ECMAScript ``Number::toString`` form
  (RFC 8785 §3.2.2.3): ``1e21`` → ``1e+21``, ``1e-7`` → ``1e-7``, ``-0`` → ``0``, integers up to
  2**53 without a fraction; an integer beyond ±2**53 is serialized as the nearest double (§9.2's
  precision caveat: carry such integers as strings);
- strings keep their content exactly (no Unicode normalization, RFC 8785 §3.1) with the minimal
  escapes: ``\\"``, ``\\\\``, ``\\b \\f \\n \\r \\t`` and lowercase ``\\u00xx`` for the other
  control characters.

Anything JCS cannot represent — NaN, ±Infinity, a lone surrogate, a non-string key, a value that is
not JSON — raises :class:`JCSError`; nothing is guessed.

:func:`loads` is the matching strict reader for bodies that are about to be verified: it refuses
duplicate member names and the non-JSON constants ``NaN``/``Infinity`` rather than letting the last
duplicate silently win.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Dict, List, Tuple, Union

__all__ = ["JCSError", "canonicalize", "canonical_sha256", "format_number", "loads", "sha256_hex"]

_MAX_SAFE = 2**53
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


class JCSError(ValueError):
    """The value cannot be canonicalized (or the text is not strict JSON)."""


def _escape_char(m: "re.Match[str]") -> str:
    c = m.group(0)
    return _ESCAPES.get(c) or "\\u%04x" % ord(c)


def _string(s: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def _format_double(x: float) -> str:
    """ECMAScript Number::toString of a finite double (ECMA-262 §6.1.6.1.20)."""
    if x == 0:
        return "0"  # also -0
    sign = "-" if x < 0 else ""
    # repr() is the shortest string that round-trips (the same digits as ES / ryu).
    text = repr(abs(x))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = int_part + frac_part
    point = len(int_part) + exponent
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = ("+" if e >= 0 else "-") + str(abs(e))
    if k == 1:
        return sign + digits + "e" + exp
    return sign + digits[0] + "." + digits[1:] + "e" + exp


def format_number(value: Union[int, float]) -> str:
    """The RFC 8785 §3.2.2.3 form of a JSON number."""
    if isinstance(value, bool):
        raise JCSError("a boolean is not a number")
    if isinstance(value, int):
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return str(value)
        try:
            return _format_double(float(value))  # correctly rounded to the nearest double
        except OverflowError:
            raise JCSError("integer out of the IEEE-754 double range") from None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise JCSError("NaN and Infinity have no JSON form")
        return _format_double(value)
    raise JCSError(f"not a number: {type(value).__name__}")


def _utf16_key(item: Tuple[str, Any]) -> bytes:
    return item[0].encode("utf-16-be")  # byte order of UTF-16BE == code-unit order


def _write(value: Any, out: List[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, (int, float)):
        out.append(format_number(value))
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise JCSError(f"object keys must be strings, got {type(key).__name__}")
        out.append("{")
        for i, (key, item) in enumerate(sorted(value.items(), key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise JCSError(f"not a JSON value: {type(value).__name__}")


def canonicalize(value: Any) -> bytes:
    """RFC 8785 canonical UTF-8 bytes of ``value`` (dict/list/tuple/str/int/float/bool/None)."""
    out: List[str] = []
    try:
        _write(value, out)
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise JCSError("a string holds a lone surrogate (not valid Unicode)") from None
    except RecursionError:
        raise JCSError("value nested too deeply") from None


def sha256_hex(data: bytes) -> str:
    """Lowercase-hex SHA-256."""
    return hashlib.sha256(data).hexdigest()


def canonical_sha256(value: Any) -> str:
    """Lowercase-hex SHA-256 of the JCS bytes of ``value`` (the digest shape of §9.2/§9.7/§9.8/§14.4)."""
    return sha256_hex(canonicalize(value))


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    obj: Dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise JCSError(f"duplicate member name {key!r}")
        obj[key] = value
    return obj


def _reject_constant(name: str) -> Any:
    raise JCSError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JCSError(f"number {text} is out of the IEEE-754 double range")
    return value


def loads(data: Union[bytes, bytearray, str]) -> Any:
    """Parse strict JSON: UTF-8 only, no duplicate names, no NaN/Infinity, finite numbers."""
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
        )
    except JCSError:
        raise
    except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise JCSError(f"not strict JSON: {e}") from None
