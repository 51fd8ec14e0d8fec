"""The request pipeline (src/mcpaql/protocol/dispatch.py): request format, routing, response
format, internal errors and the raw entry point."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel, field_validator

from aql_support import CREATE, EXECUTE, READ, SECRET_PATH, SINGLE, assert_no_leak, assert_valid_envelope, run
from mcpaql import Adapter, Config
from mcpaql.protocol.envelope import is_error


def err(env: dict) -> dict:
    assert env["success"] is False, env
    assert "data" not in env
    return env["error"]


# ---- request format -------------------------------------------------------------------------


@pytest.mark.parametrize("request_", [None, [], "introspect", 5, True, [{"operation": "list_tasks"}]])
def test_request_must_be_an_object_REQ_RQF_001(h, request_):
    e = err(h.call(READ, request_ if request_ is not None else None))
    assert e["code"] in ("VALIDATION_ERROR", "VALIDATION_MISSING_PARAM")


def test_missing_operation_REQ_RQF_001(h):
    e = err(h.call(READ, {"params": {"query": "operations"}}))
    assert e["code"] == "VALIDATION_MISSING_PARAM"
    assert e["details"]["param_name"] == "operation"


@pytest.mark.parametrize("op", [5, None, ["list_tasks"], {"name": "list_tasks"}])
def test_operation_must_be_a_string_REQ_RQF_002(h, op):
    e = err(h.call(READ, {"operation": op}))
    assert e["code"] == "VALIDATION_INVALID_TYPE"
    assert e["details"]["param_name"] == "operation"


@pytest.mark.parametrize("op", ["", "no_such_op", "List_Tasks", "LIST_TASKS", "list-tasks", " list_tasks", "list_tasks "])
def test_unknown_operation_REQ_RQF_003_REQ_RQF_004_REQ_MODE_011(h, op):
    e = err(h.call(READ, {"operation": op}))
    assert e["code"] == "NOT_FOUND_OPERATION"
    assert e["details"]["operation"] == op
    assert "introspect" in e["message"]
    assert e["message"].startswith(f"Unknown operation: '{op}'")


def test_unknown_operation_is_recoverable_REQ_MCP_015(h):
    assert is_error(h.call(READ, {"operation": "nope"})) is False


def test_extra_top_level_members_follow_unknown_param_rules_REQ_RQF_002(h):
    assert err(h.call(READ, {"operation": "list_tasks", "other": 1}))["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert h.call(READ, {"operation": "list_tasks", "_other": 1})["success"] is True


def test_standard_parameter_names_are_snake_case_REQ_RQF_008(h):
    d = h.introspect(query="operations", name="list_tasks")["data"]["operation"]
    assert {"limit", "query"} <= {p["name"] for p in d["parameters"]}


# ---- response format ------------------------------------------------------------------------


def test_success_envelope_REQ_RSP_001_REQ_RSP_002_REQ_RSP_005(h):
    env = h.call(READ, {"operation": "get_task", "params": {"task_id": "t1"}})
    assert env["success"] is True
    assert "error" not in env
    assert set(env) <= {"success", "data", "warnings", "_meta", "results", "summary"}
    assert env["data"]["task_id"] == "t1"
    assert env["data"]["owner"]["address"] == {"street": "1 Rue", "city": "Paris"}  # pydantic → JSON


def test_success_with_null_data_REQ_RSP_002(harness):
    app = Adapter("nulls")

    @app.update
    def touch_thing() -> None:
        """Return nothing."""

    h = harness(adapter=app)
    assert h.call("nulls_mcpaql_update", {"operation": "touch_thing"}) == {"success": True, "data": None}


def test_failure_envelope_REQ_RSP_003_REQ_RSP_006_REQ_RSP_007(h):
    env = h.call(READ, {"operation": "get_task"})
    assert set(env) == {"success", "error"}
    assert set(env["error"]) <= {"code", "message", "details"}
    assert isinstance(env["error"]["code"], str) and isinstance(env["error"]["message"], str)
    assert isinstance(env["error"]["details"], dict)


def test_warnings_from_handlers_on_success_only_REQ_RSP_005_REQ_RSP_006(harness):
    app = Adapter("warn")

    @app.read
    def get_thing(ctx, fail: bool = False) -> dict:
        """Warn, then maybe fail."""
        ctx.warn("PERFORMANCE_SLOW_QUERY_WARNING", "Slow", {"duration_ms": 5}, severity="low")
        if fail:
            from mcpaql import MCPAQLError

            raise MCPAQLError("NOT_FOUND_RESOURCE", "Resource 'thing' not found: 'x'", {"resource_type": "thing"})
        return {}

    h = harness(adapter=app)
    ok = h.call("warn_mcpaql_read", {"operation": "get_thing"})
    assert ok["warnings"] == [
        {"code": "PERFORMANCE_SLOW_QUERY_WARNING", "message": "Slow", "details": {"duration_ms": 5}, "severity": "low"}
    ]
    bad = h.call("warn_mcpaql_read", {"operation": "get_thing", "params": {"fail": True}})
    assert set(bad) == {"success", "error"}
    assert bad["error"]["code"] == "NOT_FOUND_RESOURCE"
    assert is_error(bad) is False


def test_handler_domain_error_passes_through_REQ_ERR_001(harness):
    from mcpaql import MCPAQLError

    app = Adapter("dom")

    @app.delete
    def delete_thing(thing_id: str) -> dict:
        """Delete."""
        raise MCPAQLError(
            "NOT_FOUND_RESOURCE", f"Resource 'thing' not found: '{thing_id}'", {"resource_type": "thing", "resource_id": thing_id}
        )

    env = harness(adapter=app).call("dom_mcpaql_delete", {"operation": "delete_thing", "params": {"thing_id": "x9"}})
    assert env["error"] == {
        "code": "NOT_FOUND_RESOURCE",
        "message": "Resource 'thing' not found: 'x9'",
        "details": {"resource_type": "thing", "resource_id": "x9"},
    }


# ---- internal errors never leak ---------------------------------------------------------------


def test_unexpected_exception_becomes_internal_error_REQ_RSP_013_REQ_ERR_001(h, caplog):
    with caplog.at_level(logging.ERROR, logger="mcpaql.dispatch"):
        env = h.call(EXECUTE, {"operation": "run_export"})
    e = err(env)
    assert e["code"] == "INTERNAL_ERROR"
    assert_no_leak(e["message"])
    text = str(env)
    for leak in ("Traceback", "RuntimeError", ".py", "/src/", SECRET_PATH, "line 42"):
        assert leak not in text
    assert is_error(env) is True
    # ... while the full context is logged server-side (REQ-ERR-003).
    assert any(SECRET_PATH in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_non_serializable_result_is_internal_error_REQ_RSP_013(harness):
    app = Adapter("weird")

    @app.read
    def get_weird():
        """Returns an object JSON cannot represent."""
        return object()

    env = harness(adapter=app).call("weird_mcpaql_read", {"operation": "get_weird"})
    assert err(env)["code"] == "INTERNAL_ERROR"
    assert "object at 0x" not in env["error"]["message"]


class Thing(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def upper(cls, v: str) -> str:
        if not v.isupper():
            raise ValueError("code must be upper case")
        return v


def test_pydantic_validator_error_message_does_not_leak_REQ_RSP_013(harness):
    app = Adapter("val")

    @app.create
    def create_thing(thing: Thing) -> dict:
        """Create."""
        return thing.model_dump()

    env = harness(adapter=app).call("val_mcpaql_create", {"operation": "create_thing", "params": {"thing": {"code": "x"}}})
    e = err(env)
    assert e["code"] == "VALIDATION_INVALID_VALUE"
    assert "upper case" in e["message"]
    assert_no_leak(e["message"])


# ---- async and sync handlers ---------------------------------------------------------------------


def test_async_and_sync_handlers(h):
    assert h.call(EXECUTE, {"operation": "start_job"})["data"] == {"started": True}
    assert h.call(READ, {"operation": "get_task", "params": {"task_id": "t1"}})["success"] is True  # async def
    assert h.call(READ, {"operation": "echo"})["success"] is True  # def


def test_sync_handler_returning_awaitable(harness):
    app = Adapter("aw")

    async def later() -> int:
        return 7

    @app.read
    def get_later():
        """Returns a coroutine."""
        return later()

    assert harness(adapter=app).call("aw_mcpaql_read", {"operation": "get_later"})["data"] == 7


# ---- entry points -------------------------------------------------------------------------------


def test_unknown_tool_name(h):
    e = err(h.call("tasks_mcpaql_nope", {"operation": "list_tasks"}))
    assert e["code"] == "NOT_FOUND_OPERATION"
    assert READ in e["details"]["available"]


def test_call_tool_with_no_arguments(h):
    assert err(h.call(READ, None))["code"] == "VALIDATION_MISSING_PARAM"


def test_call_raw_routes_through_a_tool_REQ_MODE_005(h):
    env = h.raw(b'{"operation": "delete_task", "params": {"task_id": "t1"}}', READ)
    assert err(env)["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    env = h.raw(b'{"operation": "list_tasks"}', READ)
    assert env["success"] is True


def test_call_raw_without_tool_is_in_process(h):
    assert h.raw(b'{"operation": "delete_task", "params": {"task_id": "t1"}}')["data"] == {"deleted": "t1"}


def test_execute_in_process_any_family(h):
    from mcpaql.protocol import ANY_FAMILY

    env = run(
        h.engine.execute({"operation": "delete_task", "params": {"task_id": "t5"}}, h.engine.context(h.session), ANY_FAMILY)
    )
    assert env == {"success": True, "data": {"deleted": "t5"}}


def test_render_round_trip_and_is_error_REQ_MCP_013(h):
    import json

    ok = h.call(READ, {"operation": "list_tasks"})
    text, is_err = h.engine.render(ok)
    assert json.loads(text) == ok and is_err is False
    bad = h.call(READ, {"operation": "list_tasks", "params": {"bogus": 1}})
    text, is_err = h.engine.render(bad)
    assert json.loads(text) == bad and is_err is True


def test_single_mode_routes_every_category_REQ_MODE_010(harness):
    h = harness(Config(mode="single"))
    assert h.call(SINGLE, {"operation": "delete_task", "params": {"task_id": "t1"}})["success"] is True
    assert (
        h.call(
            SINGLE, {"operation": "create_task", "params": {"title": "a", "owner": {"name": "n", "address": {"street": "s"}}}}
        )["success"]
        is True
    )
    assert h.call(SINGLE, {"operation": "list_tasks"})["success"] is True
    assert err(h.call(SINGLE, {"operation": "nope"}))["code"] == "NOT_FOUND_OPERATION"


def test_all_modes_validate_the_same_way_REQ_MODE_012(harness):
    request = {"operation": "list_tasks", "params": {"limit": 0}}
    errors = []
    for mode, tool in (("semantic", READ), ("single", SINGLE), ("all", READ), ("all", SINGLE)):
        errors.append(harness(Config(mode=mode)).call(tool, request)["error"])
    assert all(e == errors[0] for e in errors)


def test_wrong_tool_does_not_execute_REQ_MODE_005(harness):
    calls = []
    app = Adapter("guard")

    @app.delete
    def delete_thing(thing_id: str) -> str:
        """Delete."""
        calls.append(thing_id)
        return thing_id

    @app.read
    def list_things() -> list:
        """List."""
        return []

    h = harness(adapter=app)
    for tool in ("guard_mcpaql_read",):
        env = h.call(tool, {"operation": "delete_thing", "params": {"thing_id": "x"}})
        assert env["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    assert calls == []
    assert CREATE not in h.engine.tools_by_name  # families without operations get no tool


def test_utc_timestamps_serialize_with_Z_REQ_VAL_026(harness):
    from datetime import UTC, datetime

    app = Adapter("clock")

    @app.read
    def get_time() -> dict:
        """Now."""
        return {"at": datetime(2026, 2, 4, 10, 30, tzinfo=UTC)}

    env = harness(adapter=app).call("clock_mcpaql_read", {"operation": "get_time"})
    assert env["data"]["at"] == "2026-02-04T10:30:00Z"


def test_render_never_puts_invalid_json_on_the_wire_REQ_RSP_011(harness):
    """A handler returning NaN or a lone surrogate must not produce non-JSON / non-UTF-8 output."""
    import json

    app = Adapter("out")

    @app.read
    def get_nan() -> dict:
        """NaN."""
        return {"x": float("nan")}

    @app.read
    def get_surrogate() -> dict:
        """Lone surrogate."""
        return {"x": "a\ud800"}

    h = harness(adapter=app)
    for op in ("get_nan", "get_surrogate"):
        env = run(h.engine.call_tool("out_mcpaql_read", {"operation": op}, h.engine.context(h.session)))
        text, is_err = h.engine.render(env)
        text.encode("utf-8")
        rendered = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} on the wire"))
        assert_valid_envelope(rendered)
        assert rendered["error"]["code"] == "INTERNAL_ERROR" and is_err is True
