"""Each endpoint tool's annotations derive from the operations it actually hosts (issue 10):
a tool hosting any destructive operation (by category, danger or the upstream's own
``destructiveHint``) says ``destructiveHint: true``; read-only and idempotent only if every
hosted operation is; open-world from the wrapped tools' ``openWorldHint``. Real captures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wrap_helpers import fixture_tools

from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.surface import MCP_HINT_DEFAULTS, hint

HERE = Path(__file__).resolve().parent / "surfaces"


async def _never(*_: Any) -> dict[str, Any]:
    raise AssertionError("no calls here")


def _surface(name: str, tools: list[dict[str, Any]], mode: str = "semantic", **kw: Any) -> dict[str, dict[str, Any]]:
    """Each tool's annotations with MCP's defaults filled in (a hint equal to its default is not sent)."""
    eng = Engine(build_registry(name, {name: tools}, lambda _up: _never, **kw), Config().with_(mode=mode))
    return {t.name.removeprefix(f"{name}_mcpaql_"): {**MCP_HINT_DEFAULTS, **t.annotations} for t in eng.tools}


def _capture(name: str) -> list[dict[str, Any]]:
    return json.loads((HERE / f"{name}.tools-list.json").read_text())["tools"]


def test_excel_create_tool_hosting_overwrites_is_destructive() -> None:
    """issue 10 point 1: the wrapped CREATE tool said destructiveHint false while hosting
    write_range ("overwriting them"), copy_range and import_csv, which the upstream marks destructive."""
    ann = _surface("excel", _capture("excel-mcp-server"))
    assert ann["create"]["destructiveHint"] is True and ann["create"]["readOnlyHint"] is False
    assert ann["read"] == {
        "title": ann["read"]["title"],
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }  # every excel tool says openWorldHint false
    assert all(a["openWorldHint"] is False for a in ann.values())


def test_create_tool_of_additive_operations_stays_non_destructive() -> None:
    tools = [t for t in _capture("excel-mcp-server") if t["name"] in ("create_sheet", "add_slicer", "read_range")]
    ann = _surface("excel", tools)
    assert ann["create"]["destructiveHint"] is False and ann["create"]["idempotentHint"] is False


def test_idempotent_only_if_every_hosted_operation_is() -> None:
    tools = [
        {"name": "set_flag", "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}},
        {"name": "set_other", "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}},
    ]
    assert _surface("x", tools)["update"]["idempotentHint"] is True
    tools.append({"name": "set_more", "annotations": {"readOnlyHint": False}})
    assert _surface("x", tools)["update"]["idempotentHint"] is False


@pytest.mark.parametrize("fixture", ["office-word-mcp-server", "notion-mcp-server", "server-pdf", "excel-mcp-server"])
def test_tools_are_conservative_for_what_they_host(fixture: str) -> None:
    tools = _capture(fixture)
    eng = Engine(build_registry("u", {"u": tools}, lambda _up: _never), Config().with_(mode="all"))
    by_origin = {t["name"]: t.get("annotations") or {} for t in tools}
    for tool in eng.tools:
        ops = [eng.registry.get(n) for n in tool.operations if n != "introspect"]
        ups = [by_origin[op.origin] for op in ops if op is not None and op.origin]
        if any(u.get("destructiveHint") is True for u in ups):
            assert tool.annotations["destructiveHint"] is True, tool.name
        if tool.annotations["readOnlyHint"]:
            assert all(op.category.value == "READ" for op in ops if op is not None), tool.name
        assert hint(tool.annotations, "openWorldHint") is any(u.get("openWorldHint", True) for u in ups) or not ups


def test_demo_surfaces_are_unchanged_without_upstream_hints() -> None:
    tools = fixture_tools("server-memory")
    stripped = [{k: v for k, v in t.items() if k != "annotations"} for t in tools]
    ann = _surface("memory", stripped)
    assert ann["read"]["readOnlyHint"] is True and ann["read"]["idempotentHint"] is True
    assert ann["delete"]["destructiveHint"] is True
    assert all(a["openWorldHint"] is True for a in ann.values())  # absent openWorldHint means true, as in MCP
