"""The dispatch pipeline: one request in, one envelope out.

``Engine.execute`` reads top to bottom like ARCHITECTURE's "follow a request": limits &
encoding → parse operation → gatekeeper (endpoint, category, then any installed guards:
danger, confirmation, rate limits) → bind & validate params → handler → envelope.
Every :class:`MCPAQLError` raised below becomes a failure envelope here and nowhere else;
anything unexpected becomes ``INTERNAL_ERROR`` with no detail the client could misuse,
while the traceback goes to the server log.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from types import MappingProxyType
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from ..config import MODES, Config
from .batch import BATCH_OPERATION, run_batch
from .collections import collection_capabilities
from .collections.pagination import CURSOR_SECRET_KEY, cursor_keys
from .compile import CompiledOperation
from .context import Context
from .envelope import failure, is_error, success
from .errors import (
    MCPAQLError,
    internal_error,
    invalid_type,
    missing_param,
    not_found_operation,
    payload_too_large,
)
from .extension import Extension, Lifespan, combine_lifespans
from .gatekeeper import check_category, check_endpoint
from .introspect import SPEC_VERSION, Introspector, check_query, introspect_spec, refuse_listing
from .limits import check_payload, decode_raw
from .operations import OperationSpec
from .registry import Registry
from .schema import json_type_of
from .session import Session
from .surface import ToolDef, build_surface
from .validate import Memo
from .workers import WORKERS_KEY, new_limiter, run_in_worker

log = logging.getLogger("mcpaql.dispatch")

Guard = Callable[[CompiledOperation, dict[str, Any], Context], Awaitable[None]]
# An extension introspection query (INTRO §8.3(3), Part F #20): e.g. the safety layer's
# ``quota_status`` and ``adapter_info``. Called with the context and the optional ``name``.
IntrospectQuery = Callable[[Context, Any], Awaitable[Any]]
ANY_FAMILY = object()  # in-process callers that skip endpoint matching


class _Ready:
    """JSON-ready data made in a worker thread (vs an awaitable a sync handler handed back)."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


def _jsonable(result: Any, name: str) -> Any:
    try:
        return to_jsonable_python(result, by_alias=True)
    except PydanticSerializationError:
        log.error("operation %r returned a value that is not JSON-serializable", name)
        raise internal_error("the operation returned an unsupported value") from None


def _call_jsonable(handler: Callable[..., Any], kwargs: dict[str, Any], name: str) -> Any:
    """Run in a worker thread: the sync handler, then its result made JSON-ready."""
    result = handler(**kwargs)
    if hasattr(result, "__await__"):
        return result  # awaited back on the loop by run_in_worker
    return _Ready(_jsonable(result, name))


