"""Compact flat listings (docs/listings.md): names space separated, a verb shared by several names
in braces (``get_{commit issue}``) where that pays, and a legend wherever braces appear.

The property a model relies on: expanding a description's lists gives back exactly the names the
tool serves — checked on every real captured surface (the spec repository's shared captures,
the wrap captures under tests/wrap/surfaces), the demo, in every mode, and on arbitrary name sets.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpaql import Config, tokens
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.demo import make_adapter
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.listing import BRACE_LEGEND, BRACE_MIN, braces_pay, expand_names, render_names
from mcpaql.protocol.registry import NAME_RE
from mcpaql.protocol.surface import ToolDef

HERE = Path(__file__).resolve().parents[1] / "wrap" / "surfaces"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"
CAPTURES = sorted([*HERE.glob("*.tools-list.json"), *SHARED.glob("*.tools-list.json")])
MODES = ("semantic", "single", "all")
NAMES = st.lists(st.from_regex(NAME_RE, fullmatch=True).filter(lambda n: len(n) <= 30), unique=True, max_size=60)


async def _never(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    raise AssertionError("listing tests never call tools")


def captured(path: Path, mode: str) -> Engine:
    data = json.loads(path.read_text())
    listed = data["tools"] if isinstance(data, dict) else data
    adapter = path.name.split(".")[0].replace("-", "_")
    return Engine(build_registry(adapter, {adapter: listed}, lambda up: _never), Config(mode=mode))


def demo(mode: str) -> Engine:
    with tempfile.TemporaryDirectory() as d:
        return make_adapter(str(Path(d) / "demo.db")).engine(Config(mode=mode))


def list_lines(tool: ToolDef) -> list[str]:
    """A description's operation lists: the ``Supported operations`` line (semantic) or the
    ``- Category: ...`` lines (single), without their headings."""
    return [
        line.split(": ", 1)[1]
        for line in tool.description.splitlines()
        if line.startswith("Supported operations") or (line.startswith("- ") and ": " in line)
    ]


def assert_lists_are_exact(eng: Engine) -> None:
    for tool in eng.tools:
        lines = list_lines(tool)
        names = [n for line in lines for n in expand_names(line)]
        assert sorted(names) == sorted(tool.operations), tool.name  # each served name exactly once, nothing else
        # The legend is said exactly when braces are used, once per description.
        assert tool.description.count(BRACE_LEGEND) == (1 if any("{" in line for line in lines) else 0), tool.name


def test_captures_are_found() -> None:
    assert len(CAPTURES) >= 9, CAPTURES  # the wrap captures, at least; the shared ones on this machine


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_every_real_surface_lists_exactly_its_operations(capture: Path, mode: str) -> None:
    assert_lists_are_exact(captured(capture, mode))


@pytest.mark.parametrize("mode", MODES)
def test_demo_lists_exactly_its_operations(mode: str) -> None:
    assert_lists_are_exact(demo(mode))


def test_github_89_read_tool_uses_braces() -> None:
    path = SHARED / "github-mcp-all.tools-list.json"
    if not path.is_file():
        pytest.skip("the shared GitHub capture is not on this machine")
    read = captured(path, "semantic").tools_by_name["github_mcp_all_mcpaql_read"].description
    assert f"Supported operations ({BRACE_LEGEND}): " in read
    assert " get_{code_scanning_alert commit " in read and " list_{branches " in read


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_braces_are_used_only_where_they_save_tokens(capture: Path) -> None:
    """The estimate behind ``braces_pay`` (a prefix ~1 token, braces 2, the legend 11) against the
    real tokenizer: wherever braces are chosen, the line with its legend is no longer than flat."""
    for mode in ("semantic", "single"):
        for tool in captured(capture, mode).tools:
            if BRACE_LEGEND not in tool.description:
                continue
            flat = tool.description.replace(f" ({BRACE_LEGEND})", "")
            for line in flat.splitlines():
                if "{" in line and "Parameters:" not in line and "Quick start:" not in line:
                    head, names = line.split(": ", 1)
                    flat = flat.replace(line, f"{head}: {' '.join(expand_names(names))}")
            assert tokens.count_text(tool.description) <= tokens.count_text(flat), tool.name


@settings(max_examples=300, deadline=None)
@given(NAMES, st.booleans())
def test_expand_inverts_render_for_any_names(names: list[str], braces: bool) -> None:
    text = render_names(names, braces)
    back = expand_names(text)
    assert sorted(back) == sorted(names) and len(back) == len(names)
    if not braces:
        assert back == names and "{" not in text


@settings(max_examples=200, deadline=None)
@given(NAMES)
def test_braced_groups_keep_order_and_only_join_real_prefixes(names: list[str]) -> None:
    """A brace holds at least ``BRACE_MIN`` names sharing the verb before it, sits at its first
    member's place and keeps its members' order; every other name keeps its place."""
    text = render_names(names, True)
    groups: dict[str, list[str]] = {}
    for m in re.finditer(r"([a-z0-9_]*)\{([^{}]*)\}", text):
        prefix, members = m.group(1), m.group(2).split()
        assert len(members) >= BRACE_MIN and prefix.endswith("_") and prefix.count("_") == 1
        groups[prefix] = [prefix + x for x in members]
    expected: list[str] = []
    for n in names:
        p = n.split("_", 1)[0] + "_"
        if p in groups and n in groups[p]:
            if n == groups[p][0]:
                expected += groups[p]
        else:
            expected.append(n)
    assert expand_names(text) == expected


def test_render_examples() -> None:
    names = ["get_a", "list_x", "get_b", "get_c", "get_d", "introspect", "get_"]
    assert render_names(names, True) == "get_{a b c d} list_x introspect get_"
    assert render_names(names, False) == "get_a list_x get_b get_c get_d introspect get_"
    back = expand_names("get_{a b c d} list_x introspect get_")
    assert back == ["get_a", "get_b", "get_c", "get_d", "list_x", "introspect", "get_"]
    assert not braces_pay([["get_a", "get_b", "get_c", "get_d"]])  # saves one token: not worth a legend
    assert braces_pay([[f"get_{i}" for i in range(20)]])
