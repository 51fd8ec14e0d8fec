"""The MCP binding: the only package that imports the official ``mcp`` SDK.

It turns an :class:`~mcpaql.protocol.dispatch.Engine` into an MCP server (``build_server``),
serves it over stdio or streamable HTTP (``serve_stdio``, ``http_app``, ``serve_http``) and
offers a small client (``connect``) for the CLI, the conformance suite and the token report.
Nothing here decides protocol behaviour: that lives in ``mcpaql.protocol``.
"""

from .client import Connection, ServerSpec, connect, parse_server_spec
from .server import build_server
from .transports import http_app, serve_http, serve_stdio

__all__ = [
    "Connection",
    "ServerSpec",
    "build_server",
    "connect",
    "http_app",
    "parse_server_spec",
    "serve_http",
    "serve_stdio",
]
