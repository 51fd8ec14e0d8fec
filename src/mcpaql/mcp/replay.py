"""A replay MCP server: serves a captured ``tools/list`` over stdio, for offline tests and benches.

``python -m mcpaql.mcp.replay FIXTURE.tools-list.json [--control] [--http PORT [--json-response]]``

Over stdio by default; ``--http PORT`` serves streamable HTTP on 127.0.0.1:PORT/mcp instead (event-stream
answers, or plain JSON ones with ``--json-response``), for the HTTP upstream lane's tests and bench.

``tools/call`` answers with a deterministic echo, ``{"tool": name, "arguments": {...}}`` as
JSON text. With ``--control`` extra tools exercise the wrapper's runtime paths:
``replay_progress`` (progress notifications), ``replay_error`` (an ``isError`` result with the
given message), ``replay_rpc_error`` (a JSON-RPC error with the given code), ``replay_sleep``
(waits; counts the calls the client cancelled), ``replay_stats`` (those counts and its pid),
``replay_add_tool`` (adds a tool and sends ``tools/list_changed``) and ``replay_crash`` (the
process exits, to test reconnects). With ``--record FILE`` every ``tools/call`` it receives is
appended to FILE as a JSON line (``{"tool", "arguments"}``, plus ``traceparent`` / ``http_traceparent``
when the call carried W3C trace context in ``_meta`` / an HTTP header), so tests can see what reached it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server

CONTROL_TOOLS: list[dict[str, Any]] = [
    {
        "name": "replay_progress",
        "description": "Send progress notifications, then echo.",
        "inputSchema": {"type": "object", "properties": {"steps": {"type": "integer"}}},
    },
    {
        "name": "replay_error",
        "description": "Return an isError result with this message.",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    },
    {
        "name": "replay_add_tool",
        "description": "Add a tool and send tools/list_changed.",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {"name": "replay_crash", "description": "Exit the server process.", "inputSchema": {"type": "object"}},
    {
        "name": "replay_rpc_error",
        "description": "Answer with a JSON-RPC error.",
        "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}},
    },
    {
        "name": "replay_sleep",
        "description": "Wait, then echo.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {"name": "replay_stats", "description": "Counts kept by the control tools.", "inputSchema": {"type": "object"}},
]


def load_tools(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return list(data["tools"] if isinstance(data, dict) else data)


def build_server(tools: list[dict[str, Any]], control: bool = False, record: str | None = None) -> Server[Any]:
    # The echo cannot satisfy an outputSchema, and clients validate structured results against
    # it, so replayed tools are served without one.
    raw = [{k: v for k, v in t.items() if k != "outputSchema"} for t in tools] + (CONTROL_TOOLS if control else [])
    state: dict[str, Any] = {"tools": [types.Tool.model_validate(t) for t in raw], "cancelled": 0, "finished_sleeps": 0}

    async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=state["tools"])

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        name = params.name
        if record:
            seen: dict[str, Any] = {"tool": name, "arguments": args}
            meta: dict[str, Any] = dict(ctx.meta) if isinstance(ctx.meta, dict) else {}
            if "traceparent" in meta:  # the trace context a traced wrapper sent (MCP _meta convention)
                seen["traceparent"] = meta["traceparent"]
            header = getattr(getattr(ctx, "request", None), "headers", {}).get("traceparent")
            if header:  # and as an HTTP header, over streamable HTTP
                seen["http_traceparent"] = header
            with open(record, "a", encoding="utf-8") as f:
                f.write(json.dumps(seen, sort_keys=True) + "\n")
        if control and name == "replay_progress":
            steps = int(args.get("steps", 3))
            for i in range(steps):
                await ctx.session.report_progress(i + 1, total=steps, message=f"step {i + 1}")
        elif control and name == "replay_error":
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(args.get("message")))], is_error=True)
        elif control and name == "replay_add_tool":
            state["tools"] = [
                *state["tools"],
                types.Tool(name=str(args["name"]), description="Added at run time.", input_schema={"type": "object"}),
            ]
            await ctx.session.send_tool_list_changed()
        elif control and name == "replay_crash":
            os._exit(3)
        elif control and name == "replay_rpc_error":
            raise MCPError(int(args.get("code", -32603)), str(args.get("message", "failed")))
        elif control and name == "replay_sleep":
            try:
                await anyio.sleep(float(args.get("seconds", 1)))
            except anyio.get_cancelled_exc_class():
                state["cancelled"] += 1
                raise
            state["finished_sleeps"] += 1
        elif control and name == "replay_stats":
            stats = {"cancelled": state["cancelled"], "finished_sleeps": state["finished_sleeps"], "pid": os.getpid()}
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(stats))])
        elif not any(t.name == name for t in state["tools"]):
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True)
        text = json.dumps({"tool": name, "arguments": args}, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    class ReplayServer(Server[Any]):
        def create_initialization_options(self, notification_options=None, experimental_capabilities=None, extensions=None):  # type: ignore[no-untyped-def]
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
            )

    return ReplayServer(
        "mcpaql-replay",
        version="0.1.0",
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        get_tool_input_schema=lambda name: None,
    )


async def serve(path: str, control: bool, record: str | None = None) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(load_tools(path), control, record)
    async with stdio_server() as (r, w):
        await server.run(r, w, server.create_initialization_options(NotificationOptions(tools_changed=True)))


def serve_http(path: str, control: bool, port: int, json_response: bool, record: str | None = None) -> None:
    import uvicorn

    server = build_server(load_tools(path), control, record)
    app = server.streamable_http_app(json_response=json_response)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def argv_for(fixture: str | os.PathLike[str], control: bool = False, record: str | os.PathLike[str] | None = None) -> list[str]:
    """The command line that starts a replay server for ``fixture`` (for UpstreamSpec.from_argv)."""
    return [
        sys.executable,
        "-m",
        "mcpaql.mcp.replay",
        str(fixture),
        *(["--control"] if control else []),
        *(["--record", str(record)] if record else []),
    ]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixture")
    ap.add_argument("--control", action="store_true")
    ap.add_argument("--record", help="append every tools/call received to this file (JSON lines)")
    ap.add_argument("--http", type=int, metavar="PORT")
    ap.add_argument("--json-response", action="store_true")
    a = ap.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if a.http is not None:
        serve_http(a.fixture, a.control, a.http, a.json_response, a.record)
    else:
        anyio.run(serve, a.fixture, a.control, a.record)


if __name__ == "__main__":
    main()
