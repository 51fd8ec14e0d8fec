"""Every shape JSON Schema allows becomes parameters and named types (mcpaql.protocol.schema):
hypothesis generates schemas with nested combinators, ``$ref`` chains and recursion; building a
registry never raises (a schema past the budget skips its one operation), type names are
deterministic and distinct per distinct shape, and validation agrees with ``jsonschema`` on the
supported subset. Plus the shapes that once stopped a whole server, and the expansion budget."""

from __future__ import annotations

import json
import logging
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpaql.adapters.upstream.ops import params_from_schema
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.errors import MCPAQLError
from mcpaql.protocol.schema import (
    MAX_DEPTH,
    RECURSIVE_KEY,
    TYPE_NAME_KEY,
    SchemaContext,
    SchemaTooComplex,
    _fingerprint,
    resolve,
    walk_named,
)
from mcpaql.protocol.validate import compile_schema

KEYS = ["a", "b", "source", "x1", "kind"]
DEF_NAMES = ["Pet", "Owner", "Source", "node", "Item"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---- strategies ------------------------------------------------------------------------------

scalar_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 6),
    st.sampled_from([0.5, 2.0, -1.5]),
    st.sampled_from(["a", "b", "x", "", "gh-pages"]),
)
json_values = st.recursive(
    scalar_values,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(KEYS), c, max_size=3)),
    max_leaves=8,
)

leaf = st.one_of(
    st.sampled_from(["string", "integer", "number", "boolean", "null", "array", "object"]).map(lambda t: {"type": t}),
    st.lists(scalar_values, min_size=1, max_size=3, unique_by=json.dumps).map(lambda e: {"enum": e}),
    st.lists(st.sampled_from(["gh-pages", "master", "main"]), min_size=1, max_size=3, unique=True).map(
        lambda e: {"type": "string", "enum": e}
    ),
    scalar_values.map(lambda c: {"const": c}),
    st.just({"type": "string", "minLength": 1, "maxLength": 3}),
    st.just({"type": "integer", "minimum": 0, "maximum": 5}),
    st.just({"type": "number", "exclusiveMinimum": 0}),
    st.just({"type": "string", "pattern": "^[ab]"}),
    st.just({}),
)


