"""The Task Tracker's SQLite file: where it lives, that it persists, and that importing creates nothing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from demo_helpers import Demo

import mcpaql.demo
from mcpaql.demo import store


def test_data_persists_across_engines(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    first = Demo(path)
    pid = first.project("Persistent")["project_id"]
    t = first.task(pid, "Survives restarts", tags=["keep"], metadata={"assignee": "alice", "custom": {"k": {"v": 1}}})
    first.ok("update_task", task_id=t["task_id"], input={"status": "in_progress"})
    first.ok("create_note", task_id=t["task_id"], body="persisted note")
    first.app.db.close()  # type: ignore[attr-defined]

    second = Demo(path)
    got = second.ok("get_task", task_id=t["task_id"])
    assert (got["title"], got["status"], got["tags"], got["_version"]) == ("Survives restarts", "in_progress", ["keep"], 2)
    assert got["metadata"] == {"assignee": "alice", "custom": {"k": {"v": 1}}}
    assert got["notes"][0]["body"] == "persisted note"
    # the sample data was created once, not again on the second open
    assert [p["name"] for p in second.ok("list_projects")["items"]] == ["Website launch", "Persistent"]
    assert second.ok("list_tasks")["pageInfo"]["totalCount"] == 6


def test_two_engines_open_at_once_see_each_other(tmp_path: Path) -> None:
    path = tmp_path / "both.db"
    a, b = Demo(path, seed=False), Demo(path, seed=False)
    pid = a.project("From A")["project_id"]
    assert b.ok("get_project", project_id=pid)["name"] == "From A"
    t = b.task(pid, "From B")
    stale = t["_etag"]
    a.ok("update_task", task_id=t["task_id"], input={"title": "A wins"})
    assert b.code("update_task", task_id=t["task_id"], input={"title": "B loses"}, if_match=stale) == "CONFLICT_VERSION_MISMATCH"


def test_file_is_sqlite_in_wal_mode_and_parent_dirs_are_created(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "demo.db"
    Demo(path)
    assert path.exists()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(store.SCHEMA_VERSION)
    finally:
        conn.close()


def test_seed_can_be_disabled(tmp_path: Path) -> None:
    d = Demo(tmp_path / "empty.db", seed=False)
    assert d.ok("list_tasks")["items"] == []
    assert d.ok("list_projects")["pageInfo"]["totalCount"] == 0


def test_path_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(store.ENV_DB, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.resolve_path() == tmp_path / "home" / ".local" / "share" / "mcpaql" / "demo.db"
    monkeypatch.setenv(store.ENV_DB, str(tmp_path / "env.db"))
    assert store.resolve_path() == tmp_path / "env.db"
    assert store.resolve_path(tmp_path / "arg.db") == tmp_path / "arg.db"
    assert store.resolve_path("~/x.db") == tmp_path / "home" / "x.db"


def test_importing_creates_no_files_and_adapter_is_lazy(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop(store.ENV_DB, None)
    code = (
        "import mcpaql.demo, os, sys\n"
        "assert not os.listdir(os.environ['HOME']), os.listdir(os.environ['HOME'])\n"
        "a = mcpaql.demo.adapter\n"
        "assert a is mcpaql.demo.adapter and a.name == 'tasks'\n"
        "print(a.db.path)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == home / ".local" / "share" / "mcpaql" / "demo.db"
    assert (home / ".local" / "share" / "mcpaql" / "demo.db").exists()


def test_lazy_adapter_honours_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(store.ENV_DB, str(tmp_path / "lazy.db"))
    monkeypatch.setattr(mcpaql.demo, "_default", None)
    assert not (tmp_path / "lazy.db").exists()
    assert mcpaql.demo.adapter.name == "tasks"
    assert (tmp_path / "lazy.db").exists()
    with pytest.raises(AttributeError):
        _ = mcpaql.demo.nothing_here  # type: ignore[attr-defined]
