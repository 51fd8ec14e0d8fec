"""The embedded store: one SQLite file in WAL mode through stdlib ``sqlite3``. The default for a
single server process; several processes may share the file (WAL + ``BEGIN IMMEDIATE``), but
for several hosts use :mod:`mcpaql.store.redis`.

Each operation is a few microseconds of local I/O, far less than a hop to a worker thread, so
it first runs inline on the event loop with a zero busy timeout; only when another process
holds the write lock (``SQLITE_BUSY``) does it retry on a dedicated thread with its own
connection and a long busy timeout, so the loop never waits on a lock. Every write commits
before returning, so state survives ``kill -9``.

Secrets at rest: the file is created owner-only (0600, in a 0700 directory when we create it)
and a file other users can read, or a directory other users can write, is refused at open
with one line (:class:`InsecureStoreError`). SQLite gives the ``-wal``/``-shm`` files the
database file's mode. ``secure_delete`` zeroes deleted records, and after each deletion from a
secret-bearing namespace (a used or burnt challenge, a revoked token: salted hashes only, never
the values) the WAL is checkpointed and truncated, so what was deleted does not linger in the
log either. Issuing and consuming do not checkpoint: the live record is in the database anyway,
and a checkpoint's fsync would cost a confirmation round trip ~100x (bench/bench_safety.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import stat
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..config import settings
from .base import NS_CHALLENGE, NS_TOKEN, Record, Store, Window, matches, window_start

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, purge_at REAL,
    PRIMARY KEY (ns, key)
);
CREATE INDEX IF NOT EXISTS records_purge ON records (purge_at) WHERE purge_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS windows (
    key TEXT NOT NULL, start INTEGER NOT NULL, count INTEGER NOT NULL, resets_at REAL NOT NULL,
    PRIMARY KEY (key, start)
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, entry TEXT NOT NULL
);
"""


def default_path() -> Path:
    return settings().home / "safety.db"


def _dump(v: Record) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


SECRET_NAMESPACES = frozenset({NS_TOKEN, NS_CHALLENGE})


class InsecureStoreError(ValueError):
    """The store file or its directory is open to other users; the message is one line."""


def secure_file(path: Path) -> None:
    """Create ``path`` owner-only if missing (its directory 0700 when we create it); refuse a
    file other users can read or write, or a directory other users can write."""
    parent = path.parent
    if not parent.exists():
        parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if parent.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not parent.stat().st_mode & stat.S_ISVTX:
        raise InsecureStoreError(
            f"safety store directory {parent} is writable by other users: chmod 700 it or choose another store path"
        )
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if mode & 0o077:
        raise InsecureStoreError(f"safety store {path} is readable by other users (mode {stat.S_IMODE(mode):o}): chmod 600 it")


