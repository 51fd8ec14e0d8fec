"""Per-call overhead of mcpaql over stdio, measured side by side with a plain MCP server.

The same trivial 3-parameter handler is served twice over real stdio subprocesses: through
mcpaql (envelope, gatekeeper, validation, introspection-ready surface) and as a bare tool on
the SDK's low-level ``Server``. Calls are interleaved (alternating which goes first) so both
see the same machine noise; we report medians and the ratio mcpaql/plain (target ≤ 1.15).

    .venv/bin/python bench/bench_stdio.py [-n 500] [--mode legacy|auto]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

import anyio

N_DEFAULT = 500
WARMUP = 50


def handler(a: str, b: int, c: bool = False) -> dict[str, Any]:
    return {"a": a, "b": b, "c": c}


def serve_mcpaql() -> None:
    from mcpaql import Adapter, Config
    from mcpaql.mcp import serve_stdio

    app = Adapter("bench", display_name="Bench")
    app.read(handler)
    anyio.run(serve_stdio, app.engine(Config.load(env={})))


def serve_plain() -> None:
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    tool = types.Tool(
        name="handler",
        description="Trivial handler.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "boolean"}},
            "required": ["a", "b"],
        },
    )

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool])

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        text = json.dumps(handler(**(params.arguments or {})))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=False)

    server = Server("plain", on_list_tools=on_list_tools, on_call_tool=on_call_tool, get_tool_input_schema=lambda n: None)

    async def main() -> None:
        async with stdio_server() as (r, w):
            await server.run(r, w, server.create_initialization_options())

    anyio.run(main)


async def bench(n: int, mode: str) -> None:
    from mcpaql.mcp import connect

    env = {"PYTHONUNBUFFERED": "1"}
    me = [sys.executable, __file__]
    args = {"a": "x", "b": 1, "c": True}
    async with (
        connect([*me, "serve-mcpaql"], env=env, mode=mode) as aql,
        connect([*me, "serve-plain"], env=env, mode=mode) as plain,
    ):
        calls = {
            "mcpaql": lambda: aql.call_tool("bench_mcpaql_read", {"operation": "handler", "params": args}),
            "plain": lambda: plain.call_tool("handler", args),
        }
        for _ in range(WARMUP):
            for call in calls.values():
                await call()
        times: dict[str, list[float]] = {k: [] for k in calls}
        order = list(calls)
        for i in range(n):
            for name in order if i % 2 == 0 else order[::-1]:
                t0 = time.perf_counter()
                body, is_error, _ = await calls[name]()
                times[name].append((time.perf_counter() - t0) * 1000)
                assert not is_error, body
        proto = aql.protocol_version
    med = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: sorted(v)[int(len(v) * 0.9)] for k, v in times.items()}
    print(f"stdio tools/call, {n} interleaved calls each after {WARMUP} warm-up, protocol {proto}")
    print(f"{'server':<8} {'median ms':>10} {'p90 ms':>8} {'min ms':>8}")
    for k in calls:
        print(f"{k:<8} {med[k]:>10.3f} {p90[k]:>8.3f} {min(times[k]):>8.3f}")
    ratio = med["mcpaql"] / med["plain"]
    print(f"ratio mcpaql/plain (median): {ratio:.3f}  (target <= 1.15: {'OK' if ratio <= 1.15 else 'OVER'})")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "serve-mcpaql":
        return serve_mcpaql()
    if len(sys.argv) > 1 and sys.argv[1] == "serve-plain":
        return serve_plain()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=N_DEFAULT)
    p.add_argument("--mode", choices=["legacy", "auto"], default="legacy")
    a = p.parse_args()
    anyio.run(bench, a.n, a.mode)


if __name__ == "__main__":
    main()
