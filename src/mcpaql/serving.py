"""One way to serve: :func:`serve` takes a source and a :class:`ServeOptions` and runs it.

Every serving command (``serve``, ``wrap``, ``openapi``, ``guard``) and every script ends here,
so the transports, the log format (:data:`mcpaql.mcp.transports.LOG_FORMAT`), the "serving on"
line and the human channel of a served safety loop (the approval page) are decided once.

A *source* is an :class:`~mcpaql.protocol.dispatch.Engine`, an engine holder (an engine rebuilt
while serving, e.g. wrapped upstreams), or an async context manager yielding either (an adapter
runtime that owns upstream connections or HTTP clients): it is opened on the serving event loop,
so its connections and the MCP server share one loop, and closed when serving ends.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .auth.options import AuthOptions, check_exposure, resource_url
from .config import LOG_FORMATS, Config
from .protocol.dispatch import Engine

if TYPE_CHECKING:
    from .mcp.server import EngineHolder
    from .safety.channel import ChannelOptions
    from .safety.install import Safety, SafetyConfig

TRANSPORTS = ("stdio", "http")

Source = Any  # Engine | EngineHolder | AbstractAsyncContextManager[Engine | EngineHolder]


def _default_channel() -> ChannelOptions:
    from .safety.channel import ChannelOptions

    return ChannelOptions()


@dataclass(frozen=True)
class ServeOptions:
    """Everything a serving command was asked for, built once (``mcpaql.cli`` makes it from the
    serving flags every serving command shares).

    ``config`` and ``safety`` are what the *source* is built with (tool names, mode, allowed
    categories; the safety layer); the rest is how it is served.
    """

    config: Config = field(default_factory=Config)
    safety: SafetyConfig | None = None
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    stateless: bool = False
    path: str = "/mcp"
    log_level: int = logging.WARNING
    channel: ChannelOptions = field(default_factory=_default_channel)
    # Who may call over HTTP (docs/auth.md); a non-loopback host needs it or insecure_no_auth.
    auth: AuthOptions = field(default_factory=AuthOptions)
    # Observability (docs/observability.md): ``otel`` None follows the OTEL_* variables, True/False
    # is --otel/--no-otel; ``log_format`` is text or json (one JSON object per line on stderr).
    otel: bool | None = None
    log_format: str = "text"
    # HTTP deployments (docs/deployment.md): the shared store (readiness probe; the CLI also
    # takes the deployment secret and the safety store from it), stateful session bounds, and
    # how long a SIGTERM waits for calls in flight.
    store: str | None = None
    max_sessions: int = 1000
    session_idle_timeout: float = 600.0
    shutdown_grace: float = 30.0
    # Who may open a stateful HTTP session (auth: authenticated callers only); see
    # mcpaql.mcp.sessions.SessionLimits.admit. None: anyone who reaches the endpoint.
    admit_session: Callable[[Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError("transport must be stdio or http")
        if self.transport == "http":
            check_exposure(self.host, self.auth)  # AuthConfigError is a ValueError: one line
            if self.auth.issuer:
                resource_url(self.auth, self.host, self.port, self.path)  # known before serving starts
            self.auth.load_keys()  # a bad keys file fails here, before "serving on"
        if self.log_format not in LOG_FORMATS:
            raise ValueError("log format must be text or json")
        if not (isinstance(self.max_sessions, int) and self.max_sessions >= 1):
            raise ValueError("--max-sessions must be a whole number >= 1")
        if not (0 < self.session_idle_timeout < float("inf")):
            raise ValueError("--session-idle-timeout must be a number of seconds > 0")
        if not (0 <= self.shutdown_grace < float("inf")):
            raise ValueError("--shutdown-grace must be a number of seconds >= 0")


def announce(line: str) -> None:
    """One line for the operator on stderr (stdout is the wire in stdio mode)."""
    print(line, file=sys.stderr, flush=True)


def announce_json(line: str) -> None:
    """:func:`announce` with ``--log-format json``: the line as a log object like every other line."""
    from .observability.logs import JsonFormatter

    record = logging.makeLogRecord({"name": "mcpaql.serving", "levelname": "INFO", "levelno": logging.INFO, "msg": line})
    print(JsonFormatter().format(record), file=sys.stderr, flush=True)


@contextlib.asynccontextmanager
async def _opened(source: Source) -> AsyncIterator[Engine | EngineHolder]:
    if isinstance(source, AbstractAsyncContextManager) or (hasattr(source, "__aenter__") and not isinstance(source, Engine)):
        async with source as opened:
            yield opened
    else:
        yield source


async def serve_async(
    source: Source,
    options: ServeOptions,
    *,
    safety: Safety | None = None,
    on_open: Callable[[Any], None] | None = None,
    always_channel: bool = False,
) -> None:
    """Serve ``source`` on the running event loop until the client hangs up (stdio) or the
    server is stopped (HTTP).

    A served safety loop (``safety``, or the opened holder's ``safety``) gets its human channel
    beside the server; ``always_channel`` opens it whatever the loop mode (``mcpaql guard``).
    ``on_open(holder)`` runs once the source is open, before serving (it must return at once).
    Raises :class:`~mcpaql.safety.channel.ChannelError` for a channel that cannot work and
    ``ConnectionError``/``ValueError`` for a source that cannot open or telemetry that cannot start
    (``--otel`` without the ``otel`` extra).
    """
    from .mcp.health import Readiness
    from .mcp.server import current_engine
    from .mcp.sessions import SessionLimits
    from .mcp.transports import configure_logging, serve_http_async, serve_stdio
    from .observability import serving_telemetry

    configure_logging(options.log_level, options.log_format)
    say = announce_json if options.log_format == "json" else announce
    async with serving_telemetry(options.otel) as telemetry, _opened(source) as holder, contextlib.AsyncExitStack() as stack:
        if on_open is not None:
            on_open(holder)
        served = safety or getattr(holder, "safety", None)
        if served is not None:
            from .safety.channel import human_channel, wants_channel

            if always_channel or wants_channel(served.config):
                await stack.enter_async_context(human_channel(served, options.channel, say))
        if options.transport == "stdio":
            await serve_stdio(holder, telemetry=telemetry)
            return
        name = current_engine(holder).registry.display_name if isinstance(holder, Engine) else None
        say(
            f"serving {name + ' ' if name else ''}on http://{options.host}:{options.port}{options.path}"
            + (" (stateless)" if options.stateless else "")
            + options.auth.summary()
        )
        await serve_http_async(
            holder,
            host=options.host,
            port=options.port,
            stateless=options.stateless,
            path=options.path,
            auth=options.auth,
            log_format=options.log_format,
            telemetry=telemetry,
            sessions=SessionLimits(options.max_sessions, options.session_idle_timeout, options.admit_session),
            readiness=Readiness(await stack.enter_async_context(_probes(served, options.store))),
            shutdown_grace=options.shutdown_grace,
        )


@contextlib.asynccontextmanager
async def _probes(served: Safety | None, store_url: str | None) -> AsyncIterator[dict[str, Any]]:
    """Readiness probes: the store the served safety layer uses, else the configured store
    (opened here for the probe alone)."""
    from .store.base import Store, open_store

    async def alive(store: Store) -> bool:
        await store.get("health", "probe")
        return True

    if served is not None:
        yield {"store": lambda: alive(served.store)}
    elif store_url:
        async with open_store(store_url) as store:
            yield {"store": lambda: alive(store)}
    else:
        yield {}


def serve(source: Source, options: ServeOptions | None = None, **kw: Any) -> None:
    """Blocking :func:`serve_async` on the serving event loop (uvloop when installed). Ctrl-C
    ends it quietly, as ``uvicorn.run`` does (uvicorn re-raises the signal it captured)."""
    from .mcp.transports import run_served

    with contextlib.suppress(KeyboardInterrupt):
        run_served(lambda: serve_async(source, options or ServeOptions(), **kw))
