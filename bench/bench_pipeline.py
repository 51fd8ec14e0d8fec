"""In-process pipeline cost per call: a simple READ with three parameters through the whole
dispatch pipeline (limits, gatekeeper, validation, handler, envelope, JSON rendering), side by
side with calling the handler directly. Target: median under 50 µs.

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


@app.read
def get_item(item_id: str, limit: Annotated[int, Field(ge=1, le=100)] = 10, verbose: bool = False) -> dict:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


async def main(n: int) -> None:
    engine = app.engine(Config())
    session = engine.new_session()
    request = {"operation": "get_item", "params": {"item_id": "i_1", "limit": 5, "verbose": True}}
    tool = "bench_mcpaql_read"
    for _ in range(2000):  # warm up
        env = await engine.call_tool(tool, request, engine.context(session))
        engine.render(env)
    assert env["success"], env
    pipeline: list[int] = []
    direct: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        env = await engine.call_tool(tool, request, engine.context(session))
        engine.render(env)
        t1 = pc()
        get_item("i_1", 5, True)
        t2 = pc()
        pipeline.append(t1 - t0)
        direct.append(t2 - t1)
    med = statistics.median(pipeline) / 1000
    p99 = sorted(pipeline)[int(n * 0.99)] / 1000
    dmed = statistics.median(direct) / 1000
    print(f"{'path':<34}{'median µs':>12}{'p99 µs':>10}")
    print(f"{'mcpaql pipeline (+render)':<34}{med:>12.1f}{p99:>10.1f}")
    print(f"{'handler called directly':<34}{dmed:>12.2f}")
    print(f"pipeline overhead per call: {med - dmed:.1f} µs  (target: median < 50 µs) -> {'OK' if med < 50 else 'MISSED'}")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
