"""tools/list over real transports: names, titles, annotations, descriptions and input
schemas as a client sees them on the wire (MCPI §2.1–2.3, §3.1; seed 003)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from e2e_support import ADAPTER, ENV_BASE

from mcpaql.mcp import connect

pytestmark = pytest.mark.e2e

ENDPOINTS = ["create", "read", "update", "delete", "execute"]
# (readOnlyHint, destructiveHint, idempotentHint) per endpoint: seed 003 §2 / MCPI §2.3
HINTS = {
    "read": (True, False, True),
    "create": (False, False, False),
    "update": (False, True, False),
    "delete": (False, True, False),
    "execute": (False, True, False),
}
OPS = {
    "read": ["get_item", "list_items", "boom", "noisy", "recall", "introspect"],
    "create": ["create_item", "remember"],
    "update": ["rename_item"],
    "delete": ["delete_item"],
    "execute": ["run_job"],
}


@dataclass
class Listing:
    tools: list[dict[str, Any]]
    server_name: str
    server_version: str
    instructions: str | None


_cache: dict[str, Listing] = {}


@pytest.fixture
def listing(transport: str, target: Any) -> Listing:
    """One ``tools/list`` per transport for the whole module (each stdio spawn costs ~1 s)."""
    if transport not in _cache:

        async def fetch() -> Listing:
            async with connect(target, env=ENV_BASE) as conn:
                info = conn.server_info
                assert info is not None
                return Listing(await conn.list_tools_raw(), info.name, info.version, conn.instructions)

        _cache[transport] = anyio.run(fetch)
    return _cache[transport]


def test_tool_names_titles_and_annotations(listing: Listing) -> None:
    by_name = {t["name"]: t for t in listing.tools}
    assert set(by_name) == {f"{ADAPTER}_mcpaql_{e}" for e in ENDPOINTS}
    for endpoint in ENDPOINTS:
        tool = by_name[f"{ADAPTER}_mcpaql_{endpoint}"]
        title = f"Display — {endpoint.title()}"
        assert "title" not in tool  # display name travels in annotations.title (seed 003)
        ann = tool["annotations"]
        assert ann["title"] == title
        # idempotentHint is sent only when true: MCP's default is false (protocol/surface.py)
        assert (ann["readOnlyHint"], ann["destructiveHint"], ann.get("idempotentHint", False)) == HINTS[endpoint]
        assert ("idempotentHint" in ann) is HINTS[endpoint][2]
        assert ann["openWorldHint"] is False


def test_descriptions_advertise_introspect_and_operations(listing: Listing) -> None:
    for tool in listing.tools:
        endpoint = tool["name"].rsplit("_", 1)[1]
        desc = tool["description"]
        assert "introspect" in desc  # MCPI §7.1 #1: the bootstrap problem
        assert "Supported operations: " + " ".join(OPS[endpoint]) in desc


def test_input_schema_base_shape(listing: Listing) -> None:
    for tool in listing.tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert schema["required"] == ["operation"]
        assert schema["properties"]["operation"]["type"] == "string"
        assert schema["properties"]["params"]["type"] == "object"


def test_server_identity_and_instructions(listing: Listing) -> None:
    assert (listing.server_name, listing.server_version) == (ADAPTER, "1.2.3")
    assert "introspect" in (listing.instructions or "")
