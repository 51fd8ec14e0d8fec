"""A minimal MCP server written straight on the wire (newline-delimited JSON-RPC over stdio).

Why not the SDK: its models drop fields they do not know, so an SDK server cannot send what
real upstreams do send — vendor extensions on tool definitions, newer annotation hints,
extra fields on content blocks. Tests use it to prove the wrapper keeps them. ``tools/list``
answers in two pages to exercise pagination.
"""

from __future__ import annotations

import json
import sys

PAGE_1 = [
    {
        "name": "get_weather",
        "description": "Weather for a city.",
        "x-vendor": {"tier": "gold"},
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string", "x-example": "Oslo"}}, "required": ["city"]},
        "annotations": {"readOnlyHint": True, "x-costHint": "cheap"},
    },
]
PAGE_2 = [
    {
        "name": "set_alarm",
        "description": "Set an alarm.",
        "x-vendor": {"tier": "basic"},
        "inputSchema": {"type": "object", "properties": {"at": {"type": "string"}}, "required": ["at"]},
        "annotations": {"readOnlyHint": False, "destructiveHint": False},
    },
]


def reply(rid, result=None, error=None) -> None:
    msg = {"jsonrpc": "2.0", "id": rid}
    msg.update({"error": error} if error is not None else {"result": result})
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue  # notifications
        if method == "initialize":
            reply(
                rid,
                {
                    "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw-upstream", "version": "1.0.0"},
                },
            )
        elif method == "tools/list":
            if params.get("cursor") == "page-2":
                reply(rid, {"tools": PAGE_2})
            else:
                reply(rid, {"tools": PAGE_1, "nextCursor": "page-2"})
        elif method == "tools/call":
            args = params.get("arguments") or {}
            text = json.dumps({"tool": params.get("name"), "arguments": args})
            reply(rid, {"content": [{"type": "text", "text": text, "x-lang": "en"}], "isError": False, "x-trace": "t-1"})
        elif method == "ping":
            reply(rid, {})
        else:
            reply(rid, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
