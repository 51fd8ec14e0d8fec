"""The tools/list listing is stable for caches (issue 15): byte-identical across server
restarts, and changed, with a notification in both eras, only when the registry changes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from e2e_support import ENV_BASE, stdio_target
from mcp import Client, StdioServerParameters

from mcpaql.mcp import connect
from mcpaql.mcp.client import RAW
from mcpaql.mcp.listing import LISTING_VERSION_KEY

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO.parent / "shared" / "fixtures" / "surfaces" / "mcp-server-time.tools-list.json"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _listing_bytes(mode: str) -> str:
    async with connect(stdio_target(), env=ENV_BASE, mode=mode) as conn:  # type: ignore[arg-type]
        raw = await conn.client.session.send_request(types.ListToolsRequest(), RAW)  # type: ignore[type-var]
        return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_listing_is_byte_identical_across_server_processes(mode: str) -> None:
    first = await _listing_bytes(mode)  # each call starts (and stops) its own server process
    second = await _listing_bytes(mode)
    assert first == second


def _wrapper() -> StdioServerParameters:
    if not FIXTURE.exists():
        pytest.fail(f"{FIXTURE} is missing (the shared surface captures)")
    replay = [sys.executable, "-m", "mcpaql.mcp.replay", str(FIXTURE), "--control"]
    return StdioServerParameters(command=MCPAQL, args=["wrap", "--name", "time", "--", *replay], env=dict(os.environ))


async def _add_upstream_tool(client: Client, tools: list[types.Tool]) -> None:
    """``replay_add_tool`` makes the replayed upstream add a tool and send tools/list_changed."""
    for t in tools:
        res = await client.call_tool(t.name, {"operation": "replay_add_tool", "params": {"name": "list_widgets"}})
        if json.loads(res.content[0].text).get("success"):  # type: ignore[union-attr]
            return
    pytest.fail("replay_add_tool is not reachable through the wrapper")


async def _version(client: Client) -> str:
    raw = await client.session.send_request(types.ListToolsRequest(), RAW)  # type: ignore[type-var]
    return str(raw["_meta"][LISTING_VERSION_KEY])


async def test_a_registry_change_changes_the_listing_and_notifies_a_legacy_client() -> None:
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.append(message)

    async with Client(_wrapper(), mode="legacy", message_handler=on_message, cache=None) as client:
        before = await _version(client)
        assert await _version(client) == before
        await _add_upstream_tool(client, (await client.list_tools()).tools)
        with anyio.fail_after(15):
            while not seen:
                await anyio.sleep(0.05)
        assert await _version(client) != before


async def test_a_registry_change_reaches_a_modern_client_on_its_listen_stream() -> None:
    async with Client(_wrapper(), mode="2026-07-28", cache=None) as client:
        before = await _version(client)
        tools = (await client.list_tools()).tools
        async with client.listen(tools_list_changed=True) as sub:
            await _add_upstream_tool(client, tools)
            with anyio.fail_after(15):
                event = await sub.__anext__()
        assert type(event).__name__ == "ToolsListChanged"
        assert await _version(client) != before
