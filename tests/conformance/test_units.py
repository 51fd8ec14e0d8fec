"""Unit tests of the suite's building blocks: value building, structural models, evidence cleaning,
report levels and rendering (no server needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpaql.conformance import CheckResult, Report, Status, Validators, clean_envelope, render
from mcpaql.conformance.evidence import clean_introspection
from mcpaql.conformance.model import INTROSPECTION, LEVEL2, ROUND_TRIP
from mcpaql.conformance.values import CannotBuild, build_value, wrong_value

from .conftest import SCHEMAS

DETAIL = {
    "name": "get_widget",
    "semantic_category": "READ",
    "endpoint": "read",
    "mcpTool": "mcp_aql_read",
    "description": "Fetch a widget.",
    "permissions": {"readOnly": True, "destructive": False},
    "parameters": [{"name": "widget_id", "type": "string", "required": True}],
    "returns": {"name": "Widget", "kind": "object"},
}


def test_build_value_uses_only_documented_constraints() -> None:
    types = {
        "Color": {"name": "Color", "kind": "enum", "values": ["red", "blue"]},
        "Box": {
            "name": "Box",
            "kind": "object",
            "fields": [
                {"name": "w", "type": "integer", "required": True, "minimum": 5},
                {"name": "color", "type": "Color", "required": True},
                {"name": "label", "type": "string", "required": False},
            ],
        },
    }
    look = types.get
    assert build_value({"name": "s", "type": "string", "enum": ["a", "b"]}, look) == "a"
    assert build_value({"name": "n", "type": "integer", "minimum": 3, "maximum": 9}, look) == 4  # inside: bounds may be exclusive
    assert build_value({"name": "d", "type": "string", "format": "date-time"}, look) == "2026-01-02T03:04:05Z"
    assert len(build_value({"name": "s", "type": "string", "minLength": 40}, look)) == 40
    assert build_value({"name": "tag", "type": "string", "pattern": "^[a-z]+$"}, look).isalpha()
    assert build_value({"name": "box", "type": "Box", "required": True}, look) == {"w": 6, "color": "red"}
    assert build_value({"name": "tags", "type": "string[]", "required": True}, look) == ["mcpaql-conformance"]
    with pytest.raises(CannotBuild):
        build_value({"name": "x", "type": "Gadget", "required": True}, look)
    assert build_value({"name": "x", "type": "string", "pattern": "^Z{3}[0-9]{9}$"}, look) == "ZZZ111111111"
    with pytest.raises(CannotBuild):  # the pattern's strings are longer than maxLength
        build_value({"name": "x", "type": "string", "pattern": "^Z{3}[0-9]{9}$", "maxLength": 5}, look)
    with pytest.raises(CannotBuild):  # lookarounds are outside the generator's syntax
        build_value({"name": "x", "type": "string", "pattern": "^(?=Q)Q[0-9]$"}, look)
    assert wrong_value({"name": "s", "type": "string"}) == 12345
    assert wrong_value({"name": "n", "type": "integer"}) == "not-a-number"


@pytest.mark.parametrize("use_schemas", [True, False])
def test_operation_details_with_extra_keys_are_rejected(use_schemas: bool) -> None:
    v = Validators(SCHEMAS if use_schemas else None, use_schemas=use_schemas)
    if use_schemas and not v.available:
        pytest.skip("spec schemas not available")
    assert v.problems("OperationDetails", DETAIL) == []
    assert v.problems("OperationDetails", {**DETAIL, "danger": "safe"})
    bad_param = {**DETAIL, "parameters": [{"name": "x", "type": "string", "required": True, "deprecated": True}]}
    assert v.problems("OperationDetails", bad_param)
    assert v.problems("operation_result", {"success": False, "error": {"code": "X", "message": "m"}, "_meta": {}})
    assert v.problems("operation_result", {"success": True, "data": None}) == []
    assert v.problems("TypeDetails", {"name": "T", "kind": "enum", "values": ["a"], "fields": []})


def test_default_schema_dir_is_relative_to_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (SCHEMAS / "operation-result.schema.json").is_file():
        pytest.skip("spec schemas not available")
    monkeypatch.delenv("MCPAQL_SPEC_SCHEMAS", raising=False)
    monkeypatch.chdir(SCHEMAS.parents[2] / "main" if (SCHEMAS.parents[2] / "main").is_dir() else SCHEMAS.parents[2])
    assert Validators().available or not (Path.cwd() / ".." / "shared" / "spec" / "schemas").is_dir()
    monkeypatch.setenv("MCPAQL_SPEC_SCHEMAS", "/nonexistent")
    monkeypatch.chdir("/")
    assert not Validators().available


def test_evidence_cleaning_follows_part_f_6() -> None:
    env = {
        "success": False,
        "error": {"code": "X_Y", "message": "m", "details": {"a": 1}, "extra": 1},
        "_meta": {"request_id": "r"},
        "warnings": [],
    }
    assert clean_envelope(env) == {"success": False, "error": {"code": "X_Y", "message": "m", "details": {"a": 1}}}
    intro_err = {"success": False, "error": {"code": "INVALID_QUERY_TYPE", "message": "m", "details": {}}}
    assert clean_introspection(intro_err) == {"success": False, "error": {"code": "INVALID_QUERY_TYPE", "message": "m"}}
    assert clean_introspection({"success": True, "data": {"types": []}, "_meta": {}}) == {"success": True, "data": {"types": []}}


def _report(*statuses: tuple[object, Status]) -> Report:
    r = Report(target="x", requested_level=2)
    for i, (cat, st) in enumerate(statuses):
        r.results.append(CheckResult(f"T-{i}", "t", cat, st, ("REQ-X",), "m"))  # type: ignore[arg-type]
    return r


def test_levels_and_exit_codes() -> None:
    assert _report((INTROSPECTION, Status.PASS), (LEVEL2, Status.PASS)).exit_code == 0
    r = _report((INTROSPECTION, Status.PASS), (LEVEL2, Status.WARN))
    assert (r.achieved_level, r.exit_code) == (1, 2)
    r = _report((ROUND_TRIP, Status.FAIL), (LEVEL2, Status.PASS))
    assert (r.achieved_level, r.exit_code) == (0, 1)
    r = _report((INTROSPECTION, Status.WARN), (INTROSPECTION, Status.SKIP))
    r.requested_level = 1
    assert (r.achieved_level, r.exit_code) == (1, 0)


def test_renderers() -> None:
    r = _report((INTROSPECTION, Status.PASS), (LEVEL2, Status.WARN))
    d = json.loads(render(r, "json"))
    assert d["conformanceLevel"] == 1 and d["summary"]["warned"] == 1 and d["categories"][0]["name"] == "Introspection Fidelity"
    md = render(r, "markdown")
    assert md.startswith("# MCP-AQL Conformance Report") and "| WARN | T-1 |" in md
    text = render(r, "text")
    assert "Level 2 NOT MET" in text and "MCP-AQL Level 1 Conformant" in text
    with pytest.raises(ValueError):
        render(r, "html")
