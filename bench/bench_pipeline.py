"""In-process pipeline cost per call: a simple READ with three parameters through the whole
dispatch pipeline (limits, gatekeeper, validation, handler, envelope, JSON rendering), side by
side with calling the handler directly. Target: median under 50 µs.

Three handlers, interleaved: ``async def`` (runs on the loop), a plain ``def`` declared
non-blocking (``sync_to_thread=False``, runs on the loop) and a plain ``def`` (the default: a
worker thread, so a blocking handler never stalls the server — the hop is what it costs).

Run: .venv/bin/python bench/bench_pipeline.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Annotated

from pydantic import Field

from mcpaql import Adapter, Config

app = Adapter("bench", display_name="Bench")


Limit = Annotated[int, Field(ge=1, le=100)]


def get_item(item_id: str, limit: Limit = 10, verbose: bool = False) -> dict:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


@app.read
async def get_item_async(item_id: str, limit: Limit = 10, verbose: bool = False) -> dict:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


@app.read(sync_to_thread=False)
def get_item_inline(item_id: str, limit: Limit = 10, verbose: bool = False) -> dict:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


@app.read
def get_item_threaded(item_id: str, limit: Limit = 10, verbose: bool = False) -> dict:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


PATHS = {
    "async def handler": "get_item_async",
    "def, sync_to_thread=False": "get_item_inline",
    "def (worker thread, default)": "get_item_threaded",
}


async def main(n: int) -> None:
    engine = app.engine(Config())
    session = engine.new_session()
    tool = "bench_mcpaql_read"
    params = {"item_id": "i_1", "limit": 5, "verbose": True}
    requests = {label: {"operation": op, "params": params} for label, op in PATHS.items()}
    for _ in range(2000):  # warm up
        for request in requests.values():
            env = await engine.call_tool(tool, request, engine.context(session))
            engine.render(env)
            assert env["success"], env
    times: dict[str, list[int]] = {label: [] for label in PATHS}
    direct: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(n):  # interleaved: a noisy moment costs every path alike
        for label, request in requests.items():
            t0 = pc()
            env = await engine.call_tool(tool, request, engine.context(session))
            engine.render(env)
            times[label].append(pc() - t0)
        t1 = pc()
        get_item("i_1", 5, True)
        direct.append(pc() - t1)
    dmed = statistics.median(direct) / 1000
    print(f"{'path':<34}{'median µs':>12}{'p99 µs':>10}")
    for label, ts in times.items():
        med = statistics.median(ts) / 1000
        p99 = sorted(ts)[int(n * 0.99)] / 1000
        print(f"{label:<34}{med:>12.1f}{p99:>10.1f}")
    print(f"{'handler called directly':<34}{dmed:>12.2f}")
    on_loop = statistics.median(times["def, sync_to_thread=False"]) / 1000
    hop = statistics.median(times["def (worker thread, default)"]) / 1000 - on_loop
    print(f"pipeline on the loop: {on_loop:.1f} µs (target: median < 50 µs) -> {'OK' if on_loop < 50 else 'MISSED'}")
    print(f"the worker-thread hop of a plain def handler: +{hop:.1f} µs")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
