"""Every read of a *private* part of the ``mcp`` SDK, in one place.

Why: the SDK (2.x) has no public per-connection object on a request context and no public
default HTTP timeouts/client factory, and no public way to list or end a stateful HTTP session
(evicting the oldest idle session at the cap), and we need all three. Each such read lives here, once, and
``tests/mcp/test_sdk_private.py`` checks every one against the installed SDK, so an upgrade that
removes or renames one fails that test loudly instead of silently degrading (no list_changed
notifications, a session per request, other timeouts).
"""

from __future__ import annotations

from typing import Any

from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT, create_mcp_http_client

__all__ = [
    "MCP_DEFAULT_SSE_READ_TIMEOUT",
    "MCP_DEFAULT_TIMEOUT",
    "create_mcp_http_client",
    "end_http_session",
    "http_session_manager",
    "open_http_sessions",
    "request_connection",
]


def request_connection(ctx: Any) -> Any | None:
    """The connection object behind a request's per-request ``ServerSession`` proxy
    (``ctx.session._connection``: it lives as long as the client, with a ``state`` dict and an
    ``exit_stack`` unwound when the connection ends), or None if this SDK build has none."""
    return getattr(getattr(ctx, "session", None), "_connection", None)


def http_session_manager(server: Any) -> Any:
    """The streamable-HTTP session manager ``server.streamable_http_app()`` made
    (``server._session_manager``)."""
    return server._session_manager


def open_http_sessions(manager: Any) -> dict[str, Any]:
    """The open stateful sessions, id → transport (``manager._server_instances``; read only)."""
    sessions: dict[str, Any] = manager._server_instances
    return sessions


async def end_http_session(manager: Any, session_id: str) -> None:
    """End one stateful session as the SDK does on its idle timeout: forgotten at once (its id
    answers 404 from then on), its transport terminated (``manager._discard_session``)."""
    transport = manager._server_instances.get(session_id)
    if transport is not None:
        await manager._discard_session(session_id, transport)
