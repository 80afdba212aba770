"""The receiver's memory (§9.2, §6, §9.7, §13.4): seen ``jti`` nonces and seen deliveries.

- A ``jti`` is kept at least ``t + window`` (plus slack, so the TTL is always ≥ the replay
  window, §9.2): the same signature presented twice is a **replay** and is rejected.
- A delivery key — ``(in_reply_to, resolution_id)`` for a Response (§6), ``(id, "directive")``
  for a directive (§13.4), ``(id, "message")``, ``(in_reply_to, "receipt:<event>")`` — is kept
  about the retention TTL (35 days ≥ the 30-day retention, §8.2): an authentic redelivery with a
  fresh ``jti`` is a **duplicate** — acknowledge it, do not act again.

In memory by default. Given a directory, the cache lives in ``<dir>/replay.json`` — the same file
and format the Hub's Rust CLI (``ma2h verify``/``listen``/``inbox``) keeps, so both can share one
``MA2H_STATE_DIR`` — updated under ``<dir>/replay.lock`` (``O_EXCL``; a lock older than 30 s is
presumed abandoned) by write-to-temp, fsync and rename, so concurrent processes are safe and a
crash never leaves a torn file. A corrupt file fails closed (:class:`ReplayCacheError`): better to
refuse than to forget what was seen.
"""

from __future__ import annotations

import enum
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, Union

from .errors import MA2HError

__all__ = ["Seen", "ReplayCache", "ReplayCacheError", "DEFAULT_DEDUP_TTL_SECS", "JTI_TTL_SLACK_SECS"]

#: How long a seen delivery key is remembered: 35 days ≥ the 30-day retention (§8.2).
DEFAULT_DEDUP_TTL_SECS = 35 * 24 * 3600
#: Added to ``t + window`` for a ``jti``'s expiry, so its TTL is always ≥ the window (§9.2).
JTI_TTL_SLACK_SECS = 60
STALE_LOCK_SECS = 30.0
LOCK_WAIT_SECS = 10.0


class ReplayCacheError(MA2HError):
    """The persistent cache cannot be read or written: verification must fail closed."""


class Seen(enum.Enum):
    FRESH = "fresh"  #: never seen: the ``jti`` and the delivery key are now recorded
    REPLAYED_JTI = "replayed_jti"  #: this ``jti`` was already accepted — a replay; nothing recorded
    DUPLICATE = "duplicate"  #: a new ``jti`` for a seen delivery key — act once (§6, §13.4)


_Entries = Tuple[Dict[str, int], Dict[str, int]]


