"""A streamable-HTTP MCP server that asks the client things in the middle of a call (raw Starlette, since
no packaged server does this on demand): ``python asking_upstream.py PORT``.

Its one tool, ``ask_client``, answers on an event stream that first carries a ``ping`` request and a
``sampling/createMessage`` request, waits until the client's replies to both arrive (as POSTs), and
then sends the result: the replies it got, as JSON text.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import AsyncIterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

SESSION = uuid.uuid4().hex
replies: dict[str, dict] = {}
both = asyncio.Event()
TOOL = {
    "name": "ask_client",
    "description": "Ask the client, then answer.",
    "inputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
}


def sse(message: dict) -> bytes:
    return b"event: message\r\ndata: " + json.dumps(message).encode() + b"\r\n\r\n"


async def mcp(request: Request) -> Response:
    msg = json.loads(await request.body())
    method = msg.get("method")
    if method is None:  # a reply to one of our requests
        replies[str(msg["id"])] = msg
        if len(replies) == 2:
            both.set()
        return Response(status_code=202)
    if "id" not in msg:
        return Response(status_code=202)
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "asking", "version": "1.0.0"},
        }
        return JSONResponse({"jsonrpc": "2.0", "id": msg["id"], "result": result}, headers={"mcp-session-id": SESSION})
    if request.headers.get("mcp-session-id") != SESSION:
        return Response(status_code=404)
    if method == "tools/list":
        return JSONResponse({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [TOOL]}})

    async def stream() -> AsyncIterator[bytes]:
        yield sse({"jsonrpc": "2.0", "id": "srv-ping", "method": "ping"})
        yield sse(
            {"jsonrpc": "2.0", "id": "srv-sample", "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}
        )
        await asyncio.wait_for(both.wait(), 20)
        text = json.dumps(replies, sort_keys=True)
        yield sse({"jsonrpc": "2.0", "id": msg["id"], "result": {"content": [{"type": "text", "text": text}]}})

    return StreamingResponse(stream(), media_type="text/event-stream")


async def other(request: Request) -> Response:
    return Response(status_code=405)


app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"]), Route("/mcp", other, methods=["GET", "DELETE"])])

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
