"""Serve wrapped upstreams over MCP (what ``mcpaql wrap`` runs): connect, build, serve.

The upstream sessions and the MCP server share one event loop, so HTTP is served with
``uvicorn.Server.serve()`` inside it rather than the blocking ``uvicorn.run``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .runtime import UpstreamSpec
from .wrap import wrap


async def serve_wrapped_stdio(upstreams: Iterable[UpstreamSpec] | UpstreamSpec, **wrap_kw: Any) -> None:
    from ...mcp.transports import serve_stdio

    async with wrap(upstreams, **wrap_kw) as w:
        await serve_stdio(w)


async def serve_wrapped_http(
    upstreams: Iterable[UpstreamSpec] | UpstreamSpec, *, host: str = "127.0.0.1", port: int = 8000,
    stateless: bool = False, path: str = "/mcp", log_level: str = "warning", **wrap_kw: Any,
) -> None:
    import uvicorn

    from ...mcp.transports import configure_logging, http_app, uvicorn_log_config

    configure_logging()
    async with wrap(upstreams, **wrap_kw) as w:
        app = http_app(w, stateless=stateless, path=path, host=host)
        config = uvicorn.Config(app, host=host, port=port, log_config=uvicorn_log_config(log_level), log_level=log_level)
        await uvicorn.Server(config).serve()