class ReplayCache:
    """The replay + dedup cache; thread-safe, and process-safe when given a directory."""

    def __init__(
        self, path: Optional[Union[str, "os.PathLike[str]"]] = None, *, dedup_ttl_secs: int = DEFAULT_DEDUP_TTL_SECS
    ) -> None:
        self.dedup_ttl_secs = dedup_ttl_secs
        self._lock = threading.Lock()
        self._jti: Dict[str, int] = {}
        self._keys: Dict[str, int] = {}
        self._dir: Optional[Path] = None
        if path is not None:
            self._dir = Path(path)
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
                os.chmod(self._dir, 0o700)
            except OSError as e:
                raise ReplayCacheError(f"cannot use replay cache directory {self._dir}: {e}") from None

    @staticmethod
    def default_dir() -> Path:
        """``MA2H_STATE_DIR``, else ``$XDG_STATE_HOME/ma2h``, else ``~/.local/state/ma2h``."""
        for var, suffix in (("MA2H_STATE_DIR", ""), ("XDG_STATE_HOME", "ma2h")):
            value = os.environ.get(var, "").strip()
            if value:
                return Path(value) / suffix if suffix else Path(value)
        return Path.home() / ".local" / "state" / "ma2h"

    @property
    def directory(self) -> Optional[Path]:
        return self._dir

    def __repr__(self) -> str:
        return f"ReplayCache({str(self._dir) if self._dir else 'in-memory'})"

    @staticmethod
    def _key(key: str, mark: str) -> str:
        return f"{key} {mark}"

    # -- persistence ------------------------------------------------------------------------
    def _acquire_file_lock(self) -> Optional[Path]:
        if self._dir is None:
            return None
        lock = self._dir / "replay.lock"
        start = time.monotonic()
        while True:
            try:
                fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                return lock
            except FileExistsError:
                try:
                    if time.time() - lock.stat().st_mtime > STALE_LOCK_SECS:
                        lock.unlink()
                        continue
                except FileNotFoundError:
                    continue
                if time.monotonic() - start > LOCK_WAIT_SECS:
                    raise ReplayCacheError(f"timed out waiting for {lock}") from None
                time.sleep(0.01)
            except OSError as e:
                raise ReplayCacheError(f"cannot lock {lock}: {e}") from None

    def _load(self, now: int) -> _Entries:
        if self._dir is None:
            return ({k: e for k, e in self._jti.items() if e > now}, {k: e for k, e in self._keys.items() if e > now})
        try:
            text = (self._dir / "replay.json").read_bytes()
        except FileNotFoundError:
            return ({}, {})
        except OSError as e:
            raise ReplayCacheError(f"cannot read the replay cache: {e}") from None
        try:
            doc = json.loads(text.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ReplayCacheError(f"corrupt replay cache: {e}") from None
        if not isinstance(doc, dict):
            raise ReplayCacheError("corrupt replay cache: not an object")

        def section(name: str) -> Dict[str, int]:
            raw = doc.get(name)
            if not isinstance(raw, dict):
                return {}
            return {k: v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool) and v > now}

        return section("jti"), section("resolutions")

    def _store(self, entries: _Entries) -> None:
        if self._dir is None:
            self._jti, self._keys = entries
            return
        target = self._dir / "replay.json"
        tmp = self._dir / f"replay.json.{os.getpid()}.{threading.get_ident()}.tmp"
        body = json.dumps({"jti": entries[0], "resolutions": entries[1]}, sort_keys=True).encode()
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, body)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except OSError as e:
            raise ReplayCacheError(f"cannot write the replay cache: {e}") from None

    def _update(self, now: int, change: Callable[[_Entries], Tuple[Any, bool]]) -> Any:
        with self._lock:
            lock = self._acquire_file_lock()
            try:
                entries = self._load(now)
                result, dirty = change(entries)
                if dirty:
                    self._store(entries)
                return result
            finally:
                if lock is not None:
                    try:
                        lock.unlink()
                    except OSError:
                        pass

    # -- API --------------------------------------------------------------------------------
    def check_and_record(self, jti: str, jti_expires: int, key: str, mark: str, now: Optional[int] = None) -> Seen:
        """Atomically check and record one verified delivery (see the module docs)."""
        now = int(time.time()) if now is None else now
        full = self._key(key, mark)

        def change(entries: _Entries) -> Tuple[Seen, bool]:
            jtis, keys = entries
            if jti in jtis:
                return Seen.REPLAYED_JTI, False
            jtis[jti] = jti_expires
            if full in keys:
                return Seen.DUPLICATE, True
            keys[full] = now + self.dedup_ttl_secs
            return Seen.FRESH, True

        result: Seen = self._update(now, change)
        return result

    def mark(self, key: str, mark: str, now: Optional[int] = None) -> bool:
        """Record a delivery key seen without a ``jti`` (a §8.2 pull); ``True`` if it was new."""
        now = int(time.time()) if now is None else now
        full = self._key(key, mark)

        def change(entries: _Entries) -> Tuple[bool, bool]:
            if full in entries[1]:
                return False, False
            entries[1][full] = now + self.dedup_ttl_secs
            return True, True

        return bool(self._update(now, change))

    def mark_resolution(self, in_reply_to: str, resolution_id: str, now: Optional[int] = None) -> bool:
        """:meth:`mark` for a Response read by pull; ``True`` if this resolution is new."""
        return self.mark(in_reply_to, resolution_id, now)

    def has(self, key: str, mark: str, now: Optional[int] = None) -> bool:
        """Whether a delivery key is remembered (read-only)."""
        now = int(time.time()) if now is None else now
        full = self._key(key, mark)
        return bool(self._update(now, lambda entries: (full in entries[1], False)))
