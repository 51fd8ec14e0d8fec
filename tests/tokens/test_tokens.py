"""Offline o200k token counting (tiktoken-compatible ``bpe_openai``)."""

from __future__ import annotations

import json
from pathlib import Path

from mcpaql import tokens

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"


def test_known_counts() -> None:
    assert tokens.count_text("") == 0
    assert tokens.count_text("hello world") == 2
    assert tokens.count_json({"a": 1}) == tokens.count_text('{"a":1}')


def test_special_token_text_is_ordinary() -> None:
    assert tokens.count_text("<|endoftext|>") > 1


def test_model_view_drops_icons_and_meta() -> None:
    tool = {"name": "x", "description": "d", "inputSchema": {"type": "object"}, "icons": [{"src": "data:..."}],
            "_meta": {"k": 1}, "execution": {"taskSupport": "optional"}, "annotations": {"title": "X"}}
    assert set(tokens.model_view(tool)) == {"name", "description", "inputSchema", "annotations"}


def test_tools_list_forms_agree() -> None:
    data = json.loads((FIXTURES / "github-mcp-all.tools-list.json").read_text())
    n = tokens.count_tools(data)
    assert n == tokens.count_tools({"tools": data})
    assert 10_000 < n < 60_000  # icons would add far more than this
    per = tokens.per_tool(data)
    assert len(per) == 89 and all(v > 0 for v in per.values())
    assert abs(sum(per.values()) - n) < 200  # only the array brackets and commas differ
