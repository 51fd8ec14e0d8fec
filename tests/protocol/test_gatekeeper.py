"""Endpoint routing and category enforcement (src/mcpaql/protocol/gatekeeper.py; MODES, CRUDE §5,
OVW "Single Mode")."""

from __future__ import annotations

import pytest

from aql_support import CREATE, DELETE, EXECUTE, READ, SINGLE, UPDATE, make_alt_app
from mcpaql import Config
from mcpaql.protocol.envelope import is_error

OWNER = {"name": "Ada", "address": {"street": "1 Rue"}}
CALLS = {
    "list_tasks": ({}, READ),
    "create_task": ({"title": "a", "owner": OWNER}, CREATE),
    "update_task": ({"task_id": "t1"}, UPDATE),
    "delete_task": ({"task_id": "t1"}, DELETE),
    "start_job": ({}, EXECUTE),
}


@pytest.mark.parametrize("op", list(CALLS))
@pytest.mark.parametrize("tool", [READ, CREATE, UPDATE, DELETE, EXECUTE])
def test_each_operation_only_through_its_family_REQ_MODE_004_REQ_MODE_005(h, op, tool):
    params, right = CALLS[op]
    env = h.call(tool, {"operation": op, "params": params})
    if tool == right:
        assert env["success"] is True, env
    else:
        e = env["error"]
        assert e["code"] == "VALIDATION_ENDPOINT_MISMATCH"
        assert e["details"] == {"operation": op, "expected_endpoint": right, "actual_endpoint": tool}


def test_mismatch_message_names_the_right_tool_REQ_MODE_006_REQ_MODE_007(h):
    e = h.call(CREATE, {"operation": "list_tasks"})["error"]
    assert e["message"] == f"Operation 'list_tasks' must be called via '{READ}', not '{CREATE}'"


def test_mismatch_is_error_per_MCPI_reference_REQ_MCP_015(h):
    """VALIDATION_ENDPOINT_MISMATCH is not in MCPI §4.1.3's recoverable list → isError true (Part F #18)."""
    assert is_error(h.call(CREATE, {"operation": "list_tasks"})) is True


def test_mismatch_checked_before_parameters(h):
    # Wrong endpoint AND invalid params: the routing error comes first, nothing is validated.
    e = h.call(READ, {"operation": "delete_task", "params": {"bogus": 1}})["error"]
    assert e["code"] == "VALIDATION_ENDPOINT_MISMATCH"


def test_alternate_families_route_by_family_REQ_MODE_018(harness):
    h = harness(adapter=make_alt_app())
    q, m = "inventory_mcpaql_query", "inventory_mcpaql_manage"
    assert h.call(q, {"operation": "list_items"})["success"] is True
    assert h.call(m, {"operation": "create_item", "params": {"item_name": "x"}})["success"] is True
    assert h.call(m, {"operation": "delete_item", "params": {"item_name": "x"}})["success"] is True
    e = h.call(q, {"operation": "delete_item", "params": {"item_name": "x"}})["error"]
    assert e["code"] == "VALIDATION_ENDPOINT_MISMATCH" and m in e["message"]
    d = h.introspect(q, query="operations", name="delete_item")["data"]["operation"]
    assert (d["endpoint"], d["semantic_category"], d["mcpTool"]) == ("manage", "DELETE", m)
    assert d["permissions"] == {"readOnly": False, "destructive": True}  # category, not family


def test_single_mode_still_enforces_categories_REQ_MODE_009_REQ_MODE_010(harness):
    h = harness(Config(mode="single", allow=frozenset({"READ"})))
    assert [t.name for t in h.engine.tools] == [SINGLE]
    assert h.call(SINGLE, {"operation": "list_tasks"})["success"] is True
    for op, (params, _) in CALLS.items():
        if op == "list_tasks":
            continue
        e = h.call(SINGLE, {"operation": op, "params": params})["error"]
        assert e["code"] == "PERMISSION_DENIED", op
        assert e["details"]["reason"] == "category_disabled"
        assert e["message"].startswith("Permission denied: '")


def test_category_denied_before_handler_runs_REQ_MODE_009(harness):
    from mcpaql import Adapter

    calls: list[str] = []
    app = Adapter("gk")

    @app.delete
    def delete_thing(thing_id: str) -> str:
        """Delete."""
        calls.append(thing_id)
        return thing_id

    @app.read
    def list_things() -> list:
        """List."""
        return []

    for mode, tool in (("single", "gk_mcpaql"), ("all", "gk_mcpaql")):
        h = harness(Config(mode=mode, allow=frozenset({"READ"})), adapter=app)
        env = h.call(tool, {"operation": "delete_thing", "params": {"thing_id": "x"}})
        assert env["error"]["code"] == "PERMISSION_DENIED"
    assert calls == []


def test_allow_applies_in_semantic_mode_too_REQ_MODE_012(harness):
    h = harness(Config(allow=frozenset({"READ", "CREATE"})))
    assert {t.name for t in h.engine.tools} == {READ, CREATE}
    assert h.call(READ, {"operation": "introspect", "params": {"query": "operations"}})["success"] is True


def test_introspect_allowed_even_when_READ_is_not(harness):
    h = harness(Config(mode="single", allow=frozenset({"CREATE"})))
    env = h.introspect(SINGLE, query="operations")
    assert {o["name"] for o in env["data"]["operations"]} == {"create_task", "remember", "introspect"}


def test_all_mode_exposes_both_surfaces_REQ_MODE_021(harness):
    h = harness(Config(mode="all"))
    assert {t.name for t in h.engine.tools} == {READ, CREATE, UPDATE, DELETE, EXECUTE, SINGLE}
    assert h.call(SINGLE, {"operation": "delete_task", "params": {"task_id": "t1"}})["success"] is True
    assert h.call(READ, {"operation": "delete_task", "params": {"task_id": "t1"}})["error"]["code"] == (
        "VALIDATION_ENDPOINT_MISMATCH"
    )
    # In 'all' mode detail points at the family tool.
    assert h.introspect(READ, query="operations", name="delete_task")["data"]["operation"]["mcpTool"] == DELETE


def test_permission_denied_is_recoverable_REQ_MCP_015(harness):
    h = harness(Config(mode="single", allow=frozenset({"READ"})))
    assert is_error(h.call(SINGLE, {"operation": "delete_task", "params": {"task_id": "t1"}})) is False
