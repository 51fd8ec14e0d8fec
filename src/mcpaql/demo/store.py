"""SQLite persistence for the Task Tracker demo: plain functions over a :class:`DB`, returning dicts.

The file is opened in WAL mode and created (schema and, by default, sample data) on first use.
Every write runs in one transaction under the DB's lock, so a precondition check (``if_match``)
and the write it guards are atomic. Functions raise :class:`MCPAQLError` for domain failures
(not found, duplicate, stale version) and never return partial state.

This module must not know about the adapter API or MCP: the operations in ``operations.py`` call
these functions, and the shared collection layer (:mod:`mcpaql.protocol.collections`) does the
text search, filtering, sorting, paging and projection of what the ``list_*`` functions return;
``list_tasks``' queries run in SQL instead (``task_sql.py``, over :func:`task_filter`, the
generated order columns and the indexes declared here).
Merging (:func:`mcpaql.protocol.update.apply_patch`) and ``if_match`` checks
(:func:`mcpaql.protocol.concurrency.check_if_match`) are the protocol's shared helpers; ``_etag``
is :func:`mcpaql.protocol.concurrency.with_etag` over the stored fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from ..config import settings
from ..protocol.concurrency import check_if_match, with_etag
from ..protocol.errors import MCPAQLError, invalid_value, not_found_resource
from ..protocol.lifecycle import TERMINAL, Event, State, apply, core_state
from ..protocol.update import apply_patch

SCHEMA_VERSION = 1
ENV_DB = "MCPAQL_DEMO_DB"
DEFAULT_DB = "~/.local/share/mcpaql/demo.db"

STATUSES = ("todo", "in_progress", "blocked", "done")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projects (
    project_id  TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    name_key    TEXT NOT NULL UNIQUE,
    description TEXT,
    status      TEXT NOT NULL DEFAULT 'active',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    version     INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS tasks (
    task_id      TEXT PRIMARY KEY,
    project_id   TEXT NOT NULL REFERENCES projects(project_id) ON DELETE CASCADE,
    title        TEXT NOT NULL,
    description  TEXT,
    status       TEXT NOT NULL,
    priority     TEXT NOT NULL,
    tags         TEXT NOT NULL DEFAULT '[]',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT,
    archived_at  TEXT,
    version      INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS tasks_project ON tasks(project_id, status);
CREATE TABLE IF NOT EXISTS notes (
    note_id    TEXT PRIMARY KEY,
    task_id    TEXT REFERENCES tasks(task_id) ON DELETE CASCADE,
    project_id TEXT REFERENCES projects(project_id) ON DELETE CASCADE,
    body       TEXT NOT NULL,
    author     TEXT,
    created_at TEXT NOT NULL,
    CHECK ((task_id IS NULL) <> (project_id IS NULL))
);
CREATE INDEX IF NOT EXISTS notes_task ON notes(task_id);
CREATE TABLE IF NOT EXISTS links (
    link_id      TEXT PRIMARY KEY,
    from_task_id TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
    to_task_id   TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
    link_type    TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    UNIQUE (from_task_id, to_task_id, link_type)
);
CREATE TABLE IF NOT EXISTS task_events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id  TEXT NOT NULL REFERENCES tasks(task_id) ON DELETE CASCADE,
    action   TEXT NOT NULL,
    changes  TEXT NOT NULL DEFAULT '{}',
    at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS task_events_task ON task_events(task_id, event_id);
CREATE TABLE IF NOT EXISTS executions (
    execution_id TEXT PRIMARY KEY,
    operation    TEXT NOT NULL,
    status       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT,
    progress     TEXT,
    result       TEXT,
    error        TEXT
);
"""


# The task fields list_tasks filters, sorts and groups by in SQL (demo/task_sql.py), and the
# store's default order. The default order's parts are virtual generated columns (o_rank,
# o_done, o_due): SQLite seeks an index with a row-value comparison on columns, not on
# expressions, and keyset pages need that seek. The indexes serve each sort (both directions,
# ties by task_id) and the default order, so a page costs the same at any depth.
RANK_SQL = "(CASE priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END)"
DONE_SQL = "(CASE status WHEN 'done' THEN 1 ELSE 0 END)"
DUE_SQL = "json_extract(metadata, '$.due_date')"
DUE_ORDER_SQL = f"coalesce({DUE_SQL}, '9999-12-31')"
ASSIGNEE_SQL = "json_extract(metadata, '$.assignee')"
ESTIMATE_SQL = "json_extract(metadata, '$.estimate_hours')"
ORDER_COLUMNS = {"o_rank": ("INTEGER", RANK_SQL), "o_done": ("INTEGER", DONE_SQL), "o_due": ("TEXT", f"({DUE_ORDER_SQL})")}
DEFAULT_ORDER = ["o_rank", "o_done", "o_due", "created_at"]  # then rowid


