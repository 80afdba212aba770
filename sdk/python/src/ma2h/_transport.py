"""One HTTP exchange with the Hub over the standard library's ``urllib.request``.

- The credential goes in ``Authorization: Bearer`` and is never logged or put in an exception.
- A redirect is refused, not followed: it would re-send a submit's body elsewhere, and a
  "success" from wherever it led is not the Hub's.
- Every status is returned to the caller (4xx/5xx included); only a failure to get any answer
  (DNS, connect, timeout, reset) is a :class:`~ma2h.errors.TransportError`.
- ``Retry-After`` (§8.6) is parsed as delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
"""

from __future__ import annotations

import email.utils
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional

from .errors import ProtocolError, TransportError

__all__ = ["Reply", "Transport", "UrllibTransport", "parse_retry_after", "quote", "USER_AGENT"]

USER_AGENT = "ma2h-python/0.1.0"
MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str]  #: lower-cased names
    body: bytes
    retry_after: Optional[float]


#: ``(method, url, headers, body, timeout_seconds) -> Reply`` — injectable for tests.
Transport = Callable[[str, str, Dict[str, str], Optional[bytes], float], Reply]


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Seconds to wait from a ``Retry-After`` value, or ``None`` if absent/unreadable."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text))
    try:
        at = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None or at.tzinfo is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, at.timestamp() - now)


def quote(segment: str) -> str:
    """Percent-encode a path segment or query value (everything but RFC 3986 unreserved)."""
    return urllib.parse.quote(segment, safe="-._~")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None  # urllib then raises HTTPError with the 3xx, handled below


class UrllibTransport:
    """The default transport (no redirects, bounded body, proxies from the environment)."""

    def __init__(self) -> None:
        self._opener = urllib.request.build_opener(_NoRedirect())

    def __call__(self, method: str, url: str, headers: Dict[str, str], body: Optional[bytes], timeout: float) -> Reply:
        request = urllib.request.Request(url, data=body, method=method)
        for name, value in headers.items():
            request.add_header(name, value)
        request.add_header("User-Agent", USER_AGENT)
        try:
            response = self._opener.open(request, timeout=timeout)
        except urllib.error.HTTPError as e:
            response = e  # an HTTP answer with a 3xx/4xx/5xx status: still the Hub's answer
        except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise TransportError(f"hub unreachable at {_origin(url)}: {reason}") from None
        try:
            with response:
                status = int(response.status if hasattr(response, "status") else response.code)
                hdrs = {k.lower(): v for k, v in response.headers.items()}
                data = response.read(MAX_BODY_BYTES + 1)
        except (socket.timeout, TimeoutError, ConnectionError, OSError) as e:
            raise TransportError(f"hub unreachable at {_origin(url)}: {e}") from None
        if len(data) > MAX_BODY_BYTES:
            raise ProtocolError("the Hub's answer is larger than this client reads")
        if 300 <= status < 400:
            raise ProtocolError(
                f"the Hub answered {status}, a redirect to {hdrs.get('location', '?')}; redirects are not "
                "followed — point the client at the Hub's own address"
            )
        return Reply(status=status, headers=hdrs, body=data, retry_after=parse_retry_after(hdrs.get("retry-after")))


def _origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
