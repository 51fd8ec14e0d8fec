"""The Task Tracker's reads on the shared collection layer: field selection, cursor pagination,
filter/sort, aggregation, computed fields and relationship queries (CHECKLIST REQ-FSEL/PAGE/CQ/AGG/COMP/REL)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from demo_helpers import Demo, empty_demo_fixture

PRIORITIES = ["urgent", "high", "medium", "low"]
STATUSES = ["todo", "in_progress", "blocked", "done"]


module_demo, d = empty_demo_fixture()  # one adapter build per module, emptied per test


@pytest.fixture
def many(d: Demo) -> tuple[Demo, list[dict[str, Any]]]:
    """23 tasks over two projects with every priority/status and some estimates and assignees."""
    p1, p2 = d.project("One")["project_id"], d.project("Two")["project_id"]
    tasks = []
    for i in range(23):
        md: dict[str, Any] = {"estimate_hours": float(i % 5)} if i % 3 else {}
        if i % 4 == 0:
            md["assignee"] = "alice"
        if i % 2:
            md["due_date"] = f"2027-01-{i + 1:02d}"
        tasks.append(
            d.task(
                p1 if i % 2 else p2,
                f"Task {i:02d}",
                priority=PRIORITIES[i % 4],
                status=STATUSES[i % 4],
                tags=["even"] if i % 2 == 0 else [],
                metadata=md,
            )
        )
    return d, tasks


def _all_pages(d: Demo, **params: Any) -> list[dict[str, Any]]:
    """Follow endCursor to the end; every page but the last is full."""
    page = d.ok("list_tasks", first=5, **params)
    seen = list(page["items"])
    while page["pageInfo"]["hasNextPage"]:
        assert len(page["items"]) == 5
        page = d.ok("list_tasks", first=5, after=page["pageInfo"]["endCursor"], **params)
        assert page["pageInfo"]["hasPreviousPage"] is True
        seen += page["items"]
    return seen


# ---- field selection -------------------------------------------------------------------------


def test_list_tasks_field_presets_and_paths(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, tasks = many
    minimal = d.ok("list_tasks", fields="minimal", first=3)["items"]
    assert [set(t) for t in minimal] == [{"task_id", "title", "status"}] * 3
    standard = d.ok("list_tasks", first=3)["items"]  # the default preset
    assert set(standard[0]) == {"task_id", "project_id", "title", "status", "priority", "tags", "metadata", "updated_at"}
    full = d.ok("list_tasks", fields="full", first=1)["items"][0]
    assert {"description", "created_at", "completed_at", "archived_at", "_version", "_etag"} <= set(full)
    # dot paths keep the nesting; a valid field a record lacks is simply absent
    picked = d.ok("list_tasks", fields=["task_id", "title", "metadata.assignee"], sort={"field": "title"}, first=2)["items"]
    assert picked == [
        {"task_id": tasks[0]["task_id"], "title": "Task 00", "metadata": {"assignee": "alice"}},
        {"task_id": tasks[1]["task_id"], "title": "Task 01", "metadata": {}},
    ]


def test_get_task_field_presets_and_paths(d: Demo) -> None:
    pid = d.project()["project_id"]
    t = d.task(pid, "Ship it", priority="high", metadata={"assignee": "bob", "due_date": "2027-02-03", "estimate_hours": 4})
    other = d.task(pid, "After")
    d.ok("create_link", from_task_id=t["task_id"], to_task_id=other["task_id"], link_type="blocks")
    full = d.ok("get_task", task_id=t["task_id"])  # item default: everything
    assert {"links", "notes", "note_count", "_etag", "description"} <= set(full)
    assert d.ok("get_task", task_id=t["task_id"], fields="minimal") == {
        "task_id": t["task_id"],
        "title": "Ship it",
        "status": "todo",
    }
    summary = d.ok("get_task", task_id=t["task_id"], fields="summary")
    assert set(summary) == {"task_id", "title", "status", "priority", "metadata", "links"}
    assert summary["metadata"] == {"assignee": "bob"} and summary["links"][0]["task_id"] == other["task_id"]
    got = d.ok("get_task", task_id=t["task_id"], fields=["metadata.due_date", "links.title"])
    assert got == {"metadata": {"due_date": "2027-02-03"}, "links": [{"title": "After"}]}  # only what was asked for
    e = d.err("get_task", task_id=t["task_id"], fields=["title", "owner"])
    assert e["code"] == "VALIDATION_INVALID_VALUE" and e["details"]["unknown_fields"] == ["owner"]
    assert "links" in e["details"]["valid_fields"]
    project = d.ok("get_project", project_id=pid, fields=["name", "task_counts.total"])
    assert project == {"name": "Alpha", "task_counts": {"total": 2}}


# ---- pagination --------------------------------------------------------------------------------


def test_cursor_pagination_visits_every_task_exactly_once(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, tasks = many
    everything = d.ok("list_tasks", first=100, fields="minimal")["items"]
    assert len(everything) == 23
    # the store's default order (most urgent first), then a client sort (with its tie-breaker)
    for params in ({}, {"sort": {"field": "status", "order": "desc"}}, {"sort": [{"field": "metadata.due_date"}]}):
        seen = _all_pages(d, fields="minimal", **params)
        assert sorted(t["task_id"] for t in seen) == sorted(t["task_id"] for t in tasks), params
        assert len({t["task_id"] for t in seen}) == 23, params
    default = [t["task_id"] for t in _all_pages(d, fields="minimal")]
    assert default == [t["task_id"] for t in everything]
    ranks = [PRIORITIES.index(t["priority"]) for t in d.ok("list_tasks", first=100)["items"]]
    assert ranks == sorted(ranks)  # most urgent first is kept
    by_status = [t["status"] for t in _all_pages(d, fields="minimal", sort={"field": "status", "order": "desc"})]
    assert by_status == sorted(by_status, reverse=True)


def test_backwards_pages_and_page_info(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, _ = many
    first = d.ok("list_tasks", first=10, fields="minimal")
    assert first["pageInfo"]["totalCount"] == 23 and first["pageInfo"]["hasNextPage"] is True
    assert first["pageInfo"]["hasPreviousPage"] is False
    second = d.ok("list_tasks", first=10, after=first["pageInfo"]["endCursor"], fields="minimal")
    back = d.ok("list_tasks", last=10, before=second["pageInfo"]["startCursor"], fields="minimal")
    assert back["items"] == first["items"]
    tail = d.ok("list_tasks", last=3, fields="minimal")
    assert tail["items"] == d.ok("list_tasks", first=100, fields="minimal")["items"][-3:]


def test_tampered_or_foreign_cursor_is_rejected(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, _ = many
    cursor = d.ok("list_tasks", first=5)["pageInfo"]["endCursor"]
    body, sig = cursor.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["k"][-1] = 0  # jump back to the start without a valid signature
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=") + "." + sig
    for bad in (forged, cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB"), "garbage"):
        e = d.err("list_tasks", first=5, after=bad)
        assert e["code"] == "VALIDATION_INVALID_VALUE" and e["details"]["param_name"] == "after", e
    # a genuine cursor of another operation or another sort order is refused too
    notes_cursor = _note_cursor(d)
    assert d.err("list_tasks", first=5, after=notes_cursor)["code"] == "VALIDATION_INVALID_VALUE"
    assert d.err("list_tasks", first=5, after=cursor, sort={"field": "title"})["code"] == "VALIDATION_INVALID_VALUE"
    assert len(d.ok("list_tasks", first=5, after=cursor)["items"]) == 5  # the untouched cursor still works


def _note_cursor(d: Demo) -> str:
    tid = d.ok("list_tasks", first=1)["items"][0]["task_id"]
    d.ok("create_note", task_id=tid, body="cursor one")
    d.ok("create_note", task_id=tid, body="cursor two")
    return str(d.ok("search_notes", query="cursor", first=1)["pageInfo"]["endCursor"])


# ---- filter, sort, aggregate, computed -----------------------------------------------------------


def test_filter_sort_and_aggregate(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, tasks = many
    flt = {"status": {"in": ["todo", "done"]}, "metadata.due_date": {"exists": True}}
    rows = d.ok(
        "list_tasks",
        filter=flt,
        sort={"field": "metadata.due_date", "order": "desc"},
        fields=["title", "status", "metadata.due_date"],
        first=100,
    )["items"]
    expected = [t for t in tasks if t["status"] in ("todo", "done") and "due_date" in t["metadata"]]
    assert [r["title"] for r in rows] == [
        t["title"] for t in sorted(expected, key=lambda t: t["metadata"]["due_date"], reverse=True)
    ]
    assert len(rows) == 5 and {r["status"] for r in rows} == {"done"}  # odd tasks have due dates; none is todo
    # shortcut params, structured filters and the text query combine with AND
    alice = d.ok("list_tasks", assignee="alice", filter={"tags": "even"}, query="task", fields="minimal", first=100)
    assert {t["task_id"] for t in alice["items"]} == {t["task_id"] for t in tasks if t["metadata"].get("assignee") == "alice"}
    agg = d.ok(
        "list_tasks",
        aggregate={"by_status": {"group_by": "status"}, "effort": {"avg": "metadata.estimate_hours"}, "total": {"count": True}},
    )
    assert set(agg) == {"aggregations"}
    counts: dict[str, int] = {}
    for t in tasks:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    assert agg["aggregations"]["by_status"] == counts
    estimates = [t["metadata"]["estimate_hours"] for t in tasks if "estimate_hours" in t["metadata"]]
    assert agg["aggregations"]["effort"] == pytest.approx(sum(estimates) / len(estimates))
    assert agg["aggregations"]["total"] == 23
    # aggregation sees the filtered set; include_items returns the page as well
    env = d.call("list_tasks", {"status": "done", "aggregate": {"n": {"count": True}}, "include_items": True, "first": 2})
    assert env["data"]["aggregations"]["n"] == counts["done"] and len(env["data"]["items"]) == 2
    # summary-only ignores paging with a warning
    env = d.call("list_tasks", {"aggregate": {"n": {"count": True}}, "first": 2})
    assert [w["code"] for w in env["warnings"]] == ["VALIDATION_PARAM_IGNORED_WARNING"]


def test_computed_priority_rank(many: tuple[Demo, list[dict[str, Any]]]) -> None:
    d, tasks = many
    rows = d.ok("list_tasks", fields=["title", "priority", "_computed.priority_rank"], first=100)["items"]
    assert all(r["_computed"]["priority_rank"] == PRIORITIES.index(r["priority"]) for r in rows)
    urgent_or_high = d.ok("list_tasks", filter={"_computed.priority_rank": {"lte": 1}}, fields="minimal", first=100)
    assert {t["task_id"] for t in urgent_or_high["items"]} == {t["task_id"] for t in tasks if t["priority"] in ("urgent", "high")}
    asc = d.ok("list_tasks", sort={"field": "_computed.priority_rank", "order": "desc"}, fields=["priority"], first=100)
    assert [r["priority"] for r in asc["items"]] == sorted((t["priority"] for t in tasks), key=PRIORITIES.index, reverse=True)


def test_list_task_events_and_projects_are_collections(d: Demo) -> None:
    pid = d.project("P")["project_id"]
    t = d.task(pid, "T")
    for title in ("a", "b", "c"):
        d.ok("update_task", task_id=t["task_id"], input={"title": title})
    events = d.ok("list_task_events", task_id=t["task_id"], filter={"action": "updated"}, last=2)
    assert [e["changes"]["title"]["to"] for e in events["items"]] == ["b", "c"]
    assert d.ok("list_task_events", task_id=t["task_id"], aggregate={"by": {"group_by": "action"}})["aggregations"] == {
        "by": {"created": 1, "updated": 3}
    }
    projects = d.ok("list_projects", filter={"task_counts.total": {"gte": 1}}, fields="minimal")
    assert projects["items"] == [{"project_id": pid, "name": "P", "status": "active"}]


# ---- relationships -----------------------------------------------------------------------------


def test_query_relationships_follows_links_and_survives_a_cycle(d: Demo) -> None:
    pid = d.project()["project_id"]
    a, b, c, x = (d.task(pid, n)["task_id"] for n in ("A", "B", "C", "X"))
    d.ok("create_link", from_task_id=a, to_task_id=b, link_type="blocks")
    d.ok("create_link", from_task_id=b, to_task_id=c, link_type="blocks")
    d.ok("create_link", from_task_id=c, to_task_id=a, link_type="blocks")  # a cycle a → b → c → a
    d.ok("create_link", from_task_id=x, to_task_id=a, link_type="duplicates")

    def root(t: str) -> dict[str, str]:
        return {"element_type": "task", "element_name": t}

    out = d.ok("query_relationships", root=root(a), direction="outgoing", relationship="blocks", depth=3)
    assert out["root"] == root(a)
    assert [(r["target"]["element_name"], r["depth"]) for r in out["relationships"]] == [(b, 1), (c, 2), (a, 3)]
    assert sorted(n["element_name"] for n in out["graph"]["nodes"]) == sorted([a, b, c])  # each node once
    edges = {(e["source"], e["target"], e["type"]) for e in out["graph"]["edges"]}
    assert edges == {
        (f"task:{a}", f"task:{b}", "blocks"),
        (f"task:{b}", f"task:{c}", "blocks"),
        (f"task:{c}", f"task:{a}", "blocks"),
    }  # the closing edge is reported once
    assert len(out["graph"]["edges"]) == 3
    near = d.ok("query_relationships", root=root(a), direction="incoming")
    assert sorted((r["type"], r["target"]["element_name"]) for r in near["relationships"]) == [("blocks", c), ("duplicates", x)]
    both = d.ok("query_relationships", root=root(b), direction="both", depth=2, include=["graph.nodes"])
    assert set(both) == {"graph"} and {n["element_name"] for n in both["graph"]["nodes"]} == {a, b, c, x}
    assert d.code("query_relationships", root=root(a), direction="outgoing", depth=4) == "VALIDATION_INVALID_VALUE"
    assert d.code("query_relationships", root=root("tsk_nope"), direction="both") == "NOT_FOUND_RESOURCE"
    assert d.code("query_relationships", root=root(a), direction="sideways") == "VALIDATION_INVALID_VALUE"
