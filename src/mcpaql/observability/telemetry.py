"""The instrumentation: an operation span per MCP-AQL call, a child span per upstream call, and
the metrics (imported only when telemetry is on).

What a trace of a wrapped call looks like (the SDK's spans are the SDK's; ours are marked *)::

    MCP send tools/call <tool>          CLIENT   the caller's MCP client (SDK), traceparent in _meta
    └─ tools/call <tool>                SERVER   mcpaql's MCP server (SDK span; we add mcp.session.id, network.transport)
       └─ mcpaql <operation>          * INTERNAL mcpaql.operation / category / endpoint / outcome / error.code
          └─ tools/call <upstream tool>* CLIENT   wrapped MCP server (lanes; traceparent in _meta, and the HTTP header)
          └─ GET /pets/{petId}        * CLIENT   OpenAPI target (traceparent header)

Never a parameter value: attributes are names the server defines (operation, category, endpoint,
error code, tool names, URL *templates*), counts and statuses; span status descriptions are
error codes, never messages (an error message may quote a parameter).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import metrics, propagate, trace
from opentelemetry.trace import Span, SpanKind, StatusCode

from .. import __version__
from ..protocol.batch import BATCH_OPERATION
from .hooks import CURRENT

# Finer than the MCP semantic conventions' buckets at the low end: most operations answer in
# well under 10 ms; the conventions' boundaries from 10 ms up are kept.
DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
_GATE_CODES_PREFIXES = ("VALIDATION_", "BATCH_", "PERMISSION_", "RATE_LIMIT_", "TOKEN_", "NOT_FOUND_OPERATION", "CONFIRMATION_")

Attrs = dict[str, Any]


class UpstreamCall:
    """One upstream request in flight: ``carrier`` holds the W3C trace context to send (as
    ``params._meta`` keys for MCP, as headers for HTTP); the call site reports how it ended."""

    __slots__ = ("attrs", "carrier", "span")

    def __init__(self, span: Span, attrs: Attrs) -> None:
        self.span = span
        self.attrs = attrs
        self.carrier: dict[str, str] = {}
        propagate.inject(self.carrier)  # the current context is this span's

    def fail(self, error_type: str) -> None:
        self.attrs["error.type"] = error_type
        self.span.set_attribute("error.type", error_type)
        self.span.set_status(StatusCode.ERROR, error_type)

    def tool_result(self, result: Mapping[str, Any]) -> None:
        """An MCP ``CallToolResult``: ``isError`` is a failed call (``error.type=tool_error``)."""
        if result.get("isError") is True:
            self.fail("tool_error")

    def http_status(self, status: int) -> None:
        self.attrs["http.response.status_code"] = status
        self.span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self.fail(str(status))


class Telemetry:
    """Tracer, meter and instruments for one serving process (see the module docstring).

    ``tracer_provider`` / ``meter_provider`` default to the global ones (which the MCP SDK's own
    spans use too)."""

    def __init__(self, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self.tracer = trace.get_tracer("mcpaql", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("mcpaql", __version__, meter_provider=meter_provider)
        self.calls = meter.create_counter("mcpaql.calls", "{call}", "MCP-AQL operations called, by outcome")
        self.errors = meter.create_counter("mcpaql.errors", "{call}", "MCP-AQL operations that failed, by error code")
        self.duration = self._seconds(meter, "mcpaql.call.duration", "MCP-AQL operation latency")
        self.rate_limited = meter.create_counter(
            "mcpaql.ratelimit.rejections", "{call}", "Calls refused by a rate limit or quota (this server's or a target API's)"
        )
        self.confirm_requested = meter.create_counter(
            "mcpaql.confirmations.requested", "{token}", "Confirmation tokens issued (CONFIRMATION_REQUIRED)"
        )
        self.confirm_redeemed = meter.create_counter(
            "mcpaql.confirmations.redeemed", "{token}", "Calls that carried a confirmation token past the gatekeeper"
        )
        self.server_duration = self._seconds(meter, "mcp.server.operation.duration", "MCP request duration on the server")
        self.client_duration = self._seconds(meter, "mcp.client.operation.duration", "Upstream MCP request duration")
        self.http_duration = self._seconds(meter, "http.client.request.duration", "Target API request duration")

    @staticmethod
    def _seconds(meter: Any, name: str, description: str) -> Any:
        return meter.create_histogram(name, "s", description, explicit_bucket_boundaries_advisory=DURATION_BUCKETS)

    # ---- the operation span ------------------------------------------------------------------

    async def observe_call(
        self, engine: Any, tool: str, arguments: Any, ctx: Any, server_span: Attrs | None = None
    ) -> dict[str, Any]:
        """``engine.call_tool(tool, arguments, ctx)`` inside an operation span, with the metrics.

        ``server_span``: attributes for the enclosing MCP server span (the SDK's), set here
        because only the call knows them (the session, the transport)."""
        if server_span:
            trace.get_current_span().set_attributes(server_span)
        attrs = _operation_attrs(engine, arguments)
        name = f"mcpaql {attrs['mcpaql.operation']}" if "mcpaql.operation" in attrs else "mcpaql"
        token = CURRENT.set(self)
        start = time.perf_counter()
        try:
            with self.tracer.start_as_current_span(
                name, kind=SpanKind.INTERNAL, attributes=attrs, record_exception=False, set_status_on_exception=False
            ) as span:
                envelope: dict[str, Any] = await engine.call_tool(tool, arguments, ctx)
                self._finish(span, attrs, envelope, ctx, time.perf_counter() - start)
        finally:
            CURRENT.reset(token)
        return envelope

    def _finish(self, span: Span, attrs: Attrs, envelope: Mapping[str, Any], ctx: Any, elapsed: float) -> None:
        error = envelope.get("error") if envelope.get("success") is False else None
        code = error.get("code") if isinstance(error, Mapping) else None
        base = {k: v for k, v in attrs.items() if k in ("mcpaql.operation", "mcpaql.category", "mcpaql.endpoint")}
        outcome = "error" if envelope.get("success") is False else "success"
        span.set_attribute("mcpaql.outcome", outcome)
        labels = {**base, "mcpaql.outcome": outcome}
        if isinstance(code, str):
            span.set_attributes({"mcpaql.error.code": code, "error.type": code})
            span.set_status(StatusCode.ERROR, code)
            self.errors.add(1, {**base, "mcpaql.error.code": code})
            labels["mcpaql.error.code"] = code
            if code.startswith("RATE_LIMIT_"):
                self.rate_limited.add(1, {**base, "mcpaql.error.code": code})
            elif code == "CONFIRMATION_REQUIRED":
                self.confirm_requested.add(1, base)
        meta = getattr(ctx, "request_meta", None)
        carried = isinstance(meta, Mapping) and meta.get("_confirmation") is not None
        if carried and not (code and code.startswith(_GATE_CODES_PREFIXES)):  # past the gatekeeper: redeemed
            self.confirm_redeemed.add(1, base)
        self.calls.add(1, labels)
        self.duration.record(elapsed, labels)

    # ---- upstream spans ----------------------------------------------------------------------

    @contextlib.contextmanager
    def upstream_mcp(self, tool: str, attrs: Attrs) -> Iterator[UpstreamCall]:
        """A CLIENT span for ``tools/call`` to a wrapped MCP server (MCP semantic conventions)."""
        span_attrs = {"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, **attrs}
        with self._client_span(f"tools/call {tool}", span_attrs, self.client_duration) as call:
            yield call

    @contextlib.contextmanager
    def upstream_http(self, method: str, template: str, url: Any, attrs: Attrs | None = None) -> Iterator[UpstreamCall]:
        """A CLIENT span for one target API request (HTTP semantic conventions): the route's
        *template*, never the filled-in URL (path and query carry parameter values)."""
        span_attrs: Attrs = {"http.request.method": method.upper(), "url.template": template}
        host, port = getattr(url, "host", None), getattr(url, "port", None)
        if host:
            span_attrs["server.address"] = host
            span_attrs["server.port"] = port or (443 if getattr(url, "scheme", "") == "https" else 80)
        span_attrs.update(attrs or {})
        with self._client_span(f"{method.upper()} {template}", span_attrs, self.http_duration) as call:
            yield call

    @contextlib.contextmanager
    def _client_span(self, name: str, attrs: Attrs, histogram: Any) -> Iterator[UpstreamCall]:
        start = time.perf_counter()
        with self.tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=attrs, record_exception=False, set_status_on_exception=False
        ) as span:
            call = UpstreamCall(span, dict(attrs))
            try:
                yield call
            except Exception as e:
                call.fail(error_type(e))
                raise
            finally:
                labels = {k: v for k, v in call.attrs.items() if k in _METRIC_KEYS}
                histogram.record(time.perf_counter() - start, labels)


_METRIC_KEYS = frozenset(
    {
        "mcp.method.name",
        "gen_ai.tool.name",
        "gen_ai.operation.name",
        "network.transport",
        "error.type",
        "mcpaql.upstream",
        "http.request.method",
        "http.response.status_code",
        "server.address",
        "server.port",
        "url.template",
    }
)


def error_type(e: BaseException) -> str:
    """``error.type`` for an exception: the JSON-RPC error code when it carries one, else
    ``timeout`` or the class name (never the message: it may quote a parameter)."""
    code = getattr(e, "code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return str(code)
    if isinstance(e, TimeoutError):
        return "timeout"
    return type(e).__qualname__


def _operation_attrs(engine: Any, arguments: Any) -> Attrs:
    """The operation's server-defined names: only for an operation the registry knows (an unknown
    name is the client's text, so it is left out), never a parameter."""
    attrs: Attrs = {"mcpaql.adapter": engine.registry.adapter}
    if not isinstance(arguments, Mapping):
        return attrs
    name = arguments.get("operation")
    if "operations" in arguments and name in (None, BATCH_OPERATION):
        attrs["mcpaql.operation"] = BATCH_OPERATION
        items = arguments.get("operations")
        if isinstance(items, list):
            attrs["mcpaql.batch.size"] = len(items)
        return attrs
    compiled = engine.compiled(name) if isinstance(name, str) else None
    if compiled is not None:
        spec = compiled.spec
        attrs["mcpaql.operation"] = spec.name
        attrs["mcpaql.category"] = spec.category.value
        attrs["mcpaql.endpoint"] = spec.family
    return attrs
