"""A tiny adapter with one slow operation, served by ``mcpaql serve tests/multiproc/slow_app.py``
in the graceful-shutdown tests: a call can be kept in flight while the process gets SIGTERM."""

from __future__ import annotations

import anyio

from mcpaql import Adapter

app = Adapter("slow", display_name="Slow")


@app.read
async def wait(seconds: float) -> dict[str, float]:
    """Answer after ``seconds`` seconds.

    Args:
        seconds: How long to take.
    """
    await anyio.sleep(seconds)
    return {"waited": seconds}
