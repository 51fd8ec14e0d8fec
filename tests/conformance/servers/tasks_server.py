"""A demo-like MCP-AQL adapter (tasks) served over real stdio or HTTP with the mcpaql core.

Run: ``python tasks_server.py [stdio|http PORT]``; the endpoint mode comes from
``MCP_AQL_ENDPOINT_MODE`` (semantic|single|all) like any mcpaql server.
"""

from __future__ import annotations

import itertools
import os
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from mcpaql import Adapter, MCPAQLError
from mcpaql.protocol.errors import not_found_resource


class Status(StrEnum):
    """Where a task is."""

    todo = "todo"
    done = "done"


class Task(BaseModel):
    """A task."""

    task_id: str
    title: str
    notes: str = ""
    status: Status = Status.todo
    created_at: str


class TaskInput(BaseModel):
    """Fields of a new task."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str, Field(min_length=1, max_length=200, description="Short summary")]
    notes: str = ""
    status: Status = Status.todo


class TaskPatch(BaseModel):
    """Fields to change; absent fields are kept."""

    model_config = ConfigDict(extra="forbid")
    title: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    notes: str | None = None
    status: Status | None = None


class TaskList(BaseModel):
    """A page of tasks."""

    items: list[Task]
    limit: int


app = Adapter("tasks", display_name="Task Tracker")
TASKS: dict[str, Task] = {}
IDS = itertools.count(1)


def _seed() -> None:
    for title in ("Write docs", "Ship it"):
        tid = f"t{next(IDS)}"
        TASKS[tid] = Task(task_id=tid, title=title, created_at="2026-01-01T00:00:00Z")


@app.create(examples=[{"input": {"title": "Buy milk"}}])
def create_task(input: TaskInput) -> Task:
    """Create a task."""
    tid = f"t{next(IDS)}"
    task = Task(task_id=tid, created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), **input.model_dump())
    TASKS[tid] = task
    return task


@app.read(examples=[{"task_id": "t1"}])
def get_task(task_id: str) -> Task:
    """Get one task by id."""
    if task_id not in TASKS:
        raise not_found_resource("Task", task_id)
    return TASKS[task_id]


@app.read
def list_tasks(limit: Annotated[int, Field(ge=1, le=100)] = 20, status: Status | None = None) -> TaskList:
    """List tasks, newest last."""
    items = [t for t in TASKS.values() if status is None or t.status == status][:limit]
    return TaskList(items=items, limit=limit)


if os.environ.get("TASKS_HANDLER_FIELDS") == "1":
    # Field selection done by the handler itself (for when the core offers none): the `fields`
    # parameter is documented like any other, so the suite can observe Level 2 behaviour.
    @app.read
    def search_tasks(
        fields: Annotated[list[str] | None, Field(description="Task fields to return, e.g. ['title']")] = None,
    ) -> dict[str, list[dict[str, object]]]:
        """Search tasks; `fields` selects which task fields come back."""
        rows = [t.model_dump(mode="json") for t in TASKS.values()]
        if fields:
            rows = [{k: v for k, v in r.items() if k in fields} for r in rows]
        return {"items": rows}

    app.capabilities["field_selection"] = True


@app.update
def update_task(task_id: str, input: TaskPatch) -> Task:
    """Change a task; fields absent from input are kept. created_at and task_id are read-only."""
    if task_id not in TASKS:
        raise not_found_resource("Task", task_id)
    patch = {k: v for k, v in input.model_dump(exclude_unset=True).items() if v is not None}
    TASKS[task_id] = TASKS[task_id].model_copy(update=patch)
    return TASKS[task_id]


@app.delete
def delete_task(task_id: str) -> dict[str, bool]:
    """Delete a task."""
    if TASKS.pop(task_id, None) is None:
        raise not_found_resource("Task", task_id)
    return {"deleted": True}


@app.execute
def archive_done(older_than_days: int) -> dict[str, int]:
    """Archive finished tasks older than a number of days (never called by the suite)."""
    raise MCPAQLError("PERMISSION_DENIED", "Permission denied: 'archiving is disabled in this demo'")


def main() -> None:
    _seed()
    engine = app.engine()
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        from mcpaql.mcp.transports import serve_http

        serve_http(engine, port=int(sys.argv[2]))
    else:
        from mcpaql.mcp.transports import run_stdio

        run_stdio(engine)


if __name__ == "__main__":
    main()
