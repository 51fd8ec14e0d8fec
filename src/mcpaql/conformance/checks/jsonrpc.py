"""JSON-RPC probes: calls the MCP layer must refuse (unknown tool, unknown operation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..suite import Suite


async def jsonrpc_probes(suite: Suite) -> None:
    tool = suite.intro_tool or ""
    for args in (
        {},
        {"operation": 42},
        {"operation": "introspect", "params": "not-an-object"},
        {"operation": "introspect", "params": {"query": "mcpaql_conformance_bad_query"}},
    ):
        await suite.call(tool, args)
