"""A real MCP server (official SDK, stdio) that is hard to stop, for the process-hygiene tests.

``python stubborn_upstream.py PIDFILE``: ignores SIGTERM, SIGINT and SIGHUP, keeps running after its
stdin closes, and starts a grandchild that ignores them too and inherits its pipes (as ``npx`` → node
does). It writes ``"<own pid> <grandchild pid>"`` to PIDFILE once both run. One tool, ``get_status``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

STUBBORN = (
    "import signal, time\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
    "time.sleep(600)"
)


async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    tool = types.Tool(
        name="get_status",
        description="Get the server status.",
        input_schema={"type": "object"},
        annotations=types.ToolAnnotations(read_only_hint=True),
    )
    return types.ListToolsResult(tools=[tool])


async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"running as {os.getpid()}")])


async def serve() -> None:
    server = Server("stubborn", version="1.0.0", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options())


def main() -> None:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", STUBBORN])  # inherits stdin/stdout, like npx's node
    Path(sys.argv[1]).write_text(f"{os.getpid()} {child.pid}")
    anyio.run(serve)
    while True:  # stdin closed: a well-behaved server would exit now
        time.sleep(1)


if __name__ == "__main__":
    main()
