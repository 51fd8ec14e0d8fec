"""An adapter with background executions, served over real transports for the Tasks tests.

    python tasks_server.py stdio
    python tasks_server.py http --port N [--stateless]

``slow_job`` waits until ``release`` is called (or its ``seconds`` pass), so a test can poll a
task while it is still working, then see it complete; ``bad_job`` fails with a domain error.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

import anyio

from mcpaql import Adapter, Config, Context, install_jobs
from mcpaql.mcp import serve_http, serve_stdio
from mcpaql.protocol.errors import MCPAQLError

app = Adapter("tasks_app", display_name="Tasks", version="1.0.0")
_state: dict[str, Any] = {}


def _released() -> anyio.Event:
    if "event" not in _state:
        _state["event"] = anyio.Event()
    return _state["event"]


@app.execute(background=True)
async def slow_job(seconds: float, ctx: Context) -> dict[str, Any]:
    """Work until released (or for `seconds`), reporting progress."""
    await ctx.report_progress(1, 2, "half way")
    with anyio.move_on_after(seconds):
        await _released().wait()
    return {"done": True, "seconds": seconds}


@app.execute(background=True)
async def bad_job(ctx: Context) -> dict[str, Any]:
    """Fail with a domain error."""
    raise MCPAQLError("VALIDATION_INVALID_VALUE", "this job always fails", {"param_name": "none"})


@app.execute
def release() -> bool:
    """Let every waiting slow_job finish."""
    _released().set()
    _state.pop("event", None)
    return True


@app.read
def ping() -> str:
    """A plain, synchronous operation."""
    return "pong"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--stateless", action="store_true")
    p.add_argument("--exit-with-stdin", action="store_true")
    a = p.parse_args(argv)
    if a.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    install_jobs(app, "sqlite://:memory:")
    engine = app.engine(Config())
    if a.transport == "stdio":
        anyio.run(serve_stdio, engine)
    else:
        serve_http(engine, port=a.port, stateless=a.stateless)


if __name__ == "__main__":
    sys.exit(main())
