"""Connections to upstream MCP servers: stdio (command + args) or HTTP (streamable HTTP, with
a fallback to the legacy SSE transport for older servers).

An :class:`Upstream` is an async context manager that owns one supervisor task. The
supervisor keeps a client session open, reconnects (with back-off) when the upstream crashes
or the connection drops, and refreshes the tool list on ``notifications/tools/list_changed``.
While it is reconnecting, calls fail at once with a clear, retryable error instead of hanging.
Upstream progress notifications are forwarded to the caller's :class:`Context`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio

from ... import reaper
from ...mcp.upstream import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    HttpLane,
    InvalidResult,
    Lane,
    RPCError,
    SessionExpired,
    UpstreamClient,
    http_transport,
    lane_available,
    open_upstream,
    stdio_transport,
)
from ...protocol.context import Context
from ...protocol.errors import MCPAQLError, internal_error
from .ops import upstream_error

log = logging.getLogger("mcpaql.upstream")

_CONNECTION_ERRORS = (
    anyio.ClosedResourceError,
    anyio.BrokenResourceError,
    anyio.EndOfStream,
    ConnectionError,
    OSError,
)


@dataclass(frozen=True)
class UpstreamSpec:
    """How to reach one upstream. Exactly one of ``command`` or ``url`` is set.

    ``headers`` values may reference the environment as ``${VAR}`` so specs (and the files they
    are saved in) never hold secrets; they are expanded at connect time.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] | None = None
    transport: str = "auto"  # stdio | streamable_http | sse | auto
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    connect_timeout: float = 60.0
    call_timeout: float | None = None

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError("an upstream needs either a command or a url")
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", self.name):
            raise ValueError(f"upstream name '{self.name}' must be lowercase letters, digits, '-' or '_'")

    @classmethod
    def from_argv(cls, argv: list[str] | tuple[str, ...], name: str | None = None, **kw: Any) -> UpstreamSpec:
        if not argv:
            raise ValueError("empty upstream command")
        return cls(name=name or derive_name(argv), command=argv[0], args=tuple(argv[1:]), transport="stdio", **kw)

    @classmethod
    def from_url(cls, url: str, name: str | None = None, headers: dict[str, str] | None = None, **kw: Any) -> UpstreamSpec:
        return cls(name=name or derive_name([url]), url=url, headers=headers, **kw)

    @classmethod
    def parse(cls, text: str, **kw: Any) -> UpstreamSpec:
        """``[name=]target`` where target is a URL or a shell command line (for CLI flags)."""
        m = re.match(r"^([a-z][a-z0-9_-]*)=(.*)$", text.strip(), re.S)
        name, target = (m.group(1), m.group(2)) if m else (None, text.strip())
        if re.match(r"^https?://", target):
            return cls.from_url(target, name=name, **kw)
        return cls.from_argv(shlex.split(target), name=name, **kw)

    @property
    def kind(self) -> str:
        if self.command is not None:
            return "stdio"
        return self.transport if self.transport in ("streamable_http", "sse") else "auto"

    def describe(self) -> str:
        if self.command is not None:
            return shlex.join([self.command, *self.args])
        return str(self.url)


def derive_name(argv: list[str] | tuple[str, ...]) -> str:
    """``npx -y @modelcontextprotocol/server-memory`` → ``memory``; ``uvx mcp-server-git`` → ``git``."""
    if len(argv) == 1 and re.match(r"^https?://", argv[0]):
        host = re.sub(r"^https?://", "", argv[0]).split("/")[0].split(":")[0]
        base = host.split(".")[-2] if host.count(".") >= 1 else host
    else:
        cands = [a for a in argv if not a.startswith("-")]
        runners = {"npx", "uvx", "uv", "pipx", "node", "python", "python3", "bunx", "deno", "run", "docker"}
        pkg = next((a for a in cands if os.path.basename(a) not in runners), cands[0] if cands else "upstream")
        base = pkg.rsplit("/", 1)[-1].split("@")[0]
        base = re.sub(r"\.(js|py|mjs|ts)$", "", base)
    base = re.sub(r"^(mcp[-_]server[-_]|server[-_]|mcp[-_])", "", base.lower())
    base = re.sub(r"([-_]mcp([-_]server)?|[-_]server)$", "", base)
    base = re.sub(r"[^a-z0-9_-]+", "-", base).strip("-_") or "upstream"
    return base if base[0].isalpha() else "u" + base


