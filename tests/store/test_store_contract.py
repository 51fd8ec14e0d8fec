"""One contract, every backend: records, atomic take/cas/add, windows, audit, purge."""

from __future__ import annotations

import asyncio
import time

import pytest

from mcpaql.store import open_store
from mcpaql.store.base import Store
from mcpaql.store.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio


async def test_put_get_delete_roundtrip(store: Store) -> None:
    assert await store.get("token", "a") is None
    await store.put("token", "a", {"id": "a", "n": 1, "nested": {"x": [1, 2]}})
    assert await store.get("token", "a") == {"id": "a", "n": 1, "nested": {"x": [1, 2]}}
    await store.put("token", "a", {"id": "a", "n": 2})
    assert (await store.get("token", "a"))["n"] == 2
    assert await store.get("challenge", "a") is None  # namespaces are separate
    assert await store.delete("token", "a") is True
    assert await store.delete("token", "a") is False
    assert await store.get("token", "a") is None


async def test_purge_at_hides_records(store: Store) -> None:
    await store.put("token", "old", {"v": 1}, purge_at=time.time() + 1.0)
    await store.put("token", "keep", {"v": 2})
    assert await store.get("token", "old") == {"v": 1}
    await asyncio.sleep(1.1)
    assert await store.get("token", "old") is None
    assert [r["v"] for r in await store.scan("token")] == [2]
    await store.purge()
    assert await store.get("token", "keep") == {"v": 2}


async def test_add_only_if_absent(store: Store) -> None:
    assert await store.add("block", "agent", {"v": 1}) is True
    assert await store.add("block", "agent", {"v": 2}) is False
    assert await store.get("block", "agent") == {"v": 1}


async def test_take_is_one_time_under_concurrency(store: Store) -> None:
    await store.put("challenge", "c1", {"id": "c1"})
    got = await asyncio.gather(*(store.take("challenge", "c1") for _ in range(20)))
    assert sum(1 for g in got if g is not None) == 1
    assert await store.take("challenge", "c1") is None


async def test_cas_single_winner(store: Store) -> None:
    await store.put("token", "t", {"consumed": False, "uses": 0})
    results = await asyncio.gather(*(store.cas("token", "t", {"consumed": False}, {"consumed": True}) for _ in range(20)))
    assert sum(1 for r in results if r is not None) == 1
    assert (await store.get("token", "t"))["consumed"] is True
    assert await store.cas("token", "missing", {}, {"x": 1}) is None


async def test_cas_keeps_purge_at(store: Store) -> None:
    await store.put("token", "t", {"s": "a"}, purge_at=time.time() + 1.0)
    assert await store.cas("token", "t", {"s": "a"}, {"s": "b"}) == {"s": "b"}
    await asyncio.sleep(1.1)
    assert await store.get("token", "t") is None


async def test_scan_with_where(store: Store) -> None:
    for i in range(5):
        await store.put("execution", f"e{i}", {"id": f"e{i}", "agent": "a" if i % 2 else "b", "status": "running"})
    got = await store.scan("execution", {"agent": "a"})
    assert sorted(r["id"] for r in got) == ["e1", "e3"]
    assert len(await store.scan("execution")) == 5
    assert await store.scan("nothing") == []


async def test_incr_window_is_atomic_and_expires(store: Store) -> None:
    now = 1_000_000.0
    counts = await asyncio.gather(*(store.incr_window("k", 60, now=now) for _ in range(50)))
    assert sorted(w.count for w in counts) == list(range(1, 51))
    assert counts[0].resets_at == 1_000_020.0  # 1_000_000 // 60 * 60 + 60
    assert (await store.peek_window("k", 60, now=now)).count == 50
    assert (await store.peek_window("k", 60, now=now + 60)).count == 0  # next window
    await store.reset_window("k", 60, now=now)
    assert (await store.peek_window("k", 60, now=now)).count == 0
    w = await store.incr_window("k", 60, amount=5, now=now)
    assert w.count == 5 and w.retry_after(now) == 20


async def test_audit_is_append_only_and_ordered(store: Store) -> None:
    seqs = [await store.append_audit({"event": "E", "i": i}) for i in range(5)]
    assert seqs == sorted(seqs) and len(set(seqs)) == 5
    entries = await store.read_audit()
    assert [e["i"] for e in entries] == list(range(5))
    later = await store.read_audit(after=entries[1]["seq"], limit=2)
    assert [e["i"] for e in later] == [2, 3]


async def test_sqlite_state_survives_reopen(tmp_path) -> None:
    s = SQLiteStore(tmp_path / "x.db")
    await s.put("block", "agent-1", {"agent": "agent-1"})
    await s.incr_window("fail:agent-1", 60)
    await s.close()
    s2 = SQLiteStore(tmp_path / "x.db")
    assert await s2.get("block", "agent-1") == {"agent": "agent-1"}
    assert (await s2.peek_window("fail:agent-1", 60)).count == 1
    await s2.close()


async def test_open_store_urls(tmp_path) -> None:
    s = open_store(f"sqlite:///{tmp_path}/a.db")
    assert isinstance(s, SQLiteStore) and s.path == f"{tmp_path}/a.db"
    await s.close()
    m = open_store("sqlite://:memory:")
    assert isinstance(m, SQLiteStore) and m.path == ":memory:"
    await m.put("x", "y", {"z": 1})
    assert await m.get("x", "y") == {"z": 1}
    await m.close()
    with pytest.raises(ValueError, match="unsupported store URL"):
        open_store("mysql://x")


async def test_sqlite_lock_held_by_another_process_does_not_block_the_loop(tmp_path) -> None:
    """SQLITE_BUSY inline → the operation moves to the worker thread and waits there."""
    import sqlite3
    import threading

    s = SQLiteStore(tmp_path / "busy.db")
    await s.put("x", "a", {"v": 0})
    other = sqlite3.connect(tmp_path / "busy.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    release = threading.Timer(0.5, lambda: other.execute("COMMIT"))
    release.start()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    t = asyncio.create_task(ticker())
    started = time.perf_counter()
    await s.put("x", "a", {"v": 1})
    assert await s.cas("x", "a", {"v": 1}, {"v": 2}) == {"v": 2}
    waited = time.perf_counter() - started
    t.cancel()
    assert waited >= 0.4 and ticks >= 20  # waited for the lock while the loop kept running
    assert await s.get("x", "a") == {"v": 2}
    release.join()
    other.close()
    await s.close()
