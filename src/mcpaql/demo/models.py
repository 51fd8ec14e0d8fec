"""Types of the Task Tracker demo: enums, resources, inputs and patches.

They are ordinary pydantic models, so the adapter API turns them into parameter schemas and
``introspect types`` entries. Field constraints here *are* the validation rules an agent sees
(title 1–200 characters, estimate 0–1000 hours, tag pattern, at most 20 tags, ISO dates).
Patch models forbid unknown keys (``VALIDATION_UNKNOWN_FIELD``) and mark fields that cannot
be removed as non-nullable, so ``null`` there is a type error rather than a silent removal.
"""

from __future__ import annotations

from datetime import date
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer

# ---- enums ---------------------------------------------------------------------------------


class TaskStatus(StrEnum):
    """Where a task is in its workflow."""

    todo = "todo"
    in_progress = "in_progress"
    blocked = "blocked"
    done = "done"


class Priority(StrEnum):
    """How urgent a task is (list_tasks sorts urgent first)."""

    low = "low"
    medium = "medium"
    high = "high"
    urgent = "urgent"


class ProjectStatus(StrEnum):
    """Whether a project is in use or archived."""

    active = "active"
    archived = "archived"


class LinkType(StrEnum):
    """How two tasks relate: 'blocks' (from blocks to), 'relates_to', 'duplicates' (from duplicates to)."""

    blocks = "blocks"
    relates_to = "relates_to"
    duplicates = "duplicates"


class LinkDirection(StrEnum):
    """Seen from one task: 'outgoing' links start at it, 'incoming' links point at it."""

    outgoing = "outgoing"
    incoming = "incoming"


class ExecutionStatus(StrEnum):
    """Core execution lifecycle states (CORE §8.4.1)."""

    pending = "pending"
    running = "running"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"


# ---- reusable field types ------------------------------------------------------------------

TAG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,31}$"
MAX_TAGS = 20

Tag = Annotated[str, Field(pattern=TAG_PATTERN, description="Lowercase tag: letters, digits and '-', 1–32 characters")]
Tags = Annotated[list[Tag], Field(max_length=MAX_TAGS, description="Up to 20 tags (duplicates are dropped)")]
Title = Annotated[str, Field(min_length=1, max_length=200, description="Task title, 1–200 characters")]
Description = Annotated[str, Field(max_length=10_000, description="Free text, up to 10000 characters")]
ProjectName = Annotated[str, Field(min_length=1, max_length=100, description="Project name, 1–100 characters, unique")]
EstimateHours = Annotated[float, Field(ge=0, le=1000, description="Estimated effort in hours, 0–1000")]
Assignee = Annotated[str, Field(min_length=1, max_length=64, description="Who works on the task")]
Label = Annotated[str, Field(min_length=1, max_length=50)]
Labels = Annotated[list[Label], Field(max_length=20, description="Free-text display labels, up to 20")]
Timestamp = Annotated[str, Field(description="ISO 8601 UTC timestamp with 'Z'", json_schema_extra={"format": "date-time"})]


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if v is not None}


def _no_defaults(schema: dict[str, Any]) -> None:
    """Input-only models: an absent field means "leave as is", not "null", so advertise no default."""
    for prop in (schema.get("properties") or {}).values():
        prop.pop("default", None)


_INPUT = ConfigDict(extra="forbid", json_schema_extra=_no_defaults)


# ---- tasks ---------------------------------------------------------------------------------


class TaskMetadata(BaseModel):
    """Planning details of a task. Absent fields are omitted from responses."""

    model_config = _INPUT

    estimate_hours: EstimateHours | None = None
    due_date: date | None = Field(None, description="Due date, ISO 8601 date (YYYY-MM-DD)")
    assignee: Assignee | None = None
    labels: Labels | None = None
    custom: dict[str, Any] | None = Field(None, description="Free-form key/value data; updates deep-merge into it")

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: Any) -> dict[str, Any]:
        return _drop_none(handler(self))


class TaskMetadataPatch(BaseModel):
    """Changes to task metadata: keys present are set, absent keys are kept, null removes a key."""

    model_config = _INPUT

    estimate_hours: EstimateHours | None = None
    due_date: date | None = Field(None, description="Due date, ISO 8601 date (YYYY-MM-DD); null removes it")
    assignee: Assignee | None = None
    labels: Labels | None = Field(None, description="Replaces the whole list (arrays are not merged)")
    custom: dict[str, Any] | None = Field(None, description="Merged key by key; a null value removes that key")


# In TaskPatch and ProjectPatch, a field typed ``str`` (not ``str | None``) with default None
# may be left out but may not be null: None only marks "not given" (exclude_unset), and
# the JSON schema keeps the non-null type. Pydantic's ``Field`` typing cannot say that,
# hence the narrow ``type: ignore[assignment]`` on those fields.


