"""Batch basics (src/mcpaql/protocol/batch.py; OPS §7). Every envelope is validated against
operation-result.schema.json by the harness, including each item's ``result``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aql_support import CREATE, DELETE, READ, SINGLE
from mcpaql import Config


def batch(h, items, tool=READ, **extra):
    return h.call(tool, {"operations": items, **extra})


def test_items_run_in_order_with_summary(h):
    env = batch(
        h,
        [
            {"operation": "get_task", "params": {"task_id": "t1"}},
            {"operation": "list_tasks", "params": {"limit": 2}},
            {"operation": "get_task", "params": {"task_id": "t2"}},
        ],
    )
    assert env["success"] is True and env["data"] is None
    assert [r["index"] for r in env["results"]] == [0, 1, 2]
    assert [r["operation"] for r in env["results"]] == ["get_task", "list_tasks", "get_task"]
    assert env["results"][0]["result"]["data"]["task_id"] == "t1"
    assert env["results"][2]["result"]["data"]["task_id"] == "t2"
    assert env["summary"] == {"total": 3, "succeeded": 3, "failed": 0}


def test_failure_does_not_stop_later_items(h):
    env = batch(
        h,
        [
            {"operation": "get_task"},
            {"operation": "nope"},
            {"operation": "list_tasks"},
        ],
    )
    codes = [r["result"].get("error", {}).get("code") for r in env["results"]]
    assert codes == ["VALIDATION_MISSING_PARAM", "NOT_FOUND_OPERATION", None]
    assert env["summary"] == {"total": 3, "succeeded": 1, "failed": 2}


def test_gatekeeper_applies_per_item_REQ_MODE_005(h):
    env = batch(
        h,
        [
            {"operation": "list_tasks"},
            {"operation": "delete_task", "params": {"task_id": "t1"}},
        ],
    )
    assert env["results"][1]["result"]["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    assert env["results"][1]["result"]["error"]["details"]["expected_endpoint"] == DELETE


def test_category_enforced_per_item_in_single_mode_REQ_MODE_009(harness):
    h = harness(Config(mode="single", allow=frozenset({"READ"})))
    env = batch(h, [{"operation": "delete_task", "params": {"task_id": "t1"}}, {"operation": "list_tasks"}], SINGLE)
    assert env["results"][0]["result"]["error"]["code"] == "PERMISSION_DENIED"
    assert env["results"][1]["result"]["success"] is True


def test_stop_on_failure(h):
    env = batch(
        h,
        [
            {"operation": "list_tasks"},
            {"operation": "get_task"},
            {"operation": "list_tasks"},
            {"operation": "list_tasks"},
        ],
        _stop_on_failure=True,
    )
    assert len(env["results"]) == 2
    assert env["summary"] == {"total": 4, "succeeded": 1, "failed": 1, "pending": 2}
    assert env["pending_operations"] == [{"index": 2, "operation": "list_tasks"}, {"index": 3, "operation": "list_tasks"}]
    assert "halted_at" not in env  # halted_at is for CONFIRMATION_REQUIRED (batch-operation.schema.json)


def test_item_validation_is_the_normal_pipeline(h):
    env = batch(h, [{"operation": "list_tasks", "params": {"bogus": 1}}, {"operation": "list_tasks", "params": {"limit": 0}}])
    assert [r["result"]["error"]["code"] for r in env["results"]] == ["VALIDATION_UNKNOWN_PARAM", "VALIDATION_INVALID_VALUE"]


def test_internal_error_in_an_item_is_contained(h):
    env = batch(h, [{"operation": "run_export"}, {"operation": "start_job"}], "tasks_mcpaql_execute")
    assert env["results"][0]["result"]["error"]["code"] == "INTERNAL_ERROR"
    assert env["results"][1]["result"]["success"] is True


@pytest.mark.parametrize(
    "request_",
    [
        {"operations": []},
        {"operations": "list_tasks"},
        {"operations": {"operation": "list_tasks"}},
        {"operations": None},
        {"operations": [{"operation": "list_tasks"}], "params": {}},
        {"operations": [{"operation": "list_tasks"}] * 101},
    ],
)
def test_malformed_batch_is_BATCH_VALIDATION_ERROR(h, request_):
    env = h.call(READ, request_)
    assert env["success"] is False
    assert env["error"]["code"] == "BATCH_VALIDATION_ERROR"


@pytest.mark.parametrize("item", [5, "list_tasks", None, [], {}, {"operation": 3}, {"params": {}}])
def test_malformed_items_fail_individually(h, item):
    env = batch(h, [item, {"operation": "list_tasks"}])
    first = env["results"][0]
    assert first["index"] == 0 and first["operation"] == ""
    assert first["result"]["error"]["code"] == "BATCH_VALIDATION_ERROR"
    assert env["results"][1]["result"]["success"] is True


def test_nested_batch_rejected(h):
    env = batch(h, [{"operation": "list_tasks", "operations": [{"operation": "list_tasks"}]}])
    assert env["results"][0]["result"]["error"]["code"] == "BATCH_VALIDATION_ERROR"


def test_batch_through_create_tool(h):
    owner = {"name": "Ada", "address": {"street": "s"}}
    env = batch(h, [{"operation": "create_task", "params": {"title": "a", "owner": owner}}], CREATE)
    assert env["summary"]["succeeded"] == 1


def test_nul_rejected_inside_batch_items_REQ_VAL_024(h):
    env = batch(h, [{"operation": "echo", "params": {"text": "a\x00b"}}, {"operation": "echo", "params": {"text": "ok"}}])
    assert env["results"][0]["result"]["error"]["code"] == "VALIDATION_INVALID_ENCODING"
    assert env["results"][1]["result"]["success"] is True


def test_limits_apply_to_the_whole_batch_REQ_LIMIT_002(h):
    env = h.call(READ, {"operations": [{"operation": "echo", "params": {"text": "\ud800"}}]})
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_INVALID_ENCODING"


def test_schema_following_batch_form(h):
    """``{operation: "batch", operations: [...]}`` satisfies the tool input schema (operation required)."""
    request = {"operation": "batch", "operations": [{"operation": "list_tasks"}, {"operation": "get_task"}]}
    env = h.call(READ, request)
    assert env["summary"] == {"total": 2, "succeeded": 1, "failed": 1}
    assert h.call(READ, {"operation": "batch"})["error"]["code"] == "NOT_FOUND_OPERATION"


def test_REQ_WARN_009_item_warnings_are_collapsed_onto_the_batch() -> None:
    import asyncio

    from mcpaql import Adapter, Config

    app = Adapter("warny")

    def get_thing(ctx, thing_id: str) -> dict:  # ctx by name: the context parameter
        """Get a thing (always warns the same way)."""
        ctx.warn("DEPRECATION_WARNING", "get_thing is deprecated", {"type": "operation", "deprecated_item": "get_thing"})
        return {"thing_id": thing_id}

    app.read(get_thing)
    eng = app.engine(Config())
    s = eng.new_session()
    req = {"operations": [{"operation": "get_thing", "params": {"thing_id": str(i)}} for i in range(3)]}
    env = asyncio.run(eng.call_tool("warny_mcpaql_read", req, eng.context(s)))
    assert env["success"] and env["summary"]["succeeded"] == 3
    assert all(set(r["result"]) == {"success", "data"} for r in env["results"])  # batch-operation item shape
    assert len(env["warnings"]) == 1 and env["warnings"][0]["details"]["occurrence_count"] == 3


def test_batch_over_the_limit_has_no_details_REQ_BATCH_schema(h):
    """batch-operation.schema.json's failure response allows only ``code`` + ``message``."""
    from aql_support import _check

    env = batch(h, [{"operation": "list_tasks"}] * 101)
    assert env["error"] == {"code": "BATCH_VALIDATION_ERROR", "message": "A batch holds up to '100' operations, got '101'"}
    _check("batch-operation", env)
    _check("operation-result", env)


