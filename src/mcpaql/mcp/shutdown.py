"""Graceful shutdown of an HTTP server: calls in flight finish, then open streams end.

Why this is needed beyond uvicorn's own graceful shutdown: the SDK streams its answers as
server-sent events through ``sse_starlette``, which by default ends *every* SSE response as soon
as uvicorn sees SIGTERM — so a ``tools/call`` in flight lost its answer ("SSE stream ended without
a response") although uvicorn was still waiting for it. Here that automatic drain is switched off
(``sse_starlette``'s documented ``AppStatus.disable_automatic_graceful_drain``), and
:func:`drain` does it in the right order instead:

1. SIGTERM: uvicorn stops accepting connections; ``/readyz`` answers 503 (draining);
2. the requests in flight that carry calls (POSTs, counted by :class:`InFlight`) finish, for up
   to the grace period;
3. then the long-lived streams (a stateful client's GET stream) are ended, so uvicorn's wait for
   open connections ends too, and the backend closes after the last answer.

After the grace period uvicorn cancels whatever is left (``timeout_graceful_shutdown``).
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from sse_starlette.sse import AppStatus
from starlette.types import ASGIApp, Receive, Scope, Send

from .health import Readiness

log = logging.getLogger("mcpaql.mcp.shutdown")
POLL = 0.05


class InFlight:
    """ASGI middleware counting the POST requests in flight (the ones that carry calls)."""

    def __init__(self, app: ASGIApp, *, counter: list[int]) -> None:
        self.app = app
        self.counter = counter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        self.counter[0] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter[0] -= 1


def take_over_sse_drain() -> None:
    """Stop ``sse_starlette`` from ending every SSE response at SIGTERM (see module doc)."""
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # sse_starlette leaves it unannotated
    AppStatus.should_exit = False


async def drain(server: Any, counter: list[int], readiness: Readiness, grace: float) -> None:
    """Run beside ``server`` (a ``uvicorn.Server``): once it is told to exit, wait for the calls
    in flight (up to ``grace`` seconds), then end the remaining SSE streams."""
    while not server.should_exit:
        await anyio.sleep(POLL)
    readiness.draining = True
    with anyio.move_on_after(grace):
        while counter[0]:
            await anyio.sleep(POLL)
    if counter[0]:
        log.warning("shutdown grace period over with %d request(s) in flight: they are cut off", counter[0])
    AppStatus.should_exit = True  # ends the open GET streams; uvicorn then sees no connection left
