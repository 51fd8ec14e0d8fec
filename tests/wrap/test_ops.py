"""Operation specs from upstream tools, result mapping and error mapping (REQ-CLS-005, REQ-ERR-007)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from wrap_helpers import FIXTURES, fixture_tools, new_ctx

from mcpaql import tokens
from mcpaql.adapters.upstream.ops import code_for_message, data_content, result_data, spec_from_tool
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.errors import MCPAQLError
from mcpaql.protocol.registry import NAME_RE, Registry

ALL = sorted(p.name.removesuffix(".tools-list.json") for p in FIXTURES.glob("*.tools-list.json"))
calls: list[tuple[str, dict[str, Any]]] = []


async def echo(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    calls.append((tool, args))
    return {"content": [{"type": "text", "text": json.dumps({"tool": tool, "arguments": args})}]}


def engine_for(fixture: str) -> Engine:
    reg = Registry(fixture.replace(".", "-"))
    for t in fixture_tools(fixture):
        reg.add(spec_from_tool(t, echo))
    return Engine(reg, Config())


@pytest.mark.parametrize("fixture", ALL)
def test_every_tool_becomes_a_valid_operation(fixture: str) -> None:
    eng = engine_for(fixture)
    tools = fixture_tools(fixture)
    ops = {op.origin: op for op in eng.registry.operations if op.origin}
    assert set(ops) == {t["name"] for t in tools}
    for t in tools:
        op = ops[t["name"]]
        assert NAME_RE.match(op.name)
        props = t["inputSchema"].get("properties") or {}
        assert [p.target for p in op.params] == list(props)
        assert {p.target for p in op.params if p.required} == set(t["inputSchema"].get("required") or [])
        for p in op.params:
            assert NAME_RE.match(p.name)
            assert (p.map_to is None) == (p.name == p.target)


@pytest.mark.parametrize("fixture", ALL)
def test_detail_and_types_show_nested_shapes(fixture: str) -> None:
    eng = engine_for(fixture)
    ctx = new_ctx()
    types = {t.name: t for t in eng.registry.types}
    for op in eng.registry.operations:
        if op.name == "introspect":
            continue
        for p in op.params:
            s = p.schema
            if s.get("type") == "object" and s.get("properties"):
                assert s["x-mcpaql-type"] in types  # the nested object is listed by `introspect types`
    assert ctx is not None


def test_detail_never_hides_parameters_and_is_compact() -> None:
    """The detail has exactly the upstream parameters; tokens are reported by bench_tokens.py."""
    eng = engine_for("github-mcp-all")
    for t in fixture_tools("github-mcp-all"):
        d = eng.introspector.run("operations", t["name"], "s")["operation"]
        assert [p["name"] for p in d["parameters"]] == [p.name for p in eng.registry.get(t["name"]).params]
        assert "icons" not in json.dumps(d)
        # Never larger than the tool definition the upstream actually sends (icons included).
        assert tokens.count_json(d) <= tokens.count_json(t) or "icons" not in t


@pytest.mark.anyio
async def test_map_to_is_applied_on_every_call() -> None:
    eng = engine_for("server-filesystem")
    calls.clear()
    env = await eng.execute({"operation": "directory_tree", "params": {"path": "/x", "exclude_patterns": ["*.pyc"]}}, new_ctx())
    assert env["success"], env
    assert calls[-1] == ("directory_tree", {"path": "/x", "excludePatterns": ["*.pyc"]})
    # the upstream spelling is accepted too and normalised
    env = await eng.execute({"operation": "edit_file", "params": {"path": "/x", "edits": [], "dryRun": True}}, new_ctx())
    assert env["success"], env
    assert calls[-1][1] == {"path": "/x", "edits": [], "dryRun": True}


def test_result_data_shapes() -> None:
    assert result_data({"content": [{"type": "text", "text": "hi"}]}) == "hi"
    assert result_data({"content": []}) is None
    sc = {"entities": [{"name": "a"}]}
    assert result_data({"content": [{"type": "text", "text": json.dumps(sc["entities"])}], "structuredContent": sc}) == sc
    assert result_data({"content": [{"type": "text", "text": json.dumps(sc)}], "structuredContent": sc}) == sc
    img = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    mixed = {"content": [{"type": "text", "text": "x"}, img]}
    assert result_data(mixed) == mixed
    assert data_content(result_data(mixed)) == (mixed["content"], None)
    res = {"content": [{"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}], "_meta": {"k": 1}}
    assert result_data(res) == res
    other = {"content": [{"type": "text", "text": "summary"}], "structuredContent": {"a": 1}}
    assert result_data(other) == other


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ("ENOENT: no such file or directory, open '/tmp/x'", "NOT_FOUND_RESOURCE"),
        ("Access denied - path outside allowed directories: /etc", "PERMISSION_DENIED"),
        ("GET https://api.github.com/repos/a/b: 404 Not Found []", "NOT_FOUND_RESOURCE"),
        ("failed: 401 Bad credentials", "PERMISSION_DENIED"),
        ("Entity with name a already exists", "CONFLICT_ALREADY_EXISTS"),
        ("API rate limit exceeded for user", "RATE_LIMIT_EXCEEDED"),
        ("Invalid arguments for tool read_file", "VALIDATION_INVALID_TYPE"),
        ("missing required parameter: owner", "VALIDATION_MISSING_PARAM"),
        ("something exploded", "INTERNAL_ERROR"),
    ],
)
def test_error_messages_map_to_codes(message: str, code: str) -> None:
    assert code_for_message(message) == code


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "VALIDATION_INVALID_TYPE"),
        (422, "VALIDATION_INVALID_TYPE"),
        (401, "PERMISSION_DENIED"),
        (403, "PERMISSION_DENIED"),
        (404, "NOT_FOUND_RESOURCE"),
        (409, "CONFLICT_ALREADY_EXISTS"),
        (429, "RATE_LIMIT_EXCEEDED"),
        (502, "INTERNAL_ERROR"),
        (418, "VALIDATION_INVALID_TYPE"),
    ],
)
def test_req_err_007_status_table(status: int, code: str) -> None:
    assert code_for_message("whatever", status) == code


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (
            'HTTP 422: {"message": "Validation Failed", "errors": [{"field": "title", "code": "missing_field"}], '
            '"detail": "title is required"}',
            "VALIDATION_MISSING_PARAM",
        ),
        ("HTTP 400: missing required parameter 'owner'", "VALIDATION_MISSING_PARAM"),
        ("HTTP 422: state must be one of open, closed", "VALIDATION_INVALID_TYPE"),
        ("HTTP 400: Bad Request", "VALIDATION_INVALID_TYPE"),
    ],
)
def test_req_err_008_body_decides_between_missing_and_invalid(body: str, code: str) -> None:
    status = int(body[5:8])
    assert code_for_message(body, status) == code


def test_is_error_results_raise() -> None:
    with pytest.raises(MCPAQLError) as e:
        result_data({"content": [{"type": "text", "text": "Unknown entity 'x' not found"}], "isError": True}, "open_nodes")
    assert e.value.code == "NOT_FOUND_RESOURCE" and "open_nodes" in e.value.message


def test_select_tools_names_collisions_and_reserved() -> None:
    from mcpaql.adapters.upstream.wrap import select_tools

    a = [{"name": "get-env"}, {"name": "get_env"}, {"name": "introspect"}, {"name": "list_things"}]
    b = [{"name": "list_things", "annotations": {"readOnlyHint": True}}, {"name": "only_b"}]
    picked = {(up, t["name"]): op for up, t, op, _ in select_tools({"a": a, "b": b})}
    assert picked[("a", "get-env")] == "get_env" and picked[("a", "get_env")] == "get_env_2"
    assert picked[("a", "introspect")] == "a_introspect"
    assert picked[("a", "list_things")] == "a_list_things" and picked[("b", "list_things")] == "b_list_things"
    assert picked[("b", "only_b")] == "only_b"
    only = select_tools({"a": a, "b": b}, include=["b:*"])
    assert {t["name"] for _, t, _, _ in only} == {"list_things", "only_b"}


def test_upstream_spec_parse() -> None:
    from mcpaql.adapters.upstream.runtime import UpstreamSpec

    s = UpstreamSpec.parse("fs=npx -y @modelcontextprotocol/server-filesystem '/tmp/my notes'")
    assert (s.name, s.command, s.args) == ("fs", "npx", ("-y", "@modelcontextprotocol/server-filesystem", "/tmp/my notes"))
    s = UpstreamSpec.parse("https://api.githubcopilot.com/mcp/")
    assert s.url and s.name == "githubcopilot" and s.command is None
    s = UpstreamSpec.parse("uvx mcp-server-git")
    assert s.name == "git"
