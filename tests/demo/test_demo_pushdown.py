"""``list_tasks`` in SQLite against the in-Python collection path, on random data and queries.

The pushdown (``demo/task_sql.py``) must answer every query exactly as the shared layer does
over the same records in Python: same items in the same order, same page flags and totals,
same aggregations, across every page a client can walk (forward with ``after``, backward with
``before``, offset). Also: keyset pages neither repeat nor skip rows when rows are inserted
between pages, and a query SQL cannot express exactly is still answered (in Python).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from typing import Any

import pytest
from demo_helpers import Demo, empty_demo_fixture
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mcpaql.demo import store
from mcpaql.demo.models import Task
from mcpaql.demo.task_sql import TaskQuery
from mcpaql.protocol.collections import CollectionRuntime
from mcpaql.protocol.context import Context
from mcpaql.protocol.errors import MCPAQLError
from mcpaql.protocol.session import Session

module_demo, d = empty_demo_fixture()

WORDS = ["Alpha", "beta", "İstanbul", "\u212a-kelvin", "é", "Ship it", "ship"]
STATUSES = ["todo", "in_progress", "blocked", "done"]
PRIORITIES = ["urgent", "high", "medium", "low"]
TAGS = ["a", "b", "ui", "x-y"]
PEOPLE = ["alice", "Bob", "bob"]
DATES = ["2027-01-01", "2027-01-02", "2027-02-10"]
TIMES = ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.001Z", "2026-03-01T12:00:00.000Z"]
OPERANDS = st.one_of(
    st.sampled_from([*STATUSES, *PRIORITIES, *TAGS, *PEOPLE, *DATES, *TIMES, "", "a", "B", "st", "2027", "prj_1"]),
    st.integers(-1, 4),
    st.sampled_from([0.5, 2.0]),
    st.none(),
    st.booleans(),
)
FILTER_FIELDS = ["project_id", "status", "priority", "tags", "metadata.assignee", "metadata.due_date", "created_at",
                 "updated_at", "_computed.priority_rank"]  # fmt: skip
SORT_FIELDS = ["created_at", "updated_at", "title", "status", "metadata.due_date", "_computed.priority_rank"]
OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "starts_with", "exists"]


@st.composite
def task_rows(draw: Any) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(draw(st.integers(0, 25))):
        md: dict[str, Any] = {}
        for key, values in (("assignee", PEOPLE), ("due_date", DATES), ("estimate_hours", [0.5, 1.0, 2.5, 4.0])):
            if draw(st.booleans()):
                md[key] = draw(st.sampled_from(values))
        rows.append(
            (
                f"tsk_{i:04d}",
                draw(st.sampled_from(["prj_1", "prj_2"])),
                " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))),
                draw(st.one_of(st.none(), st.sampled_from(WORDS))),
                draw(st.sampled_from(STATUSES)),
                draw(st.sampled_from(PRIORITIES)),
                json.dumps(draw(st.lists(st.sampled_from(TAGS), max_size=2, unique=True))),
                json.dumps(md),
                draw(st.sampled_from(TIMES)),
                draw(st.sampled_from(TIMES)),
                draw(st.one_of(st.none(), st.just(TIMES[0]))) if draw(st.integers(0, 5)) == 0 else None,
            )
        )
    return rows


@st.composite
def queries(draw: Any) -> dict[str, Any]:
    params: dict[str, Any] = {}
    flt: dict[str, Any] = {}
    for f in draw(st.lists(st.sampled_from(FILTER_FIELDS), max_size=2, unique=True)):
        op = draw(st.sampled_from(OPS))
        if op in ("in", "nin"):
            operand: Any = draw(st.lists(st.one_of(OPERANDS, st.just(["a"])), max_size=3))
        elif op == "exists":
            operand = draw(st.booleans())
        elif op == "starts_with":
            operand = draw(st.sampled_from(["", "a", "İ", "k", "2027", "todo", "prj"]))
        else:
            operand = draw(OPERANDS)
        flt[f] = {op: operand}
    if flt:
        params["filter"] = flt
    if draw(st.booleans()):
        params["query"] = draw(st.sampled_from(["ship", '"ship it"', "i̇stanbul", "k", "É beta"]))
    if draw(st.booleans()):
        fields = draw(st.lists(st.sampled_from(SORT_FIELDS), min_size=1, max_size=2, unique=True))
        params["sort"] = [{"field": f, "order": draw(st.sampled_from(["asc", "desc"]))} for f in fields]
    for shortcut, values in (("status", STATUSES), ("tag", TAGS), ("priority", PRIORITIES)):
        if draw(st.integers(0, 4)) == 0:
            params[shortcut] = draw(st.sampled_from(values))
    if draw(st.integers(0, 4)) == 0:
        params["include_archived"] = True
    style = draw(st.sampled_from(["first", "last", "offset"]))
    size = draw(st.integers(1, 4))
    params.update({"first": size} if style == "first" else {"last": size} if style == "last" else {"limit": size})
    if style == "offset":
        params["offset"] = draw(st.integers(0, 6))
    if draw(st.integers(0, 3)) == 0:
        expr: dict[str, Any] = {}
        if draw(st.booleans()):
            expr["group_by"] = draw(st.sampled_from(["status", "tags", "metadata.assignee", "metadata.due_date"]))
        for fn, fields in (
            ("count", [True]),
            ("sum", ["metadata.estimate_hours"]),
            ("avg", ["metadata.estimate_hours"]),
            ("min", ["created_at", "metadata.due_date", "metadata.estimate_hours"]),
            ("max", ["updated_at", "metadata.due_date"]),
        ):
            if draw(st.booleans()):
                expr[fn] = draw(st.sampled_from(fields))
        if "group_by" not in expr and len(expr) == 0:
            expr["count"] = True
        params["aggregate"] = {"agg": expr}
        params["include_items"] = draw(st.booleans())
    return params


def _load(demo: Demo, rows: list[tuple[Any, ...]]) -> None:
    demo.reset()
    with demo.app.db.tx() as c:
        for pid in ("prj_1", "prj_2"):
            c.execute(
                "INSERT INTO projects(project_id, name, name_key, status, created_at, updated_at) "
                "VALUES (?, ?, ?, 'active', ?, ?)",
                (pid, pid, pid, TIMES[0], TIMES[0]),
            )
        c.executemany(
            "INSERT INTO tasks(task_id, project_id, title, description, status, priority, tags, metadata, created_at, "
            "updated_at, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


SHORTCUTS = ("project_id", "status", "priority", "tag", "assignee", "due_before", "include_archived")


def _walk(demo: Demo, params: dict[str, Any], pushdown: bool, pages: int = 8) -> list[Any]:
    """Every page a client walking the cursors sees, through one path."""
    rt = demo.engine.compiled("list_tasks").spec.extensions["collection"]
    assert isinstance(rt, CollectionRuntime)
    ctx = Context(Session())
    shortcuts = {k: params[k] for k in SHORTCUTS if k in params}
    out: list[Any] = []
    values = {k: v for k, v in params.items() if k not in SHORTCUTS}
    for _ in range(pages):
        q = rt.normalize(dict(values), ctx)
        backend = TaskQuery(demo.app.db, shortcuts, Task.model_validate)
        data = asyncio.run(rt.shape(backend, q, ctx)) if pushdown else rt._in_memory(backend.records(), q, ctx)
        data = json.loads(json.dumps(data, default=str))
        info = data.get("pageInfo") or {}
        flags = {k: v for k, v in info.items() if "Cursor" not in k}
        out.append({k: v for k, v in data.items() if k != "pageInfo"} | {"info": flags})
        if "first" in values and info.get("hasNextPage"):
            values["after"] = info["endCursor"]
        elif "last" in values and info.get("hasPreviousPage"):
            values["before"] = info["startCursor"]
        elif "offset" in values and (data.get("pagination") or {}).get("has_more"):
            values["offset"] += values["limit"]
        else:
            break
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=task_rows(), params=queries())
def test_pushdown_equals_the_in_python_path(module_demo: Demo, rows: list[tuple[Any, ...]], params: dict[str, Any]) -> None:
    _load(module_demo, rows)
    try:
        want = _walk(module_demo, params, pushdown=False)
    except MCPAQLError:
        assume(False)
    assert _walk(module_demo, params, pushdown=True) == want


def test_keyset_pages_survive_inserts_between_pages(d: Demo) -> None:
    pid = d.project()["project_id"]
    for i in range(12):
        d.task(pid, f"T{i:02d}", priority=PRIORITIES[i % 4])
    for params in ({}, {"sort": {"field": "title", "order": "desc"}}, {"sort": {"field": "_computed.priority_rank"}}):
        before = {t["task_id"] for t in d.ok("list_tasks", first=100, fields="minimal")["items"]}
        page = d.ok("list_tasks", first=4, fields="minimal", **params)
        seen = [t["task_id"] for t in page["items"]]
        while page["pageInfo"]["hasNextPage"]:
            d.task(pid, "Inserted A", priority="urgent")  # lands before the cursor in the default order
            d.task(pid, "ZZ inserted", priority="low")  # and after it
            page = d.ok("list_tasks", first=4, after=page["pageInfo"]["endCursor"], fields="minimal", **params)
            seen += [t["task_id"] for t in page["items"]]
        assert len(seen) == len(set(seen)), params  # no row twice
        assert before <= set(seen), params  # no row that was there from the start is missed


def test_a_query_sql_cannot_express_is_answered_in_python(d: Demo) -> None:
    pid = d.project()["project_id"]
    a = d.task(pid, "A", tags=["x", "y"])
    d.task(pid, "B", tags=["x"])
    # equality with a whole array: declined by the SQL backend, same answer as before
    got = d.ok("list_tasks", filter={"tags": {"eq": ["x", "y"]}}, fields="minimal")
    assert [t["task_id"] for t in got["items"]] == [a["task_id"]]
    assert d.ok("list_tasks", filter={"_computed.priority_rank": {"gt": 2**70}}, fields="minimal")["items"] == []


def test_only_the_page_gets_etags_and_models(d: Demo, monkeypatch: pytest.MonkeyPatch) -> None:
    pid = d.project()["project_id"]
    for i in range(30):
        d.task(pid, f"T{i}")
    made: list[str] = []
    real = store.task_dict

    def counting(row: sqlite3.Row) -> dict[str, Any]:
        made.append(row["task_id"])
        return real(row)

    monkeypatch.setattr(store, "task_dict", counting)
    page = d.ok("list_tasks", first=5, sort={"field": "title"}, aggregate={"n": {"group_by": "status"}}, include_items=True)
    assert len(page["items"]) == 5 and page["aggregations"]["n"] == {"todo": 30}
    assert len(made) == 5


def test_a_file_from_before_the_order_columns_is_migrated(tmp_path: Any) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # the schema as it was: no generated columns, no sort indexes
        old.executescript(store._SCHEMA)
        old.execute("INSERT INTO meta(key, value) VALUES ('schema_version', '1')")
        old.execute(
            "INSERT INTO projects(project_id, name, name_key, created_at, updated_at) VALUES ('prj_1', 'P', 'p', ?, ?)",
            (TIMES[0], TIMES[0]),
        )
        old.executemany(
            "INSERT INTO tasks(task_id, project_id, title, status, priority, created_at, updated_at) "
            "VALUES (?, 'prj_1', ?, 'todo', ?, ?, ?)",
            [(f"tsk_{i}", f"T{i}", PRIORITIES[i % 4], TIMES[0], TIMES[0]) for i in range(6)],
        )
    old.close()
    demo = Demo(path, seed=False)
    columns = {r[1] for r in demo.app.db.conn.execute("PRAGMA table_xinfo(tasks)")}
    assert {"o_rank", "o_done", "o_due"} <= columns
    first = demo.ok("list_tasks", first=3, fields="minimal")
    rest = demo.ok("list_tasks", first=3, after=first["pageInfo"]["endCursor"], fields="minimal")
    assert [t["task_id"] for t in first["items"] + rest["items"]] == ["tsk_0", "tsk_4", "tsk_1", "tsk_5", "tsk_2", "tsk_3"]
    demo.app.db.close()