class SQLiteStore(Store):
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        if path is None:
            path = default_path()
        self.path = str(path)
        if self.path != ":memory:":
            secure_file(Path(self.path))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcpaql-sqlite")
        self._inline: sqlite3.Connection | None = self._connect(0)
        # ":memory:" is private to one connection: no other process can contend, stay inline
        self._worker = None if self.path == ":memory:" else self._pool.submit(self._connect, 30000).result()
        self._dirty = False
        self._pending: Future[None] | None = None

    def _connect(self, busy_ms: int) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=busy_ms / 1000)
        db.execute(f"PRAGMA busy_timeout={busy_ms}")
        db.execute("PRAGMA secure_delete=ON")
        if busy_ms:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        if self.path == ":memory:" or busy_ms:
            db.executescript(_SCHEMA)
        return db

    async def _run(self, fn: Any, *, tx: bool = False) -> Any:
        """Run ``fn(db)`` inline; on SQLITE_BUSY retry it on the worker thread."""
        db = self._inline
        if db is None:
            raise RuntimeError("store is closed")
        try:
            return self._tx(db, fn) if tx else fn(db)
        except sqlite3.OperationalError as e:
            if self._worker is None or ("locked" not in str(e) and "busy" not in str(e)):
                raise
        loop = asyncio.get_running_loop()
        worker = self._worker
        return await loop.run_in_executor(self._pool, lambda: self._tx(worker, fn) if tx else fn(worker))

    @staticmethod
    def _tx(db: sqlite3.Connection, fn: Any) -> Any:
        """``fn(db)`` inside ``BEGIN IMMEDIATE`` … ``COMMIT`` (atomic across processes)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            out = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return out

    def _scrub(self, ns: str) -> None:
        """After a deletion from a secret-bearing namespace: fold the WAL into the database and
        truncate it. ``secure_delete`` has already zeroed what was deleted in the database.

        The checkpoint fsyncs (tens of ms on a slow disk), so it runs on the worker thread,
        not the event loop, and deletions arriving meanwhile share one pending checkpoint."""
        if ns not in SECRET_NAMESPACES or self._worker is None:
            return
        self._dirty = True
        if self._pending is None or self._pending.done():
            self._pending = self._pool.submit(self._checkpoint_now)

    def _checkpoint_now(self) -> None:
        while self._dirty and self._worker is not None:
            self._dirty = False
            with contextlib.suppress(sqlite3.OperationalError):  # best effort: the next deletion retries
                self._worker.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    async def checkpoint(self) -> None:
        """Wait until the WAL has been folded in and truncated after the last secret deletion."""
        if self._pending is not None:
            await asyncio.wrap_future(self._pending)

    @staticmethod
    def _live(row: tuple[str, float | None] | None, now: float) -> Record | None:
        if row is None or (row[1] is not None and row[1] <= now):
            return None
        return json.loads(row[0])

    # ---- records ---------------------------------------------------------------------------

    async def put(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> None:
        def op(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO records (ns, key, value, purge_at) VALUES (?, ?, ?, ?)",
                (ns, key, _dump(value), purge_at),
            )

        await self._run(op)

    async def add(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> bool:
        def op(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT value, purge_at FROM records WHERE ns=? AND key=?", (ns, key)).fetchone()
            if self._live(row, time.time()) is not None:
                return False
            db.execute(
                "INSERT OR REPLACE INTO records (ns, key, value, purge_at) VALUES (?, ?, ?, ?)",
                (ns, key, _dump(value), purge_at),
            )
            return True

        return await self._run(op, tx=True)

    async def get(self, ns: str, key: str) -> Record | None:
        def op(db: sqlite3.Connection) -> Record | None:
            row = db.execute("SELECT value, purge_at FROM records WHERE ns=? AND key=?", (ns, key)).fetchone()
            return self._live(row, time.time())

        return await self._run(op)

    async def take(self, ns: str, key: str) -> Record | None:
        def op(db: sqlite3.Connection) -> Record | None:
            row = db.execute("DELETE FROM records WHERE ns=? AND key=? RETURNING value, purge_at", (ns, key)).fetchone()
            return self._live(row, time.time())

        rec = await self._run(op, tx=True)
        self._scrub(ns)
        return rec

    async def cas(self, ns: str, key: str, expect: Record, changes: Record) -> Record | None:
        def op(db: sqlite3.Connection) -> Record | None:
            row = db.execute("SELECT value, purge_at FROM records WHERE ns=? AND key=?", (ns, key)).fetchone()
            rec = self._live(row, time.time())
            if rec is None or not matches(rec, expect):
                return None
            rec.update(changes)
            db.execute("UPDATE records SET value=? WHERE ns=? AND key=?", (_dump(rec), ns, key))
            return rec

        return await self._run(op, tx=True)

    async def delete(self, ns: str, key: str) -> bool:
        def op(db: sqlite3.Connection) -> bool:
            return db.execute("DELETE FROM records WHERE ns=? AND key=?", (ns, key)).rowcount > 0

        gone = await self._run(op)
        self._scrub(ns)
        return gone

    async def scan(self, ns: str, where: Record | None = None) -> list[Record]:
        def op(db: sqlite3.Connection) -> list[Record]:
            now = time.time()
            rows = db.execute("SELECT value FROM records WHERE ns=? AND (purge_at IS NULL OR purge_at > ?)", (ns, now)).fetchall()
            out = [json.loads(r[0]) for r in rows]
            return [r for r in out if matches(r, where)]

        return await self._run(op)

    # ---- counters ----------------------------------------------------------------------------

    async def incr_window(self, key: str, seconds: int, amount: int = 1, *, now: float | None = None) -> Window:
        t = time.time() if now is None else now
        start = window_start(t, seconds)
        resets = float(start + seconds)

        def op(db: sqlite3.Connection) -> Window:
            (count,) = db.execute(
                "INSERT INTO windows (key, start, count, resets_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (key, start) DO UPDATE SET count = count + excluded.count RETURNING count",
                (key, start, amount, resets),
            ).fetchone()
            return Window(int(count), resets)

        return await self._run(op)

    async def peek_window(self, key: str, seconds: int, *, now: float | None = None) -> Window:
        t = time.time() if now is None else now
        start = window_start(t, seconds)

        def op(db: sqlite3.Connection) -> Window:
            row = db.execute("SELECT count FROM windows WHERE key=? AND start=?", (key, start)).fetchone()
            return Window(int(row[0]) if row else 0, float(start + seconds))

        return await self._run(op)

    async def reset_window(self, key: str, seconds: int, *, now: float | None = None) -> None:
        t = time.time() if now is None else now
        start = window_start(t, seconds)

        def op(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM windows WHERE key=? AND start=?", (key, start))

        await self._run(op)

    # ---- audit -------------------------------------------------------------------------------

    async def append_audit(self, entry: Record) -> int:
        def op(db: sqlite3.Connection) -> int:
            cur = db.execute("INSERT INTO audit (at, entry) VALUES (?, ?)", (time.time(), _dump(entry)))
            return int(cur.lastrowid or 0)

        return await self._run(op)

    async def read_audit(self, after: int = 0, limit: int = 1000) -> list[Record]:
        def op(db: sqlite3.Connection) -> list[Record]:
            rows = db.execute("SELECT seq, entry FROM audit WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()
            return [{**json.loads(e), "seq": s} for s, e in rows]

        return await self._run(op)

    # ---- housekeeping ------------------------------------------------------------------------

    async def purge(self, now: float | None = None) -> int:
        t = time.time() if now is None else now

        def op(db: sqlite3.Connection) -> int:
            n = db.execute("DELETE FROM records WHERE purge_at IS NOT NULL AND purge_at <= ?", (t,)).rowcount
            n += db.execute("DELETE FROM windows WHERE resets_at <= ?", (t,)).rowcount
            return n

        return await self._run(op)

    async def close(self) -> None:
        if self._inline is None:
            return
        self._inline.close()
        self._inline = None
        if self._worker is not None:
            worker = self._worker
            await asyncio.get_running_loop().run_in_executor(self._pool, worker.close)
            self._worker = None
        self._pool.shutdown(wait=False)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"
