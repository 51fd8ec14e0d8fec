"""Binds MCP connections to mcpaql sessions (CORE §2.3: one session per connection).

The SDK (2.3.0) has no public per-connection hook, so we use the connection object it keeps
on the request's ``ServerSession`` (``_connection``: a ``state`` dict plus an ``exit_stack``
unwound when the connection ends). Where connections are per request (stateless HTTP, every
2026-07-28 HTTP request) each request is its own session; stdio pins one session to the
process, because there the process *is* the connection in both protocol eras.
This module must never hand a client-chosen id to a session: ids are always ours.

Identity seam: ``identify(ctx)`` (the authenticated subject once auth exists, issue 15) is the
only way a session gets an ``identity``; nothing a client puts in a request can set it.
Per-request sessions are marked ``per_request`` so the safety layer binds what must outlive
the request (confirmation tokens, executions) to the identity, not to the throw-away session.

Stateful HTTP sessions are bounded (:class:`SessionLimits`, :class:`SessionGate`): a cap, an
idle timeout, oldest-idle eviction at the cap, and one admission check for auth to use.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..protocol.dispatch import Engine
from ..protocol.session import Session
from .sdk_private import end_http_session, open_http_sessions, request_connection

log = logging.getLogger("mcpaql.mcp.sessions")

_STATE_KEY = "mcpaql.session"


def _connection_of(ctx: Any) -> Any | None:
    """The SDK's per-connection object, or None if this SDK build does not expose one."""
    conn = request_connection(ctx)
    if conn is None or not isinstance(getattr(conn, "state", None), dict) or getattr(conn, "exit_stack", None) is None:
        return None
    return conn