def _object(props: dict[str, Any], req: list[str], addl: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if req:
        out["required"] = [r for r in req if r in props]
    if addl is not None:
        out["additionalProperties"] = addl
    return out


def composite(kids: st.SearchStrategy[Any], refs: st.SearchStrategy[dict[str, Any]], *, wide: bool) -> Any:
    options = [
        st.builds(
            _object,
            st.dictionaries(st.sampled_from(KEYS), kids, min_size=1, max_size=3),
            st.lists(st.sampled_from(KEYS), max_size=2),
            st.one_of(st.none(), st.booleans(), kids),
        ),
        kids.map(lambda k: {"type": "array", "items": k}),
        st.lists(kids, min_size=1, max_size=3).map(lambda v: {"anyOf": v}),
        st.lists(kids, min_size=1, max_size=2).map(lambda v: {"allOf": v}),
        kids.map(lambda k: {"type": "object", "patternProperties": {"^x": k}}),
        refs,
    ]
    if wide:  # shapes outside the subset the validator mirrors exactly (it is laxer there)
        options += [
            st.lists(kids, min_size=1, max_size=3).map(lambda v: {"oneOf": v}),
            st.lists(kids, min_size=1, max_size=2).map(lambda v: {"type": "array", "prefixItems": v}),
            st.booleans(),
            kids.map(lambda k: {"not": k}),
        ]
    return st.one_of(*options)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/$defs/{name}"}


@st.composite
def documents(draw: st.DrawFn, *, wide: bool, recursive: bool) -> dict[str, Any]:
    """A root schema with ``$defs``. ``recursive``: a definition may refer to any definition
    (itself included); otherwise only to earlier ones (references form a DAG)."""
    n = draw(st.integers(0, len(DEF_NAMES)))
    names = DEF_NAMES[:n]
    defs: dict[str, Any] = {}
    for i, name in enumerate(names):
        allowed = names if recursive else names[:i]
        refs = st.sampled_from(allowed).map(_ref) if allowed else leaf
        defs[name] = draw(st.recursive(leaf, lambda k, refs=refs: composite(k, refs, wide=wide), max_leaves=6))
    refs = st.sampled_from(names).map(_ref) if names else leaf
    root = draw(st.recursive(leaf, lambda k: composite(k, refs, wide=wide), max_leaves=10))
    if not isinstance(root, dict):
        root = {}
    return {**root, "$defs": defs} if defs else root


def _input_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """The generated schema as one tool's ``inputSchema`` (parameters ``value`` and ``other``)."""
    out = {
        "type": "object",
        "properties": {"value": {k: v for k, v in doc.items() if k != "$defs"}, "other": doc},
        "required": ["value"],
    }
    if "$defs" in doc:
        out["$defs"] = doc["$defs"]
    return out


def _names(resolved: Any) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    walk_named(resolved, lambda name, node: seen.setdefault(name, set()).add(_fingerprint(node)))
    return seen


# ---- properties ------------------------------------------------------------------------------


@settings(SETTINGS, max_examples=60)
@given(documents(wide=True, recursive=True), documents(wide=True, recursive=True))
def test_building_never_raises_and_names_are_distinct_and_deterministic(doc1: dict[str, Any], doc2: dict[str, Any]) -> None:
    tools = [
        {"name": "first-tool", "inputSchema": _input_schema(doc1)},
        {"name": "second-tool", "inputSchema": _input_schema(doc2)},
        {"name": "third-tool", "inputSchema": _input_schema(doc1)},
    ]
    reg = build_registry("gen", {"gen": tools}, lambda _up: _never)
    again = build_registry("gen", {"gen": tools}, lambda _up: _never)
    assert [t for t in reg.types] == [t for t in again.types]  # deterministic
    assert [o.name for o in reg.operations] == [o.name for o in again.operations]
    eng = Engine(reg, Config().with_(mode="semantic"))  # every parameter compiles
    for op in reg.operations:
        eng.introspector.run("operations", op.name, "s")
    # one name, one shape: across the three tools of one registry
    ctx = SchemaContext()
    shapes: dict[str, set[str]] = {}
    for i, t in enumerate(tools):
        try:
            params, _ = params_from_schema(f"op{i}", t["inputSchema"], ctx)
        except SchemaTooComplex:
            continue
        for p in params:
            for name, fps in _names(p.schema).items():
                shapes.setdefault(name, set()).update(fps)
    assert all(len(fps) == 1 for fps in shapes.values()), shapes


@SETTINGS
@given(documents(wide=False, recursive=False), st.lists(json_values, min_size=1, max_size=6))
def test_validation_agrees_with_jsonschema_on_the_supported_subset(doc: dict[str, Any], values: list[Any]) -> None:
    validator = jsonschema.Draft202012Validator(doc)
    check = compile_schema(resolve(doc, "Root"))
    for value in values:
        assert _accepts(check, value) == validator.is_valid(value), (doc, value)


@SETTINGS
@given(documents(wide=True, recursive=False), st.lists(json_values, min_size=1, max_size=6))
def test_validation_never_rejects_what_jsonschema_accepts(doc: dict[str, Any], values: list[Any]) -> None:
    """oneOf, prefixItems and ``not`` are checked laxly (a value the target API would reject comes
    back as its own validation error), never more strictly. (Recursive documents are built in the
    first test; jsonschema itself cannot evaluate the degenerate ones, ``A: {$ref: A}``.)"""
    validator = jsonschema.Draft202012Validator(doc)
    try:
        check = compile_schema(resolve(doc, "Root"))
    except SchemaTooComplex:
        return
    for value in values:
        if validator.is_valid(value):
            assert _accepts(check, value), (doc, value)


def _accepts(check: Any, value: Any) -> bool:
    try:
        check(value, "value")
    except MCPAQLError:
        return False
    return True


async def _never(*_a: Any) -> dict[str, Any]:  # pragma: no cover - never called
    raise AssertionError


# ---- the shapes that stopped whole servers ---------------------------------------------------

# office-word / GitHub Pages style: a string enum or an object under one parameter name.
PAGES_SOURCE = {
    "anyOf": [
        {"type": "string", "enum": ["gh-pages", "master", "master /docs"], "description": "A branch"},
        {
            "type": "object",
            "properties": {"branch": {"type": "string"}, "path": {"type": "string", "enum": ["/", "/docs"]}},
            "required": ["branch", "path"],
        },
    ]
}


def test_string_enum_or_object_gets_two_type_names() -> None:
    tool = {"name": "update-pages", "inputSchema": {"type": "object", "properties": {"source": PAGES_SOURCE}}}
    reg = build_registry("pages", {"pages": [tool]}, lambda _up: _never)
    types = {t.name: t for t in reg.types}
    assert types["UpdatePagesInputSourceEnum"].kind == "enum"
    assert types["UpdatePagesInputSourceObject"].kind == "object"
    (param,) = reg.get("update_pages").params
    assert param.info()["type"] == "string | UpdatePagesInputSourceObject"
    check = compile_schema(param.schema)
    assert check("gh-pages", "source") == "gh-pages"
    assert check({"branch": "main", "path": "/docs"}, "source")["path"] == "/docs"
    with pytest.raises(MCPAQLError):
        check({"branch": "main"}, "source")


def test_same_name_different_shapes_across_tools_get_numbered_names() -> None:
    a = {
        "name": "a",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/Item"}},
            "$defs": {"Item": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        },
    }
    b = {
        "name": "b",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/Item"}},
            "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"}}}},
        },
    }
    c = {"name": "c", "inputSchema": json.loads(json.dumps(a["inputSchema"]))}  # same shape as a's: same name
    reg = build_registry("t", {"t": [a, b, c]}, lambda _up: _never)
    names = {t.name: [f["name"] for f in t.fields] for t in reg.types}
    assert names == {"Item": ["id"], "Item2": ["sku"]}
    assert [reg.get(n).params[0].info()["type"] for n in ("a", "b", "c")] == ["Item", "Item2", "Item"]


