"""The MCP server for an engine: the derived tool surface plus one ``tools/call`` handler.

Tools come from ``engine.tools`` (names, titles, descriptions, annotations and input schemas
are derived in ``mcpaql.protocol.surface``); this module only converts them to SDK types.
The call handler never raises: every outcome, including bugs, is a ``CallToolResult`` whose
text is an MCP-AQL envelope (MCPI §4: domain errors are results, not JSON-RPC errors), and
no traceback, path or class name ever reaches the client.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from ..protocol.dispatch import Engine
from ..protocol.envelope import failure
from ..protocol.errors import internal_error
from ..protocol.session import Session
from ..protocol.surface import ToolDef
from .progress import progress_sink
from .sessions import SessionBinder

log = logging.getLogger("mcpaql.mcp.server")

INSTRUCTIONS = (
    'Call any of these tools with {"operation": "introspect", "params": {"query": "operations"}} '
    "to discover the available operations and their parameters."
)


def to_mcp_tool(tool: ToolDef) -> types.Tool:
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            title=a.get("title"),
            read_only_hint=a.get("readOnlyHint"),
            destructive_hint=a.get("destructiveHint"),
            idempotent_hint=a.get("idempotentHint"),
            open_world_hint=a.get("openWorldHint"),
        ),
    )


def _result(text: str, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def build_server(engine: Engine, *, transport: str = "mcp", session: Session | None = None) -> Server[Any]:
    """A low-level SDK ``Server`` serving ``engine``.

    ``session`` pins one mcpaql session to the whole server run (stdio, where the process is
    the connection); otherwise sessions follow the SDK's connections (see ``sessions``).
    """
    registry = engine.registry
    tools = [to_mcp_tool(t) for t in engine.tools]
    schemas: dict[str, Mapping[str, Any]] = {t.name: t.input_schema for t in engine.tools}
    binder = SessionBinder(engine, transport=transport, pinned=session)

    async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        owned: Session | None = None
        try:
            session, is_owned = binder.session_for(ctx)
            if is_owned:
                owned = session
            call_ctx = engine.context(session, progress_sink=progress_sink(ctx, params))
            envelope = await engine.call_tool(params.name, params.arguments, call_ctx)
            text, is_error = engine.render(envelope)
            return _result(text, is_error)
        except Exception:
            log.exception("tools/call %r failed unexpectedly", getattr(params, "name", None))
            text, is_error = engine.render(failure(internal_error()))
            return _result(text, is_error)
        finally:
            if owned is not None:
                with anyio.CancelScope(shield=True):  # a cancelled call still runs its close hooks
                    await owned.close()

    return Server(
        registry.adapter,
        version=registry.version,
        title=registry.display_name,
        description=registry.description,
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=schemas.get,
    )
