"""A small MCP client for the CLI, the conformance suite and the token report.

It speaks to any MCP server (ours or a third party's) through the official SDK and returns
what the server *sent*: raw tool dicts (annotations included) and raw ``tools/call`` results,
because the consumers measure and check the wire, not the SDK's typed view of it.
Default ``mode="legacy"`` is the classic ``initialize`` handshake, which is what third-party
clients speak today; ``mode="auto"`` lets the SDK probe for the 2026-07-28 era.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO, cast

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from .. import reaper
from .sdk_private import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT, create_mcp_http_client

RAW: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])
# The SDK's stubs are narrower than its code (mcp.client.session.ClientSession.send_request):
# - ``type-var``: ReceiveResultT is bound to BaseModel, but a TypeAdapter result_type is run
#   through ``validate_python``, which takes any type (here the raw dict);
# - ``arg-type`` on progress_callback: the ProgressFnT Protocol names its parameters, but the
#   dispatcher calls the callback positionally, ``fn(progress, total, message)``.
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
Mode = Literal["legacy", "auto", "2026-07-28"]  # "2026-07-28": adopt the modern era without a probe


@dataclass(frozen=True)
class ServerSpec:
    """Where a server is: a streamable-HTTP URL, or a command to launch for stdio."""

    kind: Literal["http", "stdio"]
    url: str | None = None
    command: str | None = None
    args: tuple[str, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        if self.kind == "http":
            return cast(str, self.url)  # an "http" spec carries its url (parse_server_spec)
        return shlex.join([self.command or "", *self.args])


def _is_url(s: str) -> bool:
    return s.startswith(("http://", "https://"))


def parse_server_spec(spec: str | Sequence[str] | ServerSpec) -> ServerSpec:
    """``"http(s)://…"`` → streamable HTTP; anything else is a command line for stdio.

    A string is split shell-style; a list is taken as argv as-is (what ``mcpaql wrap -- …`` gets).
    """
    if isinstance(spec, ServerSpec):
        return spec
    argv = shlex.split(spec) if isinstance(spec, str) else [str(a) for a in spec]
    if not argv or not argv[0]:
        raise ValueError("no server given: pass a URL (http://…/mcp) or a command to run")
    if _is_url(argv[0]):
        if len(argv) > 1:
            raise ValueError(f"a URL server takes no arguments, got: {shlex.join(argv[1:])}")
        return ServerSpec("http", url=argv[0])
    return ServerSpec("stdio", command=argv[0], args=tuple(argv[1:]))


def _text_of(result: dict[str, Any]) -> str | None:
    texts = [c.get("text", "") for c in result.get("content") or [] if isinstance(c, dict) and c.get("type") == "text"]
    return "".join(texts) if texts else None


class Connection:
    """A live client connection; see :func:`connect`."""

    def __init__(self, client: Client, spec: ServerSpec) -> None:
        self.client = client
        self.spec = spec

    @property
    def server_info(self) -> types.Implementation | None:
        return self.client.server_info

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    @property
    def instructions(self) -> str | None:
        return self.client.instructions

    async def list_tools_raw(self) -> list[dict[str, Any]]:
        """Every tool exactly as the server sent it (all pages), camelCase keys and all."""
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            request = types.ListToolsRequest(params=params)
            raw = await self.client.session.send_request(request, RAW)  # type: ignore[type-var]  # see RAW
            tools.extend(raw.get("tools") or [])
            cursor = raw.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, progress: ProgressFn | None = None
    ) -> tuple[Any, bool, dict[str, Any]]:
        """``(envelope_or_text, is_error, raw_result)``.

        The first item is the parsed JSON of the text content when it is JSON (an MCP-AQL
        envelope for our servers), else the text itself, else None. A JSON-RPC error raises
        ``mcp.MCPError``.
        """
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        session = self.client.session
        raw = await session.send_request(request, RAW, progress_callback=progress)  # type: ignore[type-var,arg-type]  # see RAW
        text = _text_of(raw)
        body: Any = text
        if text is not None:
            try:
                body = json.loads(text)
            except ValueError:
                body = text
        return body, bool(raw.get("isError")), raw


@asynccontextmanager
async def streamable_http_transport(
    url: str, headers: dict[str, str] | None = None, on_session_id: Callable[[str], None] | None = None
) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP client transport on an HTTP client this function owns and closes.

    ``on_session_id`` hears every ``Mcp-Session-Id`` the server assigns, so that a direct lane
    (:mod:`.http_lane`) can send its own requests on the SDK's session.
    """

    async def hear(response: httpx2.Response) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and on_session_id is not None:
            on_session_id(sid)

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    hooks = {"response": [hear]} if on_session_id is not None else None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, event_hooks=hooks) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


@asynccontextmanager
async def connect(
    target: str | Sequence[str] | ServerSpec,
    *,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    mode: Mode = "legacy",
    read_timeout_seconds: float | None = 60,
    message_handler: Any = None,
    errlog: TextIO | None = None,
) -> AsyncIterator[Connection]:
    """Connect to a server and yield a :class:`Connection`; closing it ends the session
    (stdio: stdin is closed and the process tree stopped; HTTP: the session is DELETEd).

    ``env`` is merged over the SDK's safe default environment for stdio servers; ``headers``
    are sent with every HTTP request (e.g. ``Authorization``).
    """
    spec = parse_server_spec(target)
    async with AsyncExitStack() as stack:
        transport: Any
        if spec.kind == "http":
            assert spec.url is not None
            http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
            transport = streamable_http_client(spec.url, http_client=http)
        else:
            assert spec.command is not None
            # under the reaper shim: the server cannot outlive this process, however it ends
            command, *args = reaper.guarded(spec.command, spec.args, get_default_environment() | (env or {}), cwd)
            params = StdioServerParameters(command=command, args=args, env=env, cwd=cwd)
            transport = stdio_client(params, errlog=errlog or sys.stderr)
        client = Client(
            transport,
            mode=mode,
            read_timeout_seconds=read_timeout_seconds,
            message_handler=message_handler,
            cache=None,
        )
        await stack.enter_async_context(client)
        yield Connection(client, spec)
