"""Endpoint modes and tool-name prefixes over stdio (MODES §3; MCPI §2.1.2, §6.2; seed 003)."""

from __future__ import annotations

import pytest
from e2e_support import ADAPTER, ENV_BASE, stdio_target

from mcpaql.mcp import connect

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

ENDPOINTS = ["create", "read", "update", "delete", "execute"]
SINGLE = f"{ADAPTER}_mcpaql"
INTROSPECT = {"operation": "introspect", "params": {"query": "operations"}}


async def test_single_mode_exposes_one_unified_tool() -> None:
    async with connect(stdio_target("--mode", "single"), env=ENV_BASE) as conn:
        tools = await conn.list_tools_raw()
        assert [t["name"] for t in tools] == [SINGLE]
        tool = tools[0]
        assert tool["annotations"]["readOnlyHint"] is False
        assert tool["annotations"]["destructiveHint"] is True  # MCPI §2.3: single mode is conservative
        assert "introspect" in tool["description"]
        assert tool["inputSchema"]["required"] == ["operation"]
        env, is_error, _ = await conn.call_tool(SINGLE, INTROSPECT)
        assert env["success"] is True and env["data"]["_protocol"]["mode"] == "single" and is_error is False
        # Every category routes through the one tool.
        env, _, _ = await conn.call_tool(SINGLE, {"operation": "create_item", "params": {"item_id": "s", "name": "n"}})
        assert env["success"] is True
        env, _, _ = await conn.call_tool(SINGLE, {"operation": "delete_item", "params": {"item_id": "s"}})
        assert env == {"success": True, "data": True}


async def test_all_mode_exposes_both_surfaces() -> None:
    async with connect(stdio_target("--mode", "all"), env=ENV_BASE) as conn:
        names = [t["name"] for t in await conn.list_tools_raw()]
        assert set(names) == {f"{ADAPTER}_mcpaql_{e}" for e in ENDPOINTS} | {SINGLE}
        env, _, _ = await conn.call_tool(SINGLE, {"operation": "get_item", "params": {"item_id": "i1"}})
        assert env["success"] is True
        env, _, _ = await conn.call_tool(f"{ADAPTER}_mcpaql_read", {"operation": "get_item", "params": {"item_id": "i1"}})
        assert env["success"] is True


async def test_prefix_from_environment() -> None:
    async with connect(stdio_target(), env={**ENV_BASE, "MCP_AQL_TOOL_PREFIX": "acme_"}) as conn:
        names = {t["name"] for t in await conn.list_tools_raw()}
        assert names == {f"acme_{ADAPTER}_mcpaql_{e}" for e in ENDPOINTS}
        env, _, _ = await conn.call_tool(f"acme_{ADAPTER}_mcpaql_read", INTROSPECT)
        assert env["data"]["_protocol"]["endpoints"]["read"] == f"acme_{ADAPTER}_mcpaql_read"
