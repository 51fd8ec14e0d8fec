"""Introspection of the Task Tracker lists every operation and type, with descriptions, parameters and
working examples (CHECKLIST Part C; CORE §8.5 naming)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from demo_helpers import Demo

OPERATIONS = {
    "create_project": "CREATE",
    "create_task": "CREATE",
    "create_note": "CREATE",
    "create_link": "CREATE",
    "get_project": "READ",
    "list_projects": "READ",
    "get_task": "READ",
    "list_tasks": "READ",
    "list_task_events": "READ",
    "search_notes": "READ",
    "get_execution": "READ",
    "query_relationships": "READ",
    "update_project": "UPDATE",
    "update_task": "UPDATE",
    "delete_project": "DELETE",
    "delete_task": "DELETE",
    "delete_note": "DELETE",
    "delete_link": "DELETE",
    "execute_archive_completed": "EXECUTE",
    "execute_bulk_status_change": "EXECUTE",
}
CANONICAL = {
    "CREATE": ("create",),
    "READ": ("get", "list", "search", "query"),
    "UPDATE": ("update",),
    "DELETE": ("delete",),
    "EXECUTE": ("execute",),
}


@pytest.fixture(scope="module")
def d(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    return Demo(tmp_path_factory.mktemp("intro") / "d.db")


def test_lists_all_operations(d: Demo) -> None:
    ops = d.ok("introspect", query="operations")["operations"]
    listed = {o["name"]: o["semantic_category"] for o in ops if o["name"] != "introspect"}
    assert listed == OPERATIONS
    for o in ops:
        assert o["endpoint"] == o["semantic_category"].lower()
        assert o["description"]


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_operation_detail(d: Demo, op: str) -> None:
    detail = d.ok("introspect", query="operations", name=op)["operation"]
    category = OPERATIONS[op]
    assert re.fullmatch(r"[a-z][a-z0-9_]*", op) and op.split("_")[0] in CANONICAL[category]
    assert len(detail["description"]) > 20
    assert detail["examples"], f"{op} has no example"
    for p in detail["parameters"]:
        assert p.get("description"), f"{op}.{p['name']} has no description"
    if category == "UPDATE":
        names = [p["name"] for p in detail["parameters"]]
        assert "input" in names and "if_match" in names
        assert next(p for p in detail["parameters"] if p["name"] == "input")["required"] is True


@pytest.mark.parametrize("op", sorted(OPERATIONS))
def test_every_example_passes_validation(tmp_path: Path, op: str) -> None:
    """Examples use placeholder ids, so they may hit NOT_FOUND_RESOURCE, but never a validation error."""
    d = Demo(tmp_path / "ex.db")
    detail = d.ok("introspect", query="operations", name=op)["operation"]
    for example in detail["examples"]:
        env = d.call(op, example["request"].get("params", {}))
        if not env["success"]:
            assert not env["error"]["code"].startswith("VALIDATION_"), (op, example, env["error"])
            assert env["error"]["code"] == "NOT_FOUND_RESOURCE", (op, example, env["error"])


def _type(d: Demo, name: str) -> dict[str, Any]:
    t = d.ok("introspect", query="types", name=name)["type"]
    assert t is not None, f"type {name} missing"
    return dict(t)


def test_enums_are_types(d: Demo) -> None:
    expected = {
        "TaskStatus": ["todo", "in_progress", "blocked", "done"],
        "Priority": ["low", "medium", "high", "urgent"],
        "ProjectStatus": ["active", "archived"],
        "LinkType": ["blocks", "relates_to", "duplicates"],
        "ExecutionStatus": ["pending", "running", "completed", "failed", "cancelled"],
    }
    listed = {t["name"]: t["kind"] for t in d.ok("introspect", query="types")["types"]}
    for name, values in expected.items():
        assert listed.get(name) == "enum"
        t = _type(d, name)
        assert t["values"] == values and t.get("description")


def test_objects_are_types_with_fields(d: Demo) -> None:
    def fields(name: str) -> dict[str, dict[str, Any]]:
        t = _type(d, name)
        assert t["kind"] == "object" and t.get("description")
        return {f["name"]: f for f in t["fields"]}

    task = fields("Task")
    assert {"task_id", "project_id", "title", "status", "priority", "tags", "metadata", "created_at", "_etag", "_version"} <= set(
        task
    )
    assert task["metadata"]["type"] == "TaskMetadata"
    assert task["created_at"]["format"] == "date-time"
    md = fields("TaskMetadata")
    assert md["estimate_hours"]["minimum"] == 0 and md["estimate_hours"]["maximum"] == 1000
    assert md["due_date"]["format"] == "date"
    assert md["labels"]["type"] == "string[]"
    patch = fields("TaskPatch")
    assert patch["title"]["minLength"] == 1 and patch["title"]["maxLength"] == 200
    assert patch["tags"]["items"]["pattern"] == "^[a-z0-9][a-z0-9-]{0,31}$"
    assert patch["metadata"]["type"] == "TaskMetadataPatch"
    assert all("default" not in f for f in patch.values())  # absent means "keep", not null
    for name in (
        "Project",
        "ProjectPatch",
        "Note",
        "TaskLink",
        "TaskDetail",
        "RelatedTask",
        "Execution",
        "ExecutionProgress",
        "TaskEvent",
        "DeleteResult",
        "TaskCounts",
    ):
        assert fields(name)
    # the shared collection layer's page shapes replaced the demo's own page types
    names = {t["name"] for t in d.ok("introspect", query="types")["types"]}
    assert not names & {"TaskPage", "ProjectPage", "NotePage", "TaskEventPage", "Pagination"}
    assert {"ListTasksField", "ListTasksSort", "GetTaskField"} <= names


def test_collection_operations_advertise_their_controls(d: Demo) -> None:
    detail = d.ok("introspect", query="operations", name="list_tasks")["operation"]
    params = {p["name"]: p for p in detail["parameters"]}
    controls = {"fields", "query", "filter", "sort", "first", "after", "last", "before", "limit", "offset", "aggregate"}
    assert controls <= set(params)
    assert {"status", "tag", "assignee", "due_before", "include_archived"} <= set(params)  # shortcuts stay
    assert detail["returns"]["name"] == "TaskConnection"
    assert detail["computed_fields"] == [
        {"name": "priority_rank", "type": "integer", "description": "0 = urgent … 3 = low", "filterable": True, "sortable": True}
    ]
    agg = detail["aggregation_support"]
    assert agg["supported"] is True and "metadata.estimate_hours" in agg["numeric_fields"] and "status" in agg["groupable_fields"]
    assert "metadata.due_date" in detail["description"] and "_computed.priority_rank" in detail["description"]
    notes = {p["name"]: p for p in d.ok("introspect", query="operations", name="search_notes")["operation"]["parameters"]}
    assert notes["query"]["required"] is True
    item = {p["name"] for p in d.ok("introspect", query="operations", name="get_task")["operation"]["parameters"]}
    assert item == {"task_id", "fields"}
    proto = d.ok("introspect", query="operations")["_protocol"]
    caps = proto["capabilities"]
    assert all(caps[c] for c in ("field_selection", "pagination", "aggregations", "computed_fields", "relationship_queries"))
    assert proto["conformance"] == "level-2"
    rel = d.ok("introspect", query="operations", name="query_relationships")["operation"]
    assert rel["relationship_capabilities"] == {
        "supported": True,
        "directions": ["incoming", "outgoing", "both"],
        "relationship_types": ["blocks", "relates_to", "duplicates"],
        "max_depth": 3,
    }


def test_create_task_parameters(d: Demo) -> None:
    params = {p["name"]: p for p in d.ok("introspect", query="operations", name="create_task")["operation"]["parameters"]}
    assert params["title"]["required"] is True and params["project_id"]["required"] is True
    assert (params["title"]["minLength"], params["title"]["maxLength"]) == (1, 200)
    assert params["status"]["enum"] == ["todo", "in_progress", "blocked", "done"] and params["status"]["default"] == "todo"
    assert params["priority"]["default"] == "medium"
    assert params["metadata"]["type"] == "TaskMetadata"
    assert params["tags"]["items"]["pattern"] == "^[a-z0-9][a-z0-9-]{0,31}$"
    listed = {p["name"]: p for p in d.ok("introspect", query="operations", name="list_tasks")["operation"]["parameters"]}
    assert (listed["first"]["minimum"], listed["first"]["default"]) == (0, 20)
    assert listed["limit"]["minimum"] == 0


def test_danger_levels_and_permissions(d: Demo) -> None:
    for op, cat in OPERATIONS.items():
        spec = d.engine.compiled(op).spec  # type: ignore[union-attr]
        expected = {"READ": "safe", "DELETE": "destructive"}.get(cat, "reversible")
        assert spec.danger_level == expected, op
