"""The MCP server for an engine: the derived tool surface plus one ``tools/call`` handler.

Tools come from ``engine.tools`` (names, titles, descriptions, annotations and input schemas
are derived in ``mcpaql.protocol.surface``); this module only converts them to SDK types.
The call handler never raises: every outcome, including bugs, is a ``CallToolResult`` whose
text is an MCP-AQL envelope (MCPI §4: domain errors are results, not JSON-RPC errors), and
no traceback, path or class name ever reaches the client.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from ..auth.narrow import engine_for
from ..protocol.dispatch import Engine
from ..protocol.envelope import failure
from ..protocol.errors import MCPAQLError, internal_error
from ..protocol.session import Session
from ..protocol.surface import ToolDef, server_instructions
from .auth import caller_of, request_identity
from .progress import progress_sink
from .sdk_private import request_connection
from .sessions import SessionBinder

if TYPE_CHECKING:
    from ..observability.telemetry import Telemetry

log = logging.getLogger("mcpaql.mcp.server")


def to_mcp_tool(tool: ToolDef) -> types.Tool:
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        # No top-level title: clients fall back to annotations.title (MCP display precedence),
        # which seed 003 requires anyway; sending both costs tokens in every conversation.
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


def session_not_yours() -> MCPAQLError:
    return MCPAQLError(
        "PERMISSION_DENIED",
        "Permission denied: 'this session belongs to another caller'",
        {"reason": "session_identity_mismatch"},
    )


def _result(text: str, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


@runtime_checkable
class EngineHolder(Protocol):
    """An engine that can be rebuilt while serving (a wrapped upstream whose tools changed):
    ``engine`` is read per request and ``on_change`` registers a callback for rebuilds."""

    @property
    def engine(self) -> Engine: ...

    def on_change(self, listener: Callable[[Engine], Any]) -> None: ...


def current_engine(source: Engine | EngineHolder) -> Engine:
    return source if isinstance(source, Engine) else source.engine


def build_server(
    source: Engine | EngineHolder,
    *,
    transport: str = "mcp",
    session: Session | None = None,
    identify: Callable[[Any], str | None] | None = None,
    telemetry: Telemetry | None = None,
) -> Server[Any]:
    """A low-level SDK ``Server`` serving ``source`` (an engine, or a holder that may rebuild it).

    ``session`` pins one mcpaql session to the whole server run (stdio, where the process is
    the connection); otherwise sessions follow the SDK's connections (see ``sessions``).
    ``identify(request_context)`` is the identity seam: the caller's established identity (the
    authenticated subject once auth exists), never anything taken from the request's arguments.
    When the holder rebuilds its engine, every client seen so far gets
    ``notifications/tools/list_changed`` and the next ``tools/list`` shows the new surface.
    ``telemetry`` (:mod:`mcpaql.observability`) instruments every call; without it nothing of
    OpenTelemetry beyond the SDK's own no-op spans runs.
    """
    if telemetry is not None:  # imported only when on: OpenTelemetry beyond the SDK's API stays unloaded
        from .observe import install, observed_call
    engine = current_engine(source)
    registry = engine.registry
    # converted once per engine (the served one and each scope-narrowed one), not per request
    surfaces: weakref.WeakKeyDictionary[Engine, tuple[list[types.Tool], dict[str, Mapping[str, Any]]]] = (
        weakref.WeakKeyDictionary()
    )

    def tools_of(e: Engine) -> tuple[list[types.Tool], dict[str, Mapping[str, Any]]]:
        found = surfaces.get(e)
        if found is None:
            found = surfaces[e] = ([to_mcp_tool(t) for t in e.tools], {t.name: t.input_schema for t in e.tools})
        return found

    def engine_of(ctx: ServerRequestContext[Any]) -> Engine:
        """The engine this request may use: narrowed to an authenticated caller's scopes."""
        return engine_for(current_engine(source), caller_of(ctx))

    binder = SessionBinder(engine, transport=transport, pinned=session, identify=identify or request_identity)
    listeners: weakref.WeakSet[Any] = weakref.WeakSet()

    async def notify_changed(_new: Engine) -> None:
        for peer in list(listeners):
            try:
                await peer.send_tool_list_changed()
            except Exception:  # a client that went away must not break the others
                log.debug("could not send tools/list_changed", exc_info=True)

    if isinstance(source, EngineHolder) and not isinstance(source, Engine):
        source.on_change(notify_changed)

    def remember(ctx: ServerRequestContext[Any]) -> None:
        # ctx.session is a per-request proxy (gone after the request); the connection behind it
        # lives as long as the client, so that is what a later list_changed is sent on. SDK 2.3
        # exposes it only privately; without it no notification is sent (clients re-list anyway).
        peer = request_connection(ctx)
        if peer is not None and hasattr(peer, "send_tool_list_changed"):
            with contextlib.suppress(TypeError):  # not weak-referenceable: no notifications for it
                listeners.add(peer)

    async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        remember(ctx)
        return types.ListToolsResult(tools=tools_of(engine_of(ctx))[0])

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        owned: Session | None = None
        engine = current_engine(source)
        try:
            remember(ctx)
            engine = engine_of(ctx)
            session, is_owned = binder.session_for(ctx)
            if is_owned:
                owned = session
            caller = caller_of(ctx)
            if caller is not None and session.identity != caller.identity:  # the SDK binds sessions to principals too
                return _result(*engine.render(failure(session_not_yours())))
            call_ctx = engine.context(session, progress_sink=progress_sink(ctx, params))
            if telemetry is None:
                envelope = await engine.call_tool(params.name, params.arguments, call_ctx)
            else:
                envelope = await observed_call(telemetry, engine, ctx, params, call_ctx, session, transport)
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

    server = Server(
        registry.adapter,
        version=registry.version,
        title=registry.display_name,
        description=registry.description,
        instructions=server_instructions(engine.tools, engine.introspect_tool),
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=lambda name: tools_of(current_engine(source))[1].get(name),  # all tools: calls are narrowed
    )
    if telemetry is not None:
        install(server.middleware, telemetry, transport)
    return server
