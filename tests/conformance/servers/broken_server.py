"""The tasks adapter behind a hand-made low-level MCP server that injects ONE defect, so the
conformance suite can be shown to catch it. ``python broken_server.py DEFECT`` (stdio).

Defects: wrong-endpoint, unknown-ignored, traceback, no-annotations, no-introspect-ref,
jsonrpc-errors, iserror-wrong, extra-keys, long-name, no-mode-claim (semantic mode without
_protocol.supported_modes: one mode, nothing declared), none (a faithful copy, as a control).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as types
import tasks_server
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from mcpaql import Config
from mcpaql.mcp.server import to_mcp_tool
from mcpaql.protocol.dispatch import ANY_FAMILY

DEFECTS = (
    "none",
    "wrong-endpoint",
    "unknown-ignored",
    "traceback",
    "no-annotations",
    "no-introspect-ref",
    "jsonrpc-errors",
    "iserror-wrong",
    "extra-keys",
    "long-name",
    "no-mode-claim",
)
TRACEBACK = (
    'Traceback (most recent call last):\n  File "/srv/tasks/src/store.py", line 41, in get_task\n'
    "    return TASKS[task_id]\nKeyError: 'no such task'"
)


def build(defect: str) -> Server[Any]:
    tasks_server._seed()
    engine = tasks_server.app.engine(Config.load(env={}, mode="semantic"))
    session = engine.new_session("stdio")
    tools = [to_mcp_tool(t) for t in engine.tools]
    back: dict[str, str] = {}
    if defect == "no-annotations":
        tools = [t.model_copy(update={"annotations": None}) for t in tools]
    elif defect == "no-introspect-ref":
        tools = [t.model_copy(update={"description": "Task tracker operations. Send {operation, params}."}) for t in tools]
    elif defect == "long-name":
        renamed = []
        for t in tools:
            long = "task_tracker_for_the_whole_organisation_and_its_subsidiaries_" + t.name
            back[long] = t.name
            renamed.append(t.model_copy(update={"name": long}))
        tools = renamed

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = back.get(params.name, params.name)
        args: Any = params.arguments or {}
        call_ctx = engine.context(session)
        if defect == "wrong-endpoint":
            env = await engine.execute(args, call_ctx, ANY_FAMILY, name)
        else:
            if defect == "unknown-ignored" and isinstance(args, dict) and isinstance(args.get("params"), dict):
                compiled = engine.compiled(str(args.get("operation")))
                if compiled is not None:
                    args = {**args, "params": {k: v for k, v in args["params"].items() if k in compiled.params}}
            env = await engine.call_tool(name, args, call_ctx)
        _text, is_error = engine.render(env)
        if not env.get("success"):
            err = env["error"]
            if defect == "traceback" and err["code"] == "NOT_FOUND_RESOURCE":
                err["message"] = TRACEBACK
            if defect == "jsonrpc-errors":
                raise MCPError(-32602, err["message"])
            if defect == "iserror-wrong":
                is_error = not is_error
        if defect == "no-mode-claim" and env.get("success") and isinstance(env.get("data"), dict):
            proto = env["data"].get("_protocol")
            if isinstance(proto, dict):
                proto.pop("supported_modes", None)
        if defect == "extra-keys" and env.get("success") and isinstance(env.get("data"), dict):
            op = env["data"].get("operation")
            if isinstance(op, dict):
                op["danger"] = "safe"
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(env))], is_error=is_error)

    return Server("tasks-broken", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def main(defect: str) -> None:
    server = build(defect)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in DEFECTS:
        sys.exit(f"usage: broken_server.py {{{'|'.join(DEFECTS)}}}")
    anyio.run(main, sys.argv[1])
