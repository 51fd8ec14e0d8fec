"""Both MCP protocol eras over both transports, with the official client (issue 15).

The era is chosen by the client: ``mode="legacy"`` is the 2025-11-25 ``initialize`` handshake,
``"auto"`` probes ``server/discover`` and settles on 2026-07-28, and ``"2026-07-28"`` adopts that
era directly (no probe; every request carries its version, client info and capabilities in
``_meta``). Each (era, transport) pair runs one scripted conversation (spawning a stdio server
costs about a second); the tests check what it recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
import pytest
from e2e_support import ADAPTER, ENV_BASE
from mcp import MCPError

from mcpaql.mcp import connect
from mcpaql.mcp.client import RAW
from mcpaql.mcp.listing import LISTING_VERSION_KEY

pytestmark = pytest.mark.e2e

READ = f"{ADAPTER}_mcpaql_read"
MODERN = "2026-07-28"


@dataclass
class Conversation:
    version: str
    discover: dict[str, Any] | None
    discover_error: int | None
    listings: list[dict[str, Any]]
    call: dict[str, Any]
    failed_call: dict[str, Any]


_cache: dict[tuple[str, str], Conversation] = {}


@pytest.fixture(params=["legacy", "auto", MODERN])
def era(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def conversation(transport: str, era: str, target: Any) -> Conversation:
    key = (transport, era)
    if key not in _cache:

        async def converse() -> Conversation:
            async with connect(target, env=ENV_BASE, mode=era) as conn:  # type: ignore[arg-type]
                session = conn.client.session
                discover, discover_error = None, None
                try:
                    discover = await session.send_request(types.DiscoverRequest(), RAW)  # type: ignore[type-var]
                except MCPError as e:
                    discover_error = e.error.code
                listings = [await session.send_request(types.ListToolsRequest(), RAW) for _ in range(2)]  # type: ignore[type-var]
                _, _, call = await conn.call_tool(READ, {"operation": "get_item", "params": {"item_id": "i1"}})
                _, _, failed = await conn.call_tool(READ, {"operation": "no_such_op"})
                return Conversation(conn.protocol_version, discover, discover_error, listings, call, failed)

        _cache[key] = anyio.run(converse)
    return _cache[key]


def test_the_client_gets_the_era_it_asked_for(conversation: Conversation, era: str) -> None:
    assert conversation.version == ("2025-11-25" if era == "legacy" else MODERN)


def test_server_discover_in_the_modern_era_only(conversation: Conversation, era: str) -> None:
    if era == "legacy":  # a handshake-era connection has no server/discover
        assert conversation.discover is None and conversation.discover_error == types.METHOD_NOT_FOUND
        return
    d = conversation.discover
    assert d is not None
    assert MODERN in d["supportedVersions"]
    assert d["capabilities"]["tools"]["listChanged"] is True  # served on subscriptions/listen
    assert "introspect" in d["instructions"]
    assert d["ttlMs"] > 0 and d["cacheScope"] == "private"


def test_listing_is_byte_identical_between_calls_and_carries_caching_hints(conversation: Conversation, era: str) -> None:
    first, second = conversation.listings
    assert json.dumps(first) == json.dumps(second)
    assert len(first["_meta"][LISTING_VERSION_KEY]) == 32
    if era != "legacy":  # caching hints are 2026-07-28 wire fields
        assert first["ttlMs"] > 0 and first["cacheScope"] == "private"
    assert all("outputSchema" not in t for t in first["tools"])  # off by default (docs/protocol.md)


def test_results_carry_structured_content_with_the_same_text_as_before(conversation: Conversation) -> None:
    for raw, success in ((conversation.call, True), (conversation.failed_call, False)):
        [block] = raw["content"]
        assert block["type"] == "text"
        assert raw["structuredContent"] == json.loads(block["text"])
        assert raw["structuredContent"]["success"] is success
    assert conversation.call["content"][0]["text"] == '{"success":true,"data":{"item_id":"i1","name":"first","size":1}}'


def test_the_tool_surface_is_the_same_in_both_eras(transport: str, conversation: Conversation) -> None:
    # Same content; key order inside inputSchema differs between eras because the SDK sends
    # 2025-11-25 results through that revision's wire models (fields in schema order).
    seen = [c.listings[0]["tools"] for (t, _), c in _cache.items() if t == transport]
    assert all(json.dumps(s, sort_keys=True) == json.dumps(seen[0], sort_keys=True) for s in seen)
    versions = {c.listings[0]["_meta"][LISTING_VERSION_KEY] for (t, _), c in _cache.items() if t == transport}
    assert len(versions) == 1
