"""EXECUTE operations of the Task Tracker: progress reporting and the execution lifecycle (REQ-EXEC-*)."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from demo_helpers import Demo, empty_demo_fixture

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


module_demo, d = empty_demo_fixture()  # one adapter build per module, emptied per test


def _done_tasks(d: Demo, n: int, project_id: str | None = None) -> list[str]:
    pid = project_id or d.project()["project_id"]
    return [d.task(pid, f"Done {i}", status="done")["task_id"] for i in range(n)]


def test_archive_completed_reports_progress(d: Demo) -> None:
    done = _done_tasks(d, 3)
    pid = d.ok("get_task", task_id=done[0])["project_id"]
    open_task = d.task(pid, "Still open")["task_id"]
    env, calls = d.progress_call("execute_archive_completed", {})
    assert env["success"] is True, env
    ex = env["data"]
    assert ex["execution_id"].startswith("exec_") and ex["operation"] == "execute_archive_completed"
    assert ex["status"] == "completed" and TS.match(ex["started_at"]) and TS.match(ex["finished_at"])
    assert ex["result"] == {"archived": 3, "task_ids": sorted(done), "dry_run": False}
    # several steps, monotonically increasing, ending at total (REQ-EXEC-006 shape mirrored in `progress`)
    assert len(calls) == 5
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5] and {c[1] for c in calls} == {5}
    assert calls[0][2].startswith("Found 3") and calls[-1][2] == "Done"
    assert ex["progress"] == {"current": 5, "total": 5, "percentage": 100.0, "message": "Done"}
    # archived tasks leave list_tasks but stay readable
    assert [t["task_id"] for t in d.ok("list_tasks")["items"]] == [open_task]
    assert d.ok("list_tasks", include_archived=True)["pageInfo"]["totalCount"] == 4
    assert d.ok("get_task", task_id=done[0])["archived_at"] is not None
    assert d.ok("get_project", project_id=pid)["task_counts"]["total"] == 1
    # the execution persists (REQ-EXEC-014) and can be read back
    assert d.ok("get_execution", execution_id=ex["execution_id"]) == ex
    # restore one with update_task
    restored = d.ok("update_task", task_id=done[0], input={"archived": False})
    assert restored["archived_at"] is None
    assert d.ok("list_tasks", status="done")["pageInfo"]["totalCount"] == 1


def test_archive_dry_run_and_filters(d: Demo) -> None:
    a = _done_tasks(d, 2)
    other = d.project("Other")["project_id"]
    b = _done_tasks(d, 1, other)
    env, calls = d.progress_call("execute_archive_completed", {"project_id": other, "dry_run": True})
    assert env["data"]["result"] == {"archived": 0, "task_ids": b, "dry_run": True}
    assert calls[1][2].startswith("Would archive")
    assert d.ok("list_tasks", status="done")["pageInfo"]["totalCount"] == 3
    # nothing was completed 30+ days ago
    assert d.ok("execute_archive_completed", completed_days_ago=30)["result"]["task_ids"] == []
    assert sorted(d.ok("execute_archive_completed")["result"]["task_ids"]) == sorted(a + b)
    # nothing left to do: still a completed execution with two steps
    env, calls = d.progress_call("execute_archive_completed", {})
    assert env["data"]["result"]["archived"] == 0 and len(calls) == 2
    assert d.code("execute_archive_completed", project_id="prj_nope") == "NOT_FOUND_RESOURCE"


def test_bulk_status_change(d: Demo) -> None:
    pid = d.project()["project_id"]
    ids = [d.task(pid, f"T{i}")["task_id"] for i in range(3)]
    d.ok("update_task", task_id=ids[2], input={"status": "in_progress"})
    env, calls = d.progress_call("execute_bulk_status_change", {"task_ids": [*ids, ids[0]], "status": "in_progress"})
    ex = env["data"]
    assert ex["status"] == "completed"
    assert ex["result"] == {"status": "in_progress", "changed": ids[:2], "unchanged": [ids[2]]}
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5] and calls[-1] == (5, 5, "Done")
    assert {t["status"] for t in d.ok("list_tasks")["items"]} == {"in_progress"}
    assert [e["action"] for e in d.ok("list_task_events", task_id=ids[0])["items"]] == ["created", "updated"]


def test_bulk_status_change_checks_all_ids_first(d: Demo) -> None:
    pid = d.project()["project_id"]
    tid = d.task(pid)["task_id"]
    e = d.err("execute_bulk_status_change", task_ids=[tid, "tsk_missing"], status="done")
    assert e["code"] == "NOT_FOUND_RESOURCE" and e["details"]["resource_id"] == "tsk_missing"
    assert d.ok("get_task", task_id=tid)["status"] == "todo"


def test_progress_without_sink_is_fine(d: Demo) -> None:
    _done_tasks(d, 1)
    assert d.ok("execute_archive_completed")["status"] == "completed"


def test_cancellation_is_recorded(d: Demo) -> None:
    """A cancelled call (client cancel or session end) leaves the execution 'cancelled' (REQ-EXEC-013)."""
    _done_tasks(d, 3)
    engine = d.engine

    async def main() -> None:
        task: asyncio.Task[Any] | None = None

        async def sink(progress: float, total: float | None, message: str | None) -> None:
            if progress == 2 and task is not None:
                task.cancel()

        ctx = engine.context(d.h.session, progress_sink=sink)
        task = asyncio.ensure_future(engine.call_tool("tasks_mcpaql_execute", {"operation": "execute_archive_completed"}, ctx))
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    rows = d.app.db.conn.execute("SELECT execution_id, status, finished_at FROM executions").fetchall()  # type: ignore[attr-defined]
    assert [r["status"] for r in rows] == ["cancelled"] and rows[0]["finished_at"]
    ex = d.ok("get_execution", execution_id=rows[0]["execution_id"])
    assert ex["status"] == "cancelled" and ex["progress"]["current"] == 2
    # one task was archived before the cancel; the rest are untouched
    assert d.ok("list_tasks", status="done")["pageInfo"]["totalCount"] == 2


def test_lifecycle_in_introspection(d: Demo) -> None:
    for op in ("execute_archive_completed", "execute_bulk_status_change"):
        detail = d.ok("introspect", query="operations", name=op)["operation"]
        assert detail["semantic_category"] == "EXECUTE"
        assert detail["lifecycle"] == {
            "states": ["pending", "running", "completed", "failed", "cancelled"],
            "supports_cancel": False,
            "supports_retry": False,
            "progress_reporting": True,
        }
        assert detail["returns"]["name"] == "Execution"
