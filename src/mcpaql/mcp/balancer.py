"""Round-robin over the processes of one deployment, in the client: what a load balancer in
front of N stateless ``mcpaql serve --transport http --stateless`` processes does.

Used by the multi-process tests and ``bench/bench_processes.py`` (a proxy process in the middle
would measure itself on a 2-core machine), and usable by any client of a small deployment that
has no balancer. Like a balancer's passive health check, a process whose connection failed is
left out for :data:`DOWN_SECONDS`; a request that could not even *connect* to a process goes to
the next one, while a request that may have reached a process and then failed is never re-sent,
because a call may not be idempotent — the caller sees the error.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from .client import Connection, ServerSpec
from .sdk_private import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

DOWN_SECONDS = 2.0


class RoundRobin(httpx2.AsyncBaseTransport):
    """An httpx transport sending each request to the next of ``urls`` (scheme, host, port;
    the path is the request's own). ``served[i]`` counts requests answered by ``urls[i]``;
    ``on_send(i, request)`` hears where each request went."""

    def __init__(self, urls: Sequence[str], *, on_send: Callable[[int, httpx2.Request], None] | None = None) -> None:
        if not urls:
            raise ValueError("RoundRobin needs at least one URL")
        self.origins = [httpx2.URL(u) for u in urls]
        self.inner = httpx2.AsyncHTTPTransport()
        self.served: Counter[int] = Counter()
        self.on_send = on_send
        self._turn = itertools.count()
        self._down_until = [0.0] * len(self.origins)

    def _pick(self) -> list[int]:
        """This turn's order: up processes first (round-robin), then those marked down."""
        start = next(self._turn)
        order = [(start + k) % len(self.origins) for k in range(len(self.origins))]
        now = time.monotonic()
        return [i for i in order if self._down_until[i] <= now] + [i for i in order if self._down_until[i] > now]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        last: httpx2.ConnectError | None = None
        for i in self._pick():
            origin = self.origins[i]
            request.url = request.url.copy_with(scheme=origin.scheme, host=origin.host, port=origin.port)
            request.headers["Host"] = origin.netloc.decode("ascii")
            try:
                response = await self.inner.handle_async_request(request)
            except httpx2.ConnectError as e:  # never reached that process: safe to try the next
                self._down_until[i] = time.monotonic() + DOWN_SECONDS
                last = e
                continue
            except httpx2.TransportError:  # it may have got the request: the caller decides
                self._down_until[i] = time.monotonic() + DOWN_SECONDS
                raise
            self._down_until[i] = 0.0
            self.served[i] += 1
            if self.on_send is not None:
                self.on_send(i, request)
            return response
        raise last or httpx2.ConnectError("no process of the deployment is reachable", request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Borrowed(httpx2.AsyncBaseTransport):
    """A shared :class:`RoundRobin` lent to one client: closing the client leaves it open (its
    connection pool serves the other clients; its owner closes it)."""

    def __init__(self, shared: RoundRobin) -> None:
        self.shared = shared

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self.shared.handle_async_request(request)


@asynccontextmanager
async def connect_balanced(
    urls: Sequence[str], *, balancer: RoundRobin | None = None, read_timeout_seconds: float | None = 60
) -> AsyncIterator[Connection]:
    """An official-SDK client connection whose every HTTP request goes round-robin over ``urls``
    (all serving the same path); pass ``balancer`` to share one rotation (and connection pool)
    between clients — its owner closes it (``await balancer.aclose()``)."""
    rr: httpx2.AsyncBaseTransport = _Borrowed(balancer) if balancer is not None else RoundRobin(urls)
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(transport=rr, timeout=timeout))
        client = Client(
            streamable_http_client(urls[0], http_client=http),
            mode="legacy",
            read_timeout_seconds=read_timeout_seconds,
            cache=None,
        )
        await stack.enter_async_context(client)
        yield Connection(client, ServerSpec("http", url=urls[0]))
