"""Streaming aggregation versus a plain Python loop, side by side in one run.

``group_by`` + ``avg`` over 1,000,000 in-memory records (dicts), three ways:

* plain      — a hand-written loop with two dicts (the floor: no validation, no generality);
* aggregator — ``mcpaql.protocol.collections.Aggregator`` fed the list directly;
* operation  — a full ``list_*`` call through the engine (validation, filter pass, envelope)
               whose handler returns a *generator* of the records.

Time is the best of ``--repeat`` runs without tracing; peak memory is measured in a separate
traced run (tracemalloc) and excludes the records themselves for the list-fed variants. The
operation variant builds its records lazily, so its peak shows that memory grows with the
number of groups, not records.

    .venv/bin/python bench/bench_aggregate.py [-n 1000000] [--groups 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import time
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

from mcpaql import Adapter, Config
from mcpaql.protocol.collections import AggregationSupport, Aggregator, Collection, parse_aggregate
from mcpaql.protocol.collections.fields import get_path


def make_records(n: int, groups: int) -> list[dict[str, Any]]:
    cats = [f"cat_{i:03}" for i in range(groups)]
    return [{"rid": i, "category": cats[i % groups], "value": (i * 7919) % 1000} for i in range(n)]


def gen_records(n: int, groups: int) -> Iterator[dict[str, Any]]:
    cats = [f"cat_{i:03}" for i in range(groups)]
    for i in range(n):
        yield {"rid": i, "category": cats[i % groups], "value": (i * 7919) % 1000}


def plain(records: Any) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for r in records:
        g = r["category"]
        v = r["value"]
        if isinstance(v, int | float):
            sums[g] = sums.get(g, 0) + v
            counts[g] = counts.get(g, 0) + 1
    return {g: sums[g] / counts[g] for g in sorted(sums)}


SUPPORT = AggregationSupport(groupable_fields=("category",), numeric_fields=("value",))
EXPRS = parse_aggregate({"by_cat": {"group_by": "category", "avg": "value"}}, SUPPORT)


def aggregator(records: Any) -> dict[str, Any]:
    return Aggregator(EXPRS, get_path).feed(records).result()["by_cat"]


def build_operation(source: Callable[[], Any]) -> Callable[[], dict[str, Any]]:
    app = Adapter("bench")

    @app.read(collection=Collection(fields=["rid", "category", "value"], key="rid", filterable=["category"], aggregate=SUPPORT))
    def list_records() -> Any:
        """Records."""
        return source()

    engine = app.engine(Config.load(env={}))
    request = {"operation": "list_records", "params": {"aggregate": {"by_cat": {"group_by": "category", "avg": "value"}}}}

    def run() -> dict[str, Any]:
        env = asyncio.run(engine.execute(request, engine.context(engine.new_session())))
        assert env["success"], env
        return env["data"]["aggregations"]["by_cat"]

    return run


def best_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def peak_bytes(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    records = make_records(a.n, a.groups)
    op_list = build_operation(lambda: records)
    op_gen = build_operation(lambda: gen_records(a.n, a.groups))
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("plain loop (list)", lambda: plain(records)),
        ("mcpaql Aggregator (list)", lambda: aggregator(records)),
        ("mcpaql operation (list)", op_list),
        ("plain loop (generator)", lambda: plain(gen_records(a.n, a.groups))),
        ("mcpaql operation (generator)", op_gen),
    ]
    results: dict[str, tuple[float, Any]] = {}
    for _ in range(a.repeat):  # interleaved, so every variant sees the same machine noise
        for name, fn in variants:
            t, out = best_time(fn, 1)
            results[name] = (min(t, results.get(name, (t, None))[0]), out)
    want = results["plain loop (list)"][1]
    for name, (_, out) in results.items():
        assert set(out) == set(want) and all(abs(out[g] - want[g]) < 1e-9 for g in want), name

    peaks = {name: peak_bytes(fn) for name, fn in variants}

    def base(name: str) -> str:
        return "plain loop (generator)" if "generator" in name else "plain loop (list)"

    print(f"group_by + avg over {a.n:,} records, {a.groups} groups (best of {a.repeat}; peak via tracemalloc)")
    print(f"{'variant':32} {'time':>9} {'x plain':>8} {'peak mem':>12} {'x plain':>9}")
    for name, _ in variants:
        t, bt, bm = results[name][0], results[base(name)][0], max(peaks[base(name)], 1)
        print(f"{name:32} {t * 1000:8.0f}ms {t / bt:8.2f} {peaks[name] / 1024:10.1f}KiB {peaks[name] / bm:9.2f}")
    print(
        "(ratios: list variants against the plain loop over the list, generator variants against the plain loop"
        " over the same generator)"
    )
    per_record = sys_getsizeof_record(records[0])
    print(f"(for scale: the record list itself holds ~{per_record * a.n / 2**20:.0f} MiB; none of the variants copies it)")


def sys_getsizeof_record(r: dict[str, Any]) -> int:
    import sys

    return sys.getsizeof(r) + sum(sys.getsizeof(v) for v in r.values())


if __name__ == "__main__":
    main()
