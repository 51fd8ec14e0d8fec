"""Each validation rule of the Task Tracker gives the right error code (CHECKLIST REQ-VAL-*, REQ-UPD-005..009)."""

from __future__ import annotations

from typing import Any

import pytest
from demo_helpers import Demo


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return Demo(tmp_path_factory.mktemp("val") / "d.db", seed=False)


@pytest.fixture(scope="module")
def ids(d: Demo) -> dict[str, str]:
    pid = d.project("Validation")["project_id"]
    tid = d.task(pid, "Target")["task_id"]
    return {"project_id": pid, "task_id": tid}


def _task(ids: dict[str, str], **kw: Any) -> dict[str, Any]:
    return {"project_id": ids["project_id"], "title": "T", **kw}


CREATE_TASK_CASES = [
    # (id, extra params, expected code, param path in details)
    ("title empty", {"title": ""}, "VALIDATION_INVALID_VALUE", "title"),
    ("title too long", {"title": "x" * 201}, "VALIDATION_INVALID_VALUE", "title"),
    ("title wrong type", {"title": 42}, "VALIDATION_INVALID_TYPE", "title"),
    ("status not in enum", {"status": "finished"}, "VALIDATION_INVALID_VALUE", "status"),
    ("priority not in enum", {"priority": "critical"}, "VALIDATION_INVALID_VALUE", "priority"),
    ("tag pattern", {"tags": ["Bad Tag"]}, "VALIDATION_INVALID_VALUE", "tags[0]"),
    ("tag leading dash", {"tags": ["-x"]}, "VALIDATION_INVALID_VALUE", "tags[0]"),
    ("tag too long", {"tags": ["a" * 33]}, "VALIDATION_INVALID_VALUE", "tags[0]"),
    ("too many tags", {"tags": [f"t{i}" for i in range(21)]}, "VALIDATION_INVALID_VALUE", "tags"),
    ("tags not a list", {"tags": "bug"}, "VALIDATION_INVALID_TYPE", "tags"),
    ("estimate too big", {"metadata": {"estimate_hours": 1000.5}}, "VALIDATION_INVALID_VALUE", "metadata.estimate_hours"),
    ("estimate negative", {"metadata": {"estimate_hours": -1}}, "VALIDATION_INVALID_VALUE", "metadata.estimate_hours"),
    ("estimate wrong type", {"metadata": {"estimate_hours": "two"}}, "VALIDATION_INVALID_TYPE", "metadata.estimate_hours"),
    ("due date impossible", {"metadata": {"due_date": "2026-02-30"}}, "VALIDATION_INVALID_VALUE", "metadata.due_date"),
    ("due date not ISO", {"metadata": {"due_date": "next friday"}}, "VALIDATION_INVALID_VALUE", "metadata.due_date"),
    ("too many labels", {"metadata": {"labels": ["x"] * 21}}, "VALIDATION_INVALID_VALUE", "metadata.labels"),
    ("metadata not an object", {"metadata": "big"}, "VALIDATION_INVALID_TYPE", "metadata"),
    ("unknown metadata field", {"metadata": {"owner": "x"}}, "VALIDATION_UNKNOWN_FIELD", "metadata"),
]


@pytest.mark.parametrize(("extra", "code", "path"), [c[1:] for c in CREATE_TASK_CASES], ids=[c[0] for c in CREATE_TASK_CASES])
def test_create_task_rules(d: Demo, ids: dict[str, str], extra: dict[str, Any], code: str, path: str) -> None:
    e = d.err("create_task", **_task(ids, **extra))
    assert e["code"] == code, e
    assert e["details"]["param_name"] == path, e


def test_boundaries_are_accepted(d: Demo, ids: dict[str, str]) -> None:
    tags = [f"t{i}" for i in range(19)] + ["a" * 32]
    t = d.ok("create_task", **_task(ids, title="x" * 200, tags=tags, metadata={"estimate_hours": 1000, "due_date": "2028-02-29"}))
    assert t["tags"] == tags and t["metadata"] == {"estimate_hours": 1000, "due_date": "2028-02-29"}
    assert d.ok("create_task", **_task(ids, metadata={"estimate_hours": 0}))["metadata"] == {"estimate_hours": 0}


