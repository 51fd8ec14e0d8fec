"""Offline o200k token counting (tiktoken-compatible ``bpe_openai``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpaql import tokens

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces"


def test_known_counts() -> None:
    assert tokens.count_text("") == 0
    assert tokens.count_text("hello world") == 2
    assert tokens.count_json({"a": 1}) == tokens.count_text('{"a":1}')


def test_special_token_text_is_ordinary() -> None:
    assert tokens.count_text("<|endoftext|>") > 1


def test_model_view_drops_icons_and_meta() -> None:
    tool = {
        "name": "x",
        "description": "d",
        "inputSchema": {"type": "object"},
        "icons": [{"src": "data:..."}],
        "_meta": {"k": 1},
        "execution": {"taskSupport": "optional"},
        "annotations": {"title": "X"},
    }
    assert set(tokens.model_view(tool)) == {"name", "description", "inputSchema", "annotations"}


def test_tools_list_forms_agree() -> None:
    data = json.loads((FIXTURES / "github-mcp-all.tools-list.json").read_text())
    n = tokens.count_tools(data)
    assert n == tokens.count_tools({"tools": data})
    assert 10_000 < n < 60_000  # icons would add far more than this
    per = tokens.per_tool(data)
    assert len(per) == 89 and all(v > 0 for v in per.values())
    assert abs(sum(per.values()) - n) < 200  # only the array brackets and commas differ


# ---- chunked counting: surfaces past the tokenizer's input limit -------------------------------

# Words that start and end with a letter: every space between them is a safe place to cut.
WORDS = st.from_regex(r"[A-Za-z][A-Za-z0-9{}\":,./_ -]{0,8}[A-Za-z]|[A-Za-z]", fullmatch=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=80), st.integers(20, 200))
def test_chunked_count_equals_the_whole_count(words: list[str], chunk: int) -> None:
    text = " ".join(words)
    assert tokens.count_text(text, chunk=chunk) == tokens.count_text(text, chunk=10**9)
    assert "".join(tokens.chunks(text, chunk)) == text
    assert all(len(piece) <= chunk for piece in tokens.chunks(text, chunk))


def test_text_past_the_tokenizer_limit_is_counted() -> None:
    """bpe_openai refuses a million characters at once ("Input too long to encode safely")."""
    tool = {"name": "t", "description": "Lists the repositories of a user. " * 40, "inputSchema": {"type": "object"}}
    surface = [tool] * 2000  # ~2.9 MB of JSON
    total = tokens.count_tools(surface)
    text = tokens.dumps([tokens.model_view(t) for t in surface])
    assert len(text) > 1_000_000
    assert total == tokens.count_text(text, chunk=199_999) == tokens.count_text(text, chunk=30_000)
    assert total > 2000 * tokens.count_json(tool) * 0.9


def test_tokens_fixture_with_a_string_enum_or_object_parameter(tmp_path: Path) -> None:
    """``mcpaql tokens --fixture`` once stopped with SCHEMA_DUPLICATE_NAME on this shape."""
    source = {
        "anyOf": [
            {"type": "string", "enum": ["gh-pages", "master"]},
            {"type": "object", "properties": {"branch": {"type": "string"}}},
        ]
    }
    fixture = tmp_path / "pages.tools-list.json"
    fixture.write_text(
        json.dumps(
            {
                "tools": [
                    {
                        "name": "update_pages",
                        "description": "Update the Pages site",
                        "inputSchema": {"type": "object", "properties": {"source": source}},
                    },
                    {
                        "name": "create_pages",
                        "description": "Create the Pages site",
                        "inputSchema": {"type": "object", "properties": {"source": source}},
                    },
                ]
            }
        )
    )
    mcpaql = str(Path(sys.executable).with_name("mcpaql"))
    done = subprocess.run([mcpaql, "tokens", "--fixture", str(fixture), "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["operations"] == 3  # two tools + introspect
