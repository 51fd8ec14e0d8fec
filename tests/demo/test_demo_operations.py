"""Happy paths of every Task Tracker operation (CREATE, READ, UPDATE, DELETE; EXECUTE has its own file)."""

from __future__ import annotations

import re
from datetime import date, timedelta
from pathlib import Path

import pytest
from demo_helpers import Demo, empty_demo_fixture

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


module_demo, d = empty_demo_fixture()  # one adapter build per module, emptied per test


@pytest.fixture
def seeded(tmp_path: Path) -> Demo:
    return Demo(tmp_path / "seeded.db")


def test_tools_are_the_five_crude_endpoints(d: Demo) -> None:
    assert [t.name for t in d.engine.tools] == [
        "tasks_mcpaql_create",
        "tasks_mcpaql_read",
        "tasks_mcpaql_update",
        "tasks_mcpaql_delete",
        "tasks_mcpaql_execute",
    ]
    assert d.engine.registry.display_name == "Task Tracker"


def test_seed_data_on_a_new_database(seeded: Demo) -> None:
    page = seeded.ok("list_tasks")
    assert page["pageInfo"]["totalCount"] == 5 and len(page["items"]) == 5
    assert page["pageInfo"]["hasNextPage"] is False
    assert page["items"][0]["priority"] == "urgent"  # most urgent first
    projects = seeded.ok("list_projects", fields="full")["items"]
    assert [p["name"] for p in projects] == ["Website launch"]
    assert projects[0]["task_counts"] == {"todo": 2, "in_progress": 1, "blocked": 1, "done": 1, "total": 5}
    blocked = seeded.ok("list_tasks", status="blocked")["items"][0]
    detail = seeded.ok("get_task", task_id=blocked["task_id"])
    assert [(link["link_type"], link["direction"]) for link in detail["links"]] == [("blocks", "incoming")]
    assert seeded.ok("search_notes", query='"launch target"')["pageInfo"]["totalCount"] == 1


def test_create_and_get_project(d: Demo) -> None:
    p = d.project("Mobile app", description="iOS and Android")
    assert p["project_id"].startswith("prj_")
    assert p["status"] == "active" and p["_version"] == 1 and p["_etag"].startswith('W/"')
    assert TS.match(p["created_at"]) and p["created_at"] == p["updated_at"]
    assert p["task_counts"]["total"] == 0
    got = d.ok("get_project", project_id=p["project_id"])
    assert got == p


def test_list_projects_filters_and_pages(d: Demo) -> None:
    for i in range(5):
        d.project(f"Project {i}", **({"description": "launch work"} if i % 2 == 0 else {}))
    page = d.ok("list_projects", limit=2, offset=1)
    assert [p["name"] for p in page["items"]] == ["Project 1", "Project 2"]  # oldest first
    assert page["pagination"] == {"limit": 2, "offset": 1, "returned": 2, "total_items": 5, "has_more": True}
    assert d.ok("list_projects", query="LAUNCH")["pageInfo"]["totalCount"] == 3
    pid = page["items"][0]["project_id"]
    d.ok("update_project", project_id=pid, input={"status": "archived"})
    assert [p["project_id"] for p in d.ok("list_projects", status="archived")["items"]] == [pid]
    assert [p["project_id"] for p in d.ok("list_projects", filter={"status": "archived"})["items"]] == [pid]
    last = d.ok("list_projects", offset=4)
    assert last["pagination"]["has_more"] is False and last["pagination"]["returned"] == 1
    named = d.ok("list_projects", sort={"field": "name", "order": "desc"}, fields="minimal", first=2)
    assert named["items"] == [
        {"project_id": p["project_id"], "name": p["name"], "status": p["status"]}
        for p in d.ok("list_projects", fields="full")["items"][::-1][:2]
    ]
    assert named["pageInfo"]["hasNextPage"] is True


