"""Durable safety state behind one async interface: confirmation tokens, out-of-band
challenges, agent blocks, rate-limit windows, executions and an append-only audit log.

Backends implement a handful of *primitives* over namespaced JSON records (``put``,
``get``, ``take``, ``cas``, ``scan``, ``delete``), one atomic counter (``incr_window``) and
the audit log. Everything a safety component needs is expressed with those primitives, so
SQLite (one process) and Redis (several processes behind one load balancer) behave the same
and pass the same test suite.

Records carry an optional ``purge_at`` (epoch seconds): after it the record is invisible and
may be deleted. Purging is *storage* hygiene; business expiry (a token's ``expires_at``) is
decided by the caller, so "expired" and "unknown" stay distinguishable (CT §4.1).

A store never logs record contents: challenge records hold out-of-band codes (ESL §8.8.4).
"""

from __future__ import annotations

import abc
import time
from dataclasses import dataclass
from typing import Any

# Namespaces used by mcpaql.safety; backends treat them as opaque strings.
NS_TOKEN = "token"
NS_CHALLENGE = "challenge"
NS_BLOCK = "block"
NS_EXECUTION = "execution"
NS_PAUSE = "pause"
NS_NOTIFY = "notify"
NS_MARK = "mark"

Record = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Window:
    """A fixed rate-limit window after an increment: the count and when the window resets."""

    count: int
    resets_at: float

    def retry_after(self, now: float | None = None) -> int:
        return max(1, int(self.resets_at - (time.time() if now is None else now) + 0.999))


def window_start(now: float, seconds: int) -> int:
    return int(now // seconds * seconds)


class Store(abc.ABC):
    """The async state interface every safety component uses. Implementations must make
    ``take``, ``cas`` and ``incr_window`` atomic across every process sharing the store."""

    # ---- record primitives ---------------------------------------------------------------

    @abc.abstractmethod
    async def put(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> None:
        """Create or replace a record."""

    @abc.abstractmethod
    async def add(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> bool:
        """Create a record only if absent (or purged); return whether it was created."""

    @abc.abstractmethod
    async def get(self, ns: str, key: str) -> Record | None:
        """The record, or ``None`` if absent or past its ``purge_at``."""

    async def get_many(self, keys: list[tuple[str, str]]) -> list[Record | None]:
        """Several records in one round trip where the backend allows it (same rules as ``get``)."""
        return [await self.get(ns, key) for ns, key in keys]

    @abc.abstractmethod
    async def take(self, ns: str, key: str) -> Record | None:
        """Atomically read and delete a record: at most one caller ever gets it."""

    @abc.abstractmethod
    async def cas(self, ns: str, key: str, expect: Record, changes: Record) -> Record | None:
        """Atomically apply ``changes`` if every ``expect`` field equals the stored value.

        Returns the updated record, or ``None`` if the record is missing or did not match.
        The record's ``purge_at`` is kept.
        """

    @abc.abstractmethod
    async def delete(self, ns: str, key: str) -> bool:
        """Delete a record; return whether one was there."""

    @abc.abstractmethod
    async def scan(self, ns: str, where: Record | None = None) -> list[Record]:
        """All live records of a namespace whose fields equal ``where`` (unordered)."""

    # ---- counters ------------------------------------------------------------------------

    @abc.abstractmethod
    async def incr_window(self, key: str, seconds: int, amount: int = 1, *, now: float | None = None) -> Window:
        """Atomically add ``amount`` to the fixed window of ``seconds`` containing ``now`` and
        return the new count; the counter expires with its window."""

    @abc.abstractmethod
    async def peek_window(self, key: str, seconds: int, *, now: float | None = None) -> Window:
        """The current window's count without changing it."""

    @abc.abstractmethod
    async def reset_window(self, key: str, seconds: int, *, now: float | None = None) -> None:
        """Forget the current window's count."""

    # ---- audit log -----------------------------------------------------------------------

    @abc.abstractmethod
    async def append_audit(self, entry: Record) -> int:
        """Append one entry to the audit log (never rewritten); return its sequence number."""

    @abc.abstractmethod
    async def read_audit(self, after: int = 0, limit: int = 1000) -> list[Record]:
        """Entries with sequence number > ``after``, oldest first, each with ``seq``."""

    # ---- housekeeping --------------------------------------------------------------------

    @abc.abstractmethod
    async def purge(self, now: float | None = None) -> int:
        """Delete records past their ``purge_at``; return how many."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def matches(record: Record, where: Record | None) -> bool:
    return not where or all(record.get(k) == v for k, v in where.items())


def open_store(url: str | None) -> Store:
    """Open a store by URL: ``sqlite:///relative.db`` or ``sqlite:////abs/path.db`` (SQLAlchemy
    spelling), ``sqlite://`` for the default file ``~/.mcpaql/safety.db``, ``sqlite://:memory:``
    for a throw-away store, or ``redis://host:port/db``."""
    if not url or url.startswith("sqlite:"):
        from .sqlite import SQLiteStore

        rest = (url or "sqlite://").removeprefix("sqlite:").removeprefix("//")
        if rest.startswith("/"):
            rest = rest[1:]
        return SQLiteStore(rest or None)
    if url.startswith(("redis://", "rediss://", "unix://")):
        from .redis import RedisStore

        return RedisStore.from_url(url)
    raise ValueError(f"unsupported store URL scheme {url.split(':', 1)[0]!r}: use sqlite:/// or redis://")
