"""The Task Tracker operations: typed Python functions over :mod:`mcpaql.demo.store`.

Each operation is a closure over one open database, registered with the adapter API, so the
parameter schemas, descriptions, examples and types in introspection all come from the
signatures, docstrings and models here. Handlers only translate between models and the
store's dicts; they never touch SQL and never build envelopes.

The ``list_*``/``search_*`` reads return every matching record (``list_tasks``: a
:class:`~.task_sql.TaskQuery` that runs the whole query in SQLite) and declare a
:class:`~mcpaql.protocol.collections.Collection`: the shared collection layer adds ``fields``,
``query``, ``filter``, ``sort``, cursor (``first``/``after``…) or ``limit``/``offset`` paging and
``aggregate``, and shapes the result into ``{items, pageInfo}``. ``get_*`` reads declare
:func:`~mcpaql.protocol.collections.Item` (field selection), and ``query_relationships``
traverses task links.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Awaitable, Callable
from datetime import date
from typing import Annotated, Any

import anyio
from pydantic import Field

from ..adapters.python import Adapter
from ..protocol.collections import AggregationSupport, Collection, Computed, Item, Relationships, query_relationships
from ..protocol.context import Context
from ..protocol.errors import MCPAQLError, invalid_value, missing_param
from ..protocol.lifecycle import Event, lifecycle_info
from . import store
from .models import (
    DeleteResult,
    Description,
    Execution,
    LinkType,
    Note,
    Priority,
    Project,
    ProjectName,
    ProjectPatch,
    ProjectStatus,
    Tag,
    Tags,
    Task,
    TaskDetail,
    TaskEvent,
    TaskLink,
    TaskMetadata,
    TaskPatch,
    TaskStatus,
    Title,
)
from .task_sql import TaskQuery

ADAPTER_NAME = "tasks"
DISPLAY_NAME = "Task Tracker"

IfMatch = Annotated[str, Field(min_length=1, max_length=100, description="An _etag (or _version) from an earlier read")]
TaskIds = Annotated[list[str], Field(min_length=1, max_length=100, description="1–100 task ids")]
NoteBody = Annotated[str, Field(min_length=1, max_length=10_000, description="Note text, 1–10000 characters")]
Author = Annotated[str, Field(min_length=1, max_length=64)]

# The demo's executions follow the one lifecycle table; they run within their request, so there
# is no cancel or retry operation (MCP cancellation still ends one as ``cancelled``).
LIFECYCLE = lifecycle_info(cancel=False, retry=False, progress=True)


def _metadata_validator(raw: dict[str, Any]) -> dict[str, Any]:
    """Re-check merged metadata against the model (normalizes dates, drops empty keys)."""
    return TaskMetadata.model_validate(raw).model_dump(mode="json")


class TaskTracker(Adapter):
    """The demo adapter; ``db`` is its store (for tests and tools that want to look inside)."""

    def __init__(self, db: store.DB, **kw: Any) -> None:
        self.db = db
        super().__init__(**kw, lifespan=db.lifespan)  # the connection closes when serving stops


def make_adapter(db_path: str | os.PathLike[str] | None = None, *, seed: bool = True) -> TaskTracker:
    """Build the Task Tracker adapter over the SQLite file at ``db_path`` (see :func:`store.resolve_path`)."""
    db = store.connect(db_path, seed=seed)
    app = TaskTracker(
        db,
        name=ADAPTER_NAME,
        display_name=DISPLAY_NAME,
        description=(
            "Projects, tasks with status/priority/tags/metadata, links between tasks and notes, persisted in a local SQLite file."
        ),
        concurrency="read-concurrent",
        supports_etag=True,
    )
    _project_operations(app, db)
    _task_operations(app, db)
    _link_and_note_operations(app, db)
    _execute_operations(app, db)
    relationships = query_relationships(_task_graph(db), description=RELATIONSHIPS_DESCRIPTION)
    app.add(dataclasses.replace(relationships, danger_level="safe", examples=RELATIONSHIP_EXAMPLES))
    return app


# ---- collection declarations ---------------------------------------------------------------

RANK = {"urgent": 0, "high": 1, "medium": 2, "low": 3}

TASK_FILTERABLE = [
    "project_id",
    "status",
    "priority",
    "tags",
    "metadata.assignee",
    "metadata.due_date",
    "created_at",
    "updated_at",
]
TASK_SORTABLE = ["created_at", "updated_at", "title", "status", "metadata.due_date"]

TASKS = Collection(
    presets={
        "minimal": ["task_id", "title", "status"],
        "standard": ["task_id", "project_id", "title", "status", "priority", "tags", "metadata", "updated_at"],
    },
    key="task_id",
    searchable=["title", "description"],
    filterable=TASK_FILTERABLE,
    sortable=TASK_SORTABLE,
    computed={
        "priority_rank": Computed(
            lambda r: RANK[r["priority"]], "integer", "0 = urgent … 3 = low", filterable=True, sortable=True
        ),
    },
    aggregate=AggregationSupport(
        groupable_fields=("project_id", "status", "priority", "tags", "metadata.assignee", "metadata.due_date"),
        numeric_fields=("metadata.estimate_hours",),
        comparable_fields=("created_at", "updated_at", "metadata.due_date"),
    ),
)

PROJECTS = Collection(
    presets={"minimal": ["project_id", "name", "status"]},
    key="project_id",
    searchable=["name", "description"],
    filterable=["status", "name", "created_at", "updated_at", "task_counts.total"],
    sortable=["name", "created_at", "updated_at", "task_counts.total"],
    aggregate=AggregationSupport(
        groupable_fields=("status",),
        numeric_fields=(
            "task_counts.total",
            "task_counts.todo",
            "task_counts.in_progress",
            "task_counts.blocked",
            "task_counts.done",
        ),
        comparable_fields=("created_at", "updated_at"),
    ),
)

NOTES = Collection(
    presets={"minimal": ["note_id", "task_id", "body", "created_at"]},
    key="note_id",
    searchable=["body"],
    require_query=True,
    filterable=["task_id", "project_id", "author", "created_at"],
    sortable=["created_at"],  # unsorted: the store's newest first (ties in the same millisecond: last written first)
)

TASK_EVENTS = Collection(
    presets={"minimal": ["event_id", "action", "at"]},
    key="event_id",
    filterable=["action", "at"],
    sortable=["event_id", "at"],
    aggregate=AggregationSupport(groupable_fields=("action",), comparable_fields=("at",)),
)

RELATIONSHIPS_DESCRIPTION = (
    "Follow links between tasks from a root task {element_type: 'task', element_name: <task_id>}: "
    "direction outgoing (links the task starts, e.g. the tasks it blocks), incoming (links pointing at it) or both; "
    "relationship blocks | relates_to | duplicates; depth 1–3. Cycles are reported once and never expanded twice. "
    "Returns root, relationships [{type, direction, target, depth}] and graph {nodes, edges}."
)

RELATIONSHIP_EXAMPLES = (
    {
        "description": "What does this task block, directly or transitively?",
        "request": {
            "operation": "query_relationships",
            "params": {
                "root": {"element_type": "task", "element_name": "tsk_0123456789"},
                "direction": "outgoing",
                "relationship": "blocks",
                "depth": 3,
            },
        },
    },
    {
        "description": "Every task linked to this one, either way, as a graph",
        "request": {
            "operation": "query_relationships",
            "params": {
                "root": {"element_type": "task", "element_name": "tsk_0123456789"},
                "direction": "both",
                "include": ["graph.nodes", "graph.edges"],
            },
        },
    },
)


def _task_graph(db: store.DB) -> Relationships:
    """Task links as a graph: nodes are ``{element_type: "task", element_name: task_id}``."""

    def node(task_id: str) -> dict[str, str]:
        return {"element_type": "task", "element_name": task_id}

    def neighbors(n: dict[str, Any], direction: str) -> list[tuple[str, dict[str, str]]]:
        if n.get("element_type") != "task":
            return []
        return [(kind, node(other)) for kind, other in store.linked_tasks(db, str(n.get("element_name")), direction)]

    def exists(n: dict[str, Any]) -> bool:
        return n.get("element_type") == "task" and store.task_exists(db, str(n.get("element_name")))

    return Relationships(neighbors, types=tuple(t.value for t in LinkType), max_depth=3, exists=exists)


# ---- projects ----------------------------------------------------------------------------


def _project_operations(app: Adapter, db: store.DB) -> None:
    @app.create(danger_level="reversible", examples=[{"name": "Mobile app", "description": "iOS and Android release"}])
    def create_project(name: ProjectName, description: Description | None = None) -> Project:
        """Create a project to group tasks. Project names are unique (case-insensitive).

        Args:
            name: Project name, 1–100 characters, unique.
            description: What the project is about.
        """
        return Project.model_validate(store.create_project(db, name, description))

    @app.read(
        danger_level="safe",
        collection=Item(presets={"minimal": ["project_id", "name", "status"]}),
        examples=[{"project_id": "prj_0123456789"}, {"project_id": "prj_0123456789", "fields": ["name", "task_counts.total"]}],
    )
    def get_project(project_id: str) -> Project:
        """Get one project with its task counts by status.

        Args:
            project_id: The project's id (prj_…).
        """
        return Project.model_validate(store.get_project(db, project_id))

    @app.read(
        danger_level="safe",
        collection=PROJECTS,
        examples=[{}, {"status": "active", "query": "launch", "first": 10}, {"fields": "minimal", "sort": {"field": "name"}}],
    )
    def list_projects(status: ProjectStatus | None = None) -> list[Project]:
        """List projects with their task counts, oldest first unless sorted.

        Args:
            status: Only projects in this status (shortcut for filter {status: ...}).
        """
        return [Project.model_validate(r) for r in store.list_projects(db, status=status)]

    @app.update(
        danger_level="reversible",
        examples=[
            {"project_id": "prj_0123456789", "input": {"description": "Ship by March"}},
            {"project_id": "prj_0123456789", "input": {"status": "archived"}, "if_match": 'W/"3f2a9c0d1e4b5a67"'},
        ],
    )
    def update_project(project_id: str, input: ProjectPatch, if_match: IfMatch | None = None, *, ctx: Context) -> Project:
        """Change a project. Only the fields in input change; null removes the description.

        Args:
            project_id: The project to change.
            input: The fields to change: name, description, status.
            if_match: Only update if the project still has this _etag (or _version); else CONFLICT_VERSION_MISMATCH.
        """
        changes = input.model_dump(mode="json", exclude_unset=True)
        project, changed = store.update_project(db, project_id, changes, if_match)
        if not changed:
            ctx.warn("UPDATE_NO_CHANGES", "The input did not change the project; its version is unchanged.")
        return Project.model_validate(project)

    @app.delete(
        danger_level="destructive",
        examples=[{"project_id": "prj_0123456789"}, {"project_id": "prj_0123456789", "cascade": True}],
    )
    def delete_project(project_id: str, cascade: bool = False, if_match: IfMatch | None = None) -> DeleteResult:
        """Delete a project.
        A project that still has tasks is only deleted with cascade: true, which also deletes its tasks, notes and links.

        Args:
            project_id: The project to delete.
            cascade: Also delete the project's tasks, notes and links.
            if_match: Only delete if the project still has this _etag (or _version).
        """
        removed = store.delete_project(db, project_id, cascade=cascade, if_match=if_match)
        return DeleteResult(resource_type="project", resource_id=project_id, removed=removed)


# ---- tasks -------------------------------------------------------------------------------


def _task_operations(app: Adapter, db: store.DB) -> None:
    @app.create(
        danger_level="reversible",
        examples=[
            {"project_id": "prj_0123456789", "title": "Write release notes"},
            {
                "project_id": "prj_0123456789",
                "title": "Fix login redirect",
                "priority": "urgent",
                "tags": ["bug", "auth"],
                "metadata": {"estimate_hours": 2, "assignee": "alice", "due_date": "2026-12-01"},
            },
        ],
    )
    def create_task(
        project_id: str,
        title: Title,
        description: Description | None = None,
        status: TaskStatus = TaskStatus.todo,
        priority: Priority = Priority.medium,
        tags: Tags | None = None,
        metadata: TaskMetadata | None = None,
    ) -> Task:
        """Create a task in a project.

        Args:
            project_id: The project the task belongs to (prj_…).
            title: Short summary, 1–200 characters.
            description: Longer details.
            status: Initial status.
            priority: How urgent the task is.
            tags: Up to 20 lowercase tags matching ^[a-z0-9][a-z0-9-]{0,31}$.
            metadata: estimate_hours (0–1000), due_date (YYYY-MM-DD), assignee, labels, custom.
        """
        md = metadata.model_dump(mode="json") if metadata is not None else {}
        row = store.create_task(
            db,
            project_id=project_id,
            title=title,
            description=description,
            status=status,
            priority=priority,
            tags=tags,
            metadata=md,
        )
        return Task.model_validate(row)

    @app.read(
        danger_level="safe",
        collection=Item(
            presets={
                "minimal": ["task_id", "title", "status"],
                "summary": ["task_id", "title", "status", "priority", "metadata.assignee", "links"],
            }
        ),
        examples=[{"task_id": "tsk_0123456789"}, {"task_id": "tsk_0123456789", "fields": ["title", "metadata.due_date"]}],
    )
    def get_task(task_id: str) -> TaskDetail:
        """Get one task with its links to other tasks and its 20 newest notes.

        Args:
            task_id: The task's id (tsk_…).
        """
        return TaskDetail.model_validate(store.get_task_detail(db, task_id))

    @app.read(
        danger_level="safe",
        collection=TASKS,
        examples=[
            {},
            {"status": "in_progress", "assignee": "alice"},
            {"project_id": "prj_0123456789", "tag": "bug", "fields": "minimal", "first": 5},
            {
                "filter": {"metadata.due_date": {"lt": "2026-12-01"}, "status": {"ne": "done"}},
                "sort": {"field": "metadata.due_date"},
                "fields": ["title", "metadata.due_date"],
            },
            {"aggregate": {"by_status": {"group_by": "status"}, "effort": {"avg": "metadata.estimate_hours"}}},
        ],
    )
    def list_tasks(
        project_id: str | None = None,
        status: TaskStatus | None = None,
        priority: Priority | None = None,
        tag: Tag | None = None,
        assignee: str | None = None,
        due_before: date | None = None,
        include_archived: bool = False,
    ) -> list[Task]:
        """List tasks: most urgent first, then open before done, then earliest due date (unless sorted).
        The shortcut parameters combine with query, filter, sort, paging and aggregate.

        Args:
            project_id: Only tasks of this project.
            status: Only tasks in this status.
            priority: Only tasks with this priority.
            tag: Only tasks carrying this tag.
            assignee: Only tasks assigned to this person (metadata.assignee, case-insensitive).
            due_before: Only tasks due strictly before this date (YYYY-MM-DD).
            include_archived: Also list tasks archived by execute_archive_completed.
        """
        if project_id is not None:
            store.require_project(db, project_id)
        shortcuts = {
            "project_id": project_id,
            "status": status,
            "priority": priority,
            "tag": tag,
            "assignee": assignee,
            "due_before": due_before.isoformat() if due_before else None,
            "include_archived": include_archived,
        }
        # The collection query runs in SQLite (task_sql.TaskQuery); only the page's rows
        # become Task models.
        return TaskQuery(db, shortcuts, Task.model_validate)  # type: ignore[return-value]

    @app.read(
        danger_level="safe",
        collection=TASK_EVENTS,
        examples=[{"task_id": "tsk_0123456789"}, {"task_id": "tsk_0123456789", "filter": {"action": "updated"}, "last": 5}],
    )
    def list_task_events(task_id: str) -> list[TaskEvent]:
        """List a task's history, oldest first: creation, each update with field-by-field changes, links and notes.

        Args:
            task_id: The task's id.
        """
        return [TaskEvent.model_validate(r) for r in store.list_task_events(db, task_id)]

    @app.update(
        danger_level="reversible",
        examples=[
            {"task_id": "tsk_0123456789", "input": {"status": "done"}},
            {
                "task_id": "tsk_0123456789",
                "input": {"title": "Ship v2", "metadata": {"assignee": "bob", "labels": ["release"], "due_date": None}},
                "if_match": 'W/"3f2a9c0d1e4b5a67"',
            },
        ],
    )
    def update_task(task_id: str, input: TaskPatch, if_match: IfMatch | None = None, *, ctx: Context) -> Task:
        """Change a task: the fields in input are deep-merged into it (CORE §4.5).
        Fields absent from input are kept; nested objects (metadata, metadata.custom) merge key by key.
        Arrays (tags, metadata.labels) are replaced whole, and null removes a field.
        Moving to 'done' sets completed_at; leaving 'done' clears it.

        Args:
            task_id: The task to change.
            input: The fields to change: title, description, status, priority, tags, project_id, archived, metadata.
            if_match: Only update if the task still has this _etag (or _version); else CONFLICT_VERSION_MISMATCH.
        """
        changes = input.model_dump(mode="json", exclude_unset=True)
        task, changed = store.update_task(db, task_id, changes, if_match, validate_metadata=_metadata_validator)
        if not changed:
            ctx.warn("UPDATE_NO_CHANGES", "The input did not change the task; its version is unchanged.")
        return Task.model_validate(task)

    @app.delete(danger_level="destructive", examples=[{"task_id": "tsk_0123456789"}])
    def delete_task(task_id: str, if_match: IfMatch | None = None) -> DeleteResult:
        """Delete a task with its notes, links and history. To keep it but hide it, set input.archived with update_task.

        Args:
            task_id: The task to delete.
            if_match: Only delete if the task still has this _etag (or _version).
        """
        removed = store.delete_task(db, task_id, if_match)
        return DeleteResult(resource_type="task", resource_id=task_id, removed=removed)


# ---- links and notes ---------------------------------------------------------------------


def _link_and_note_operations(app: Adapter, db: store.DB) -> None:
    @app.create(
        danger_level="reversible",
        examples=[{"from_task_id": "tsk_0123456789", "to_task_id": "tsk_9876543210", "link_type": "blocks"}],
    )
    def create_link(from_task_id: str, to_task_id: str, link_type: LinkType = LinkType.relates_to) -> TaskLink:
        """Link two tasks, e.g. "from blocks to". The same link cannot be created twice.

        Args:
            from_task_id: The task the link starts at (for 'blocks': the blocking task).
            to_task_id: The task the link points at (for 'blocks': the blocked task).
            link_type: blocks, relates_to or duplicates.
        """
        return TaskLink.model_validate(store.create_link(db, from_task_id, to_task_id, link_type))

    @app.delete(danger_level="destructive", examples=[{"link_id": "lnk_0123456789"}])
    def delete_link(link_id: str) -> DeleteResult:
        """Remove a link between two tasks (get_task lists a task's links with their ids).

        Args:
            link_id: The link's id (lnk_…).
        """
        store.delete_link(db, link_id)
        return DeleteResult(resource_type="link", resource_id=link_id)

    @app.create(
        danger_level="reversible",
        examples=[
            {"task_id": "tsk_0123456789", "body": "Waiting on design review.", "author": "alice"},
            {"project_id": "prj_0123456789", "body": "Kickoff moved to Monday."},
        ],
    )
    def create_note(
        body: NoteBody, task_id: str | None = None, project_id: str | None = None, author: Author | None = None
    ) -> Note:
        """Add a note to a task or to a project (give exactly one of task_id, project_id).

        Args:
            body: The note text, 1–10000 characters.
            task_id: The task to attach the note to.
            project_id: The project to attach the note to.
            author: Who wrote the note.
        """
        if task_id is None and project_id is None:
            raise missing_param("task_id", "create_note", "string", description="Give 'task_id' or 'project_id'")
        if task_id is not None and project_id is not None:
            raise invalid_value("project_id", "exclusive", "must not be given with 'task_id'; a note belongs to one of them")
        return Note.model_validate(store.create_note(db, body=body, task_id=task_id, project_id=project_id, author=author))

    @app.read(
        danger_level="safe",
        collection=NOTES,
        examples=[{"query": "feedback"}, {"query": '"design review"', "project_id": "prj_0123456789", "first": 5}],
    )
    def search_notes(task_id: str | None = None, project_id: str | None = None) -> list[Note]:
        """Find notes containing any word (or "quoted phrase") of the query, case-insensitive, newest first.

        Args:
            task_id: Only notes on this task.
            project_id: Only notes on this project or on its tasks.
        """
        return [Note.model_validate(r) for r in store.list_notes(db, task_id=task_id, project_id=project_id)]

    @app.delete(danger_level="destructive", examples=[{"note_id": "note_0123456789"}])
    def delete_note(note_id: str) -> DeleteResult:
        """Delete a note permanently; the task's history records that a note was removed.

        Args:
            note_id: The note's id (note_…).
        """
        store.delete_note(db, note_id)
        return DeleteResult(resource_type="note", resource_id=note_id)


# ---- execute -----------------------------------------------------------------------------


class _Run:
    """One execution: persisted in the store, progress mirrored to the client (CORE §8.4)."""

    def __init__(self, db: store.DB, ctx: Context | None, operation: str) -> None:
        self.db = db
        self.ctx = ctx
        self.record = store.start_execution(db, operation)
        self.id: str = self.record["execution_id"]
        self.current = 0
        self.total = 1

    async def step(self, message: str, *, total: int | None = None) -> None:
        if total is not None:
            self.total = max(total, 1)
        self.current = min(self.current + 1, self.total)
        progress = {
            "current": self.current,
            "total": self.total,
            "percentage": round(100 * self.current / self.total, 1),
            "message": message,
        }
        store.record_execution(self.db, self.id, progress=progress)
        if self.ctx is not None:
            await self.ctx.report_progress(self.current, self.total, message)
        await anyio.sleep(0)  # a checkpoint: cancellation (client or session end) lands between steps

    async def run(self, body: Callable[[_Run], Awaitable[dict[str, Any]]]) -> Execution:
        try:
            result = await body(self)
        except anyio.get_cancelled_exc_class():
            store.record_execution(self.db, self.id, event=Event.CANCEL)  # sync: cannot itself be cancelled
            raise
        except MCPAQLError as e:
            store.record_execution(self.db, self.id, event=Event.FAIL, error={"code": e.code, "message": e.message})
            raise
        except Exception:
            store.record_execution(
                self.db,
                self.id,
                event=Event.FAIL,
                error={"code": "INTERNAL_ERROR", "message": "the execution failed unexpectedly"},
            )
            raise
        record = store.record_execution(self.db, self.id, event=Event.COMPLETE, result=result)
        if self.ctx is not None:
            self.ctx.logger.info("execution %s (%s) completed", self.id, record["operation"])
        return Execution.model_validate(record)


def _execute_operations(app: Adapter, db: store.DB) -> None:
    @app.execute(
        lifecycle=LIFECYCLE,
        danger_level="reversible",
        examples=[{}, {"project_id": "prj_0123456789", "completed_days_ago": 14}, {"dry_run": True}],
    )
    async def execute_archive_completed(
        project_id: str | None = None,
        completed_days_ago: Annotated[int, Field(ge=0, le=3650)] = 0,
        dry_run: bool = False,
        *,
        ctx: Context,
    ) -> Execution:
        """Archive done tasks so that list_tasks stops showing them.
        Archived tasks stay readable (get_task; list_tasks with include_archived); update_task input.archived false restores.
        Reports progress per task and returns the finished execution with result {archived, task_ids, dry_run}.

        Args:
            project_id: Only archive tasks of this project (default: all projects).
            completed_days_ago: Only tasks completed at least this many days ago (0: all done tasks).
            dry_run: Only report which tasks would be archived.
        """
        cutoff = store.days_ago(completed_days_ago) if completed_days_ago else None

        async def body(run: _Run) -> dict[str, Any]:
            ids = store.completed_task_ids(db, project_id=project_id, completed_before=cutoff)
            await run.step(f"Found {len(ids)} completed task(s) to archive", total=len(ids) + 2)
            archived: list[str] = []
            for i, tid in enumerate(ids, 1):
                if not dry_run:
                    store.update_task(db, tid, {"archived": True})
                archived.append(tid)
                await run.step(f"{'Would archive' if dry_run else 'Archived'} {tid} ({i}/{len(ids)})")
            await run.step("Done")
            return {"archived": 0 if dry_run else len(archived), "task_ids": archived, "dry_run": dry_run}

        return await _Run(db, ctx, "execute_archive_completed").run(body)

    @app.execute(
        lifecycle=LIFECYCLE,
        danger_level="reversible",
        examples=[{"task_ids": ["tsk_0123456789", "tsk_9876543210"], "status": "done"}],
    )
    async def execute_bulk_status_change(task_ids: TaskIds, status: TaskStatus, *, ctx: Context) -> Execution:
        """Move many tasks to one status, reporting progress per task.
        All ids are checked before anything changes; the result lists which tasks changed and which already had the status.

        Args:
            task_ids: The tasks to change (1–100 ids; duplicates are ignored).
            status: The status to move them to.
        """
        ids = list(dict.fromkeys(task_ids))
        store.require_tasks(db, ids)

        async def body(run: _Run) -> dict[str, Any]:
            await run.step(f"Checked {len(ids)} task(s)", total=len(ids) + 2)
            changed: list[str] = []
            unchanged: list[str] = []
            for i, tid in enumerate(ids, 1):
                _, did = store.update_task(db, tid, {"status": status.value})
                (changed if did else unchanged).append(tid)
                await run.step(f"{tid} → {status.value} ({i}/{len(ids)})")
            await run.step("Done")
            return {"status": status.value, "changed": changed, "unchanged": unchanged}

        return await _Run(db, ctx, "execute_bulk_status_change").run(body)

    @app.read(danger_level="safe", examples=[{"execution_id": "exec_0123456789"}])
    def get_execution(execution_id: str) -> Execution:
        """Get the state of an execution started by an execute_* operation (kept after it finishes).

        Args:
            execution_id: The id returned by the execute_* operation (exec_…).
        """
        return Execution.model_validate(store.get_execution(db, execution_id))