def test_missing_and_unknown_params(d: Demo, ids: dict[str, str]) -> None:
    e = d.err("create_task", project_id=ids["project_id"])
    assert e["code"] == "VALIDATION_MISSING_PARAM" and e["details"]["param_name"] == "title"
    e = d.err("create_task", **_task(ids, force=True))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM" and e["details"]["unknown_params"] == ["force"]
    assert d.code("get_task") == "VALIDATION_MISSING_PARAM"
    assert d.code("list_tasks", owner="me") == "VALIDATION_UNKNOWN_PARAM"
    assert d.code("create_project", name="") == "VALIDATION_INVALID_VALUE"
    assert d.code("create_project", name="x" * 101) == "VALIDATION_INVALID_VALUE"


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"limit": -1}, "VALIDATION_INVALID_VALUE"),
        ({"first": 5, "limit": 5}, "VALIDATION_INVALID_TYPE"),  # cursor and offset paging do not mix
        ({"limit": "ten"}, "VALIDATION_INVALID_TYPE"),
        ({"limit": 2.5}, "VALIDATION_INVALID_TYPE"),
        ({"offset": -1}, "VALIDATION_INVALID_VALUE"),
        ({"status": "open"}, "VALIDATION_INVALID_VALUE"),
        ({"tag": "Not A Tag"}, "VALIDATION_INVALID_VALUE"),
        ({"due_before": "soon"}, "VALIDATION_INVALID_VALUE"),
        ({"fields": ["owner"]}, "VALIDATION_INVALID_VALUE"),
        ({"fields": "everything"}, "VALIDATION_INVALID_VALUE"),
        ({"filter": {"description": "x"}}, "VALIDATION_INVALID_VALUE"),  # not a filter key
        ({"filter": {"status": {"like": "to%"}}}, "VALIDATION_INVALID_VALUE"),
        ({"sort": {"field": "priority"}}, "VALIDATION_INVALID_VALUE"),  # sort by _computed.priority_rank instead
        ({"aggregate": {"x": {"avg": "title"}}}, "VALIDATION_INVALID_VALUE"),
        ({"first": 2, "after": "not-a-cursor"}, "VALIDATION_INVALID_VALUE"),
        ({"after": "not-a-cursor"}, "VALIDATION_INVALID_TYPE"),  # after needs first (PAG §2.3)
        ({"include_archived": "yes"}, "VALIDATION_INVALID_TYPE"),
    ],
)
def test_list_tasks_rules(d: Demo, params: dict[str, Any], code: str) -> None:
    assert d.code("list_tasks", **params) == code


def test_limit_given_as_whole_float_is_accepted(d: Demo) -> None:
    assert d.ok("list_tasks", limit=5.0)["pagination"]["limit"] == 5


def test_page_size_over_the_maximum_is_clamped_with_a_warning(d: Demo) -> None:
    env = d.call("list_tasks", {"limit": 101})
    assert env["success"] is True and env["data"]["pagination"]["limit"] == 100
    assert [(w["code"], w["details"]["original_count"], w["details"]["limit"]) for w in env["warnings"]] == [
        ("VALIDATION_TRUNCATED_WARNING", 101, 100)
    ]
    e = d.err("list_tasks", fields=["title", "owner"])
    assert e["details"]["unknown_fields"] == ["owner"] and "_computed.priority_rank" in e["details"]["valid_fields"]


