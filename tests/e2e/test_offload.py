"""One slow sync call never stalls the server (issue 14): over real stdio and HTTP with the
official client, a small call sent while a blocking ``def`` handler runs is answered before
it, in a fraction of its time.

No fixed time limits: the blocking call lasts 100× the small call's own unloaded latency
(at least a second), and the small call's loaded latency is compared with that.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from e2e_support import ENV_BASE, HERE, PY, HttpServer

from mcpaql.mcp import connect

pytestmark = pytest.mark.e2e

SERVER = str(HERE / "offload_server.py")
READ = "offload_mcpaql_read"
EXECUTE = "offload_mcpaql_execute"


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "stdio":
        yield [PY, SERVER, "stdio"]
        return
    server = HttpServer(app=SERVER)
    try:
        yield server.url
    finally:
        server.stop()


async def _timed(conn: Any, tool: str, request: dict[str, Any]) -> tuple[Any, float, float]:
    """(envelope, latency, finish time)."""
    start = time.perf_counter()
    env, is_error, _ = await conn.call_tool(tool, request)
    end = time.perf_counter()
    assert is_error is False and env["success"] is True, env
    return env, end - start, end


def test_small_call_is_answered_while_a_blocking_sync_call_runs(target: Any, tmp_path: Path) -> None:
    marker = tmp_path / "block-started"
    out: dict[str, Any] = {}

    async def scenario() -> None:
        async with connect(target, env=ENV_BASE) as conn:
            unloaded = statistics.median([(await _timed(conn, READ, {"operation": "ping"}))[1] for _ in range(7)])
            seconds = max(1.0, 100 * unloaded)
            out["unloaded"], out["seconds"] = unloaded, seconds

            async def long_call() -> None:
                request = {"operation": "block", "params": {"seconds": seconds, "marker": str(marker)}}
                out["long"] = await _timed(conn, EXECUTE, request)

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                while not marker.exists():  # the blocking handler is running now
                    await anyio.sleep(0.01)
                out["small"] = await _timed(conn, READ, {"operation": "ping"})

    anyio.run(scenario)
    small_env, small_latency, small_end = out["small"]
    long_env, long_latency, long_end = out["long"]
    assert small_env["data"] == "pong" and long_env["data"] == {"slept": out["seconds"]}
    assert small_end < long_end, "the small call waited for the blocking one"
    assert small_latency < long_latency / 4, (small_latency, long_latency, out["unloaded"])
