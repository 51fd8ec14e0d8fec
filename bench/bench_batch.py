"""1,000 operations over real stdio: one batch request versus 1,000 single calls.

A subprocess serves a small mcpaql adapter (``get_item`` with a typed id, over an in-memory
dict) through ``mcpaql.mcp.transports.serve_stdio``; the client is ``mcpaql.mcp.client.connect``.
Per round we time, interleaved so both see the same machine noise:

* singles  — 1,000 ``tools/call`` requests, one operation each, sequentially;
* batch    — the same 1,000 operations as ``{"operation": "batch", "operations": [...]}`` requests.

The engine caps a batch at ``MAX_BATCH`` (100) operations; ``batch x100`` sends ten batches of
100 (what a client can do out of the box) and ``batch x1000`` one batch of 1,000 (the server
subprocess raises its cap for this measurement only). Ratios are singles / batch.

Two handlers, each measured the same way: ``get_item``, a plain ``def`` (the default: it runs in
a worker thread, so every operation — in a batch too — pays the thread hop), and
``get_item_inline``, the same function declared non-blocking (``sync_to_thread=False``: on the
loop, as an ``async def`` would be). The second shows what batching saves of the protocol itself.

    .venv/bin/python bench/bench_batch.py [-n 1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import anyio

TOOL = "bench_mcpaql_read"


def serve() -> None:
    import mcpaql.protocol.batch as batch
    from mcpaql import Adapter, Config
    from mcpaql.mcp.transports import serve_stdio

    batch.MAX_BATCH = 1000  # only in this benchmark process: lets one request carry 1,000 ops
    items = {f"it_{i:04}": {"item_id": f"it_{i:04}", "name": f"item {i}", "n": i} for i in range(1000)}
    app = Adapter("bench", display_name="Bench")

    @app.read
    def get_item(item_id: str) -> dict[str, Any]:
        """Get one item."""
        return items[item_id]

    @app.read(sync_to_thread=False)
    def get_item_inline(item_id: str) -> dict[str, Any]:
        """Get one item (declared non-blocking: no worker thread)."""
        return items[item_id]

    anyio.run(serve_stdio, app.engine(Config.load(env={})))


async def bench(n: int, rounds: int) -> None:
    for operation in ("get_item", "get_item_inline"):
        await bench_one(operation, n, rounds)


async def bench_one(operation: str, n: int, rounds: int) -> None:
    from mcpaql.mcp.client import connect

    ops = [{"operation": operation, "params": {"item_id": f"it_{i % 1000:04}"}} for i in range(n)]

    async with connect([sys.executable, __file__, "serve"], env={"PYTHONUNBUFFERED": "1"}) as conn:

        async def singles() -> None:
            for op in ops:
                body, is_error, _ = await conn.call_tool(TOOL, op)
                assert not is_error and body["success"], body

        async def batched(size: int) -> None:
            for i in range(0, n, size):
                chunk = ops[i : i + size]
                body, is_error, _ = await conn.call_tool(TOOL, {"operation": "batch", "operations": chunk})
                assert not is_error and body["summary"]["succeeded"] == len(chunk), body

        variants = {
            "singles": singles,
            "batch x100": lambda: batched(100),
            f"batch x{n}": lambda: batched(n),
        }
        for fn in variants.values():  # warm-up
            await fn()
        times: dict[str, list[float]] = {k: [] for k in variants}
        for r in range(rounds):
            order = list(variants) if r % 2 == 0 else list(variants)[::-1]
            for name in order:
                t0 = time.perf_counter()
                await variants[name]()
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{n} {operation} operations over stdio, median of {rounds} interleaved rounds")
    print(f"{'variant':<14} {'total ms':>10} {'per op µs':>10} {'singles/x':>10}")
    for k, t in med.items():
        print(f"{k:<14} {t * 1000:>10.1f} {t / n * 1e6:>10.1f} {med['singles'] / t:>10.2f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        return serve()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    anyio.run(bench, a.n, a.rounds)


if __name__ == "__main__":
    main()