def _task_indexes() -> list[str]:
    out = [
        f"CREATE INDEX IF NOT EXISTS tasks_default_order ON tasks({', '.join(DEFAULT_ORDER)});",
        "CREATE INDEX IF NOT EXISTS tasks_archived ON tasks(archived_at);",
        # covers the usual filters, so a page's totalCount is counted in the index alone
        "CREATE INDEX IF NOT EXISTS tasks_filters ON tasks(status, priority, archived_at);",
    ]
    sorts = {"created": "created_at", "updated": "updated_at", "title": "title", "status": "status", "rank": "o_rank"}
    for name, expr in sorts.items():
        out.append(f"CREATE INDEX IF NOT EXISTS tasks_by_{name} ON tasks({expr}, task_id);")
        out.append(f"CREATE INDEX IF NOT EXISTS tasks_by_{name}_desc ON tasks({expr} DESC, task_id);")
    out.append(f"CREATE INDEX IF NOT EXISTS tasks_by_due ON tasks(({DUE_SQL} IS NULL), {DUE_SQL}, task_id);")
    out.append(f"CREATE INDEX IF NOT EXISTS tasks_by_due_desc ON tasks(({DUE_SQL} IS NULL) DESC, {DUE_SQL} DESC, task_id);")
    return out


def _migrate(conn: sqlite3.Connection) -> None:
    """Add the generated order columns and the indexes to a file created before them (and to
    a new one); then give the query planner statistics if it has none (a sampled ANALYZE)."""
    have = {r[1] for r in conn.execute("PRAGMA table_xinfo(tasks)")}
    for name, (kind, expr) in ORDER_COLUMNS.items():
        if name not in have:
            conn.execute(f"ALTER TABLE tasks ADD COLUMN {name} {kind} GENERATED ALWAYS AS {expr} VIRTUAL")
    for statement in _task_indexes():
        conn.execute(statement)
    analyze(conn, only_if_missing=True)


def analyze(conn: sqlite3.Connection, *, only_if_missing: bool = False) -> None:
    """``ANALYZE`` (about 0.25 s per 100,000 tasks): without statistics, or with sampled ones,
    SQLite may sort a whole filtered set instead of walking the sort's index (e.g.
    ``status IN (…) ORDER BY updated_at DESC LIMIT 20``: 36 ms instead of 0.3 ms)."""
    if only_if_missing:
        stat = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()
        if stat is not None or conn.execute("SELECT 1 FROM tasks LIMIT 1").fetchone() is None:
            return
    conn.execute("PRAGMA analysis_limit = 0")
    conn.execute("ANALYZE")


def _lower(value: Any) -> Any:
    """``aql_lower``: Python's ``str.lower`` in SQL (SQLite's ``lower`` folds ASCII only), so
    case-insensitive matching in SQL agrees with the shared collection layer's."""
    return value.lower() if isinstance(value, str) else None


# ---- connection --------------------------------------------------------------------------


