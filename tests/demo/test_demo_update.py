"""UPDATE semantics of the Task Tracker: deep merge (REQ-UPD-002..004, 010) and optimistic concurrency
(REQ-CONC-002..004)."""

from __future__ import annotations

from demo_helpers import Demo, empty_demo_fixture

from mcpaql.protocol.update import deep_merge

module_demo, d = empty_demo_fixture()  # one adapter build per module, emptied per test


def test_deep_merge_function_worked_example() -> None:
    """CORE §4.5.1, verbatim (REQ-UPD-003)."""
    existing = {"title": "Old Title", "metadata": {"priority": "low", "tags": ["draft"], "author": "alice"}}
    patch = {"title": "New Title", "metadata": {"priority": "high", "tags": ["published", "reviewed"]}}
    assert deep_merge(existing, patch) == {
        "title": "New Title",
        "metadata": {"priority": "high", "tags": ["published", "reviewed"], "author": "alice"},
    }
    assert existing["metadata"]["tags"] == ["draft"]  # the input is not mutated
    assert deep_merge({"a": {"b": 1, "c": 2}}, {"a": {"b": None}}) == {"a": {"c": 2}}  # REQ-UPD-004
    assert deep_merge({"a": 1}, {"b": {"c": None, "d": 2}}) == {"a": 1, "b": {"d": 2}}


def test_worked_example_on_task_metadata(d: Demo) -> None:
    """CORE §4.5.1 on a real task: title replaced, metadata.estimate_hours replaced, metadata.labels
    (an array) replaced entirely, metadata.assignee (absent from input) preserved (REQ-UPD-003, 010)."""
    pid = d.project()["project_id"]
    t = d.task(
        pid,
        "Old Title",
        tags=["keep"],
        metadata={"estimate_hours": 1, "labels": ["draft"], "assignee": "alice", "due_date": "2026-12-24"},
    )
    out = d.ok(
        "update_task",
        task_id=t["task_id"],
        input={"title": "New Title", "metadata": {"estimate_hours": 8, "labels": ["published", "reviewed"]}},
    )
    assert out["title"] == "New Title"
    assert out["metadata"] == {
        "estimate_hours": 8,
        "labels": ["published", "reviewed"],
        "assignee": "alice",
        "due_date": "2026-12-24",
    }
    # untouched top-level fields are preserved too
    assert (out["tags"], out["status"], out["priority"]) == (["keep"], "todo", "medium")
    assert d.ok("get_task", task_id=t["task_id"])["metadata"] == out["metadata"]


def test_null_removes_and_nested_custom_merges(d: Demo) -> None:
    pid = d.project()["project_id"]
    t = d.task(
        pid,
        "T",
        description="to be removed",
        tags=["a", "b"],
        metadata={
            "assignee": "alice",
            "due_date": "2026-12-01",
            "custom": {"ticket": "JIRA-1", "links": {"pr": 12, "ci": "green"}},
        },
    )
    tid = t["task_id"]
    out = d.ok(
        "update_task",
        task_id=tid,
        input={
            "description": None,
            "metadata": {"due_date": None, "custom": {"links": {"ci": None, "doc": "wiki"}, "sprint": 4}},
        },
    )
    assert "description" not in out or out["description"] is None
    assert out["metadata"] == {
        "assignee": "alice",
        "custom": {"ticket": "JIRA-1", "links": {"pr": 12, "doc": "wiki"}, "sprint": 4},
    }
    out = d.ok("update_task", task_id=tid, input={"tags": None})
    assert out["tags"] == []
    out = d.ok("update_task", task_id=tid, input={"metadata": None})
    assert out["metadata"] == {}
    assert out["title"] == "T" and out["_version"] == 4


def test_update_project_merge(d: Demo) -> None:
    p = d.project("P", description="desc")
    out = d.ok("update_project", project_id=p["project_id"], input={"status": "archived"})
    assert (out["name"], out["description"], out["status"]) == ("P", "desc", "archived")


