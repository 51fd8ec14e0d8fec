"""An adapter with background executions, served over real transports for the Tasks tests.

    python tasks_server.py stdio
    python tasks_server.py http --port N [--stateless]

``slow_job`` waits until ``release`` is called (or its ``seconds`` pass), so a test can poll a
task while it is still working, then see it complete; ``bad_job`` fails with a domain error.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from e2e_support import serve_main

from mcpaql import Adapter, Config, Context, install_jobs
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
    def make_engine(mode: str | None) -> Any:
        install_jobs(app, "sqlite://:memory:")
        return app.engine(Config.load(mode=mode))

    serve_main(make_engine, argv)


if __name__ == "__main__":
    sys.exit(main())
