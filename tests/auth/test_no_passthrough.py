"""A wrapped MCP server or an OpenAPI target never receives the client's credential (no token
passthrough, MCP authorization spec §"Access Token Privilege Restriction"): upstream calls carry
the server's own credentials (``--header``) and nothing else. Both upstreams here are real HTTP
servers in the test (uvicorn on 127.0.0.1) that record every request's headers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from auth_support import Keys, Served
from issuer import free_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpaql.mcp.client import connect

pytestmark = pytest.mark.anyio
SERVER_OWN = "server-own-credential-0123456789"


class Recorder:
    """ASGI middleware keeping every request's headers."""

    def __init__(self, app: ASGIApp, seen: list[dict[str, str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode().lower(): v.decode("latin-1") for k, v in scope["headers"]})
        await self.app(scope, receive, send)


class Background:
    """uvicorn serving ``app`` on a free loopback port in a thread."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "test upstream did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def upstream_app() -> Any:
    """A plain MCP server (the SDK's MCPServer) with one read-only tool, over streamable HTTP."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer("up")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def ping(text: str = "") -> str:
        """Answer with the text."""
        return f"pong {text}"

    return server.streamable_http_app()


@pytest.fixture(scope="module")
def mcp_upstream() -> Iterator[tuple[Background, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    app = upstream_app()
    bg = Background(Recorder(app, seen))
    yield bg, seen
    bg.stop()


@pytest.fixture(scope="module")
def api_upstream() -> Iterator[tuple[Background, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    async def items(request: Request) -> JSONResponse:
        return JSONResponse([{"id": 1, "name": "one"}])

    bg = Background(Recorder(Starlette(routes=[Route("/items", items)]), seen))
    yield bg, seen
    bg.stop()


def assert_never_forwarded(seen: list[dict[str, str]], client_secret: str) -> None:
    assert seen, "the upstream was never called"
    for headers in seen:
        assert client_secret not in json.dumps(headers)
        assert headers.get("authorization") == f"Bearer {SERVER_OWN}", headers


async def _call_through(served: Served, key: str, request: dict[str, Any]) -> dict[str, Any]:
    async with connect(served.url, headers={"Authorization": f"Bearer {key}"}) as conn:
        tools = [t["name"] for t in await conn.list_tools_raw()]
        read = next(t for t in tools if t.endswith("_read"))
        body, _e, _r = await conn.call_tool(read, request)
    assert isinstance(body, dict) and body.get("success"), body
    return body


async def test_a_wrapped_http_upstream_never_sees_the_client_token(
    keys: Keys, mcp_upstream: tuple[Background, list[dict[str, str]]], tmp_path: Path
) -> None:
    bg, seen = mcp_upstream
    argv = [
        "wrap",
        "--url",
        f"http://127.0.0.1:{bg.port}/mcp",
        "--header",
        f"Authorization=Bearer {SERVER_OWN}",
        "--name",
        "up",
        "--api-keys-file",
        str(keys.file),
    ]
    served = Served(argv, tmp_path, env={"MCPAQL_HOME": str(tmp_path)})
    try:
        body = await _call_through(served, keys.reader, {"operation": "ping", "params": {"text": "hi"}})
        assert "pong" in json.dumps(body)
    finally:
        served.stop()
    assert_never_forwarded(seen, keys.reader)


async def test_an_openapi_target_never_sees_the_client_token(
    keys: Keys, api_upstream: tuple[Background, list[dict[str, str]]], tmp_path: Path
) -> None:
    bg, seen = api_upstream
    spec = tmp_path / "api.json"
    spec.write_text(
        json.dumps(
            {
                "openapi": "3.0.3",
                "info": {"title": "Items", "version": "1"},
                "servers": [{"url": f"http://127.0.0.1:{bg.port}"}],
                "paths": {"/items": {"get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}}}},
            }
        )
    )
    argv = ["openapi", str(spec), "--header", f"Authorization=Bearer {SERVER_OWN}", "--api-keys-file", str(keys.file)]
    served = Served(argv, tmp_path, env={"MCPAQL_HOME": str(tmp_path)})
    try:
        body = await _call_through(served, keys.writer, {"operation": "list_items"})
        assert "one" in json.dumps(body)
    finally:
        served.stop()
    assert_never_forwarded(seen, keys.writer)
