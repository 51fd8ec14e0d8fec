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
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import mcp_types as types
from mcp.server.context import HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

from ..auth.narrow import engine_for
from ..protocol.dispatch import Engine
from ..protocol.envelope import failure
from ..protocol.errors import MCPAQLError, internal_error
from ..protocol.session import Session
from ..protocol.surface import server_instructions
from ..safety.verification import collecting_challenges
from .auth import caller_of, request_identity
from .elicit import PendingResults, elicit_now, input_required, is_modern, linked, supports_url_elicitation
from .listing import cache_hints, listing
from .listing import to_mcp_tool as to_mcp_tool  # re-exported: tests and the conformance servers use it here
from .progress import progress_sink
from .results import envelope_result
from .sdk_private import request_connection
from .sessions import SessionBinder
from .tasks import (
    TASKS_EXTENSION,
    UpdateTaskRequestParams,
    background_operations,
    cancel_refused,
    client_declares_tasks,
    create_task_result,
    requested_operation,
    task_of,
    tool_for,
    unknown_task,
)

if TYPE_CHECKING:
    from ..observability.telemetry import Telemetry

log = logging.getLogger("mcpaql.mcp.server")


def session_not_yours() -> MCPAQLError:
    return MCPAQLError(
        "PERMISSION_DENIED",
        "Permission denied: 'this session belongs to another caller'",
        {"reason": "session_identity_mismatch"},
    )


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
    surfaces: weakref.WeakKeyDictionary[Engine, tuple[types.ListToolsResult, dict[str, Mapping[str, Any]], frozenset[str]]] = (
        weakref.WeakKeyDictionary()
    )

    def tools_of(e: Engine) -> tuple[types.ListToolsResult, dict[str, Mapping[str, Any]], frozenset[str]]:
        """The listing, input schemas and background operations of ``e``: built once per engine
        (the served one and each scope-narrowed one), never per request, so a listing is stable."""
        found = surfaces.get(e)
        if found is None:
            found = surfaces[e] = (listing(e), {t.name: t.input_schema for t in e.tools}, background_operations(e))
        return found

    def engine_of(ctx: ServerRequestContext[Any]) -> Engine:
        """The engine this request may use: narrowed to an authenticated caller's scopes."""
        return engine_for(current_engine(source), caller_of(ctx))

    def runs_as_task(ctx: ServerRequestContext[Any], e: Engine, arguments: Any) -> bool:
        """A background operation, called by a request that declared the Tasks extension."""
        if not client_declares_tasks(ctx):
            return False
        return requested_operation(arguments) in tools_of(e)[2]

    binder = SessionBinder(engine, transport=transport, pinned=session, identify=identify or request_identity)
    pending = PendingResults()
    listeners: weakref.WeakSet[Any] = weakref.WeakSet()
    # 2026-07-28 clients hear of changes only on a subscriptions/listen stream (no standing
    # connection to notify); handshake-era clients get notifications/tools/list_changed.
    bus = InMemorySubscriptionBus()

    async def notify_changed(_new: Engine) -> None:
        try:
            await bus.publish(ToolsListChanged())
        except Exception:
            log.debug("could not publish tools/list_changed to listen streams", exc_info=True)
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
        return tools_of(engine_of(ctx))[0]

    @contextlib.asynccontextmanager
    async def session_of(ctx: ServerRequestContext[Any]) -> AsyncIterator[Session]:
        session, owned = binder.session_for(ctx)
        try:
            yield session
        finally:
            if owned:
                with anyio.CancelScope(shield=True):  # a cancelled call still runs its close hooks
                    await session.close()

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> HandlerResult:
        engine = current_engine(source)
        try:
            remember(ctx)
            caller = caller_of(ctx)
            owner = caller.identity if caller is not None else None
            held = pending.take(params.request_state, owner)  # a 2026-07-28 retry after the approval link was shown
            if held is not None:
                return held  # type: ignore[no-any-return]
            engine = engine_of(ctx)
            with collecting_challenges() as issued:
                async with session_of(ctx) as session:
                    if caller is not None and session.identity != caller.identity:  # the SDK binds sessions to principals too
                        return envelope_result(engine, failure(session_not_yours()))
                    call_ctx = engine.context(session, progress_sink=progress_sink(ctx, params))
                    if telemetry is None:
                        envelope = await engine.call_tool(params.name, params.arguments, call_ctx)
                    else:
                        envelope = await observed_call(telemetry, engine, ctx, params, call_ctx, session, transport)
            result: HandlerResult = None
            if runs_as_task(ctx, engine, params.arguments):
                result = create_task_result(engine, envelope)  # started: a task to poll instead of the state envelope
            if result is None:
                result = envelope_result(engine, envelope)
            links = linked(issued)
            if links and supports_url_elicitation(ctx):  # the approval link to the client's human, not the model
                if is_modern(ctx):
                    return input_required(links, pending.hold(result, owner))
                await elicit_now(ctx, links)
            return result
        except Exception:
            log.exception("tools/call %r failed unexpectedly", getattr(params, "name", None))
            return envelope_result(engine, failure(internal_error()))

    async def execution_state(
        ctx: ServerRequestContext[Any], task_id: str, operation: str = "get_execution_state"
    ) -> dict[str, Any]:
        """Run a generated execution operation for ``task_id`` as the caller (through the caller's
        scope-narrowed engine, so a task handle grants nothing a tools/call would not); the envelope."""
        engine = engine_of(ctx)
        tool = tool_for(engine, operation)
        if tool is None:
            raise unknown_task(task_id)
        async with session_of(ctx) as session:
            return await engine.call_tool(
                tool, {"operation": operation, "params": {"execution_id": task_id}}, engine.context(session)
            )

    async def known_state(ctx: ServerRequestContext[Any], task_id: str) -> dict[str, Any]:
        envelope = await execution_state(ctx, task_id)
        if envelope.get("success") is not True or not isinstance(envelope.get("data"), dict):
            raise unknown_task(task_id)
        return dict(envelope["data"])

    async def on_task_get(ctx: ServerRequestContext[Any], params: types.GetTaskRequestParams) -> HandlerResult:
        return task_of(engine_of(ctx), await known_state(ctx, params.task_id))

    async def on_task_cancel(ctx: ServerRequestContext[Any], params: types.CancelTaskRequestParams) -> HandlerResult:
        await known_state(ctx, params.task_id)
        envelope = await execution_state(ctx, params.task_id, "cancel_execution")  # cooperative: a finished task stays finished
        refused = cancel_refused(params.task_id, envelope)
        if refused is not None:
            raise refused
        return {}

    async def on_task_update(ctx: ServerRequestContext[Any], params: UpdateTaskRequestParams) -> HandlerResult:
        await known_state(ctx, params.task_id)  # nothing is ever outstanding: acknowledge and ignore
        return {}

    server: Server[Any] = Server(
        registry.adapter,
        version=registry.version,
        title=registry.display_name,
        description=registry.description,
        instructions=server_instructions(engine.tools, engine.introspect_tool),
        cache_hints=cache_hints(changes=isinstance(source, EngineHolder) and not isinstance(source, Engine)),
        on_list_tools=on_list_tools,
        on_subscriptions_listen=ListenHandler(bus),
        get_tool_input_schema=lambda name: tools_of(current_engine(source))[1].get(name),  # all tools: calls are narrowed
    )
    # Registered here rather than as on_call_tool=: a call may answer with a task handle (a
    # result shape of the Tasks extension), which the constructor's signature does not admit.
    server.add_request_handler("tools/call", types.CallToolRequestParams, on_call_tool)
    if background_operations(engine):
        server.extensions[TASKS_EXTENSION] = {}
        server.add_request_handler("tasks/get", types.GetTaskRequestParams, on_task_get)
        server.add_request_handler("tasks/cancel", types.CancelTaskRequestParams, on_task_cancel)
        server.add_request_handler("tasks/update", UpdateTaskRequestParams, on_task_update)
    if telemetry is not None:
        install(server.middleware, telemetry, transport)
    return server
