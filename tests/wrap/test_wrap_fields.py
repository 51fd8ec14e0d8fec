"""Field selection on wrapped READ operations (REQ-FSEL-002/003/011/012, CQ §5, Part F #16).

Real servers (server-memory, server-everything) behind the wrapper, plus stub upstreams for
the result shapes the real ones do not produce (a top-level JSON array, several text blocks,
an upstream tool that has its own ``fields`` parameter).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrap_helpers import fixture_tools, new_ctx

from mcpaql.adapters.upstream.fields import DESCRIPTION
from mcpaql.adapters.upstream.ops import result_data
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import build_registry, wrap
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine

pytestmark = pytest.mark.anyio
NODE_BIN = Path(__file__).resolve().parents[2] / ".cache-upstreams" / "node_modules" / ".bin"


def _bin(name: str) -> str:
    path = NODE_BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run tests/wrap/install_upstreams.sh")
    return str(path)


async def run(eng: Engine, op: str, **params: Any) -> dict[str, Any]:
    return await eng.execute({"operation": op, "params": params}, new_ctx())


def ok(env: dict[str, Any]) -> Any:
    assert env["success"] is True, env
    return env["data"]


def err(env: dict[str, Any]) -> dict[str, Any]:
    assert env["success"] is False, env
    return env["error"]


# ---- real server-memory ------------------------------------------------------------------------

GRAPH = {
    "entities": [
        {"name": "ada", "entityType": "person", "observations": ["math", "poetry"]},
        {"name": "bab", "entityType": "machine", "observations": []},
    ],
    "relations": [{"from": "ada", "to": "bab", "relationType": "designed"}],
}


@pytest.mark.upstream
async def test_memory_read_graph_fields(tmp_path: Path) -> None:
    spec = UpstreamSpec.from_argv(
        [_bin("mcp-server-memory")], name="memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    )
    async with wrap(spec) as w:
        eng = w.engine
        ok(await run(eng, "create_entities", entities=GRAPH["entities"]))
        ok(await run(eng, "create_relations", relations=GRAPH["relations"]))

        # Without `fields`: exactly the result as before (what result_data makes of the upstream's).
        raw = await w.upstreams["memory"].call("read_graph", {}, new_ctx())
        assert ok(await run(eng, "read_graph")) == result_data(raw, "read_graph") == GRAPH

        # Dotted paths into arrays of objects, applied to each item; unselected branches are dropped.
        assert ok(await run(eng, "read_graph", fields=["entities.name"])) == {"entities": [{"name": "ada"}, {"name": "bab"}]}
        assert ok(await run(eng, "read_graph", fields=["entities.entityType", "relations.to"])) == {
            "entities": [{"entityType": "person"}, {"entityType": "machine"}],
            "relations": [{"to": "bab"}],
        }
        assert ok(await run(eng, "read_graph", fields=["relations"])) == {"relations": GRAPH["relations"]}

        # Presets: full = everything; standard = scalar fields; minimal = id/name-like fields
        # (one level down here: the graph object holds only arrays).
        assert ok(await run(eng, "read_graph", fields="full")) == GRAPH
        assert ok(await run(eng, "read_graph", fields="standard")) == {
            "entities": [{"name": "ada", "entityType": "person"}, {"name": "bab", "entityType": "machine"}],
            "relations": [{"from": "ada", "to": "bab", "relationType": "designed"}],
        }
        assert ok(await run(eng, "read_graph", fields="minimal")) == {"entities": [{"name": "ada"}, {"name": "bab"}]}

        # Other READ operations too (open_nodes/search_nodes have required params of their own).
        assert ok(await run(eng, "open_nodes", names=["ada"], fields=["entities.observations"])) == {
            "entities": [{"observations": ["math", "poetry"]}]
        }
        assert ok(await run(eng, "search_nodes", query="machine", fields=["entities.name"])) == {"entities": [{"name": "bab"}]}

        # Unknown fields are rejected, listing the valid ones (outputSchema + result), never dropped silently.
        e = err(await run(eng, "read_graph", fields=["entities.nme"]))
        assert e["code"] == "VALIDATION_INVALID_VALUE"
        assert e["details"]["unknown_fields"] == ["entities.nme"]
        assert {"entities.name", "entities.entityType", "relations.relationType"} <= set(e["details"]["valid_fields"])
        assert "entities.name" in e["message"]
        # Validated like any other parameter: preset names and path syntax.
        assert err(await run(eng, "read_graph", fields="tiny"))["details"]["constraint"] == "enum"
        assert err(await run(eng, "read_graph", fields=["bad path"]))["code"] == "VALIDATION_INVALID_VALUE"
        assert err(await run(eng, "read_graph", fields=[]))["code"] == "VALIDATION_INVALID_VALUE"
        assert err(await run(eng, "read_graph", fields=3))["code"] == "VALIDATION_INVALID_TYPE"

        # Introspection: READ operations document `fields`; other categories do not.
        for op in eng.operations:
            if op.name == "introspect":
                continue
            params = eng.introspector.run("operations", op.name, "s")["operation"]["parameters"]
            fields = [p for p in params if p["name"] == "fields"]
            if op.category.value == "READ":
                assert fields == [{"name": "fields", "type": "string | string[]", "required": False, "description": DESCRIPTION}]
            else:
                assert fields == [], op.name
        assert eng.capabilities["field_selection"] is True
        proto = ok(await run(eng, "introspect", query="operations"))["_protocol"]
        assert proto["capabilities"]["field_selection"] is True and proto["conformance"] == "level-2"

        # `fields` is never forwarded: the upstream still sees only its own arguments.
        assert ok(await run(eng, "read_graph", fields=["entities.name"])) == {"entities": [{"name": "ada"}, {"name": "bab"}]}


@pytest.mark.upstream
async def test_everything_non_json_results_are_refused_structured_ones_projected() -> None:
    async with wrap(UpstreamSpec.from_argv([_bin("mcp-server-everything")], name="everything")) as w:
        eng = w.engine
        assert ok(await run(eng, "echo", message="hi")) == "Echo: hi"  # unchanged without fields
        for op, params, got in [
            ("echo", {"message": "hi"}, "plain text"),
            ("get_tiny_image", {}, "image content"),
            ("get_sum", {"a": 1, "b": 2}, "plain text"),
        ]:
            e = err(await run(eng, op, **params, fields=["x"]))
            assert e["code"] == "VALIDATION_INVALID_VALUE"
            assert e["details"] == {"param_name": "fields", "constraint": "json_result"}
            assert "needs a JSON result" in e["message"] and got in e["message"], e["message"]
        # Structured content is selectable.
        assert ok(await run(eng, "get_structured_content", location="Chicago", fields=["humidity"])).keys() == {"humidity"}


# ---- stub upstreams: shapes the real servers do not produce ------------------------------------

TOOLS = [
    {
        "name": "list_items",
        "description": "List items",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "get_report",
        "description": "Get a report",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {"fields": {"type": "string", "description": "CSV columns"}}},
    },
    {
        "name": "get_typed",
        "description": "Get a typed record",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "note": {"type": "string"},
                "meta": {"type": "object", "properties": {"etag": {"type": "string"}}},
            },
        },
    },
    {
        "name": "create_item",
        "description": "Create an item",
        "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
]
ITEMS = [
    {"id": 1, "name": "a", "owner": {"login": "x", "id": 7}, "labels": [{"name": "bug", "color": "red"}], "body": "…"},
    {"id": 2, "name": "b", "owner": {"login": "y", "id": 8}, "labels": [], "draft": True},
]


def stub_engine(results: dict[str, dict[str, Any]], seen: list[tuple[str, dict[str, Any]]]) -> Engine:
    async def call(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        seen.append((tool, dict(args)))
        return results[tool]

    return Engine(build_registry("stub", {"stub": TOOLS}, lambda up: call), Config(mode="semantic"))


def text(value: Any) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value if isinstance(value, str) else json.dumps(value)}]}


async def test_array_results_are_projected_item_by_item() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    eng = stub_engine({"list_items": text(ITEMS)}, seen)
    assert ok(await run(eng, "list_items")) == json.dumps(ITEMS)  # unchanged: the text as sent
    assert ok(await run(eng, "list_items", fields=["name", "owner.login", "labels.name"])) == [
        {"name": "a", "owner": {"login": "x"}, "labels": [{"name": "bug"}]},
        {"name": "b", "owner": {"login": "y"}, "labels": []},
    ]
    # A valid field some items lack is omitted from those items (REQ-FSEL-012).
    assert ok(await run(eng, "list_items", fields=["id", "draft"])) == [{"id": 1}, {"id": 2, "draft": True}]
    assert ok(await run(eng, "list_items", fields="minimal")) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert ok(await run(eng, "list_items", fields="standard")) == [
        {"id": 1, "name": "a", "body": "…"},
        {"id": 2, "name": "b", "draft": True},
    ]
    assert ok(await run(eng, "list_items", fields="full")) == ITEMS
    e = err(await run(eng, "list_items", fields=["owner.name"]))
    assert e["details"]["unknown_fields"] == ["owner.name"] and "owner.login" in e["details"]["valid_fields"]
    assert all(args == {} for _, args in seen)  # `fields` never reaches the upstream


async def test_result_shapes() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    results = {"list_items": text(ITEMS)}
    eng = stub_engine(results, seen)
    # Several text blocks, each a JSON object → an array of them.
    results["list_items"] = {"content": [{"type": "text", "text": json.dumps(i)} for i in ITEMS]}
    assert ok(await run(eng, "list_items", fields=["id"])) == [{"id": 1}, {"id": 2}]
    # Text and structured content that say different things: `data` holds both, so `fields` paths
    # start where `data` does — selection and validation agree on it.
    both = {"content": [{"type": "text", "text": "two items"}], "structuredContent": {"items": ITEMS}}
    results["list_items"] = both
    assert ok(await run(eng, "list_items")) == both
    assert ok(await run(eng, "list_items", fields=["structuredContent.items.id"])) == {
        "structuredContent": {"items": [{"id": 1}, {"id": 2}]}
    }
    assert ok(await run(eng, "list_items", fields=["content.text", "structuredContent.items.name"])) == {
        "content": [{"text": "two items"}],
        "structuredContent": {"items": [{"name": "a"}, {"name": "b"}]},
    }
    e = err(await run(eng, "list_items", fields=["items.id"]))  # relative to the structured part: not what data holds
    assert e["details"]["unknown_fields"] == ["items.id"] and "structuredContent.items.id" in e["details"]["valid_fields"]
    # Structured content that only repeats the text: `data` is the structured object, paths start there.
    results["list_items"] = {
        "content": [{"type": "text", "text": json.dumps({"items": ITEMS})}],
        "structuredContent": {"items": ITEMS},
    }
    assert ok(await run(eng, "list_items", fields=["items.id"])) == {"items": [{"id": 1}, {"id": 2}]}
    assert err(await run(eng, "list_items", fields=["structuredContent.items.id"]))["code"] == "VALIDATION_INVALID_VALUE"
    # An empty array: nothing to check names against, nothing to select.
    results["list_items"] = text([])
    assert ok(await run(eng, "list_items", fields=["anything"])) == []
    # JSON that is not an object or an array of objects, and non-JSON text, are refused.
    for bad, got in [
        (text("42"), "a JSON int"),
        (text(["a", "b"]), "an array of non-objects"),
        (text("not json"), "plain text"),
        ({"content": []}, "an empty result"),
    ]:
        results["list_items"] = bad
        e = err(await run(eng, "list_items", fields=["id"]))
        assert e["code"] == "VALIDATION_INVALID_VALUE" and e["details"]["constraint"] == "json_result", e
        assert got in e["message"], e["message"]
    # Upstream errors keep their mapped codes.
    results["list_items"] = {"content": [{"type": "text", "text": "not found"}], "isError": True}
    assert err(await run(eng, "list_items", fields=["id"]))["code"] == "NOT_FOUND_RESOURCE"


async def test_output_schema_fields_are_valid_even_when_absent() -> None:
    eng = stub_engine({"get_typed": text({"id": "r1", "note": "n"})}, [])
    assert ok(await run(eng, "get_typed", fields=["id", "meta.etag"])) == {"id": "r1"}
    e = err(await run(eng, "get_typed", fields=["etag"]))
    assert e["details"]["valid_fields"] == ["id", "note", "meta.etag"]
    # With a text summary beside the structured content, the schema's fields sit under structuredContent.
    eng = stub_engine({"get_typed": {"content": [{"type": "text", "text": "record r1"}], "structuredContent": {"id": "r1"}}}, [])
    assert ok(await run(eng, "get_typed", fields=["structuredContent.meta.etag", "structuredContent.id"])) == {
        "structuredContent": {"id": "r1"}
    }
    e = err(await run(eng, "get_typed", fields=["meta.etag"]))
    assert {"structuredContent.id", "structuredContent.note", "structuredContent.meta.etag", "content.text"} <= set(
        e["details"]["valid_fields"]
    )


async def test_an_upstream_fields_parameter_is_left_alone() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    eng = stub_engine({"get_report": text("a,b\n1,2")}, seen)
    op = eng.registry.get("get_report")
    assert [p.name for p in op.params] == ["fields"] and op.params[0].schema["type"] == "string"
    assert "field_selection" not in op.extensions
    assert ok(await run(eng, "get_report", fields="a,b")) == "a,b\n1,2"
    assert seen == [("get_report", {"fields": "a,b"})]  # forwarded to the upstream as its own parameter
    assert not any(p.name == "fields" for p in eng.registry.get("create_item").params)


def test_capability_follows_the_served_operations() -> None:
    async def never(tool: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        raise AssertionError

    write_only = [t for t in TOOLS if t["name"] == "create_item"]
    assert Engine(build_registry("w", {"w": write_only}, lambda up: never), Config()).capabilities["field_selection"] is False
    github = Engine(build_registry("github", {"github": fixture_tools("github-mcp-all")}, lambda up: never), Config())
    assert github.capabilities["field_selection"] is True
    reads = [op for op in github.operations if op.category.value == "READ" and op.name != "introspect"]
    assert reads and all(any(p.name == "fields" for p in op.params) for op in reads)
    # GitHub's projects_list has its own `fields` (project field IDs): kept as the upstream defines it.
    own = next(p for p in github.registry.get("projects_list").params if p.name == "fields")
    assert own.description != DESCRIPTION and own.schema["type"] == "array"
    assert "field_selection" not in github.registry.get("projects_list").extensions
    assert github.registry.get("get_me").extensions["field_selection"] is True


# ---- property: selection and validation agree on what `data` holds -----------------------------

_KEYS = st.sampled_from(["id", "name", "items", "meta", "owner", "tags", "content", "text", "v"])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=12,
)
_RECORD = st.dictionaries(_KEYS, _JSON, min_size=1, max_size=4)


@settings(max_examples=150, deadline=None)
@given(record=_RECORD, shape=st.sampled_from(["structured", "text", "both", "list"]))
def test_property_every_listed_field_selects_and_full_is_data(record: dict[str, Any], shape: str) -> None:
    from mcpaql.adapters.upstream.fields import json_value, known_paths, select
    from mcpaql.adapters.upstream.ops import result_data

    result = {
        "structured": {"content": [{"type": "text", "text": json.dumps(record)}], "structuredContent": record},
        "text": text(record),
        "both": {"content": [{"type": "text", "text": "summary"}], "structuredContent": record},
        "list": text([record, record]),
    }[shape]
    data = result_data(result, "op")
    value, _ = json_value(data, "op")
    expected = json.loads(data) if isinstance(data, str) else data
    assert select(data, "full", "op") == expected  # `full` is exactly what data holds
    records = [value] if isinstance(value, dict) else value
    for path in known_paths(records):  # every field the error would list is accepted
        select(data, [path], "op")
