"""Collections at scale: pushed down into SQL (the demo) or streamed (the in-Python path).

Side by side in one run, interleaved so both sides see the same machine noise:

1. 100,000 demo tasks (``list_tasks``, pushed down into SQLite by ``demo/task_sql.py``):
   a filtered, sorted page through the whole operation (engine, validation, SQL, records,
   projection, signed cursors, envelope) vs the hand-written SQL for the same page, alone and
   with the ``COUNT(*)`` that gives the page's ``totalCount`` (target ≤ 3×);
   page 1,000 vs page 1 by keyset cursors, in the default order and in a client sort
   (target within 1.5×); the Python heap peak (tracemalloc) of one page call at 10,000 vs
   100,000 tasks (target: independent of the table size).
2. 1,000,000 generated records through the in-Python path (a handler returning a generator):
   page 1 sorted by a field vs a plain ``heapq.nsmallest`` top-k over the same generator, and
   vs materialising and fully sorting (what the path did before), with the peak memory.

Times are medians of the thread's CPU time per call (``--wall`` for wall-clock time), see CLOCK.

    .venv/bin/python bench/bench_collections.py [--tasks 100000] [--records 1000000] [--repeat 5] [--wall]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import json
import random
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from mcpaql import Adapter, Config
from mcpaql.demo import make_adapter, store
from mcpaql.protocol.collections import Collection

STATUSES = ["todo", "in_progress", "blocked", "done"]
PRIORITIES = ["urgent", "high", "medium", "low"]
FILTER = {"status": {"in": ["todo", "in_progress"]}, "priority": {"in": ["urgent", "high"]}}
SORT = {"field": "updated_at", "order": "desc"}
HAND_SQL = (
    "SELECT * FROM tasks WHERE status IN ('todo', 'in_progress') AND priority IN ('urgent', 'high') "
    "AND archived_at IS NULL ORDER BY updated_at DESC, task_id LIMIT 20"
)
HAND_COUNT = (
    "SELECT COUNT(*) FROM tasks WHERE status IN ('todo', 'in_progress') AND priority IN ('urgent', 'high') "
    "AND archived_at IS NULL"
)


class Demo:
    """The demo adapter over a fresh file with ``n`` generated tasks (inserted with executemany)."""

    def __init__(self, n: int, folder: Path) -> None:
        self.app = make_adapter(folder / f"tasks-{n}.db", seed=False)
        self.engine = self.app.engine(Config.load(env={}))
        self.session = self.engine.new_session()
        self.loop = asyncio.new_event_loop()
        rnd = random.Random(n)
        t0 = time.perf_counter()
        with self.app.db.tx() as c:
            projects = [(f"prj_{p:04d}", f"Project {p}", f"project {p}", "2026-01-01T00:00:00.000Z") for p in range(10)]
            c.executemany(
                "INSERT INTO projects(project_id, name, name_key, status, created_at, updated_at) "
                "VALUES (?, ?, ?, 'active', ?, ?)",
                [(*p, p[3]) for p in projects],
            )
            c.executemany(
                "INSERT INTO tasks(task_id, project_id, title, description, status, priority, tags, metadata, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self._row(i, rnd) for i in range(n)),
            )
            store.analyze(c)  # what PRAGMA optimize at close does for a long-lived file
        self.insert_s = time.perf_counter() - t0

    @staticmethod
    def _row(i: int, rnd: random.Random) -> tuple[Any, ...]:
        md: dict[str, Any] = {"estimate_hours": float(rnd.randrange(1, 40)) / 2}
        if i % 2:
            md["due_date"] = f"2027-{1 + i % 12:02d}-{1 + i % 28:02d}"
        if i % 3 == 0:
            md["assignee"] = ("alice", "bob", "carol")[i % 9 // 3]
        created = f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{i % 59:02d}.{i % 1000:03d}Z"
        updated = f"2026-{1 + rnd.randrange(12):02d}-{1 + rnd.randrange(28):02d}T{rnd.randrange(24):02d}:00:00.000Z"
        return (
            f"tsk_{i:08x}",
            f"prj_{i % 10:04d}",
            f"Task {i} {rnd.choice(['ship', 'fix', 'write', 'review'])} {rnd.choice(['docs', 'login', 'api', 'ui'])}",
            None,
            rnd.choice(STATUSES),
            rnd.choice(PRIORITIES),
            json.dumps(rnd.sample(["bug", "ui", "api", "docs"], rnd.randrange(3))),
            json.dumps(md),
            created,
            updated,
        )

    def call(self, params: dict[str, Any]) -> dict[str, Any]:
        request = {"operation": "list_tasks", "params": params}
        env = self.loop.run_until_complete(self.engine.execute(request, self.engine.context(self.session)))
        assert env["success"], env
        data: dict[str, Any] = env["data"]
        return data

    def cursor_of_page(self, page: int, params: dict[str, Any]) -> str | None:
        """The ``after`` cursor that opens page ``page`` (walking the pages before it)."""
        after: str | None = None
        for _ in range(page - 1):
            data = self.call({**params, **({"after": after} if after else {})})
            after = data["pageInfo"]["endCursor"]
        return after

    def hand(self) -> tuple[list[Any], int]:
        with self.app.db.read() as c:
            rows = c.execute(HAND_SQL).fetchall()
            return rows, c.execute(HAND_COUNT).fetchone()[0]

    def close(self) -> None:
        self.loop.close()
        self.app.db.close()


# CPU time of this thread (SQLite runs in it too): on two cores shared with other work, wall
# time of a Python-heavy call stretches with every preemption while a 0.1 ms SQL call fits in
# one time slice, so wall-time ratios measure the load, not the code. --wall switches back.
CLOCK = time.thread_time


def median_time(fn: Callable[[], Any], n: int) -> float:
    times = []
    for _ in range(n):
        t = CLOCK()
        fn()
        times.append(CLOCK() - t)
    return statistics.median(times)


def interleaved(variants: dict[str, Callable[[], Any]], repeat: int, inner: int) -> dict[str, float]:
    """Median per-call time of each variant, measured round-robin ``repeat`` times."""
    samples: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(repeat):
        for name, fn in variants.items():
            samples[name].append(median_time(fn, inner))
    return {k: statistics.median(v) for k, v in samples.items()}


def peak_bytes(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def ms(t: float) -> str:
    return f"{t * 1000:8.2f} ms"


def bench_demo(n_tasks: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-collections-") as folder:
        _bench_demo(n_tasks, repeat, Path(folder))


def _bench_demo(n_tasks: int, repeat: int, folder: Path) -> None:
    small, big = Demo(n_tasks // 10, folder), Demo(n_tasks, folder)
    print(f"demo list_tasks over {n_tasks:,} tasks (inserted in {big.insert_s:.1f} s with executemany)")
    page = {"filter": FILTER, "sort": SORT, "first": 20}
    rows, total = big.hand()
    data = big.call(page)
    assert [r["task_id"] for r in rows] == [t["task_id"] for t in data["items"]]
    assert data["pageInfo"]["totalCount"] == total
    with big.app.db.read() as c:
        hand_page_only = lambda: c.execute(HAND_SQL).fetchall()  # noqa: E731
        t = interleaved({"op": lambda: big.call(page), "sql": hand_page_only, "sql+count": big.hand}, repeat, 20)
    print("  filtered (status in 2, priority in 2), sorted (updated_at desc), first 20, default fields:")
    print(f"    operation                {ms(t['op'])}")
    print(f"    hand-written SQL page    {ms(t['sql'])}   operation / SQL       {t['op'] / t['sql']:6.2f}x")
    print(
        f"    SQL page + COUNT(*)      {ms(t['sql+count'])}   operation / SQL+count {t['op'] / t['sql+count']:6.2f}x"
        "  (target <= 3x; totalCount is part of the answer)"
    )

    for label, params in (("default order", {"first": 20, "fields": "minimal"}), ("filtered, sorted", {**page})):
        deep = min(1000, big.call(params)["pageInfo"]["totalCount"] // 20)  # page 1,000 when there is one
        after = big.cursor_of_page(deep, params)
        assert after is not None
        p1 = lambda params=params: big.call(params)  # noqa: E731
        p_deep = lambda params=params, after=after: big.call({**params, "after": after})  # noqa: E731
        t = interleaved({"page 1": p1, "deep": p_deep}, repeat, 10)
        print(
            f"  {label:17} page 1 {ms(t['page 1'])}, page {deep:,} {ms(t['deep'])}:"
            f" {t['deep'] / t['page 1']:5.2f}x (target <= 1.5x)"
        )

    peaks = {d: peak_bytes(lambda d=d: d.call(page)) for d in (small, big)}
    print(
        f"  Python heap peak of one page call (tracemalloc): {n_tasks // 10:,} tasks"
        f" {peaks[small] / 1024:7.1f} KiB, {n_tasks:,} tasks {peaks[big] / 1024:7.1f} KiB:"
        f" {peaks[big] / peaks[small]:5.2f}x (target: independent of size)"
    )
    agg = {"aggregate": {"by_status": {"group_by": "status", "avg": "metadata.estimate_hours"}}}
    hand_agg = (
        "SELECT status, COUNT(*), AVG(json_extract(metadata, '$.estimate_hours')) FROM tasks "
        "WHERE archived_at IS NULL GROUP BY status"
    )
    with big.app.db.read() as c:
        t = interleaved({"agg": lambda: big.call(agg), "sql": lambda: c.execute(hand_agg).fetchall()}, repeat, 3)
    peak = peak_bytes(lambda: big.call(agg)) / 1024
    print(
        f"  aggregate group_by status + avg estimate: operation {ms(t['agg'])}, hand-written GROUP BY {ms(t['sql'])}:"
        f" {t['agg'] / t['sql']:5.2f}x; peak {peak:.1f} KiB"
    )
    small.close()
    big.close()


def bench_stream(n: int, repeat: int) -> None:
    def records() -> Iterator[dict[str, Any]]:
        for i in range(n):
            yield {"rid": i, "score": (i * 7919) % 100_003, "name": f"r{i}"}

    app = Adapter("bench")

    @app.read(collection=Collection(fields=["rid", "score", "name"], key="rid", sortable=["score"], page_size=20))
    def list_records() -> Any:
        """Records."""
        return records()

    engine = app.engine(Config.load(env={}))
    session = engine.new_session()
    loop = asyncio.new_event_loop()
    request = {"operation": "list_records", "params": {"sort": {"field": "score"}, "first": 20}}

    def operation() -> list[Any]:
        env = loop.run_until_complete(engine.execute(request, engine.context(session)))
        assert env["success"], env
        return [r["rid"] for r in env["data"]["items"]]

    def top_k() -> list[Any]:
        return [r["rid"] for r in heapq.nsmallest(20, records(), key=lambda r: (r["score"], r["rid"]))]

    def full_sort() -> list[Any]:
        return [r["rid"] for r in sorted(records(), key=lambda r: (r["score"], r["rid"]))[:20]]

    assert operation() == top_k() == full_sort()
    variants = {"operation": operation, "heapq top-k": top_k, "full sort": full_sort}
    t = interleaved(variants, repeat, 1)
    peaks = {k: peak_bytes(fn) for k, fn in variants.items()}
    print(f"in-Python path, {n:,} generated records, page 1 sorted by a field (first 20):")
    for k in variants:
        print(f"    {k:12} {ms(t[k])}  {t[k] / t['heapq top-k']:5.2f}x top-k   peak {peaks[k] / 2**20:8.2f} MiB")
    loop.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--wall", action="store_true", help="time with the wall clock instead of thread CPU time")
    a = ap.parse_args()
    global CLOCK
    CLOCK = time.perf_counter if a.wall else time.thread_time
    print(f"times: median {'wall' if a.wall else 'thread CPU'} time per call")
    bench_demo(a.tasks, a.repeat)
    bench_stream(a.records, max(1, a.repeat // 2))


if __name__ == "__main__":
    main()
