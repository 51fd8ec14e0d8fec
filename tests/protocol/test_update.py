"""UPDATE semantics (REQ-UPD-*): nested input, deep merge, closed input, identifiers outside."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from mcpaql import Adapter, SchemaError
from mcpaql.protocol.update import apply_patch, deep_merge, update_semantics

UPD = "docs_mcpaql_update"
READ = "docs_mcpaql_read"


class Meta(BaseModel):
    priority: str | None = None
    tags: list[str] | None = None
    author: str | None = None


class DocPatch(BaseModel):
    title: str | None = None
    metadata: Meta | None = None


def make() -> tuple[Any, dict[str, dict]]:
    store = {"d1": {"doc_id": "d1", "title": "Old Title", "metadata": {"priority": "low", "tags": ["draft"], "author": "alice"}}}
    app = Adapter("docs")

    @app.read
    def get_doc(doc_id: str) -> dict:
        """Get a doc."""
        return store[doc_id]

    @app.update
    def update_doc(doc_id: str, input: DocPatch) -> dict:
        """Update a doc."""
        store[doc_id] = apply_patch(store[doc_id], input)
        return store[doc_id]

    @app.update
    def update_loose(doc_id: str, input: dict) -> dict:
        """Update with an open input object."""
        store[doc_id] = deep_merge(store[doc_id], input)
        return store[doc_id]

    return app.engine(), store


def call(engine: Any, tool: str, op: str, **params: Any) -> dict:
    return asyncio.run(engine.call_tool(tool, {"operation": op, "params": params}, engine.context(engine.new_session())))


def test_req_upd_002_deep_merge_rules() -> None:
    base = {"a": 1, "o": {"x": 1, "y": {"z": 1, "k": 2}}, "arr": [1, 2], "gone": 5}
    patch = {"o": {"y": {"z": 9, "k": None}}, "arr": [3], "gone": None, "new": {"n": None, "m": 1}}
    assert deep_merge(base, patch) == {"a": 1, "o": {"x": 1, "y": {"z": 9}}, "arr": [3], "new": {"m": 1}}
    assert base["o"]["y"] == {"z": 1, "k": 2}  # input not mutated


def test_req_upd_003_worked_example_over_the_wire() -> None:
    engine, _store = make()
    env = call(
        engine,
        UPD,
        "update_doc",
        doc_id="d1",
        input={"title": "New Title", "metadata": {"priority": "high", "tags": ["published", "reviewed"]}},
    )
    assert env["success"] is True
    assert env["data"] == {
        "doc_id": "d1",
        "title": "New Title",
        "metadata": {"priority": "high", "tags": ["published", "reviewed"], "author": "alice"},
    }


def test_req_upd_004_null_removes_field() -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1", input={"metadata": {"author": None}})
    assert env["data"]["metadata"] == {"priority": "low", "tags": ["draft"]}


def test_req_upd_005_missing_input() -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1")
    assert env["error"]["code"] == "VALIDATION_MISSING_PARAM" and env["error"]["details"]["param_name"] == "input"


@pytest.mark.parametrize("bad", ["title=x", ["title"], 5, True])
def test_req_upd_006_input_must_be_object(bad: Any) -> None:
    engine, _ = make()
    assert call(engine, UPD, "update_doc", doc_id="d1", input=bad)["error"]["code"] == "VALIDATION_INVALID_TYPE"


def test_req_upd_007_fields_validated_against_schema() -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1", input={"metadata": {"tags": "not-a-list"}})
    assert env["error"]["code"] == "VALIDATION_INVALID_TYPE"
    assert env["error"]["details"]["param_name"].startswith("input.metadata")


@pytest.mark.parametrize(("patch", "path"), [({"colour": "red"}, "input"), ({"metadata": {"owner": "bob"}}, "input.metadata")])
def test_req_upd_008_unknown_fields_inside_input(patch: dict, path: str) -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1", input=patch)
    assert env["error"]["code"] == "VALIDATION_UNKNOWN_FIELD"
    assert env["error"]["details"]["param_name"] == path


def test_req_upd_008_unknown_param_outside_input_is_a_different_code() -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1", input={}, title="x")
    assert env["error"]["code"] == "VALIDATION_UNKNOWN_PARAM"


def test_req_upd_009_identifier_inside_input_rejected() -> None:
    engine, _ = make()
    env = call(engine, UPD, "update_doc", doc_id="d1", input={"doc_id": "d2"})
    assert env["error"]["code"] == "VALIDATION_UNKNOWN_FIELD"
    env = call(engine, UPD, "update_loose", doc_id="d1", input={"doc_id": "d2", "title": "x"})
    assert env["error"]["code"] == "VALIDATION_UNKNOWN_FIELD"
    assert "params, not inside 'input'" in env["error"]["message"]
    assert env["error"]["details"]["identifiers"] == ["doc_id"]


class BadPatch(BaseModel):
    doc_id: str | None = None
    title: str | None = None


def test_req_upd_009_identifier_in_input_model_refused_at_registration() -> None:
    app = Adapter("docs")
    with pytest.raises(SchemaError):

        @app.update
        def update_doc(doc_id: str, input: BadPatch) -> dict:
            """x"""
            return {}


def test_req_upd_010_read_after_update_preserves_untouched_fields() -> None:
    engine, _ = make()
    call(engine, UPD, "update_doc", doc_id="d1", input={"title": "T2"})
    env = call(engine, READ, "get_doc", doc_id="d1")
    assert env["data"]["metadata"] == {"priority": "low", "tags": ["draft"], "author": "alice"}


def test_req_upd_001_introspection_shows_required_input() -> None:
    engine, _ = make()
    detail = call(engine, READ, "introspect", query="operations", name="update_doc")["data"]["operation"]
    params = {p["name"]: p for p in detail["parameters"]}
    assert params["input"]["required"] is True and params["doc_id"]["required"] is True


def test_update_semantics_noop_without_input() -> None:
    from mcpaql.protocol.categories import Category
    from mcpaql.protocol.operations import OperationSpec

    spec = OperationSpec("touch", Category.UPDATE, "x")
    assert update_semantics(spec) is spec
