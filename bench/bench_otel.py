"""What telemetry costs per call, off and on, measured side by side in one run.

1. The MCP-AQL pipeline (bench_pipeline.py's READ with three parameters): ``engine.call_tool``
   alone (telemetry off) and inside ``Telemetry.observe_call`` (on: the operation span, batched to
   an exporter that drops spans, and the metrics), alternating call by call.
2. A whole ``tools/call`` through mcpaql's MCP server with the official client (the SDK's
   in-process transport): off, then on (the global providers installed, so the SDK's own client
   and server spans are recorded too). Blocks alternate; the providers stay installed once set, so
   "off" there is a server built without telemetry under recording providers — the first block,
   before any provider exists, is the true off.
3. What the off path adds where it stays in the code: one context-variable lookup per upstream call.

Run: .venv/bin/python bench/bench_otel.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import timeit
from collections.abc import Sequence
from typing import Annotated, Any

from mcp.client.client import Client
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from pydantic import Field

from mcpaql import Adapter, Config
from mcpaql.mcp.server import build_server
from mcpaql.observability.hooks import current_telemetry
from mcpaql.observability.telemetry import Telemetry

app = Adapter("bench", display_name="Bench")


@app.read
def get_item(item_id: str, limit: Annotated[int, Field(ge=1, le=100)] = 10, verbose: bool = False) -> dict[str, Any]:
    """Get one item."""
    return {"item_id": item_id, "limit": limit, "verbose": verbose}


class Drop(SpanExporter):
    """An exporter that drops what it is given (the cost measured is ours, not the network's)."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def providers() -> tuple[TracerProvider, MeterProvider]:
    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(Drop()))
    return tp, MeterProvider(metric_readers=[InMemoryMetricReader()])


REQUEST = {"operation": "get_item", "params": {"item_id": "i_1", "limit": 5, "verbose": True}}
TOOL = "bench_mcpaql_read"


def med_us(xs: list[int]) -> float:
    return statistics.median(xs) / 1000


async def pipeline(n: int) -> tuple[float, float]:
    engine = app.engine(Config())
    session = engine.new_session()
    telemetry = Telemetry(*providers())
    for _ in range(2000):
        await engine.call_tool(TOOL, REQUEST, engine.context(session))
        await telemetry.observe_call(engine, TOOL, REQUEST, engine.context(session))
    off: list[int] = []
    on: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        await engine.call_tool(TOOL, REQUEST, engine.context(session))
        t1 = pc()
        await telemetry.observe_call(engine, TOOL, REQUEST, engine.context(session))
        t2 = pc()
        off.append(t1 - t0)
        on.append(t2 - t1)
    return med_us(off), med_us(on)


async def mcp_calls(server: Any, n: int) -> float:
    async with Client(server, mode="legacy") as client:
        for _ in range(200):
            await client.call_tool(TOOL, REQUEST)
        times: list[int] = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            await client.call_tool(TOOL, REQUEST)
            times.append(time.perf_counter_ns() - t0)
    return med_us(times)


async def main(n: int) -> None:
    off, on = await pipeline(n)
    print(f"{'in-process pipeline (per call)':<46}{'median µs':>12}")
    print(f"{'  telemetry off (engine.call_tool)':<46}{off:>12.1f}")
    print(f"{'  telemetry on (operation span + metrics)':<46}{on:>12.1f}")
    print(f"  overhead: {on - off:+.1f} µs per call ({on / off:.2f}x)")

    engine = app.engine(Config())
    m = max(300, n // 10)
    true_off = await mcp_calls(build_server(engine), m)
    tp, mp = providers()
    trace.set_tracer_provider(tp)
    metrics.set_meter_provider(mp)
    telemetry = Telemetry()
    on_full = statistics.median([await mcp_calls(build_server(engine, telemetry=telemetry), m) for _ in range(3)])
    sdk_only = statistics.median([await mcp_calls(build_server(engine), m) for _ in range(3)])
    print(f"\n{'tools/call through the MCP server (per call)':<46}{'median µs':>12}")
    print(f"{'  off (no providers: the SDK spans are no-ops)':<46}{true_off:>12.1f}")
    print(f"{'  on (--otel: SDK client+server spans, ours)':<46}{on_full:>12.1f}")
    print(f"{'  providers on, server built without telemetry':<46}{sdk_only:>12.1f}")
    print(f"  overhead of --otel: {on_full - true_off:+.1f} µs per call ({on_full / true_off:.2f}x)", end="")
    print(f"; mcpaql's share: {on_full - sdk_only:+.1f} µs")

    lookup = min(timeit.repeat(current_telemetry, number=200_000, repeat=5)) / 200_000 * 1e9
    print(f"\noff-path hook at each upstream call site (context-variable lookup): {lookup:.0f} ns")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