@dataclass(eq=False)
class DB:
    """One SQLite connection plus the lock that serializes its transactions."""

    conn: sqlite3.Connection
    path: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    closed: bool = False

    @contextlib.contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: committed on success, rolled back on any exception."""
        with self.lock:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                self.conn.rollback()
                raise
            self.conn.commit()

    @contextlib.contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            yield self.conn

    def close(self) -> None:
        with self.lock:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("PRAGMA optimize")  # SQLite's advice: refresh statistics on close
            self.conn.close()
            self.closed = True

    def reopen(self) -> None:
        """Open the file again after :meth:`close` (a server served twice in one process)."""
        with self.lock:
            if self.closed:
                self.conn = _open(Path(self.path))
                self.closed = False

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[DB]:
        """The adapter lifespan: the connection is open while serving and closed after."""
        self.reopen()
        try:
            yield self
        finally:
            self.close()


def resolve_path(db_path: str | os.PathLike[str] | None = None) -> Path:
    """Argument, else ``$MCPAQL_DEMO_DB``, else ``~/.local/share/mcpaql/demo.db``."""
    raw = os.fspath(db_path) if db_path is not None else settings().demo_db or DEFAULT_DB
    return Path(raw).expanduser()


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    conn.row_factory = sqlite3.Row
    conn.create_function("aql_lower", 1, _lower, deterministic=True)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def connect(db_path: str | os.PathLike[str] | None = None, *, seed: bool = True) -> DB:
    """Open (creating if needed) the demo database; a brand-new file gets the sample project."""
    if sqlite3.sqlite_version_info < (3, 31):
        raise RuntimeError(f"the demo needs SQLite 3.31 or newer (generated columns); this Python has {sqlite3.sqlite_version}")
    path = resolve_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = _open(path)
    db = DB(conn, str(path))
    conn.executescript("BEGIN IMMEDIATE;\n" + _SCHEMA + "\nCOMMIT;")
    with db.tx() as c:
        _migrate(c)
    with db.tx() as c:
        # INSERT OR IGNORE decides "brand-new" atomically, even if two processes open the file at once.
        cur = c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        fresh = cur.rowcount == 1
        if fresh:
            c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('created_at', ?)", (now(),))
    if fresh and seed:
        seed_sample(db)
    return db


# ---- small helpers -----------------------------------------------------------------------


def now() -> str:
    """Current UTC time, ISO 8601 with millisecond precision and a 'Z' suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def days_ago(days: int) -> str:
    """The UTC timestamp ``days`` days before now, in the same format as :func:`now`."""
    return (datetime.now(UTC) - timedelta(days=days)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(5)}"


# ---- projects ----------------------------------------------------------------------------


def _project_stored(row: sqlite3.Row) -> dict[str, Any]:
    """The project's own fields with ``_etag``: its task counts changing is not a change of the project."""
    return with_etag(
        {
            "project_id": row["project_id"],
            "name": row["name"],
            "description": row["description"],
            "status": row["status"],
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "_version": row["version"],
        }
    )


def _project_dict(conn: sqlite3.Connection, row: sqlite3.Row) -> dict[str, Any]:
    counts = {s: 0 for s in STATUSES}
    for r in conn.execute(
        "SELECT status, COUNT(*) FROM tasks WHERE project_id = ? AND archived_at IS NULL GROUP BY status",
        (row["project_id"],),
    ):
        counts[r[0]] = r[1]
    return {**_project_stored(row), "task_counts": {**counts, "total": sum(counts.values())}}


