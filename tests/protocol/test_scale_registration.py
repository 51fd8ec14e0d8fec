"""Start-up is linear in the number of operations (issue 14): counted, never timed.

Each operation is validated by ``Registry.add`` once while an adapter is defined and once when
an engine is built — for the Python API, a wrapped MCP server's tools and an OpenAPI document;
building an engine never compares operation specs with each other; pydantic ``TypeAdapter``s
and parameter checkers are built once per distinct shape and shared by every operation (and
engine) using it, in caches that stay bounded. Timings are ``bench/bench_scale.py``'s job.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from mcpaql import Adapter, Config
from mcpaql.adapters import python as py_adapter
from mcpaql.adapters.openapi import OpenAPIRuntime, load_document
from mcpaql.adapters.upstream.wrap import build_registry
from mcpaql.protocol import validate
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.operations import OperationSpec
from mcpaql.protocol.registry import Registry

SURFACES = Path(__file__).resolve().parents[1] / "wrap" / "surfaces"


class Item(BaseModel):
    item_id: str
    qty: int = 0


@pytest.fixture
def counts(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Calls of Registry.add and OperationSpec.__eq__, and TypeAdapters built, while it is active."""
    seen = {"add": 0, "eq": 0, "type_adapters": 0}
    add, eq, made = Registry.add, OperationSpec.__eq__, py_adapter.TypeAdapter

    def counting_add(self: Registry, *a: Any, **kw: Any) -> Any:
        seen["add"] += 1
        return add(self, *a, **kw)

    def counting_eq(self: OperationSpec, other: Any) -> Any:
        seen["eq"] += 1
        return eq(self, other)

    class CountingTypeAdapter(made):  # type: ignore[misc,valid-type]
        def __init__(self, *a: Any, **kw: Any) -> None:
            seen["type_adapters"] += 1
            super().__init__(*a, **kw)

    monkeypatch.setattr(Registry, "add", counting_add)
    monkeypatch.setattr(OperationSpec, "__eq__", counting_eq)
    monkeypatch.setattr(py_adapter, "TypeAdapter", CountingTypeAdapter)
    yield seen


def _python_app(n: int, tag: str) -> Adapter:
    """``n`` operations over four parameter shapes; ``tag`` (a ``Literal``) makes the shapes new
    to the process-wide caches, so each test counts its own misses."""
    app = Adapter("scale")
    mark = Literal[tag]  # type: ignore[valid-type]
    shapes: list[tuple[dict[str, Any], Any]] = [
        ({"item_id": str, "limit": int, "mark": mark, "return": dict[str, Any]}, ("a", 10, tag)),
        ({"item": Item, "mark": mark, "return": Item}, (None, tag)),
        ({"names": list[str], "flag": bool, "size": None, "return": list[str]}, (False, 20)),
        ({"x": float, "note": str | None, "return": float}, (None,)),
    ]
    for i in range(n):
        hints, defaults = shapes[i % 4]
        if "size" in hints:  # a new FieldInfo per function, as postponed annotations evaluate it
            hints = {**hints, "size": Annotated[int, Field(ge=1, le=100)]}
        params = [k for k in hints if k != "return"]
        src = f"def f({', '.join(params)}): return {params[0]}"
        scope: dict[str, Any] = {}
        exec(src, scope)  # a plain function with these parameters (annotations set below)
        f = scope["f"]
        f.__annotations__ = dict(hints)
        f.__defaults__ = defaults[len(defaults) - (len(params) - 1) :] if len(params) > 1 else None
        f.__name__ = f"op_{i}"
        f.__doc__ = f"Operation {i}."
        app.operation(f, category=("READ", "CREATE", "UPDATE", "EXECUTE")[i % 4])
    return app


@pytest.mark.parametrize("n", [40, 200])
def test_python_api_registers_each_operation_once(counts: dict[str, int], n: int) -> None:
    app = _python_app(n, f"linear{n}")
    assert counts["add"] == n  # defining: each operation validated once (was n(n+1)/2)
    engine = app.engine(Config())
    assert counts["add"] == 2 * n + 1  # building: once more each, plus introspect
    assert counts["eq"] == 0  # no spec compared with another (was one per served operation each)
    assert len(engine.registry.operations) == n + 1


def test_type_adapters_are_built_once_per_shape_not_per_operation(counts: dict[str, int]) -> None:
    _python_app(8, "fewshapes")
    first = counts["type_adapters"]
    _python_app(200, "fewshapes")
    assert counts["type_adapters"] == first  # the same annotations: every adapter came from the cache
    assert first <= 12  # a handful of annotations (params and returns), not 8 operations' worth each


