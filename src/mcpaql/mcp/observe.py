"""The SDK side of telemetry (imported only when it is on; see :mod:`mcpaql.observability`).

The SDK (2.3) already wraps every inbound message in a SERVER span named ``{method} {tool}``
(``mcp.server._otel.OpenTelemetryMiddleware``), parented on the ``traceparent`` in the request's
``params._meta`` (MCP semantic conventions), and every request our SDK client sends in a CLIENT
span that injects it. We build on those instead of adding spans of our own at that level:

- :class:`HttpTraceParent` runs *outside* the SDK's middleware: an HTTP request whose
  ``traceparent`` header is set and whose ``_meta`` carries none (a proxy or gateway traced the
  HTTP hop, the MCP client did not) gets that header's context as the SDK span's parent; with both,
  ``_meta`` wins and the HTTP context becomes a span link, as the conventions say. It also records
  ``mcp.server.operation.duration`` for every method.
- :func:`observed_call` adds what only mcpaql knows to the SDK's span (``mcp.session.id`` — our
  session id, never the wire's ``Mcp-Session-Id``, which is a credential — and
  ``network.transport``) and runs the call inside the operation span.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.shared.exceptions import MCPError
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace

from ..observability.telemetry import Telemetry
from ..protocol.dispatch import Engine
from ..protocol.session import Session

_NETWORK = {"stdio": "pipe", "http": "tcp"}


def _header_context(ctx: ServerRequestContext[Any, Any]) -> Any | None:
    """The trace context of the HTTP request that carried this message, if it has a valid one."""
    headers = getattr(ctx.request, "headers", None)
    if headers is None or "traceparent" not in headers:
        return None
    try:
        extracted = propagate.extract({k: headers[k] for k in ("traceparent", "tracestate") if k in headers})
    except (ValueError, TypeError):
        return None
    return extracted if trace.get_current_span(extracted).get_span_context().is_valid else None


def _has_meta_parent(ctx: ServerRequestContext[Any, Any]) -> bool:
    meta = ctx.meta
    return isinstance(meta, Mapping) and "traceparent" in meta


class HttpTraceParent(ServerMiddleware[Any]):
    """See the module docstring (inserted first in ``Server.middleware``)."""

    def __init__(self, telemetry: Telemetry, transport: str) -> None:
        self.telemetry = telemetry
        self.network = _NETWORK.get(transport)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        parent = _header_context(ctx) if ctx.request is not None and not _has_meta_parent(ctx) else None
        token = otel_context.attach(parent) if parent is not None else None
        labels: dict[str, Any] = {"mcp.method.name": ctx.method}
        if self.network:
            labels["network.transport"] = self.network
        if ctx.method == "tools/call" and ctx.params and isinstance(ctx.params.get("name"), str):
            labels["gen_ai.tool.name"] = ctx.params["name"]
        start = time.perf_counter()
        try:
            result = await call_next(ctx)
        except MCPError as e:
            labels["error.type"] = str(e.error.code)
            raise
        except Exception as e:
            labels["error.type"] = type(e).__qualname__
            raise
        finally:
            if token is not None:
                otel_context.detach(token)
        if (isinstance(result, types.CallToolResult) and result.is_error) or (
            isinstance(result, Mapping) and result.get("isError") is True
        ):
            labels["error.type"] = "tool_error"
        self.telemetry.server_duration.record(time.perf_counter() - start, labels)
        return result


def install(middleware: list[Any], telemetry: Telemetry, transport: str) -> None:
    """Put :class:`HttpTraceParent` outside the SDK's own span middleware."""
    middleware.insert(0, HttpTraceParent(telemetry, transport))


async def observed_call(
    telemetry: Telemetry,
    engine: Engine,
    ctx: ServerRequestContext[Any, Any],
    params: types.CallToolRequestParams,
    call_ctx: Any,
    session: Session,
    transport: str,
) -> dict[str, Any]:
    """``engine.call_tool`` for ``tools/call``, instrumented (see :meth:`Telemetry.observe_call`)."""
    attrs: dict[str, Any] = {"mcp.session.id": session.id}
    if transport in _NETWORK:
        attrs["network.transport"] = _NETWORK[transport]
    if ctx.request is not None and _has_meta_parent(ctx):
        http_parent = _header_context(ctx)
        if http_parent is not None:  # MCP context is the parent; the transport's is linked
            trace.get_current_span().add_link(trace.get_current_span(http_parent).get_span_context())
    return await telemetry.observe_call(engine, params.name, params.arguments, call_ctx, attrs)