class TaskPatch(BaseModel):
    """The `input` of update_task. Objects merge, arrays replace, null removes (CORE §4.5)."""

    model_config = _INPUT

    title: str = Field(None, min_length=1, max_length=200, description="New title, 1–200 characters")  # type: ignore[assignment]
    description: Description | None = Field(None, description="New description; null removes it")
    status: TaskStatus = Field(None, description="New status (moving to 'done' sets completed_at)")  # type: ignore[assignment]
    priority: Priority = Field(None, description="New priority")  # type: ignore[assignment]
    tags: Tags | None = Field(None, description="Replaces all tags; null or [] clears them")
    project_id: str = Field(None, min_length=1, description="Move the task to another project")  # type: ignore[assignment]
    archived: bool = Field(None, description="false restores an archived task; true archives it")  # type: ignore[assignment]
    metadata: TaskMetadataPatch | None = Field(None, description="Deep-merged into the task's metadata; null clears it")


class Task(BaseModel):
    """A unit of work inside a project."""

    model_config = ConfigDict(populate_by_name=True)

    task_id: str
    project_id: str
    title: str
    description: str | None = None
    status: TaskStatus
    priority: Priority
    tags: list[str] = Field(default_factory=list)
    # pydantic's stub types default_factory as a 0-arg | 1-arg callable union that mypy cannot solve for a model class
    metadata: TaskMetadata = Field(default_factory=TaskMetadata)  # type: ignore[arg-type]
    created_at: Timestamp
    updated_at: Timestamp
    completed_at: Timestamp | None = Field(None, description="When the task last moved to 'done'")
    archived_at: Timestamp | None = Field(None, description="Set by execute_archive_completed; hidden from list_tasks")
    version: int = Field(alias="_version", description="Increments on every change")
    etag: str = Field(alias="_etag", description="Pass as if_match to update or delete only this version")


class TaskLink(BaseModel):
    """A directed relation between two tasks."""

    link_id: str
    from_task_id: str
    to_task_id: str
    link_type: LinkType
    created_at: Timestamp


class RelatedTask(BaseModel):
    """A link seen from one task, with the other task's headline."""

    link_id: str
    link_type: LinkType
    direction: LinkDirection
    task_id: str = Field(description="The task at the other end of the link")
    title: str
    status: TaskStatus


class Note(BaseModel):
    """A timestamped note attached to a task or a project."""

    note_id: str
    task_id: str | None = None
    project_id: str | None = None
    body: str
    author: str | None = None
    created_at: Timestamp


class TaskDetail(Task):
    """A task with its links and its most recent notes."""

    links: list[RelatedTask] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list, description="Newest first, at most 20")
    note_count: int = 0


# ---- projects ------------------------------------------------------------------------------


class TaskCounts(BaseModel):
    """How many non-archived tasks a project has in each status."""

    todo: int = 0
    in_progress: int = 0
    blocked: int = 0
    done: int = 0
    total: int = 0


class Project(BaseModel):
    """A named group of tasks."""

    model_config = ConfigDict(populate_by_name=True)

    project_id: str
    name: str
    description: str | None = None
    status: ProjectStatus
    task_counts: TaskCounts = Field(default_factory=TaskCounts)
    created_at: Timestamp
    updated_at: Timestamp
    version: int = Field(alias="_version", description="Increments on every change")
    etag: str = Field(alias="_etag", description="Pass as if_match to update or delete only this version")


class ProjectPatch(BaseModel):
    """The `input` of update_project (null removes the description)."""

    model_config = _INPUT

    name: str = Field(None, min_length=1, max_length=100, description="New unique name, 1–100 characters")  # type: ignore[assignment]
    description: Description | None = Field(None, description="New description; null removes it")
    status: ProjectStatus = Field(None, description="'archived' hides nothing but marks the project inactive")  # type: ignore[assignment]


# ---- history and results ---------------------------------------------------------------


class TaskEvent(BaseModel):
    """One entry of a task's history."""

    event_id: int
    task_id: str
    action: str = Field(description="created | updated | linked | unlinked | noted | note_deleted")
    changes: dict[str, Any] = Field(default_factory=dict, description="field → {from, to} for updates")
    at: Timestamp


class DeleteResult(BaseModel):
    """What a delete removed."""

    deleted: bool = True
    resource_type: str
    resource_id: str
    removed: dict[str, int] = Field(default_factory=dict, description="Counts of dependent records removed with it")


class ExecutionProgress(BaseModel):
    """Progress of an execution (CORE §8.4.3)."""

    current: int
    total: int
    percentage: float
    message: str | None = None


class ExecutionError(BaseModel):
    """Why an execution failed."""

    code: str
    message: str


class Execution(BaseModel):
    """State of an EXECUTE run (CORE §8.4.3); completed runs persist and can be read with get_execution."""

    execution_id: str
    operation: str
    status: ExecutionStatus
    started_at: Timestamp
    finished_at: Timestamp | None = None
    progress: ExecutionProgress | None = None
    result: dict[str, Any] | None = None
    error: ExecutionError | None = None
