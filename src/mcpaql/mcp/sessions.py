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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..protocol.dispatch import Engine
from ..protocol.session import Session
from .sdk_private import request_connection

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
