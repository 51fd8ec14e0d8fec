"""The client side of wrapping: how adapters reach upstream MCP servers without the SDK.

The one door: :mod:`mcpaql.adapters.upstream` supervises upstreams (reconnects, back-off, tool
refresh, error wording) but never sees an SDK object. It asks :func:`open_upstream` for a
session over a transport made by :func:`stdio_transport` / :func:`http_transport`, and gets an
:class:`UpstreamClient` of our own: raw ``tools/list`` pages, raw ``tools/call`` results, and
JSON-RPC errors as :class:`RPCError` (the SDK's ``MCPError`` is translated here, nowhere else).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import mcp_types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from pydantic import TypeAdapter

from ..observability.hooks import current_telemetry
from .client import streamable_http_transport
from .http_lane import HttpLane, SessionExpired
from .lane import InvalidResult, Lane, lane_available, lane_stdio_client

__all__ = [
    "CONNECTION_CLOSED",
    "INVALID_REQUEST",
    "HttpLane",
    "InvalidResult",
    "Lane",
    "RPCError",
    "SessionExpired",
    "UpstreamClient",
    "http_transport",
    "lane_available",
    "open_upstream",
    "stdio_transport",
]

CONNECTION_CLOSED = types.CONNECTION_CLOSED
INVALID_REQUEST = types.INVALID_REQUEST
Progress = Callable[[float, float | None, str | None], Awaitable[None]]

_RAW_RESULT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
# The SDK's stubs are narrower than its code (mcp.client.session.ClientSession.send_request):
# - ``type-var``: ReceiveResultT is bound to BaseModel, but a TypeAdapter result_type is run
#   through ``validate_python``, which takes any type (here the raw dict);
# - ``arg-type`` on progress_callback: the ProgressFnT Protocol names its parameters, but the
#   dispatcher calls the callback positionally, ``fn(progress, total, message)``.


class RPCError(Exception):
    """A JSON-RPC error an upstream answered (or the transport's rendering of a closed connection)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def stdio_transport(
    command: str, args: list[str] | tuple[str, ...], env: dict[str, str] | None, cwd: str | None, lane: Lane | None = None
) -> Any:
    """A stdio transport: with ``lane``, spawned by :func:`.lane.lane_stdio_client` (under the reaper
    shim) so ``tools/call`` can go straight over the pipes; otherwise the SDK spawns ``command``
    (the caller guards it with the shim)."""
    params = StdioServerParameters(command=command, args=list(args), env=env, cwd=cwd)
    return lane_stdio_client(params, lane) if lane is not None else params


def http_transport(
    url: str, headers: dict[str, str] | None, *, sse: bool = False, on_session_id: Callable[[str], None] | None = None
) -> Any:
    """A streamable-HTTP transport (``on_session_id`` hears the session id, for an
    :class:`HttpLane`), or the legacy SSE one for older servers."""
    if sse:
        return sse_client(url, headers=headers)
    return streamable_http_transport(url, headers, on_session_id=on_session_id)


class UpstreamClient:
    """One open session to an upstream: what the supervisor needs of it, in our own types."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.protocol_version: str | None = client.protocol_version
        info = client.server_info
        self.server_info: dict[str, Any] = info.model_dump(exclude_none=True) if info is not None else {}

    async def list_tools(self) -> list[dict[str, Any]]:
        """Every page of ``tools/list``, each definition exactly as the upstream sent it.

        Raw, not ``Client.list_tools``: the SDK's ``Tool`` model drops fields it does not know
        (vendor extensions, newer annotation hints), and captures promise what was received.
        """
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                request = types.ListToolsRequest(params=params)
                res = await self._client.session.send_request(request, _RAW_RESULT)  # type: ignore[type-var]  # see _RAW_RESULT
            except MCPError as e:
                raise RPCError(e.code, e.error.message, e.error.data) from None
            tools.extend(t for t in res.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str))
            cursor = res.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return tools

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        lane: Lane | HttpLane | None = None,
        progress: Progress | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """``tools/call``, its result as the upstream sent it: over ``lane`` when one is given,
        else the SDK session. JSON-RPC errors raise :class:`RPCError`; an HTTP session the
        upstream no longer knows raises :class:`SessionExpired`; an answer that is not a result
        raises a ``ValueError`` (:class:`InvalidResult` when the lane saw it)."""
        try:
            if lane is not None:
                telemetry = current_telemetry()
                if telemetry is None:
                    return await lane.call(tool, arguments, progress=progress, timeout=timeout)
                # The lanes bypass the SDK client, so the CLIENT span and the _meta trace context
                # are ours here; on the SDK path below the SDK makes both itself.
                with telemetry.upstream_mcp(tool, self._span_attrs(lane)) as call:
                    result = await lane.call(tool, arguments, progress=progress, timeout=timeout, trace=call.carrier)
                    call.tool_result(result)
                    return result
            # The raw request, not Client.call_tool: a proxy forwards the upstream's result as it
            # came (unknown fields included) and the caller validates it; the typed path would
            # parse it into models, revalidate it against the output schema and dump it.
            return await self._client.session.send_request(  # type: ignore[type-var]  # see _RAW_RESULT
                types.CallToolRequest(params=types.CallToolRequestParams(name=tool, arguments=arguments)),
                _RAW_RESULT,
                request_read_timeout_seconds=timeout,
                progress_callback=progress,  # type: ignore[arg-type]  # see _RAW_RESULT
            )
        except MCPError as e:
            raise RPCError(e.code, e.error.message, e.error.data) from None

    def _span_attrs(self, lane: Lane | HttpLane) -> dict[str, Any]:
        """The upstream CLIENT span's attributes (MCP semantic conventions): never the upstream's
        session id (a credential towards it), nor the call's arguments."""
        attrs: dict[str, Any] = {"mcpaql.upstream": lane.name}
        if self.protocol_version:
            attrs["mcp.protocol.version"] = self.protocol_version
        if isinstance(lane, HttpLane):
            url = httpx.URL(lane.url)
            port = url.port or _PORTS.get(url.scheme, 80)
            attrs.update({"network.transport": "tcp", "server.address": url.host, "server.port": port})
        else:
            attrs["network.transport"] = "pipe"
        return attrs


_PORTS = {"http": 80, "https": 443}


@contextlib.asynccontextmanager
async def open_upstream(
    transport: Any,
    *,
    read_timeout: float | None,
    on_tools_changed: Callable[[], None],
    on_transport_error: Callable[[Exception], None],
) -> AsyncIterator[UpstreamClient]:
    """An initialized session (classic ``initialize`` handshake) over ``transport``.

    ``on_tools_changed`` is called (synchronously) on ``notifications/tools/list_changed``;
    ``on_transport_error`` on an error the transport reports without closing.
    """

    async def on_message(message: Any) -> None:  # named as in the SDK's MessageHandlerFnT Protocol
        if isinstance(message, types.ToolListChangedNotification):
            on_tools_changed()
        elif isinstance(message, Exception):
            on_transport_error(message)

    async with Client(
        transport, mode="legacy", message_handler=on_message, read_timeout_seconds=read_timeout, cache=None
    ) as client:
        yield UpstreamClient(client)
