"""Per-call latency through the wrapper vs directly, over stdio, measured side by side.

Direct:  client ──stdio──> upstream
Wrapped: client ──stdio──> mcpaql wrapper ──stdio──> upstream

Upstreams: the replay server (deterministic echo of a fixture, Python) and, when installed
in ``.cache-upstreams``, the real ``@modelcontextprotocol/server-memory`` (Node).
``python bench/bench_wrap_latency.py [-n 200] [--json]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "surfaces"
MEMORY = REPO / ".cache-upstreams" / "node_modules" / ".bin" / "mcp-server-memory"


def upstreams() -> dict[str, tuple[list[str], str, dict[str, Any], str]]:
    """name → (upstream argv, tool, arguments, wrapped tool)."""
    out = {
        "replay(time)": ([sys.executable, "-m", "mcpaql.adapters.upstream.replay",
                          str(FIXTURES / "mcp-server-time.tools-list.json")],
                         "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
                         "time_mcpaql_read"),
    }
    if MEMORY.exists():
        out["server-memory"] = ([str(MEMORY)], "read_graph", {}, "memory_mcpaql_read")
    return out


async def interleaved(direct_argv: list[str], tool: str, args: dict[str, Any], wrapper_argv: list[str],
                      wrapped_tool: str, n: int, warmup: int) -> tuple[list[float], list[float]]:
    """Both clients open at once; calls alternate direct/wrapped so machine noise hits both alike."""
    wargs = {"operation": tool, "params": args}
    async with (
        Client(StdioServerParameters(command=direct_argv[0], args=direct_argv[1:]), mode="legacy", cache=None) as d,
        Client(StdioServerParameters(command=wrapper_argv[0], args=wrapper_argv[1:]), mode="legacy", cache=None) as w,
    ):
        await d.list_tools()
        await w.list_tools()
        for _ in range(warmup):
            await d.call_tool(tool, args)
            await w.call_tool(wrapped_tool, wargs)
        direct: list[float] = []
        wrapped: list[float] = []
        for _ in range(n):
            t0 = time.perf_counter()
            r = await d.call_tool(tool, args)
            direct.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, r
            t0 = time.perf_counter()
            r = await w.call_tool(wrapped_tool, wargs)
            wrapped.append((time.perf_counter() - t0) * 1000)
            assert not r.is_error, r
        return direct, wrapped


def stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"median_ms": round(statistics.median(xs), 3), "p90_ms": round(xs[int(len(xs) * 0.9) - 1], 3),
            "min_ms": round(xs[0], 3)}


async def measure(n: int, warmup: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for label, (argv, tool, args, wrapped_tool) in upstreams().items():
        name = wrapped_tool.split("_mcpaql")[0]
        wrapper = [sys.executable, str(Path(__file__).resolve()), "--serve", name, "--", *argv]
        direct, wrapped = await interleaved(argv, tool, args, wrapper, wrapped_tool, n, warmup)
        d, w = stats(direct), stats(wrapped)
        results[label] = {"direct": d, "wrapped": w, "ratio_median": round(w["median_ms"] / d["median_ms"], 2),
                          "overhead_median_ms": round(w["median_ms"] - d["median_ms"], 3), "calls": n}
    return results


def serve(name: str, argv: list[str]) -> None:
    """The wrapper process: wrap ``argv`` and serve it over this process's stdio."""
    from mcpaql.adapters.upstream.runtime import UpstreamSpec
    from mcpaql.adapters.upstream.wrap import wrap
    from mcpaql.config import Config
    from mcpaql.mcp.transports import run_served, serve_stdio

    async def main() -> None:
        async with wrap(UpstreamSpec.from_argv(argv, name=name), config=Config.load(env={})) as w:
            await serve_stdio(w)

    run_served(main)  # as `mcpaql wrap` runs: uvloop when installed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--serve":
        serve(argv[1], argv[3:])
        return 0
    ap = argparse.ArgumentParser(description="wrapper latency vs direct (stdio)")
    ap.add_argument("-n", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    results = anyio.run(measure, a.n, a.warmup)
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        for label, r in results.items():
            print(f"{label:14} direct median {r['direct']['median_ms']:.3f} ms (p90 {r['direct']['p90_ms']:.3f})  "
                  f"wrapped median {r['wrapped']['median_ms']:.3f} ms (p90 {r['wrapped']['p90_ms']:.3f})  "
                  f"ratio {r['ratio_median']}x  overhead {r['overhead_median_ms']:.3f} ms  ({r['calls']} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