def test_etag_and_version_change_on_every_write(d: Demo) -> None:
    t = d.task(d.project()["project_id"])
    seen = {t["_etag"]}
    for i in range(3):
        t = d.ok("update_task", task_id=t["task_id"], input={"title": f"v{i}"})
        assert t["_version"] == i + 2
        assert t["_etag"] not in seen
        seen.add(t["_etag"])
    assert d.ok("get_task", task_id=t["task_id"])["_etag"] == t["_etag"]
    assert d.ok("list_tasks", fields="full")["items"][0]["_etag"] == t["_etag"]


def test_if_match_on_update_task(d: Demo) -> None:
    t = d.task(d.project()["project_id"], "Start")
    tid, stale = t["task_id"], t["_etag"]
    fresh = d.ok("update_task", task_id=tid, input={"title": "Second"}, if_match=stale)
    # stale etag → CONFLICT_VERSION_MISMATCH, nothing written
    e = d.err("update_task", task_id=tid, input={"title": "Lost update"}, if_match=stale)
    assert e["code"] == "CONFLICT_VERSION_MISMATCH"
    assert e["details"]["actual"] == fresh["_etag"] and e["details"]["expected"] == stale
    assert (e["details"]["resource_type"], e["details"]["resource_id"]) == ("task", tid)
    assert d.ok("get_task", task_id=tid)["title"] == "Second"
    # the current etag, its bare form, the version number and '*' all match
    bare = fresh["_etag"].removeprefix("W/").strip('"')
    out = d.ok("update_task", task_id=tid, input={"title": "Third"}, if_match=fresh["_etag"])
    out = d.ok("update_task", task_id=tid, input={"title": "Fourth"}, if_match=f'"{out["_etag"][3:-1]}"')
    out = d.ok("update_task", task_id=tid, input={"title": "Fifth"}, if_match=str(out["_version"]))
    out = d.ok("update_task", task_id=tid, input={"title": "Sixth"}, if_match="*")
    assert out["_version"] == 6
    assert d.code("update_task", task_id=tid, input={"title": "x"}, if_match=bare) == "CONFLICT_VERSION_MISMATCH"
    assert d.code("update_task", task_id=tid, input={"title": "x"}, if_match="2") == "CONFLICT_VERSION_MISMATCH"


def test_project_etag_ignores_task_counts(d: Demo) -> None:
    """_etag covers the project's own fields: adding a task changes its task_counts, not its version."""
    p = d.project("P")
    d.task(p["project_id"])
    got = d.ok("get_project", project_id=p["project_id"])
    assert got["task_counts"]["total"] == 1 and got["_etag"] == p["_etag"]
    assert d.ok("update_project", project_id=p["project_id"], input={"description": "x"}, if_match=p["_etag"])["_version"] == 2


def test_if_match_on_project_and_deletes(d: Demo) -> None:
    p = d.project("P")
    pid = p["project_id"]
    d.ok("update_project", project_id=pid, input={"description": "x"}, if_match=p["_etag"])
    stale = p["_etag"]
    assert d.code("update_project", project_id=pid, input={"description": "y"}, if_match=stale) == "CONFLICT_VERSION_MISMATCH"
    assert d.code("delete_project", project_id=pid, if_match=p["_etag"]) == "CONFLICT_VERSION_MISMATCH"
    t = d.task(pid)
    d.ok("update_task", task_id=t["task_id"], input={"priority": "high"})
    assert d.code("delete_task", task_id=t["task_id"], if_match=t["_etag"]) == "CONFLICT_VERSION_MISMATCH"
    current = d.ok("get_task", task_id=t["task_id"])["_etag"]
    assert d.ok("delete_task", task_id=t["task_id"], if_match=current)["deleted"] is True


def test_protocol_advertises_etag_support(d: Demo) -> None:
    proto = d.ok("introspect", query="operations")["_protocol"]
    assert proto["supports_etag"] is True
    assert proto["concurrency"] == "read-concurrent"
