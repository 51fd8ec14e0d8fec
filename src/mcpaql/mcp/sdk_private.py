"""Every read of a *private* part of the ``mcp`` SDK, in one place.

Why: the SDK (2.x) has no public per-connection object on a request context and no public
default HTTP timeouts/client factory, and we need both. Each such read lives here, once, and
``tests/mcp/test_sdk_private.py`` checks every one against the installed SDK, so an upgrade that
removes or renames one fails that test loudly instead of silently degrading (no list_changed
notifications, a session per request, other timeouts).
"""

from __future__ import annotations

from typing import Any

from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT, create_mcp_http_client

__all__ = ["MCP_DEFAULT_SSE_READ_TIMEOUT", "MCP_DEFAULT_TIMEOUT", "create_mcp_http_client", "request_connection"]


def request_connection(ctx: Any) -> Any | None:
    """The connection object behind a request's per-request ``ServerSession`` proxy
    (``ctx.session._connection``: it lives as long as the client, with a ``state`` dict and an
    ``exit_stack`` unwound when the connection ends), or None if this SDK build has none."""
    return getattr(getattr(ctx, "session", None), "_connection", None)
