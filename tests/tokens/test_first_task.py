"""Issue 14's targets, as deterministic o200k counts (not timings): the context a model reads
before its first ``create_pull_request`` on GitHub-89 — tools/list, the server's instructions
and one detail call (request and response) — stays ≤ 1,000 tokens in semantic mode and ≤ 800 in
single mode, with every operation still named exactly (bench/bench_tokens.py prints the figures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpaql import Config, tokens
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.envelope import success
from mcpaql.protocol.listing import expand_names
from mcpaql.protocol.surface import server_instructions

GITHUB_89 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces" / "github-mcp-all.tools-list.json"
TARGETS = {"semantic": 1000, "single": 800}


async def _never(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    raise AssertionError("no calls here")


@pytest.mark.parametrize("mode", list(TARGETS))
def test_context_before_the_first_create_pull_request(mode: str) -> None:
    data = json.loads(GITHUB_89.read_text())
    listed = data["tools"] if isinstance(data, dict) else data
    eng = Engine(build_registry("github", {"github": listed}, lambda up: _never), Config(mode=mode))
    detail = eng.introspector.run("operations", "create_pull_request", "s")
    request = {"operation": "introspect", "params": {"query": "operations", "name": "create_pull_request"}}
    total = (
        tokens.count_tools(eng.tools)
        + tokens.count_text(server_instructions(eng.tools, eng.introspect_tool))
        + tokens.count_json(request)
        + tokens.count_json(success(detail))
    )
    assert total <= TARGETS[mode]
    named = set(expand_names(" ".join(t.description for t in eng.tools)))
    assert {op.name for op in eng.operations} <= named
    assert detail["operation"]["mcpTool"] in {t.name for t in eng.tools}