def test_update_input_rules(d: Demo, ids: dict[str, str]) -> None:
    tid = ids["task_id"]
    # REQ-UPD-005: input is required
    e = d.err("update_task", task_id=tid)
    assert e["code"] == "VALIDATION_MISSING_PARAM" and e["details"]["param_name"] == "input"
    assert d.code("update_project", project_id=ids["project_id"]) == "VALIDATION_MISSING_PARAM"
    # REQ-UPD-006: input is an object
    assert d.code("update_task", task_id=tid, input="done") == "VALIDATION_INVALID_TYPE"
    assert d.code("update_task", task_id=tid, input=["x"]) == "VALIDATION_INVALID_TYPE"
    # REQ-UPD-007: fields validated against the resource schema
    assert d.code("update_task", task_id=tid, input={"title": ""}) == "VALIDATION_INVALID_VALUE"
    assert d.code("update_task", task_id=tid, input={"status": "finished"}) == "VALIDATION_INVALID_VALUE"
    assert d.code("update_task", task_id=tid, input={"tags": ["UPPER"]}) == "VALIDATION_INVALID_VALUE"
    assert d.code("update_task", task_id=tid, input={"metadata": {"estimate_hours": 5000}}) == "VALIDATION_INVALID_VALUE"
    assert d.code("update_task", task_id=tid, input={"metadata": {"due_date": "31/12/2026"}}) == "VALIDATION_INVALID_VALUE"
    assert d.code("update_task", task_id=tid, input={"metadata": {"estimate_hours": "x"}}) == "VALIDATION_INVALID_TYPE"
    # required fields cannot be removed with null
    for field in ("title", "status", "priority", "project_id", "archived"):
        e = d.err("update_task", task_id=tid, input={field: None})
        assert e["code"] == "VALIDATION_INVALID_TYPE", (field, e)
    assert d.code("update_project", project_id=ids["project_id"], input={"name": None}) == "VALIDATION_INVALID_TYPE"
    # REQ-UPD-008: unknown fields inside input → VALIDATION_UNKNOWN_FIELD (not UNKNOWN_PARAM)
    e = d.err("update_task", task_id=tid, input={"colour": "red"})
    assert e["code"] == "VALIDATION_UNKNOWN_FIELD" and e["details"]["unknown_fields"] == ["colour"]
    assert d.code("update_task", task_id=tid, input={"metadata": {"owner": "x"}}) == "VALIDATION_UNKNOWN_FIELD"
    # REQ-UPD-009: identifiers stay at params level, never inside input
    assert d.code("update_task", task_id=tid, input={"task_id": "tsk_other"}) == "VALIDATION_UNKNOWN_FIELD"
    assert d.code("update_project", project_id=ids["project_id"], input={"project_id": "x"}) == "VALIDATION_UNKNOWN_FIELD"
    # params-level unknown keys are still UNKNOWN_PARAM
    assert d.code("update_task", task_id=tid, input={}, title="x") == "VALIDATION_UNKNOWN_PARAM"
    # nothing above changed the task
    assert d.ok("get_task", task_id=tid)["_version"] == 1


def test_note_and_link_rules(d: Demo, ids: dict[str, str]) -> None:
    tid, pid = ids["task_id"], ids["project_id"]
    e = d.err("create_note", body="orphan")
    assert e["code"] == "VALIDATION_MISSING_PARAM" and e["details"]["param_name"] == "task_id"
    e = d.err("create_note", body="both", task_id=tid, project_id=pid)
    assert e["code"] == "VALIDATION_INVALID_VALUE" and e["details"]["param_name"] == "project_id"
    assert d.code("create_note", body="", task_id=tid) == "VALIDATION_INVALID_VALUE"
    assert d.code("search_notes") == "VALIDATION_MISSING_PARAM"
    assert d.code("create_link", from_task_id=tid, to_task_id=tid) == "VALIDATION_INVALID_VALUE"
    other = d.task(pid, "Other")["task_id"]
    assert d.code("create_link", from_task_id=tid, to_task_id=other, link_type="causes") == "VALIDATION_INVALID_VALUE"


def test_execute_rules(d: Demo, ids: dict[str, str]) -> None:
    assert d.code("execute_bulk_status_change", task_ids=[], status="done") == "VALIDATION_INVALID_VALUE"
    assert d.code("execute_bulk_status_change", task_ids=["x"] * 101, status="done") == "VALIDATION_INVALID_VALUE"
    assert d.code("execute_bulk_status_change", task_ids=[ids["task_id"]]) == "VALIDATION_MISSING_PARAM"
    assert d.code("execute_bulk_status_change", task_ids=ids["task_id"], status="done") == "VALIDATION_INVALID_TYPE"
    assert d.code("execute_archive_completed", completed_days_ago=-1) == "VALIDATION_INVALID_VALUE"


def test_endpoint_routing(d: Demo, ids: dict[str, str]) -> None:
    env = d.h.call("tasks_mcpaql_read", {"operation": "delete_task", "params": {"task_id": ids["task_id"]}})
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    assert d.ok("get_task", task_id=ids["task_id"])["task_id"] == ids["task_id"]


def test_error_messages_name_the_problem(d: Demo, ids: dict[str, str]) -> None:
    e = d.err("get_task", task_id="tsk_missing")
    assert e["message"] == "Resource 'task' not found: 'tsk_missing'"
    e = d.err("create_task", **_task(ids, tags=["Bad"]))
    assert "pattern" in e["message"]