def test_create_task_with_everything(d: Demo) -> None:
    pid = d.project()["project_id"]
    t = d.task(
        pid,
        "Fix login redirect",
        description="Users land on /home",
        priority="urgent",
        status="in_progress",
        tags=["bug", "auth", "bug"],
        metadata={
            "estimate_hours": 2.5,
            "assignee": "alice",
            "due_date": "2026-12-01",
            "labels": ["Sprint 4"],
            "custom": {"ticket": "JIRA-1"},
        },
    )
    assert t["task_id"].startswith("tsk_")
    assert t["tags"] == ["bug", "auth"]  # duplicates dropped, order kept
    assert t["metadata"] == {
        "estimate_hours": 2.5,
        "assignee": "alice",
        "due_date": "2026-12-01",
        "labels": ["Sprint 4"],
        "custom": {"ticket": "JIRA-1"},
    }
    assert (t["status"], t["priority"], t["completed_at"], t["archived_at"]) == ("in_progress", "urgent", None, None)
    defaults = d.task(pid, "Plain")
    assert (defaults["status"], defaults["priority"], defaults["tags"], defaults["metadata"]) == ("todo", "medium", [], {})
    done = d.task(pid, "Already done", status="done")
    assert TS.match(done["completed_at"])


def test_get_task_detail_has_links_and_notes(d: Demo) -> None:
    pid = d.project()["project_id"]
    a, b = d.task(pid, "A")["task_id"], d.task(pid, "B")["task_id"]
    link = d.ok("create_link", from_task_id=a, to_task_id=b, link_type="blocks")
    assert link["link_id"].startswith("lnk_") and (link["from_task_id"], link["to_task_id"]) == (a, b)
    d.ok("create_note", task_id=a, body="first")
    d.ok("create_note", task_id=a, body="second", author="bob")
    detail = d.ok("get_task", task_id=a)
    assert detail["links"] == [
        {"link_id": link["link_id"], "link_type": "blocks", "direction": "outgoing", "task_id": b, "title": "B", "status": "todo"}
    ]
    assert [n["body"] for n in detail["notes"]] == ["second", "first"] and detail["note_count"] == 2
    assert d.ok("get_task", task_id=b)["links"][0]["direction"] == "incoming"


def test_list_tasks_filters(d: Demo) -> None:
    p1, p2 = d.project("One")["project_id"], d.project("Two")["project_id"]
    soon = (date.today() + timedelta(days=1)).isoformat()
    later = (date.today() + timedelta(days=30)).isoformat()
    d.task(p1, "Write docs for the API", tags=["docs"], metadata={"assignee": "Alice", "due_date": soon})
    d.task(p1, "Fix API crash", priority="urgent", status="in_progress", tags=["bug"], metadata={"due_date": later})
    d.task(p2, "Plan the offsite", priority="low", description="Book a venue for the API team")
    d.task(p2, "Retro", status="done", tags=["docs"])

    def titles(**f: object) -> list[str]:
        return [t["title"] for t in d.ok("list_tasks", **f)["items"]]

    assert titles() == ["Fix API crash", "Write docs for the API", "Retro", "Plan the offsite"]
    assert titles(project_id=p2) == ["Retro", "Plan the offsite"]
    assert titles(status="done") == ["Retro"]
    assert titles(priority="urgent") == ["Fix API crash"]
    assert titles(tag="docs") == ["Write docs for the API", "Retro"]
    assert titles(assignee="alice") == ["Write docs for the API"]
    assert titles(query="api") == ["Fix API crash", "Write docs for the API", "Plan the offsite"]
    assert titles(query="crash VENUE") == ["Fix API crash", "Plan the offsite"]  # words are OR'ed
    assert titles(query='"api team"') == ["Plan the offsite"]  # a quoted phrase matches exactly
    assert titles(query="100%") == []
    assert titles(due_before=later) == ["Write docs for the API"]
    assert titles(tag="docs", project_id=p1) == ["Write docs for the API"]
    page = d.ok("list_tasks", limit=1, offset=1)
    assert [t["title"] for t in page["items"]] == ["Write docs for the API"]
    assert page["pagination"] == {"limit": 1, "offset": 1, "returned": 1, "total_items": 4, "has_more": True}


def test_update_project(d: Demo) -> None:
    p = d.project("Old", description="keep me?")
    out = d.ok("update_project", project_id=p["project_id"], input={"name": "New", "description": None})
    assert out["name"] == "New" and out["description"] is None
    assert out["_version"] == 2 and out["_etag"] != p["_etag"]
    assert out["created_at"] == p["created_at"]


