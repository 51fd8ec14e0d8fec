"""Worker threads for sync handlers: one slow call never stalls the server.

A plain ``def`` handler may block — a database query, a long computation, a library with no
async API. Run inline on the event loop it would hold every other request of every session
until it returns. So the engine runs each sync handler in a worker thread (anyio's
``to_thread``), at most ``Config.handler_threads`` at once per engine: a
:class:`~anyio.CapacityLimiter` makes further calls queue instead of spawning threads without
bound. Async handlers stay on the loop; they yield by themselves.

Layers that call a sync function on a handler's behalf (the collection switch calls the
author's handler, then shapes its records) use :func:`in_worker` with the request's context,
so they share the same bound.

What a worker thread may touch: the handler's own arguments and the :class:`Context` it was
given (nothing else uses that context while the handler runs). Shared state a handler reaches
for itself — a database connection, a cache — must be thread-safe, as in any threaded server:
the demo store serialises its one SQLite connection with a lock (``check_same_thread=False``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from .context import Context

WORKERS_KEY = "mcpaql.workers"  # Context.extensions: the engine's CapacityLimiter


def new_limiter(size: int) -> anyio.CapacityLimiter:
    """A bound on concurrent worker threads (created outside a running loop; usable from any)."""
    return anyio.CapacityLimiter(size)


async def run_in_worker(limiter: anyio.CapacityLimiter | None, fn: Callable[..., Any], /, **kwargs: Any) -> Any:
    """``fn(**kwargs)`` in a worker thread under ``limiter``; an awaitable it returns (a sync
    function handing back a coroutine) is awaited here, on the loop."""
    result = await anyio.to_thread.run_sync(functools.partial(fn, **kwargs), limiter=limiter)
    if hasattr(result, "__await__"):
        return await result
    return result


async def in_worker(ctx: Context | None, fn: Callable[..., Any], /, **kwargs: Any) -> Any:
    """:func:`run_in_worker` under the bound of the engine serving ``ctx`` (anyio's default
    limiter when called outside an engine, e.g. a handler called directly in a test)."""
    limiter = ctx.extensions.get(WORKERS_KEY) if ctx is not None else None
    return await run_in_worker(limiter, fn, **kwargs)