_ITEM = st.one_of(
    st.just({"operation": "list_tasks"}),
    st.just({"operation": "get_task", "params": {"task_id": "t1"}}),
    st.just({"operation": "get_task"}),
    st.just({"operation": "nope"}),
    st.just({"operation": "delete_task", "params": {"task_id": "t1"}}),
    st.just({"operations": []}),
    st.integers(),
    st.dictionaries(st.sampled_from(["operation", "params", "x"]), st.none() | st.integers() | st.text(max_size=3), max_size=3),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(_ITEM, min_size=1, max_size=8), stop=st.booleans())
def test_batch_response_shape_property(h, items, stop):
    """Any batch: valid against batch-operation (and operation-result unless halted — the harness
    checks both), counts add up, and every item is reported exactly once."""
    env = batch(h, items, **({"_stop_on_failure": True} if stop else {}))
    s = env["summary"]
    assert s["total"] == len(items)
    assert s["succeeded"] + s["failed"] == len(env["results"])
    reported = [r["index"] for r in env["results"]] + ([env["halted_at"]["index"]] if "halted_at" in env else [])
    reported += [p["index"] for p in env.get("pending_operations", [])]
    assert reported == list(range(len(items)))
    assert s.get("pending", 0) == len(env.get("pending_operations", []))
    assert all(set(r["result"]) in ({"success", "data"}, {"success", "error"}) for r in env["results"])
