"""``build_server`` driven in-process by the official client (the SDK's own in-memory
transport, no subprocess): tool conversion, session binding and the never-raise rule."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.client.client import Client  # (not `from mcp import …`: ruff would take tests/mcp for it)

from mcpaql import Adapter, Config, Context
from mcpaql.mcp import build_server
from mcpaql.mcp.server import to_mcp_tool
from mcpaql.protocol.dispatch import Engine

pytestmark = pytest.mark.anyio

app = Adapter("unit_app", display_name="Unit")


@app.read
def ping(ctx: Context) -> dict[str, Any]:
    """Answer with this session's id."""
    return {"session": ctx.session.id, "transport": ctx.session.transport}


@app.delete
def drop(name: str) -> str:
    """Pretend to drop a thing."""
    return name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_tool_conversion_keeps_every_annotation() -> None:
    engine = app.engine(Config())
    tool = to_mcp_tool(next(t for t in engine.tools if t.family == "delete"))
    wire = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert wire["name"] == "unit_app_mcpaql_delete"
    assert wire["annotations"] == {
        "title": "Unit — Delete",
        "readOnlyHint": False,
        "destructiveHint": True,
        "openWorldHint": False,
    }  # idempotentHint false is MCP's default, so it is not sent
    assert wire["inputSchema"]["required"] == ["operation"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_in_process_round_trip(mode: str) -> None:
    server = build_server(app.engine(Config()))
    async with Client(server, mode=mode) as client:
        tools = (await client.list_tools()).tools
        assert {t.name for t in tools} == {"unit_app_mcpaql_read", "unit_app_mcpaql_delete"}
        result = await client.call_tool("unit_app_mcpaql_read", {"operation": "ping"})
        assert result.is_error is False
        assert '"success":true' in result.content[0].text


class ExplodingEngine(Engine):
    """An engine whose entry point itself fails: the server must still answer with an envelope."""

    async def call_tool(self, tool_name: str, arguments: Any, ctx: Context) -> dict[str, Any]:
        raise ValueError("/very/secret/module.py exploded")


async def test_handler_never_raises_and_leaks_nothing() -> None:
    engine = ExplodingEngine(app.registry(), Config())
    async with Client(build_server(engine), mode="legacy") as client:
        result = await client.call_tool("unit_app_mcpaql_read", {"operation": "ping"})
        assert result.is_error is True
        text = result.content[0].text
        assert '"code":"INTERNAL_ERROR"' in text
        assert "secret" not in text and "ValueError" not in text