def test_recursive_ref_chain_nullable_const_pattern_and_additional_properties() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "alias": {"$ref": "#/$defs/Alias"},
            "nick": {"type": "string", "nullable": True},
            "kind": {"const": "pet"},
            "labels": {
                "type": "object",
                "patternProperties": {"^x-": {"type": "integer"}},
                "additionalProperties": {"type": "string"},
            },
        },
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            },
            "Alias": {"$ref": "#/$defs/Alias2"},
            "Alias2": {"$ref": "#/$defs/Node"},
        },
    }
    params, types = params_from_schema("grow", schema)
    p = {x.name: x for x in params}
    assert p["tree"].info()["type"] == "Node" and p["alias"].info()["type"] == "Node"
    children = p["tree"].schema["properties"]["children"]["items"]
    assert children[RECURSIVE_KEY] and children[TYPE_NAME_KEY] == "Node"  # the cycle is cut, shown by name
    assert p["nick"].schema["type"] == ["string", "null"]
    assert {t.name for t in types} >= {"Node"}
    check = compile_schema(p["labels"].schema)
    assert check({"x-a": 1, "other": "s"}, "labels") == {"x-a": 1, "other": "s"}
    for bad in ({"x-a": "one"}, {"other": 2}):
        with pytest.raises(MCPAQLError):
            check(bad, "labels")
    with pytest.raises(MCPAQLError):
        compile_schema(p["kind"].schema)("cat", "kind")


def test_fan_out_is_shared_not_expanded() -> None:
    """3 references per level, 12 levels: 3**12 occurrences, 12 distinct shapes resolved once."""
    defs = {f"L{i}": {"type": "object", "properties": {k: {"$ref": f"#/$defs/L{i + 1}"} for k in "abc"}} for i in range(12)}
    defs["L12"] = {"type": "string"}
    ctx = SchemaContext()
    out = resolve({"$ref": "#/$defs/L0", "$defs": defs}, "Root", ctx)
    assert out["properties"]["a"] is out["properties"]["b"]  # one object, referenced three times
    assert ctx.nodes < 100
    check = compile_schema(out)
    assert check({"a": {"b": {}}}, "v") == {"a": {"b": {}}}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 5, 3000])
def test_deep_nesting_is_refused_in_one_line(depth: int) -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        node = {"type": "object", "properties": {"n": node}}
    with pytest.raises(SchemaTooComplex) as e:
        resolve(node, "Deep")
    assert str(e.value) == f"schema nested more than {MAX_DEPTH} levels deep"


def test_a_long_chain_of_distinct_shapes_is_served_and_listed() -> None:
    """200 components each referring to the next: nested only so deep, then shown by name and
    resolved from the top, so every type is listed and the resolved graph stays shallow."""
    defs = {
        f"D{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/D{i + 1}"}, "n": {"type": "integer"}}}
        for i in range(200)
    }
    ctx = SchemaContext()
    params, types = params_from_schema(
        "chain", {"type": "object", "properties": {"head": {"$ref": "#/$defs/D0"}}, "$defs": defs}, ctx
    )
    assert {t.name for t in types} == {f"D{i}" for i in range(200)}
    check = compile_schema(params[0].schema)
    assert check({"next": {"next": {"n": 2}}}, "head") == {"next": {"next": {"n": 2}}}
    with pytest.raises(MCPAQLError):
        check({"next": {"next": {"n": "two"}}}, "head")


def test_size_budget_is_refused() -> None:
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(50)}}
    with pytest.raises(SchemaTooComplex, match="more than 20 schema nodes"):
        resolve(wide, "Wide", SchemaContext(max_nodes=20))


def test_a_tool_past_the_budget_is_skipped_not_the_server(caplog: pytest.LogCaptureFixture) -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(3000):
        deep = {"type": "object", "properties": {"n": deep}}
    tools = [
        {"name": "deep", "inputSchema": {"type": "object", "properties": {"x": deep}}},
        {"name": "fine", "inputSchema": {"type": "object", "properties": {"source": PAGES_SOURCE}}},
    ]
    with caplog.at_level(logging.WARNING, "mcpaql.wrap"):
        reg = build_registry("t", {"t": tools}, lambda _up: _never)
    assert [o.name for o in reg.operations] == ["fine"]
    assert "operation deep skipped: schema nested more than" in caplog.text