class SessionBinder:
    """Finds or creates the mcpaql session for an incoming request.

    ``pinned`` (stdio) short-circuits everything: one session for the whole server run,
    closed by the transport when the run ends.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        transport: str = "mcp",
        pinned: Session | None = None,
        identify: Callable[[Any], str | None] | None = None,
    ) -> None:
        self.engine = engine
        self.transport = transport
        self.pinned = pinned
        self.identify = identify

    def _new(self, ctx: Any, *, per_request: bool) -> Session:
        session = self.engine.new_session(self.transport)
        session.per_request = per_request
        if self.identify is not None:
            session.identity = self.identify(ctx)
        return session

    def session_for(self, ctx: Any) -> tuple[Session, bool]:
        """Return ``(session, owned)``; ``owned`` means the caller must close it after the call
        (no connection object to tie its lifetime to)."""
        if self.pinned is not None:
            return self.pinned, False
        conn = _connection_of(ctx)
        if conn is None:
            return self._new(ctx, per_request=True), True
        session = conn.state.get(_STATE_KEY)
        if session is None:
            # stateless HTTP builds a fresh connection (with no transport session id) per request
            one_shot = self.transport == "http" and getattr(conn, "session_id", None) is None
            session = self._new(ctx, per_request=one_shot)
            conn.state[_STATE_KEY] = session
            conn.exit_stack.push_async_callback(session.close)
            log.debug("session %s opened (transport=%s)", session.id, self.transport)
        return session, False


# ---- bounded stateful HTTP sessions -----------------------------------------------------------

DEFAULT_MAX_SESSIONS = 1000
DEFAULT_IDLE_TIMEOUT = 600.0
_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"

# May this caller open a session? ``None``: yes; otherwise the ASGI response to send instead
# (e.g. 401 with ``WWW-Authenticate`` when auth is on and the caller is not authenticated).
Admit = Callable[[Scope], ASGIApp | None]


@dataclass(frozen=True)
class SessionLimits:
    """How many stateful HTTP sessions one process keeps, and for how long an idle one lives.

    Why bounded: every ``initialize`` without a session id opens a session (tens of KB each);
    an unauthenticated flood would otherwise fill the table and lock legitimate clients out until
    the sessions expire. At the cap an idle session is ended to make room (a session is idle while
    none of its requests, an open GET stream included, is in flight): first those never used after
    their opening ``initialize`` (what a flood leaves behind), then the oldest idle; a new client is
    refused (503) only when every session is busy. ``admit`` is the one check that decides who may
    open a session at all (auth: only authenticated callers); it runs after authentication
    middleware, so ``scope["user"]`` is set when auth is on.
    """

    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    admit: Admit | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise ValueError("--max-sessions must be a whole number of sessions >= 1")
        if not math.isfinite(self.idle_timeout) or self.idle_timeout <= 0:
            raise ValueError("--session-idle-timeout must be a number of seconds > 0")


@dataclass
class _Seen:
    last: float
    in_flight: int = 0
    used: bool = False  # a request came after the opening one (a flood's sessions never get one)


class SessionGate:
    """ASGI middleware in front of the SDK's streamable-HTTP endpoint (stateful mode): admission
    (``limits.admit``), the cap with oldest-idle eviction, and per-session activity tracking.

    The SDK keeps its own hard cap at the same number, so a race between two new clients for the
    last idle slot ends in an honest 503 for one of them, never in more sessions than the cap.
    """

    def __init__(self, app: ASGIApp, *, manager: Any, path: str, limits: SessionLimits) -> None:
        self.app = app
        self.manager = manager
        self.path = path.rstrip("/") or "/"
        self.limits = limits
        self._seen: dict[str, _Seen] = {}
        self.evicted = 0  # for tests and logs: how many idle sessions made room

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (scope["path"].rstrip("/") or "/") != self.path:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or ())
        sid = headers.get(_SESSION_HEADER)
        if sid is None:
            if scope.get("method") == "POST" and self._opens_session(headers.get(_VERSION_HEADER)):
                await self._open(scope, receive, send)
                return
            await self.app(scope, receive, send)
            return
        seen = self._seen.get(sid.decode("latin-1"))
        if seen is None:
            await self.app(scope, receive, send)
            return
        seen.in_flight += 1
        seen.used = True
        try:
            await self.app(scope, receive, send)
        finally:
            seen.in_flight -= 1
            seen.last = time.monotonic()

    @staticmethod
    def _opens_session(version: bytes | None) -> bool:
        # the 2026-07-28 era has no sessions: only handshake-era requests can open one
        return version is None or version.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS

    async def _open(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.limits.admit is not None:
            refusal = self.limits.admit(scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if not await self._make_room():
            log.warning("refusing a new session: all %d sessions are busy", self.limits.max_sessions)
            await _busy(scope, receive, send)
            return
        opened: list[_Seen] = []

        async def hear(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for k, v in message.get("headers") or ():
                    if k.lower() == _SESSION_HEADER:  # known (and busy) before the client can use it
                        opened.append(self._seen.setdefault(v.decode("latin-1"), _Seen(time.monotonic(), in_flight=1)))
            await send(message)

        try:
            await self.app(scope, receive, hear)
        finally:
            for seen in opened:
                seen.in_flight -= 1
                seen.last = time.monotonic()

    async def _make_room(self) -> bool:
        """Below the cap, or made so by ending the oldest idle session; False if all are busy."""
        live = open_http_sessions(self.manager)
        for gone in [s for s in self._seen if s not in live]:
            del self._seen[gone]  # ended by the client (DELETE) or the SDK's idle timeout
        if len(live) < self.limits.max_sessions:
            return True
        # a live session the gate has not seen answered yet is being opened right now: never a victim
        idle = [(seen.used, seen.last, s) for s in live if (seen := self._seen.get(s)) is not None and not seen.in_flight]
        if not idle:
            return False
        *_, victim = min(idle)  # never used after its opening request first, then the oldest idle
        self._seen.pop(victim, None)
        await end_http_session(self.manager, victim)
        self.evicted += 1
        log.info("session cap reached: ended the oldest idle session")
        return True


async def _busy(scope: Scope, receive: Receive, send: Send) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "Too many open sessions, all busy"}})
    response = Response(body, status_code=503, media_type="application/json", headers={"Retry-After": "5"})
    await response(scope, receive, send)