def _why(e: BaseException) -> str:
    """The innermost message of an exception (task groups wrap transport errors in groups)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return f"{type(e).__name__}: {e}"


def expand_env(value: str) -> str:
    """``${VAR}`` references replaced by the environment (unset → empty): secrets stay out of files and argv."""
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ.get(m.group(1), ""), value)


ToolsChanged = Callable[["Upstream"], Awaitable[None]]


@dataclass(eq=False)
class Upstream:
    """A supervised client session to one upstream server."""

    spec: UpstreamSpec
    on_tools_changed: ToolsChanged | None = None
    max_backoff: float = 5.0
    tools: list[dict[str, Any]] = field(default_factory=list)
    server_info: dict[str, Any] = field(default_factory=dict)
    protocol_version: str | None = None
    transport_used: str | None = None
    restarts: int = 0
    state: str = "new"  # new | connecting | ready | restarting | closed
    last_error: str | None = None

    def __post_init__(self) -> None:
        self._client: UpstreamClient | None = None
        self._lane: Lane | HttpLane | None = None  # the direct lane calls take, while connected
        self._http_lane: HttpLane | None = None  # one pooled HTTP client for the upstream's lifetime
        self._session_id: str | None = None
        self._generation = 0  # counts sessions that reached "ready"
        self._tg: anyio.abc.TaskGroup | None = None
        self._ready = anyio.Event()
        self._broken = anyio.Event()
        self._stop = anyio.Event()
        self._first_error: BaseException | None = None
        self._sse_fallback = False

    @property
    def name(self) -> str:
        return self.spec.name

    # ---- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Upstream:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._supervise)
        with anyio.move_on_after(self.spec.connect_timeout):
            await self._ready.wait()
        if self.state != "ready":
            err = self._first_error
            await self.aclose()
            raise ConnectionError(
                f"could not connect to upstream '{self.name}' ({self.spec.describe()}): "
                f"{_why(err) if err is not None else 'timed out'}"
            )
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._tg is None:
            return
        self.state = "closed"
        self._stop.set()
        self._broken.set()
        tg, self._tg = self._tg, None
        tg.cancel_scope.cancel()
        with contextlib.suppress(Exception):
            await tg.__aexit__(None, None, None)
        if self._http_lane is not None:
            with anyio.CancelScope(shield=True):
                await self._http_lane.aclose()

    def _transport(self) -> Any:
        s = self.spec
        if s.command is not None:
            env = {**os.environ, **(s.env or {})} if s.env else None
            self.transport_used = "stdio"
            if lane_available():  # tools/call goes straight over the pipes (see mcp/lane.py)
                self._lane = Lane(self.name)
                return stdio_transport(s.command, s.args, env, s.cwd, lane=self._lane)
            # The SDK spawns it: still under the reaper shim, so it cannot outlive the wrapper.
            command, *args = reaper.guarded(s.command, s.args, env, s.cwd)
            return stdio_transport(command, args, env, s.cwd)
        headers: dict[str, str] = {}
        for k, v in (s.headers or {}).items():
            missing = [n for n in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", v) if not os.environ.get(n)]
            if missing:  # never send "Bearer " with an empty token
                log.warning("upstream %s: header %s not sent: environment variable(s) %s unset", self.name, k, missing)
                continue
            headers[k] = expand_env(v).strip()
        if s.transport == "sse" or self._sse_fallback:
            self.transport_used = "sse"
            return http_transport(str(s.url), headers or None, sse=True)
        self.transport_used = "streamable_http"
        self._session_id = None
        if not lane_available():
            return http_transport(str(s.url), headers or None)
        if self._http_lane is None:  # tools/call goes straight to the pooled client (see mcp/http_lane.py)
            self._http_lane = HttpLane(self.name, str(s.url), headers or None, self._spawn)
            self._http_lane.on_list_changed = lambda: self._spawn(self.refresh)
        return http_transport(str(s.url), headers or None, on_session_id=self._heard_session)

    def _heard_session(self, session_id: str) -> None:
        self._session_id = session_id

    def _spawn(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``fn`` in the background for as long as this upstream is open."""
        if self._tg is None:
            raise RuntimeError("closed")
        self._tg.start_soon(fn)

    async def _supervise(self) -> None:
        backoff = 0.2
        while not self._stop.is_set():
            self.state = "connecting" if not self._ready.is_set() else "restarting"
            try:
                async with open_upstream(
                    self._transport(),
                    # handshake and tools/list: no shorter than the connect budget; calls: call_timeout
                    read_timeout=None
                    if self.spec.call_timeout is None
                    else max(self.spec.call_timeout, self.spec.connect_timeout),
                    on_tools_changed=self._tools_changed,
                    on_transport_error=self._transport_error,
                ) as client:
                    self._client = client
                    self.protocol_version = client.protocol_version
                    self.server_info = client.server_info
                    self.tools = await client.list_tools()
                    if self._http_lane is not None and self.transport_used == "streamable_http":
                        self._http_lane.attach(self._session_id, client.protocol_version)
                        self._lane = self._http_lane
                    self._broken = anyio.Event()
                    self._generation += 1
                    self.state = "ready"
                    self.last_error = None
                    backoff = 0.2
                    self._ready.set()
                    await self._broken.wait()
            except Exception as e:  # the supervisor must survive anything the transport throws
                self.last_error = _why(e)
                log.warning("upstream %s: connection failed: %s", self.name, self.last_error)
                if not self._ready.is_set():
                    if self.spec.kind == "auto" and not self._sse_fallback:
                        self._sse_fallback = True  # older servers speak only the SSE transport
                        self._first_error = e
                        continue
                    if self._sse_fallback and self._first_error is not None:
                        e = ConnectionError(f"streamable HTTP: {_why(self._first_error)}; SSE fallback: {_why(e)}")
                    self._first_error = e
                    self._ready.set()
                    return
            finally:
                self._client = None
                self._lane = None
                if self._http_lane is not None:
                    self._http_lane.detach()
            if self._stop.is_set():
                return
            self.state = "restarting"
            self.restarts += 1
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff)

    def _tools_changed(self) -> None:
        if self._tg is not None:
            self._tg.start_soon(self.refresh)

    def _transport_error(self, error: Exception) -> None:
        log.warning("upstream %s: transport error: %s", self.name, error)

    async def refresh(self) -> None:
        """Re-read the tool list (on ``tools/list_changed``) and tell the owner."""
        client = self._client
        if client is None:
            return
        try:
            self.tools = await client.list_tools()
        except Exception as e:
            log.warning("upstream %s: tools/list after list_changed failed: %s", self.name, e)
            return
        if self.on_tools_changed is not None:
            await self.on_tools_changed(self)

    def mark_broken(self) -> None:
        """Force a reconnect (used when a call finds the connection dead)."""
        if self.state != "closed":
            self.state = "restarting"
        self._broken.set()

    # ---- calls ----------------------------------------------------------------------------

    def _unavailable(self, tool: str) -> MCPAQLError:
        return internal_error(
            f"upstream {self.name} is unavailable ({self.state}); it is being restarted, retry shortly",
            {"upstream": self.name, "upstream_tool": tool, "retryable": True},
        )

    def _session_gone(self, e: RPCError) -> bool:
        """The SDK transport's rendering of a 404 on our session ("Session terminated", or the
        server's own JSON-RPC error such as "Session not found"): re-initialize, as the lane does."""
        return (
            self.transport_used == "streamable_http"
            and e.code == INVALID_REQUEST
            and re.search(r"\bsession\b.*\b(terminated|not found|expired|unknown)\b", e.message, re.I) is not None
        )

    def _bad_result(self, tool: str, why: str) -> MCPAQLError:
        """The upstream's answer is not a ``tools/call`` result: its fault, not the caller's input."""
        return internal_error(
            f"upstream tool {tool} sent an unusable result: {why}",
            {"upstream": self.name, "upstream_tool": tool, "retryable": False},
        )

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Context | None = None) -> dict[str, Any]:
        """``tools/call`` on the upstream; the result as a wire dict (isError results included).

        An HTTP session the upstream no longer knows (404) is re-initialized and the call sent
        once more: the upstream never saw it.
        """
        progress = None
        if ctx is not None and ctx.wants_progress:

            async def progress(p: float, total: float | None, message: str | None) -> None:
                await ctx.report_progress(p, total, message)

        for attempt in range(2):
            generation = self._generation  # the session this attempt is sent on
            try:
                return await self._call_once(tool, arguments, progress)
            except SessionExpired:
                if attempt:
                    break
                if self._generation == generation:  # the first call to hear it starts the re-initialize
                    log.info("upstream %s: HTTP session expired; re-initializing", self.name)
                    self.mark_broken()
                with anyio.move_on_after(self.spec.connect_timeout):
                    while not (self.state == "ready" and self._generation > generation):
                        await anyio.sleep(0.02)
        raise self._unavailable(tool)

    async def _call_once(self, tool: str, arguments: dict[str, Any], progress: Any) -> dict[str, Any]:
        client = self._client
        if client is None or self.state != "ready":
            raise self._unavailable(tool)
        lane = self._lane
        try:
            if lane is not None and not lane.open:  # the pipe is gone; the supervisor is about to notice
                self.mark_broken()
                raise self._unavailable(tool)
            result = await client.call_tool(tool, arguments, lane=lane, progress=progress, timeout=self.spec.call_timeout)
        except RPCError as e:
            if self._session_gone(e):
                raise SessionExpired from None
            if e.code == CONNECTION_CLOSED:
                self.mark_broken()
                raise self._unavailable(tool) from None
            data = e.data
            msg = e.message + (f" ({data})" if isinstance(data, str) and data else "")
            raise upstream_error(msg, tool=tool, rpc_code=e.code) from None
        except (*_CONNECTION_ERRORS, RuntimeError):
            # RuntimeError: a transport used after it closed (its text is an object repr, never shown)
            self.mark_broken()
            raise self._unavailable(tool) from None
        except ValueError as e:  # InvalidResult from the lane, or the SDK could not parse the answer
            raise self._bad_result(tool, str(e) if isinstance(e, InvalidResult) else "it could not be parsed") from None
        return {k: v for k, v in result.items() if v is not None}