class Engine:
    """A frozen registry plus a config: the tool surface and the request pipeline.

    Everything an engine does is given here, at build time: ``extensions``
    (:mod:`.extension`: operations, spec rewrites, guards, capabilities, introspect queries,
    lifespans) plus the older keyword forms ``guards`` and ``capabilities``. The built engine
    keeps them in tuples and read-only mappings; nothing is added to it afterwards. ``config``
    is taken as given (``None``: the defaults) — reading the environment or a config file is
    :meth:`Config.load`'s job, outside the sans-IO core.
    """

    def __init__(
        self,
        registry: Registry,
        config: Config | None = None,
        *,
        capabilities: dict[str, Any] | None = None,
        guards: Iterable[Guard] | None = None,
        extensions: Iterable[Extension] = (),
        lifespan: Lifespan | None = None,
    ) -> None:
        self.config = config if config is not None else Config()
        self.registry = registry
        self.extensions: tuple[Extension, ...] = tuple(extensions)
        if not registry.frozen:
            for ext in self.extensions:  # in order: each rewrites what exists so far, then adds its own
                if ext.rewrite is not None:
                    registry.rewrite(ext.rewrite)
                for spec in ext.operations:
                    registry.add(spec, reserved_ok=True)
        elif any(ext.operations or ext.rewrite for ext in self.extensions):
            raise ValueError("an Engine's registry is frozen: give the extension to its Adapter or Registry")
        if not registry.frozen:
            if registry.get("introspect") is None:
                registry.add(introspect_spec(registry.default_introspect_family()), reserved_ok=True)
            registry.freeze()
        allow = self.config.allow
        self.operations: list[OperationSpec] = [
            op for op in registry.operations if op.category.value in allow or op.name == "introspect"
        ]
        self.tools: list[ToolDef] = build_surface(registry, self.config, self.operations)
        self.tools_by_name = {t.name: t for t in self.tools}
        self.tool_for_family = {t.family: t.name for t in self.tools if t.family is not None}
        single = next((t.name for t in self.tools if t.family is None), None)
        self.single_tool = single
        # The tool that carries ``introspect`` (named in the server's instructions).
        intro = registry.get("introspect")
        self.introspect_tool = (self.tool_for_family.get(intro.family) if intro else None) or single or ""
        self.guards: tuple[Guard, ...] = (*(guards or ()), *(g for ext in self.extensions for g in ext.guards))
        queries: dict[str, IntrospectQuery] = {}
        for ext in self.extensions:
            queries.update(ext.introspect_queries)
        self.introspect_queries: MappingProxyType[str, IntrospectQuery] = MappingProxyType(queries)
        self.lifespan: Lifespan = combine_lifespans([lifespan, *(ext.lifespan for ext in self.extensions)])
        # Derived from the deployment secret (every process agrees), else random per engine.
        self.cursor_keys: tuple[bytes, ...] = cursor_keys(self.config.secret_keys) or (os.urandom(32),)
        self.cursor_secret = self.cursor_keys[0]
        # Sync handlers run in worker threads, this many at once (protocol/workers.py).
        self.workers = new_limiter(self.config.handler_threads)
        self._compiled: dict[str, CompiledOperation] = {}
        details: dict[str, dict[str, Any]] = {}
        served = {op.name for op in self.operations}  # by name: comparing specs is slow for 10,000 ops
        memo: Memo = {}  # sub-schemas shared between operations are compiled once per engine
        for op in registry.operations:
            compiled = CompiledOperation(op, memo)
            if op.name == "introspect" and op.handler is None:
                compiled.handler = self._introspect
                compiled.checkers["query"] = check_query  # unsupported query → INVALID_QUERY_TYPE
            self._compiled[op.name] = compiled
            if op.name in served:
                details[op.name] = op.detail(self.tool_for_family.get(op.family) or single or op.family)
        caps = {
            "batch": True,
            "field_selection": False,
            "aggregations": False,
            "computed_fields": False,
            "pagination": False,
            "relationship_queries": False,
            "warnings": True,
            "confirmation": False,
            "dangerous_operations": False,
        }
        caps.update(collection_capabilities(self.operations))  # what the ops switch on (C.9)
        caps.update(capabilities or {})
        for ext in self.extensions:
            caps.update(ext.capabilities)
        self.capabilities: MappingProxyType[str, Any] = MappingProxyType(caps)
        protocol = {
            "version": SPEC_VERSION,
            "conformance": "level-2" if caps.get("batch") and caps.get("field_selection") else "level-1",
            "mode": self.config.mode,
            # Every mode this implementation can serve (REQ-MODE-002, CORE §10.1); ``mode`` is the
            # one configured here. The conformance suite's L2-1 accepts it for a one-mode server.
            "supported_modes": list(MODES),
            "profile": registry.profile,
            "adapter": registry.adapter,
            "display_name": registry.display_name,
            "adapter_version": registry.version,
            "endpoints": {fam: name for fam, name in self.tool_for_family.items()} | ({"single": single} if single else {}),
            "capabilities": caps,
            "limits": self.config.limits.as_dict(),
            "concurrency": registry.concurrency,
            "supports_etag": registry.supports_etag,
            "strict_validation": True,
        }
        protocol.pop("strict_validation")  # strict_mode is never exposed (CORE §4.6.2)
        self.introspector = Introspector(self.operations, details, registry.types, protocol, self.config.introspect_page_size)

    def extend(self, *extensions: Extension) -> Engine:
        """A new engine serving the same (frozen) registry and config with ``extensions`` added
        after this one's guards, capabilities, introspect queries and lifespan. Extensions that
        add operations or rewrite specs need the unfrozen registry: give them to the Adapter."""
        carried = Extension("engine", introspect_queries=self.introspect_queries)
        return Engine(
            self.registry,
            self.config,
            capabilities=dict(self.capabilities),
            guards=self.guards,
            extensions=[carried, *extensions],
            lifespan=self.lifespan,
        )

    def restricted(self, allow: frozenset[str], *guards: Guard) -> Engine:
        """This engine as one caller may see it: only the categories in ``allow`` (on top of the
        server's own ``config.allow``) and ``guards`` run before this engine's. Its tools,
        ``introspect`` listing and gatekeeper are exactly those of a server started with that
        ``--allow`` (issue 15: scopes). Cursors stay valid across both (same secret)."""
        carried = Extension("engine", introspect_queries=self.introspect_queries)
        narrowed = Engine(
            self.registry,
            self.config.with_(allow=self.config.allow & allow),
            capabilities=dict(self.capabilities),
            guards=(*guards, *self.guards),
            extensions=[carried],
            lifespan=self.lifespan,
        )
        narrowed.cursor_keys = self.cursor_keys  # a random per-engine key too: one caller, one cursor space
        narrowed.cursor_secret = self.cursor_secret
        narrowed.workers = self.workers  # one bound on sync-handler threads for the server, not per grant
        return narrowed

    # ---- sessions --------------------------------------------------------------------------

    def new_session(self, transport: str = "memory") -> Session:
        return Session(transport=transport)

    def context(self, session: Session, **kw: Any) -> Context:
        return Context(session=session, **kw)

    # ---- entry points -----------------------------------------------------------------------

    async def call_tool(self, tool_name: str, arguments: Any, ctx: Context) -> dict[str, Any]:
        """What the MCP server calls for ``tools/call``."""
        tool = self.tools_by_name.get(tool_name)
        if tool is None:
            return failure(
                MCPAQLError(
                    "NOT_FOUND_OPERATION",
                    f"Unknown tool: '{tool_name}'. Available tools: {', '.join(self.tools_by_name)}",
                    {"tool": tool_name, "available": list(self.tools_by_name)},
                )
            )
        return await self.execute(arguments if arguments is not None else {}, ctx, tool.family, tool.name)

    async def call_raw(self, raw: bytes | str, ctx: Context, tool_name: str | None = None) -> dict[str, Any]:
        """Byte-level entry point (strict UTF-8, then JSON), for transports that see bytes."""
        try:
            request = decode_raw(raw, self.config.limits)
        except MCPAQLError as e:
            return failure(e)
        if tool_name is None:
            return await self.execute(request, ctx, ANY_FAMILY, "(in-process)")
        return await self.call_tool(tool_name, request, ctx)

    async def execute(self, request: Any, ctx: Context, family: Any = ANY_FAMILY, tool: str = "") -> dict[str, Any]:
        op_name = request.get("operation") if isinstance(request, dict) else None
        try:
            return await self._execute(request, ctx, family, tool)
        except MCPAQLError as e:
            # introspect errors carry details like every operation's (unknown_params, valid_params…);
            # introspection-response.schema.json forbids them, so evidence strips them (decision E2).
            return failure(e)
        except Exception:
            log.exception("operation %r failed", op_name)
            return failure(internal_error())

    async def _execute(self, request: Any, ctx: Context, family: Any, tool: str) -> dict[str, Any]:
        if not isinstance(request, dict):
            raise MCPAQLError(
                "VALIDATION_ERROR",
                'Request must be a JSON object such as {"operation": "introspect", "params": {"query": "operations"}}',
            )
        has_nul = check_payload(request, self.config.limits)
        if "operations" in request and request.get("operation", BATCH_OPERATION) == BATCH_OPERATION:
            return await run_batch(self, request, ctx, family, tool)
        if "operation" not in request:
            raise missing_param("operation", expected="string", description="An operation name; introspect lists them")
        name = request["operation"]
        if not isinstance(name, str):
            raise invalid_type("operation", "string", json_type_of(name))
        return await self.run_one(name, request, ctx, family, tool, has_nul)

    async def run_one(
        self, name: str, request: dict[str, Any], ctx: Context, family: Any, tool: str, has_nul: bool
    ) -> dict[str, Any]:
        compiled = self._compiled.get(name)
        if compiled is None:
            raise not_found_operation(name)
        spec = compiled.spec
        if family is not ANY_FAMILY:
            check_endpoint(spec, family, self.tool_for_family, tool)
        if spec.name != "introspect":
            check_category(spec, self.config.allow)
        ctx.operation = name
        ctx.endpoint = spec.family
        ctx.extensions[CURSOR_SECRET_KEY] = self.cursor_keys  # first signs, all verify
        ctx.extensions[WORKERS_KEY] = self.workers
        bound = compiled.bind(request, self.config.strict_mode, has_nul, ctx.warnings)
        ctx.request_meta = bound.meta
        for guard in self.guards:
            await guard(compiled, bound.values, ctx)
        return success(await self._invoke(compiled, bound.kwargs, ctx), ctx.warnings)

    async def _invoke(self, compiled: CompiledOperation, kwargs: dict[str, Any], ctx: Context) -> Any:
        """The handler's result as JSON-ready data. An async handler runs on the loop; a sync
        one runs in a worker thread, and its result is made JSON-ready there too (a large
        result costs CPU the loop should not pay), under the engine's bound (workers.py) —
        unless its author declared it non-blocking (``sync_to_thread=False``)."""
        spec = compiled.spec
        handler = compiled.handler
        if handler is None:
            raise internal_error(f"operation '{spec.name}' has no handler")
        if spec.context_param:
            kwargs[spec.context_param] = ctx
        if spec.is_async:
            return _jsonable(await handler(**kwargs), spec.name)
        if spec.extensions.get("inline"):  # declared non-blocking (sync_to_thread=False): no thread hop
            result = handler(**kwargs)
            return _jsonable(await result if hasattr(result, "__await__") else result, spec.name)
        result = await run_in_worker(self.workers, _call_jsonable, handler=handler, kwargs=kwargs, name=spec.name)
        return result.data if isinstance(result, _Ready) else _jsonable(result, spec.name)

    async def _introspect(self, query: Any, name: Any = None, ctx: Context | None = None, **listing: Any) -> Any:
        extra = self.introspect_queries.get(query) if isinstance(query, str) else None
        if extra is not None and ctx is not None:
            refuse_listing(f"query '{query}'", listing)
            return await extra(ctx, name)
        session_id = ctx.session.id if ctx else "sess_none"
        return self.introspector.run(query, name, session_id, tuple(self.introspect_queries), listing)

    # ---- rendering --------------------------------------------------------------------------

    def render(self, envelope: dict[str, Any]) -> tuple[str, bool]:
        """Serialize an envelope for the wire, enforcing the response size limit."""
        text, error, _ = self.rendered(envelope)
        return text, error

    def rendered(self, envelope: dict[str, Any]) -> tuple[str, bool, dict[str, Any]]:
        """:meth:`render`, plus the envelope the text actually says (a failure in place of a
        response over the size limit or one that is not JSON), so a transport that also sends it
        as an object (MCP ``structuredContent``) need not parse the text back."""
        try:
            # allow_nan=False: NaN/Infinity are not JSON; encode(): lone surrogates are not UTF-8.
            text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            size = len(text) if text.isascii() else len(text.encode("utf-8"))
        except (ValueError, UnicodeEncodeError):
            log.error("a response could not be serialized as UTF-8 JSON (NaN/Infinity or a lone surrogate)")
            envelope = failure(internal_error("the operation returned a non-JSON value"))
            return json.dumps(envelope, separators=(",", ":")), is_error(envelope), envelope
        limit = self.config.limits.max_response_size
        if size > limit:
            envelope = failure(payload_too_large("response_size", limit, size, "bytes"))
            text = json.dumps(envelope, separators=(",", ":"))
        return text, is_error(envelope), envelope

    def compiled(self, name: str) -> CompiledOperation | None:
        return self._compiled.get(name)