def test_update_task_changes_and_history(d: Demo) -> None:
    pid = d.project()["project_id"]
    t = d.task(pid, "Draft", tags=["a"])
    out = d.ok("update_task", task_id=t["task_id"], input={"status": "done", "tags": ["b", "c"], "priority": "high"})
    assert (out["status"], out["tags"], out["priority"], out["_version"]) == ("done", ["b", "c"], "high", 2)
    assert TS.match(out["completed_at"])
    reopened = d.ok("update_task", task_id=t["task_id"], input={"status": "todo"})
    assert reopened["completed_at"] is None
    events = d.ok("list_task_events", task_id=t["task_id"])
    assert [e["action"] for e in events["items"]] == ["created", "updated", "updated"]
    assert events["items"][1]["changes"]["status"] == {"from": "todo", "to": "done"}
    assert events["items"][1]["changes"]["tags"] == {"from": ["a"], "to": ["b", "c"]}
    assert TS.match(events["items"][0]["at"])


def test_update_task_moves_between_projects(d: Demo) -> None:
    p1, p2 = d.project("One")["project_id"], d.project("Two")["project_id"]
    t = d.task(p1)
    assert d.ok("update_task", task_id=t["task_id"], input={"project_id": p2})["project_id"] == p2
    assert d.ok("get_project", project_id=p2)["task_counts"]["total"] == 1


def test_no_op_update_warns_and_keeps_version(d: Demo) -> None:
    t = d.task(d.project()["project_id"], "Same")
    env = d.call("update_task", {"task_id": t["task_id"], "input": {"title": "Same"}})
    assert env["success"] and env["data"]["_version"] == 1
    assert env["warnings"][0]["code"] == "UPDATE_NO_CHANGES"


def test_delete_task(d: Demo) -> None:
    pid = d.project()["project_id"]
    a, b = d.task(pid, "A")["task_id"], d.task(pid, "B")["task_id"]
    d.ok("create_link", from_task_id=a, to_task_id=b)
    d.ok("create_note", task_id=a, body="n")
    out = d.ok("delete_task", task_id=a)
    assert out == {"deleted": True, "resource_type": "task", "resource_id": a, "removed": {"notes": 1, "links": 1}}
    assert d.code("get_task", task_id=a) == "NOT_FOUND_RESOURCE"
    assert d.ok("get_task", task_id=b)["links"] == []


def test_delete_project_cascade(d: Demo) -> None:
    p = d.project()
    pid = p["project_id"]
    a, b = d.task(pid, "A")["task_id"], d.task(pid, "B")["task_id"]
    d.ok("create_link", from_task_id=a, to_task_id=b)
    d.ok("create_note", task_id=a, body="on task")
    d.ok("create_note", project_id=pid, body="on project")
    e = d.err("delete_project", project_id=pid)
    assert e["code"] == "VALIDATION_INVALID_VALUE" and e["details"]["param_name"] == "cascade"
    assert "cascade" in e["message"]
    out = d.ok("delete_project", project_id=pid, cascade=True)
    assert out["removed"] == {"tasks": 2, "notes": 2, "links": 1}
    assert d.code("get_project", project_id=pid) == "NOT_FOUND_RESOURCE"
    assert d.code("get_task", task_id=a) == "NOT_FOUND_RESOURCE"
    empty = d.project("Empty")["project_id"]
    assert d.ok("delete_project", project_id=empty)["removed"] == {"tasks": 0, "notes": 0, "links": 0}


def test_links_create_and_delete(d: Demo) -> None:
    pid = d.project()["project_id"]
    a, b = d.task(pid, "A")["task_id"], d.task(pid, "B")["task_id"]
    rel = d.ok("create_link", from_task_id=a, to_task_id=b)
    assert rel["link_type"] == "relates_to"
    dup = d.ok("create_link", from_task_id=a, to_task_id=b, link_type="duplicates")
    assert d.ok("delete_link", link_id=rel["link_id"]) == {
        "deleted": True,
        "resource_type": "link",
        "resource_id": rel["link_id"],
        "removed": {},
    }
    assert [link["link_id"] for link in d.ok("get_task", task_id=a)["links"]] == [dup["link_id"]]
    actions = [e["action"] for e in d.ok("list_task_events", task_id=a)["items"]]
    assert actions == ["created", "linked", "linked", "unlinked"]


