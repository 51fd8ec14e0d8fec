"""Structural checks of adapter files by the loader (REQ-ADPT-002/003/004/009/010/011/014/015; GEN §2.2
codes). Each case breaks one rule of adapter-schema.schema.json and expects the loader's SchemaError."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from wrap_helpers import new_ctx

from mcpaql.adapters.schema import load_adapter_schema, serve_adapter
from mcpaql.adapters.schema.load import check_adapter_schema
from mcpaql.protocol.registry import SchemaError

VALID: dict[str, Any] = {
    "name": "items-api",
    "type": "adapter",
    "version": "1.0.0",
    "description": "A tiny items API for tests",
    "target": {"base_url": "https://items.example.invalid", "transport": "http", "protocol": "rest", "serialization": "json"},
    "operations": {
        "read": [
            {"name": "get_item", "maps_to": "GET /items/{item_id}", "params": {"item_id": {"type": "string", "required": True}}}
        ],
        "delete": [
            {
                "name": "delete_item",
                "maps_to": "DELETE /items/{item_id}",
                "params": {"item_id": {"type": "string", "required": True}},
            }
        ],
    },
}


def broken(change) -> dict[str, Any]:
    data = copy.deepcopy(VALID)
    change(data)
    return data


def code_of(data: dict[str, Any]) -> str:
    with pytest.raises(SchemaError) as e:
        check_adapter_schema(data)
    return e.value.code


def test_valid_file_passes() -> None:
    check_adapter_schema(copy.deepcopy(VALID))


@pytest.mark.parametrize("key", ["name", "type", "version", "description", "target", "operations"])
def test_req_adpt_002_required_top_level_keys(key: str) -> None:
    assert code_of(broken(lambda d: d.pop(key))) == "SCHEMA_MISSING_FIELD"


@pytest.mark.parametrize("key", ["author", "tags", "triggers", "created", "danger"])
def test_req_adpt_002_other_top_level_keys(key: str) -> None:
    """ELEM §2.1's metadata is accepted (a wrong type refused); any other key is a warning (Part F #12)."""
    value = ["x"] if key in ("tags", "triggers") else "x"
    warnings = check_adapter_schema(broken(lambda d: d.update({key: value})))
    assert warnings == (["danger: unknown key, ignored"] if key == "danger" else [])
    if key in ("tags", "triggers"):
        assert code_of(broken(lambda d: d.update({key: "x"}))) == "SCHEMA_INVALID_TYPE"


@pytest.mark.parametrize("name", ["Items", "1items", "items_api", ""])
def test_req_adpt_003_name_pattern(name: str) -> None:
    assert code_of(broken(lambda d: d.update(name=name))) == "SCHEMA_INVALID_NAME"


def test_req_adpt_004_type_is_adapter() -> None:
    assert code_of(broken(lambda d: d.update(type="plugin"))) == "SCHEMA_INVALID_TYPE"


def test_req_adpt_009_only_crude_groups() -> None:
    assert code_of(broken(lambda d: d["operations"].update(query=[]))) == "SCHEMA_INVALID_TYPE"
    assert code_of(broken(lambda d: d["operations"].update(read={"name": "x"}))) == "SCHEMA_INVALID_TYPE"


def test_req_adpt_010_operation_definition() -> None:
    assert code_of(broken(lambda d: d["operations"]["read"][0].pop("maps_to"))) == "SCHEMA_MISSING_FIELD"
    assert code_of(broken(lambda d: d["operations"]["read"][0].update(danger={"level": "spicy"}))) == "SCHEMA_INVALID_TYPE"
    assert code_of(broken(lambda d: d["operations"]["read"][0].update(name="getItem"))) == "SCHEMA_INVALID_NAME"


def test_req_adpt_011_names_unique_across_groups() -> None:
    assert code_of(broken(lambda d: d["operations"]["delete"][0].update(name="get_item"))) == "SCHEMA_DUPLICATE_NAME"


def test_req_adpt_014_parameter_definition() -> None:
    assert code_of(broken(lambda d: d["operations"]["read"][0]["params"]["item_id"].pop("type"))) == "SCHEMA_MISSING_FIELD"
    assert check_adapter_schema(broken(lambda d: d["operations"]["read"][0]["params"]["item_id"].update(alias="id"))) == [
        "operations.read[0].params.item_id.alias: unknown key, ignored"
    ]