def test_operations_with_the_same_shape_share_one_adapter_and_one_checker() -> None:
    engine = _python_app(8, "shared").engine(Config())
    a, b = engine.compiled("op_1"), engine.compiled("op_5")  # both take ``item: Item``
    assert a is not None and b is not None
    assert a.params["item"].convert is not None and b.params["item"].convert is not None
    assert a.params["item"].convert.__self__ is b.params["item"].convert.__self__  # type: ignore[attr-defined]
    assert a.checkers["item"] is b.checkers["item"]
    c, d = engine.compiled("op_0"), engine.compiled("op_4")
    assert c is not None and d is not None
    assert c.checkers["item_id"] is d.checkers["item_id"] and c.checkers["limit"] is d.checkers["limit"]
    # and across engines
    other = _python_app(8, "shared").engine(Config()).compiled("op_1")
    assert other is not None and other.checkers["item"] is a.checkers["item"]


def test_shared_checkers_still_validate_per_parameter() -> None:
    """One checker for two parameters of one shape: the error names the parameter it was given."""
    engine = _python_app(8, "errors").engine(Config())
    for op, param in (("op_0", "limit"), ("op_4", "limit")):
        env = engine_call(engine, op, {"item_id": "a", param: "many"})
        assert env["error"]["code"] == "VALIDATION_INVALID_TYPE" and env["error"]["details"]["param_name"] == param


def engine_call(engine: Engine, op: str, params: dict[str, Any]) -> dict[str, Any]:
    import anyio

    from mcpaql.protocol.context import Context
    from mcpaql.protocol.session import Session

    return anyio.run(engine.execute, {"operation": op, "params": params}, Context(session=Session()))


def test_wrapped_tools_register_each_once(counts: dict[str, int]) -> None:
    """A real capture: office-word-mcp-server's 54 tools."""
    tools = json.loads((SURFACES / "office-word-mcp-server.tools-list.json").read_text())
    tools = tools["tools"] if isinstance(tools, dict) else tools

    async def call(*_: Any, **__: Any) -> dict[str, Any]:
        return {"content": []}

    reg = build_registry("gh", {"gh": tools}, lambda _up: call)
    served = len(reg.operations)
    assert counts["add"] == served and served > 50
    Engine(reg, Config())
    assert counts["add"] == served + 1 and counts["eq"] == 0


def _openapi(n: int) -> dict[str, Any]:
    body = {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"getThing{i}",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": {"200": {"description": "ok"}},
            },
            "put": {
                "operationId": f"putThing{i}",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": {"content": {"application/json": {"schema": body}}},
                "responses": {"200": {"description": "ok"}},
            },
        }
        for i in range(n // 2)
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "paths": paths,
    }


@pytest.mark.parametrize("n", [20, 200])
def test_openapi_operations_register_each_once(counts: dict[str, int], n: int) -> None:
    reg = OpenAPIRuntime(load_document(_openapi(n)), base_url="http://127.0.0.1:9").registry()
    assert counts["add"] == n == len(reg.operations)
    Engine(reg, Config())
    assert counts["add"] == n + 1 and counts["eq"] == 0


def test_caches_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate, "_CHECKERS_MAX", 8)
    monkeypatch.setattr(py_adapter, "_SHAPES_MAX", 8)
    for i in range(30):
        validate.checker_for({"type": "string", "maxLength": 1000 + i})
        py_adapter.shape_of(Literal[f"bounded{i}"])
    assert len(validate._checkers) <= 8 and len(py_adapter._shapes) <= 8


# ---- the canonical shape key ------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False) | st.sampled_from(["a", "b", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["type", "enum", "x", "y"]), inner, max_size=3),
    max_leaves=12,
)


def _shuffled(v: Any, rnd: random.Random) -> Any:
    if isinstance(v, dict):
        items = list(v.items())
        rnd.shuffle(items)
        return {k: _shuffled(x, rnd) for k, x in items}
    if isinstance(v, list):
        return [_shuffled(x, rnd) for x in v]
    return v


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_shape_key_is_equal_exactly_when_the_json_is(a: Any, b: Any) -> None:
    """Sound (equal keys only for equal JSON — ``true``, ``1`` and ``1.0`` stay apart) and
    canonical (key order does not matter)."""
    ka, kb = validate.shape_key(a), validate.shape_key(b)
    assert ka is not None and kb is not None
    same_json = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (ka == kb) == same_json
    assert validate.shape_key(_shuffled(copy.deepcopy(a), random.Random(7))) == ka


def test_shape_key_gives_up_on_cycles_large_shapes_and_non_json() -> None:
    cyclic: dict[str, Any] = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    assert validate.shape_key(cyclic) is None
    assert validate.shape_key({"enum": list(range(1000))}) is None
    assert validate.shape_key({"default": object()}) is None
    assert validate.shape_key({"enum": ("a", "b")}) is None  # a tuple is not what JSON decodes to
    assert validate.shape_key({1: "x"}) is None
    # and such a schema still gets a checker (just not a shared one)
    assert validate.checker_for({"enum": list(range(1000))})(5, "p") == 5