def test_notes_create_search_delete(d: Demo) -> None:
    p1, p2 = d.project("One")["project_id"], d.project("Two")["project_id"]
    t = d.task(p1)["task_id"]
    n1 = d.ok("create_note", task_id=t, body="Waiting on design review", author="alice")
    assert n1["note_id"].startswith("note_") and n1["task_id"] == t and n1["project_id"] is None
    assert TS.match(n1["created_at"])
    d.ok("create_note", project_id=p1, body="Design kickoff on Monday")
    d.ok("create_note", project_id=p2, body="Design system audit")
    assert d.ok("search_notes", query="design")["pageInfo"]["totalCount"] == 3
    assert d.ok("search_notes", query="design", project_id=p1)["pageInfo"]["totalCount"] == 2
    assert [n["note_id"] for n in d.ok("search_notes", query="REVIEW design", task_id=t)["items"]] == [n1["note_id"]]
    newest = d.ok("search_notes", query="design", first=1)
    assert [n["body"] for n in newest["items"]] == ["Design system audit"]  # newest first
    assert set(newest["items"][0]) == {"note_id", "task_id", "body", "created_at"}  # search → minimal preset
    older = d.ok("search_notes", query="design", first=5, after=newest["pageInfo"]["endCursor"])
    assert [n["body"] for n in older["items"]] == ["Design kickoff on Monday", "Waiting on design review"]
    assert [n["body"] for n in d.ok("search_notes", query="design", filter={"author": "alice"})["items"]] == [n1["body"]]
    assert d.ok("delete_note", note_id=n1["note_id"])["resource_id"] == n1["note_id"]
    assert d.ok("search_notes", query="review")["items"] == []
    assert d.code("delete_note", note_id=n1["note_id"]) == "NOT_FOUND_RESOURCE"


def test_not_found_everywhere(d: Demo) -> None:
    for op, params, rtype in [
        ("get_project", {"project_id": "prj_nope"}, "project"),
        ("get_task", {"task_id": "tsk_nope"}, "task"),
        ("update_task", {"task_id": "tsk_nope", "input": {"title": "x"}}, "task"),
        ("update_project", {"project_id": "prj_nope", "input": {"name": "x"}}, "project"),
        ("delete_task", {"task_id": "tsk_nope"}, "task"),
        ("delete_project", {"project_id": "prj_nope"}, "project"),
        ("delete_link", {"link_id": "lnk_nope"}, "link"),
        ("delete_note", {"note_id": "note_nope"}, "note"),
        ("create_task", {"project_id": "prj_nope", "title": "x"}, "project"),
        ("create_note", {"task_id": "tsk_nope", "body": "x"}, "task"),
        ("list_tasks", {"project_id": "prj_nope"}, "project"),
        ("list_task_events", {"task_id": "tsk_nope"}, "task"),
        ("search_notes", {"query": "x", "project_id": "prj_nope"}, "project"),
        ("get_execution", {"execution_id": "exec_nope"}, "execution"),
    ]:
        e = d.err(op, **params)
        assert e["code"] == "NOT_FOUND_RESOURCE", (op, e)
        assert e["details"]["resource_type"] == rtype, (op, e)


def test_duplicates_conflict(d: Demo) -> None:
    p = d.project("Alpha")
    e = d.err("create_project", name="  alpha ")
    assert e["code"] == "CONFLICT_ALREADY_EXISTS" and e["details"]["resource_id"] == p["project_id"]
    other = d.project("Beta")
    assert d.code("update_project", project_id=other["project_id"], input={"name": "ALPHA"}) == "CONFLICT_ALREADY_EXISTS"
    assert d.ok("update_project", project_id=p["project_id"], input={"name": "ALPHA"})["name"] == "ALPHA"
    a, b = d.task(p["project_id"], "A")["task_id"], d.task(p["project_id"], "B")["task_id"]
    d.ok("create_link", from_task_id=a, to_task_id=b, link_type="blocks")
    assert d.code("create_link", from_task_id=a, to_task_id=b, link_type="blocks") == "CONFLICT_ALREADY_EXISTS"
