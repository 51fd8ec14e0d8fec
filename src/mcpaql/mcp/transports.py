"""Serving an engine over MCP transports: stdio and streamable HTTP (both protocol eras,
exactly as the SDK negotiates them).

In stdio mode stdout *is* the wire: nothing here may write to it, and everything we log goes
to stderr. The stdio session is pinned to the process and closed when the client hangs up.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.lowlevel import NotificationOptions
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette
from starlette.middleware import Middleware

from ..auth.options import AuthOptions, check_exposure, resource_url
from ..config import settings
from ..protocol.dispatch import Engine
from ..protocol.extension import Lifespan, combine_lifespans
from .auth import protect
from .framing import Utf8Guard, line_limit
from .health import Readiness, health_routes
from .sdk_private import http_session_manager
from .server import EngineHolder, build_server, current_engine
from .sessions import SessionGate, SessionLimits
from .shutdown import InFlight, drain, take_over_sse_drain
from .stdio_pipes import claimed_stdio, drained_streams

if TYPE_CHECKING:
    from ..observability.telemetry import Telemetry

log = logging.getLogger("mcpaql.mcp.transports")

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_SHUTDOWN_GRACE = 30.0  # seconds a SIGTERM waits for calls in flight
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # ours and uvicorn's: one format on stderr
# Loggers that speak at INFO per request or connection: the SDK ("Terminating session: None" on
# every stateless request, session ids, stream reconnects) and httpx (every request's full URL,
# which carries parameter values in its path and query). Quiet below WARNING unless DEBUG was asked for.
QUIET_LOGGERS = ("mcp", "httpx")


def configure_logging(level: int = logging.WARNING, log_format: str = "text") -> None:
    """Send logs to stderr, as text (:data:`LOG_FORMAT`) or one JSON object per line
    (``log_format="json"``, :mod:`mcpaql.observability.logs`), unless the application already
    configured logging; and keep the SDK's per-request INFO lines out of it (:data:`QUIET_LOGGERS`),
    unless ``level`` is DEBUG or the application set those loggers' levels itself."""
    from ..observability.logs import formatter

    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter(log_format, LOG_FORMAT))
        root.addHandler(handler)
        root.setLevel(level)
    if level > logging.DEBUG:
        for name in QUIET_LOGGERS:
            quiet = logging.getLogger(name)
            if quiet.level == logging.NOTSET:
                quiet.setLevel(logging.WARNING)


async def serve_stdio(engine: Engine | EngineHolder, *, telemetry: Telemetry | None = None) -> None:
    """Serve one client over this process's stdin/stdout until it closes stdin."""
    configure_logging()
    first = current_engine(engine)
    session = first.new_session("stdio")
    server = build_server(engine, transport="stdio", session=session, telemetry=telemetry)
    sys.stdout.flush()  # anything buffered before we own the pipe must not land mid-stream
    try:  # the backend's lifespan brackets serving: opened first, closed after the last answer
        async with (
            lifespan_of(engine)(),
            claimed_stdio(line_limit(first.config.limits)) as (lines, writer),
            # the SDK annotates anyio.AsyncFile[str], but only iterates stdin (``async for``) and
            # awaits stdout.write/flush, which WireLines / WireWriter provide
            stdio_server(lines, writer) as (read_stream, write_stream),  # type: ignore[arg-type]
        ):
            try:
                with contextlib.redirect_stdout(sys.stderr):  # stray print() in handlers goes to stderr
                    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
                    await server.run(*drained_streams(read_stream, write_stream), options)
            finally:
                sys.stdout.flush()  # fd 1 is still diverted to stderr here; after exit it is the wire
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()


def lifespan_of(source: Engine | EngineHolder) -> Lifespan:
    """The lifespan serving enters: an engine's (its adapter's and extensions', see
    ``protocol/extension.py``); a holder opened its resources when it was entered."""
    return source.lifespan if isinstance(source, Engine) else combine_lifespans(())