def test_load_reports_the_same_errors_for_files(tmp_path: Path) -> None:
    path = tmp_path / "items-api-adapter.json"
    path.write_text(json.dumps(broken(lambda d: d.update(tags="me"))))
    with pytest.raises(SchemaError) as e:
        load_adapter_schema(path)
    assert e.value.code == "SCHEMA_INVALID_TYPE" and e.value.message == "tags: must be a list of strings"


@pytest.mark.anyio
async def test_req_adpt_015_missing_required_param_rejected_before_the_call(tmp_path: Path) -> None:
    path = tmp_path / "items-api-adapter.json"
    path.write_text(json.dumps(VALID))  # base_url is unreachable: a call that got through would fail differently
    async with serve_adapter(path) as rt:
        env = await rt.engine.execute({"operation": "get_item", "params": {}}, new_ctx())
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_MISSING_PARAM"
    assert "item_id" in env["error"]["message"]


@pytest.mark.parametrize("name", ["items-", "a", "x" * 65])
def test_req_adpt_003_elem_name_rule(name: str) -> None:
    assert code_of(broken(lambda d: d.update(name=name))) == "SCHEMA_INVALID_NAME"


def test_req_adpt_003_file_named_after_the_adapter_is_advised(tmp_path: Path, caplog) -> None:
    for fname, warned in (("items-api-adapter.json", False), ("adapter.json", True)):
        caplog.clear()
        (tmp_path / fname).write_text(json.dumps(VALID))
        with caplog.at_level("WARNING", logger="mcpaql.adapter_schema"):
            load_adapter_schema(tmp_path / fname)  # never an error: `mcpaql serve adapter.json` works
        assert any("items-api-adapter.md" in r.getMessage() for r in caplog.records) is warned


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d["target"].update(transport="carrier-pigeon"), "target.transport"),
        (lambda d: d["target"].update(protocol="soap"), "target.protocol"),
        (lambda d: d["target"].update(serialization="yaml"), "target.serialization"),
        (lambda d: d["target"].update(base_url="not a uri"), "target.base_url"),
    ],
)
def test_req_adpt_007_target_enums_and_closed_keys(change, path: str) -> None:
    with pytest.raises(SchemaError, match=f"^SCHEMA_INVALID_TYPE: {re.escape(path)}:"):
        check_adapter_schema(broken(change))


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda op: op.update(danger_level="spicy"), "danger_level"),
        (lambda op: op.update(supports_fields="yes"), "supports_fields"),
        (lambda op: op.update(requires_confirmation=1), "requires_confirmation"),
        (lambda op: op.update(non_idempotent=None), "non_idempotent"),
        (lambda op: op.update(pagination={"style": "scroll"}), "pagination.style"),
        (lambda op: op.update(pagination={"style": "cursor", "max_limit": 0}), "pagination.max_limit"),
        (lambda op: op.update(response="json"), "response"),
    ],
)
def test_req_adpt_010_operation_values(change, path: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(f"operations.read[0].{path}:")):
        check_adapter_schema(broken(lambda d: change(d["operations"]["read"][0])))


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda p: p.update(type="uuid"), "type"),
        (lambda p: p.update(required="yes"), "required"),
        (lambda p: p.update(enum=[{"a": 1}]), "enum"),
        (lambda p: p.update(enum=[]), "enum"),
        (lambda p: p.update(minimum="0"), "minimum"),
        (lambda p: p.update(maximum=True), "maximum"),
        (lambda p: p.update(pattern="(unclosed"), "pattern"),
    ],
)
def test_req_adpt_014_parameter_values(change, key: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(f"operations.read[0].params.item_id.{key}:")):
        check_adapter_schema(broken(lambda d: change(d["operations"]["read"][0]["params"]["item_id"])))


@pytest.mark.parametrize(
    ("auth", "path"),
    [
        ({"type": "kerberos"}, "auth.type"),
        ({"token_env": "T"}, "auth.type"),
        ({"type": "oauth2"}, "auth.type"),
        ({"type": "basic", "username_env": "U"}, "auth.password_env"),
        ({"type": "api_key", "header_name": "X-Key"}, "auth.key_env"),
    ],
)
def test_req_adpt_016_auth(auth: dict, path: str) -> None:
    with pytest.raises(SchemaError, match=re.escape(f"{path}:")):
        check_adapter_schema(broken(lambda d: d.update(auth=auth)))
    for ok in (
        {"type": "none"},
        {"type": "bearer", "token_env": "GH_TOKEN"},
        {"type": "api_key", "header_name": "X-Key", "key_env": "KEY"},
    ):
        check_adapter_schema(broken(lambda d, ok=ok: d.update(auth=ok)))