def _project_row(conn: sqlite3.Connection, project_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM projects WHERE project_id = ?", (project_id,)).fetchone()
    if row is None:
        raise not_found_resource("project", project_id)
    return row


def _name_taken(conn: sqlite3.Connection, name: str, except_id: str | None = None) -> None:
    row = conn.execute("SELECT project_id FROM projects WHERE name_key = ?", (name.strip().casefold(),)).fetchone()
    if row is not None and row[0] != except_id:
        raise MCPAQLError(
            "CONFLICT_ALREADY_EXISTS",
            f"A project named '{name.strip()}' already exists ('{row[0]}'). Choose another name or use the existing project.",
            {"resource_type": "project", "resource_id": row[0], "field": "name"},
        )


def create_project(db: DB, name: str, description: str | None = None) -> dict[str, Any]:
    ts = now()
    pid = new_id("prj")
    with db.tx() as c:
        _name_taken(c, name)
        c.execute(
            "INSERT INTO projects(project_id, name, name_key, description, status, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 'active', ?, ?)",
            (pid, name.strip(), name.strip().casefold(), description, ts, ts),
        )
        return _project_dict(c, _project_row(c, pid))


def get_project(db: DB, project_id: str) -> dict[str, Any]:
    with db.read() as c:
        return _project_dict(c, _project_row(c, project_id))


def list_projects(db: DB, *, status: str | None = None) -> list[dict[str, Any]]:
    """Every project (optionally in one status), oldest first."""
    where, args = ("WHERE status = ?", [status]) if status else ("", [])
    with db.read() as c:
        rows = c.execute(f"SELECT * FROM projects {where} ORDER BY created_at, rowid", args).fetchall()
        return [_project_dict(c, r) for r in rows]


def update_project(db: DB, project_id: str, changes: dict[str, Any], if_match: str | None = None) -> tuple[dict[str, Any], bool]:
    """Apply ``changes`` (top-level fields; ``None`` removes). Returns (project, changed)."""
    with db.tx() as c:
        row = _project_row(c, project_id)
        check_if_match(_project_stored(row), if_match, resource_type="project", resource_id=project_id)
        current = {"name": row["name"], "description": row["description"], "status": row["status"]}
        merged = apply_patch({k: v for k, v in current.items() if v is not None}, changes)
        if merged.get("name") and merged["name"].strip() != row["name"]:
            _name_taken(c, merged["name"], project_id)
        new = {"name": merged["name"].strip(), "description": merged.get("description"), "status": merged["status"]}
        if new == current:
            return _project_dict(c, row), False
        c.execute(
            "UPDATE projects SET name = ?, name_key = ?, description = ?, status = ?, updated_at = ?, "
            "version = version + 1 WHERE project_id = ?",
            (new["name"], new["name"].casefold(), new["description"], new["status"], now(), project_id),
        )
        return _project_dict(c, _project_row(c, project_id)), True


def delete_project(db: DB, project_id: str, *, cascade: bool = False, if_match: str | None = None) -> dict[str, int]:
    """Delete a project; with ``cascade`` its tasks, notes and links go too. Returns removed counts."""
    with db.tx() as c:
        row = _project_row(c, project_id)
        check_if_match(_project_stored(row), if_match, resource_type="project", resource_id=project_id)
        n_tasks = c.execute("SELECT COUNT(*) FROM tasks WHERE project_id = ?", (project_id,)).fetchone()[0]
        if n_tasks and not cascade:
            raise invalid_value(
                "cascade",
                "requires_cascade",
                f"must be true to delete project '{project_id}', which still has {n_tasks} task(s); "
                "pass cascade: true to delete them as well, or move the tasks first with update_task",
                task_count=n_tasks,
            )
        n_notes = c.execute(
            "SELECT COUNT(*) FROM notes WHERE project_id = ? OR task_id IN (SELECT task_id FROM tasks WHERE project_id = ?)",
            (project_id, project_id),
        ).fetchone()[0]
        n_links = c.execute(
            "SELECT COUNT(*) FROM links WHERE from_task_id IN (SELECT task_id FROM tasks WHERE project_id = ?) "
            "OR to_task_id IN (SELECT task_id FROM tasks WHERE project_id = ?)",
            (project_id, project_id),
        ).fetchone()[0]
        c.execute("DELETE FROM projects WHERE project_id = ?", (project_id,))
        return {"tasks": n_tasks, "notes": n_notes, "links": n_links}


# ---- tasks -------------------------------------------------------------------------------


def task_dict(row: sqlite3.Row) -> dict[str, Any]:
    """A task row as the stored record with its ``_etag`` (computed here, per row asked for)."""
    return with_etag(
        {
            "task_id": row["task_id"],
            "project_id": row["project_id"],
            "title": row["title"],
            "description": row["description"],
            "status": row["status"],
            "priority": row["priority"],
            "tags": json.loads(row["tags"]),
            "metadata": json.loads(row["metadata"]),
            "created_at": row["created_at"],
            "updated_at": row["updated_at"],
            "completed_at": row["completed_at"],
            "archived_at": row["archived_at"],
            "_version": row["version"],
        }
    )


def _task_row(conn: sqlite3.Connection, task_id: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        raise not_found_resource("task", task_id)
    return row


def _event(
    conn: sqlite3.Connection, task_id: str, action: str, changes: dict[str, Any] | None = None, at: str | None = None
) -> None:
    conn.execute(
        "INSERT INTO task_events(task_id, action, changes, at) VALUES (?, ?, ?, ?)",
        (task_id, action, json.dumps(changes or {}), at or now()),
    )


def _clean_tags(tags: list[str] | None) -> list[str]:
    return list(dict.fromkeys(tags or []))


def create_task(
    db: DB,
    *,
    project_id: str,
    title: str,
    description: str | None = None,
    status: str = "todo",
    priority: str = "medium",
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    ts = now()
    tid = new_id("tsk")
    with db.tx() as c:
        _project_row(c, project_id)
        c.execute(
            "INSERT INTO tasks(task_id, project_id, title, description, status, priority, tags, metadata, "
            "created_at, updated_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tid,
                project_id,
                title,
                description,
                status,
                priority,
                json.dumps(_clean_tags(tags)),
                json.dumps(metadata or {}),
                ts,
                ts,
                ts if status == "done" else None,
            ),
        )
        _event(c, tid, "created", {"title": {"to": title}, "status": {"to": status}}, ts)
        return task_dict(_task_row(c, tid))


def get_task(db: DB, task_id: str) -> dict[str, Any]:
    with db.read() as c:
        return task_dict(_task_row(c, task_id))


def get_task_detail(db: DB, task_id: str, note_limit: int = 20) -> dict[str, Any]:
    """The task plus its links (both directions) and newest notes."""
    with db.read() as c:
        task = task_dict(_task_row(c, task_id))
        links = []
        for r in c.execute(
            "SELECT l.link_id, l.link_type, 'outgoing' AS direction, t.task_id, t.title, t.status "
            "FROM links l JOIN tasks t ON t.task_id = l.to_task_id WHERE l.from_task_id = ? "
            "UNION ALL "
            "SELECT l.link_id, l.link_type, 'incoming', t.task_id, t.title, t.status "
            "FROM links l JOIN tasks t ON t.task_id = l.from_task_id WHERE l.to_task_id = ? "
            "ORDER BY 1",
            (task_id, task_id),
        ):
            links.append(dict(r))
        notes = [
            _note_dict(r)
            for r in c.execute(
                "SELECT * FROM notes WHERE task_id = ? ORDER BY created_at DESC, rowid DESC LIMIT ?", (task_id, note_limit)
            )
        ]
        count = c.execute("SELECT COUNT(*) FROM notes WHERE task_id = ?", (task_id,)).fetchone()[0]
        return {**task, "links": links, "notes": notes, "note_count": count}


_TASK_ORDER = ", ".join([*DEFAULT_ORDER, "rowid"])


def task_filter(
    *,
    project_id: str | None = None,
    status: str | None = None,
    priority: str | None = None,
    tag: str | None = None,
    assignee: str | None = None,
    due_before: str | None = None,
    include_archived: bool = False,
) -> tuple[str, list[Any]]:
    """The ``WHERE`` condition (and its arguments) of :func:`list_tasks`' filters."""
    where: list[str] = []
    args: list[Any] = []
    if project_id is not None:
        where.append("project_id = ?")
        args.append(project_id)
    if status is not None:
        where.append("status = ?")
        args.append(status)
    if priority is not None:
        where.append("priority = ?")
        args.append(priority)
    if tag is not None:
        where.append("EXISTS (SELECT 1 FROM json_each(tasks.tags) WHERE json_each.value = ?)")
        args.append(tag)
    if assignee is not None:
        where.append(f"lower({ASSIGNEE_SQL}) = ?")
        args.append(assignee.casefold())
    if due_before is not None:
        where.append(f"{DUE_SQL} < ?")
        args.append(due_before)
    if not include_archived:
        where.append("archived_at IS NULL")
    return " AND ".join(where), args


def list_tasks(db: DB, **filters: Any) -> list[dict[str, Any]]:
    """Tasks matching every given filter (:func:`task_filter`), most urgent first (then open
    before done, earliest due, oldest). Every row: ``list_tasks`` pushes its queries down
    (``demo/task_sql.py``) and uses this only for the queries SQL cannot answer exactly."""
    clause, args = task_filter(**filters)
    with db.read() as c:
        if filters.get("project_id") is not None:
            _project_row(c, filters["project_id"])
        where = f" WHERE {clause}" if clause else ""
        return [task_dict(r) for r in c.execute(f"SELECT * FROM tasks{where} ORDER BY {_TASK_ORDER}", args)]


def require_project(db: DB, project_id: str) -> None:
    """Raise NOT_FOUND_RESOURCE unless the project exists."""
    with db.read() as c:
        _project_row(c, project_id)


def _task_state(row: sqlite3.Row) -> dict[str, Any]:
    """The mergeable view of a task (what ``update_task``'s ``input`` addresses)."""
    state: dict[str, Any] = {
        "title": row["title"],
        "description": row["description"],
        "status": row["status"],
        "priority": row["priority"],
        "tags": json.loads(row["tags"]),
        "project_id": row["project_id"],
        "archived": row["archived_at"] is not None,
        "metadata": json.loads(row["metadata"]),
    }
    return {k: v for k, v in state.items() if v is not None}


def update_task(
    db: DB,
    task_id: str,
    changes: dict[str, Any],
    if_match: str | None = None,
    validate_metadata: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], bool]:
    """Deep-merge ``changes`` into the task (CORE §4.5.1). Returns (task, changed).

    ``validate_metadata`` (optional) checks and normalizes the merged metadata dict.
    """
    with db.tx() as c:
        row = _task_row(c, task_id)
        check_if_match(task_dict(row), if_match, resource_type="task", resource_id=task_id)
        before = _task_state(row)
        after = apply_patch(before, changes)
        after.setdefault("tags", [])
        after.setdefault("metadata", {})
        after["tags"] = _clean_tags(after["tags"])
        if validate_metadata is not None:
            after["metadata"] = validate_metadata(after["metadata"])
        if after["project_id"] != row["project_id"]:
            _project_row(c, after["project_id"])
        diff = {
            k: {"from": before.get(k), "to": after.get(k)}
            for k in sorted(set(before) | set(after))
            if before.get(k) != after.get(k)
        }
        if not diff:
            return task_dict(row), False
        ts = now()
        completed_at = row["completed_at"]
        if "status" in diff:
            completed_at = ts if after["status"] == "done" else None
        archived_at = row["archived_at"]
        if "archived" in diff:
            archived_at = ts if after["archived"] else None
        c.execute(
            "UPDATE tasks SET title = ?, description = ?, status = ?, priority = ?, tags = ?, metadata = ?, "
            "project_id = ?, completed_at = ?, archived_at = ?, updated_at = ?, version = version + 1 WHERE task_id = ?",
            (
                after["title"],
                after.get("description"),
                after["status"],
                after["priority"],
                json.dumps(after["tags"]),
                json.dumps(after["metadata"]),
                after["project_id"],
                completed_at,
                archived_at,
                ts,
                task_id,
            ),
        )
        _event(c, task_id, "updated", diff, ts)
        return task_dict(_task_row(c, task_id)), True


def delete_task(db: DB, task_id: str, if_match: str | None = None) -> dict[str, int]:
    with db.tx() as c:
        row = _task_row(c, task_id)
        check_if_match(task_dict(row), if_match, resource_type="task", resource_id=task_id)
        n_notes = c.execute("SELECT COUNT(*) FROM notes WHERE task_id = ?", (task_id,)).fetchone()[0]
        n_links = c.execute("SELECT COUNT(*) FROM links WHERE from_task_id = ? OR to_task_id = ?", (task_id, task_id)).fetchone()[
            0
        ]
        c.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
        return {"notes": n_notes, "links": n_links}


def list_task_events(db: DB, task_id: str) -> list[dict[str, Any]]:
    """The task's history, oldest first."""
    with db.read() as c:
        _task_row(c, task_id)
        rows = c.execute("SELECT * FROM task_events WHERE task_id = ? ORDER BY event_id", (task_id,)).fetchall()
        return [{**dict(r), "changes": json.loads(r["changes"])} for r in rows]


# ---- links -------------------------------------------------------------------------------


def create_link(db: DB, from_task_id: str, to_task_id: str, link_type: str) -> dict[str, Any]:
    if from_task_id == to_task_id:
        raise invalid_value("to_task_id", "distinct", "must differ from from_task_id (a task cannot link to itself)")
    ts = now()
    lid = new_id("lnk")
    with db.tx() as c:
        _task_row(c, from_task_id)
        _task_row(c, to_task_id)
        existing = c.execute(
            "SELECT link_id FROM links WHERE from_task_id = ? AND to_task_id = ? AND link_type = ?",
            (from_task_id, to_task_id, link_type),
        ).fetchone()
        if existing is not None:
            raise MCPAQLError(
                "CONFLICT_ALREADY_EXISTS",
                f"Task '{from_task_id}' already {link_type.replace('_', ' ')} '{to_task_id}' (link {existing[0]})",
                {"resource_type": "link", "resource_id": existing[0]},
            )
        c.execute(
            "INSERT INTO links(link_id, from_task_id, to_task_id, link_type, created_at) VALUES (?, ?, ?, ?, ?)",
            (lid, from_task_id, to_task_id, link_type, ts),
        )
        _event(c, from_task_id, "linked", {"link_id": lid, "link_type": link_type, "to_task_id": to_task_id}, ts)
        _event(c, to_task_id, "linked", {"link_id": lid, "link_type": link_type, "from_task_id": from_task_id}, ts)
        return dict(c.execute("SELECT * FROM links WHERE link_id = ?", (lid,)).fetchone())


def linked_tasks(db: DB, task_id: str, direction: str) -> list[tuple[str, str]]:
    """``(link_type, other task id)`` of the links starting at (``outgoing``) or pointing at
    (``incoming``) a task, oldest link first."""
    near, far = ("from_task_id", "to_task_id") if direction == "outgoing" else ("to_task_id", "from_task_id")
    with db.read() as c:
        rows = c.execute(f"SELECT link_type, {far} FROM links WHERE {near} = ? ORDER BY created_at, rowid", (task_id,))
        return [(r[0], r[1]) for r in rows]


def task_exists(db: DB, task_id: str) -> bool:
    with db.read() as c:
        return c.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone() is not None


def delete_link(db: DB, link_id: str) -> None:
    with db.tx() as c:
        row = c.execute("SELECT * FROM links WHERE link_id = ?", (link_id,)).fetchone()
        if row is None:
            raise not_found_resource("link", link_id)
        c.execute("DELETE FROM links WHERE link_id = ?", (link_id,))
        changes = {"link_id": link_id, "link_type": row["link_type"]}
        _event(c, row["from_task_id"], "unlinked", changes)
        _event(c, row["to_task_id"], "unlinked", changes)


# ---- notes -------------------------------------------------------------------------------


def _note_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {k: row[k] for k in ("note_id", "task_id", "project_id", "body", "author", "created_at")}


def create_note(
    db: DB, *, body: str, task_id: str | None = None, project_id: str | None = None, author: str | None = None
) -> dict[str, Any]:
    ts = now()
    nid = new_id("note")
    with db.tx() as c:
        if task_id is not None:
            _task_row(c, task_id)
        if project_id is not None:
            _project_row(c, project_id)
        c.execute(
            "INSERT INTO notes(note_id, task_id, project_id, body, author, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (nid, task_id, project_id, body, author, ts),
        )
        if task_id is not None:
            _event(c, task_id, "noted", {"note_id": nid}, ts)
        return _note_dict(c.execute("SELECT * FROM notes WHERE note_id = ?", (nid,)).fetchone())


def list_notes(db: DB, *, task_id: str | None = None, project_id: str | None = None) -> list[dict[str, Any]]:
    """Notes, newest first; ``project_id`` matches notes on the project itself and on its tasks."""
    where: list[str] = []
    args: list[Any] = []
    if task_id is not None:
        where.append("task_id = ?")
        args.append(task_id)
    if project_id is not None:
        where.append("(project_id = ? OR task_id IN (SELECT task_id FROM tasks WHERE project_id = ?))")
        args.extend([project_id, project_id])
    clause = (" WHERE " + " AND ".join(where)) if where else ""
    with db.read() as c:
        if task_id is not None:
            _task_row(c, task_id)
        if project_id is not None:
            _project_row(c, project_id)
        return [_note_dict(r) for r in c.execute(f"SELECT * FROM notes{clause} ORDER BY created_at DESC, rowid DESC", args)]


def delete_note(db: DB, note_id: str) -> None:
    with db.tx() as c:
        row = c.execute("SELECT task_id FROM notes WHERE note_id = ?", (note_id,)).fetchone()
        if row is None:
            raise not_found_resource("note", note_id)
        c.execute("DELETE FROM notes WHERE note_id = ?", (note_id,))
        if row["task_id"] is not None:
            _event(c, row["task_id"], "note_deleted", {"note_id": note_id})


# ---- executions --------------------------------------------------------------------------


def _execution_dict(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "execution_id": row["execution_id"],
        "operation": row["operation"],
        "status": row["status"],
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "progress": json.loads(row["progress"]) if row["progress"] else None,
        "result": json.loads(row["result"]) if row["result"] else None,
        "error": json.loads(row["error"]) if row["error"] else None,
    }


def start_execution(db: DB, operation: str) -> dict[str, Any]:
    """Record a new execution, already ``running`` (pending → running happens at once)."""
    eid = new_id("exec")
    with db.tx() as c:
        c.execute(
            "INSERT INTO executions(execution_id, operation, status, started_at) VALUES (?, ?, ?, ?)",
            (eid, operation, apply(State.PENDING, Event.START).value, now()),
        )
        return _execution_dict(c.execute("SELECT * FROM executions WHERE execution_id = ?", (eid,)).fetchone())


def record_execution(
    db: DB,
    execution_id: str,
    *,
    event: Event | None = None,
    progress: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Update a running execution: ``event`` moves it through the lifecycle table
    (``protocol/lifecycle.py``); terminal states are final (CORE §8.4.2), so a late update
    of a finished execution changes nothing."""
    with db.tx() as c:
        row = c.execute("SELECT * FROM executions WHERE execution_id = ?", (execution_id,)).fetchone()
        if row is None:
            raise not_found_resource("execution", execution_id)
        if core_state(row["status"]) in TERMINAL:
            return _execution_dict(row)
        sets: list[str] = []
        args: list[Any] = []
        if event is not None:
            status = apply(row["status"], event)
            sets.append("status = ?")
            args.append(status.value)
            if status in TERMINAL:
                sets.append("finished_at = ?")
                args.append(now())
        for col, val in (("progress", progress), ("result", result), ("error", error)):
            if val is not None:
                sets.append(f"{col} = ?")
                args.append(json.dumps(val))
        if sets:
            c.execute(f"UPDATE executions SET {', '.join(sets)} WHERE execution_id = ?", [*args, execution_id])
        return _execution_dict(c.execute("SELECT * FROM executions WHERE execution_id = ?", (execution_id,)).fetchone())


def get_execution(db: DB, execution_id: str) -> dict[str, Any]:
    with db.read() as c:
        row = c.execute("SELECT * FROM executions WHERE execution_id = ?", (execution_id,)).fetchone()
        if row is None:
            raise not_found_resource("execution", execution_id)
        return _execution_dict(row)


def completed_task_ids(db: DB, *, project_id: str | None = None, completed_before: str | None = None) -> list[str]:
    """Ids of done, not yet archived tasks (optionally in one project, completed before a timestamp)."""
    where = ["status = 'done'", "archived_at IS NULL"]
    args: list[Any] = []
    if project_id is not None:
        where.append("project_id = ?")
        args.append(project_id)
    if completed_before is not None:
        where.append("coalesce(completed_at, updated_at) < ?")
        args.append(completed_before)
    with db.read() as c:
        if project_id is not None:
            _project_row(c, project_id)
        return [r[0] for r in c.execute(f"SELECT task_id FROM tasks WHERE {' AND '.join(where)} ORDER BY task_id", args)]


def require_tasks(db: DB, task_ids: list[str]) -> None:
    """Raise NOT_FOUND_RESOURCE for the first id that does not exist."""
    with db.read() as c:
        for tid in task_ids:
            _task_row(c, tid)


# ---- sample data -------------------------------------------------------------------------


def seed_sample(db: DB) -> str:
    """Create the sample project 'Website launch' with five tasks, a link and notes. Returns its id."""
    today = date.today()
    project = create_project(
        db,
        "Website launch",
        "Sample project created on first run. Explore it, change it or delete it (delete_project with cascade: true).",
    )
    pid = project["project_id"]
    copy = create_task(
        db,
        project_id=pid,
        title="Draft the landing page copy",
        status="in_progress",
        priority="high",
        tags=["content", "website"],
        description="Hero section, three feature blurbs and a call to action.",
        metadata={
            "estimate_hours": 3,
            "assignee": "alice",
            "due_date": (today + timedelta(days=7)).isoformat(),
            "labels": ["Q4 launch"],
        },
    )
    create_task(
        db,
        project_id=pid,
        title="Set up the CI pipeline",
        status="done",
        priority="medium",
        tags=["infra"],
        metadata={"estimate_hours": 2, "assignee": "bob"},
    )
    create_task(
        db,
        project_id=pid,
        title="Choose and register a domain name",
        priority="urgent",
        tags=["website"],
        metadata={"due_date": (today + timedelta(days=2)).isoformat()},
    )
    announce = create_task(
        db,
        project_id=pid,
        title="Write the launch announcement",
        status="blocked",
        priority="medium",
        tags=["content", "marketing"],
        metadata={"estimate_hours": 1.5, "assignee": "alice"},
    )
    create_task(db, project_id=pid, title="Collect feedback from beta users", priority="low", tags=["research"])
    create_link(db, copy["task_id"], announce["task_id"], "blocks")
    create_note(
        db,
        task_id=copy["task_id"],
        author="alice",
        body="First draft shared with the team; waiting for feedback on the hero section.",
    )
    create_note(db, project_id=pid, author="bob", body="Launch target: end of next month. Keep scope small.")
    return pid