def event_loop_options() -> dict[str, Any]:
    """anyio backend options for a serving process: uvloop when it is installed.

    Why: a stdio server, and even more a wrapper that relays every call over a second pipe, spends
    much of its own time in the event loop; uvloop's loop, pipes and subprocess transports are
    native code. ``MCPAQL_UVLOOP=0`` keeps the standard asyncio loop (e.g. to rule it out).
    """
    if not settings().uvloop or sys.platform == "win32":
        return {}
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def run_served(func: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """``anyio.run`` for the processes that serve MCP (see :func:`event_loop_options`)."""
    return anyio.run(func, *args, backend_options=event_loop_options())


def run_stdio(engine: Engine) -> None:
    """Blocking form of :func:`serve_stdio` for scripts and the CLI."""
    run_served(serve_stdio, engine)


def http_app(
    engine: Engine | EngineHolder,
    *,
    stateless: bool = False,
    path: str = "/mcp",
    host: str = "127.0.0.1",
    port: int = 8000,
    auth: AuthOptions | None = None,
    telemetry: Telemetry | None = None,
    sessions: SessionLimits | None = None,
    readiness: Readiness | None = None,
) -> Starlette:
    """A Starlette app serving ``engine`` over streamable HTTP at ``path``, with ``/healthz`` and
    ``/readyz`` (:mod:`.health`; ``readiness`` adds dependency probes such as the store).

    Stateful mode keeps one mcpaql session per ``Mcp-Session-Id``, bounded by ``sessions``
    (:class:`~.sessions.SessionLimits`: cap, idle timeout, oldest-idle eviction, admission);
    stateless mode (and every 2026-07-28 request) makes each request its own session. For a
    loopback ``host`` the SDK turns on DNS-rebinding protection (Host/Origin allow-lists). With
    ``auth`` configured the endpoint is an OAuth 2.1 resource server (``mcp/auth.py``,
    docs/auth.md): the health routes stay open, and only authenticated callers reach a session.
    """
    limits = sessions or SessionLimits()
    ready = readiness or Readiness()
    server = build_server(engine, transport="http", telemetry=telemetry)
    app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=stateless,
        host=host,
        session_idle_timeout=None if stateless else limits.idle_timeout,
        max_sessions=None if stateless else limits.max_sessions,
        custom_starlette_routes=health_routes(ready),
    )
    if not stateless:  # innermost middleware: after any authentication middleware set scope["user"]
        gate = Middleware(SessionGate, manager=http_session_manager(server), path=path, limits=limits)
        app.user_middleware.append(gate)
    # REQ-VAL-023: invalid UTF-8 is VALIDATION_INVALID_ENCODING here too, not the SDK's bare -32700.
    app.add_middleware(Utf8Guard, limit=line_limit(current_engine(engine).config.limits))
    if auth is not None and auth.configured:  # outermost: nothing runs for a caller it refuses
        resource = resource_url(auth, host, port, path) if auth.issuer or auth.resource_url else None  # API keys need none
        protect(app, auth, resource, path=path, name=current_engine(engine).registry.display_name)
    sdk_lifespan = app.router.lifespan_context  # runs the SDK's session manager
    backend = lifespan_of(engine)

    @contextlib.asynccontextmanager
    async def lifespan(a: Starlette) -> AsyncIterator[Any]:
        async with backend(), sdk_lifespan(a) as state:  # the backend opens first and closes last
            ready.open = True
            try:
                yield state
            finally:
                ready.open = False

    app.router.lifespan_context = lifespan
    return app


def uvicorn_log_config(level: str = "warning", log_format: str = "text") -> dict[str, Any]:
    """uvicorn's logging, all on stderr (its default sends the access log to stdout), in the
    same format as ours."""
    handler = {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain"}
    plain: dict[str, Any] = {"()": "mcpaql.observability.logs.JsonFormatter"} if log_format == "json" else {"format": LOG_FORMAT}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": plain},
        "handlers": {"stderr": handler},
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": ["stderr"], "level": level.upper(), "propagate": False},
        },
    }


async def serve_http_async(
    engine: Engine | EngineHolder,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    stateless: bool = False,
    path: str = "/mcp",
    log_level: str = "warning",
    auth: AuthOptions | None = None,
    log_format: str = "text",
    telemetry: Telemetry | None = None,
    sessions: SessionLimits | None = None,
    readiness: Readiness | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE,
) -> None:
    """Serve :func:`http_app` with uvicorn on the running event loop (beside other tasks that
    share the engine's state, such as a holder's upstreams or the approval page). The one place
    an HTTP server is started (:func:`mcpaql.serving.serve` and :func:`serve_http` end here).
    Raises ``ValueError`` (one line) for a non-loopback ``host`` without authentication.

    Graceful shutdown (:mod:`.shutdown`): on SIGTERM/SIGINT uvicorn stops accepting connections,
    the calls in flight finish (for up to ``shutdown_grace`` seconds; then what is left is
    cancelled), open streams end, and only then does the backend close (its lifespan ends after
    the last answer)."""
    import uvicorn

    configure_logging()
    auth = auth or AuthOptions()
    check_exposure(host, auth)
    if host not in LOCAL_HOSTS:
        log.warning("serving on %s: reachable beyond this machine and without DNS-rebinding protection", host)
    ready = readiness or Readiness()
    in_flight = [0]
    app = http_app(
        engine,
        stateless=stateless,
        path=path,
        host=host,
        port=port,
        auth=auth,
        telemetry=telemetry,
        sessions=sessions,
        readiness=ready,
    )
    app.add_middleware(InFlight, counter=in_flight)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=uvicorn_log_config(log_level, log_format),
        log_level=log_level,
        timeout_graceful_shutdown=math.ceil(shutdown_grace),
    )
    server = uvicorn.Server(config)
    take_over_sse_drain()
    async with anyio.create_task_group() as tg:
        tg.start_soon(drain, server, in_flight, ready, shutdown_grace)
        await server.serve()
        tg.cancel_scope.cancel()


def serve_http(
    engine: Engine,
    host: str = "127.0.0.1",
    port: int = 8000,
    stateless: bool = False,
    *,
    path: str = "/mcp",
    log_level: str = "warning",
) -> None:
    """Blocking form of :func:`serve_http_async` for scripts, until interrupted (quietly, as
    ``uvicorn.run`` was)."""
    with contextlib.suppress(KeyboardInterrupt):
        run_served(lambda: serve_http_async(engine, host=host, port=port, stateless=stateless, path=path, log_level=log_level))
