"""Test support for the Task Tracker demo: an engine over a temporary database, with helpers that
route each operation to its tool and schema-check every envelope (via the shared Harness)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aql_support import Harness
from mcpaql import Config
from mcpaql.demo import make_adapter


class Demo:
    def __init__(self, path: Path | str, *, seed: bool = True, config: Config | None = None) -> None:
        self.path = Path(path)
        self.app = make_adapter(self.path, seed=seed)
        self.engine = self.app.engine(config or Config())
        self.h = Harness(self.engine)

    # Tables in an order that deletes children before parents (foreign keys).
    _TABLES = ("task_events", "links", "notes", "executions", "tasks", "projects")

    def reset(self) -> Demo:
        """Empty the database and start a new session: one adapter build (~0.4 s of pydantic
        schema work) serves a whole test module, each test still starting from nothing."""
        with self.app.db.tx() as c:
            for table in self._TABLES:
                c.execute(f"DELETE FROM {table}")
        self.h = Harness(self.engine)
        return self

    def tool(self, op: str) -> str:
        compiled = self.engine.compiled(op)
        assert compiled is not None, f"no operation {op}"
        return self.engine.tool_for_family[compiled.spec.family]

    def call(self, op: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request: dict[str, Any] = {"operation": op}
        if params is not None:
            request["params"] = params
        return self.h.call(self.tool(op), request)

    def ok(self, op: str, **params: Any) -> Any:
        env = self.call(op, params)
        assert env["success"] is True, env
        return env["data"]

    def err(self, op: str, **params: Any) -> dict[str, Any]:
        env = self.call(op, params)
        assert env["success"] is False, env
        return env["error"]

    def code(self, op: str, **params: Any) -> str:
        return str(self.err(op, **params)["code"])

    def progress_call(self, op: str, params: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
        """Call ``op`` with a progress sink; returns the envelope and the progress notifications."""
        calls: list[tuple[Any, ...]] = []

        async def sink(progress: float, total: float | None, message: str | None) -> None:
            calls.append((progress, total, message))

        ctx = self.engine.context(self.h.session, progress_sink=sink)
        env = asyncio.run(self.engine.call_tool(self.tool(op), {"operation": op, "params": params}, ctx))
        self.h.check(env, self.tool(op), {"operation": op})
        return env, calls

    # fixtures-in-code: a project with a couple of tasks
    def project(self, name: str = "Alpha", **kw: Any) -> dict[str, Any]:
        return dict(self.ok("create_project", name=name, **kw))

    def task(self, project_id: str, title: str = "Do a thing", **kw: Any) -> dict[str, Any]:
        return dict(self.ok("create_task", project_id=project_id, title=title, **kw))


def empty_demo_fixture() -> tuple[object, object]:
    """``(module_demo, d)`` fixtures for a test module: ``d`` is an empty demo, built once per
    module and emptied before each test."""

    @pytest.fixture(scope="module")
    def module_demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
        return Demo(tmp_path_factory.mktemp("demo") / "d.db", seed=False)

    @pytest.fixture
    def d(module_demo: Demo) -> Demo:
        return module_demo.reset()

    return module_demo, d
