"""Helpers shared by the safety tests (imported as ``safety_support``)."""

from __future__ import annotations

import time
from typing import Any

from mcpaql import Adapter, Config
from mcpaql.safety import Safety, SafetyConfig, install_safety
from mcpaql.store.base import Store


def make_adapter(name: str = "tasks") -> Adapter:
    app = Adapter(name)
    deleted: list[str] = []

    @app.read
    def get_task(task_id: str) -> dict:
        """Get a task."""
        return {"task_id": task_id}

    @app.create
    def create_task(title: str) -> dict:
        """Create a task."""
        return {"title": title}

    @app.update
    def update_task(task_id: str, title: str) -> dict:
        """Rename a task."""
        return {"task_id": task_id, "title": title}

    @app.delete
    def delete_task(task_id: str, force: bool = False) -> dict:
        """Delete a task."""
        deleted.append(task_id)
        return {"deleted": task_id}

    @app.delete
    def bulk_delete_tasks(project: str) -> dict:
        """Delete every task of a project (pattern: dangerous)."""
        return {"project": project}

    @app.delete
    def drop_project(project: str) -> dict:
        """Drop a project (pattern: forbidden)."""
        return {"dropped": project}

    @app.execute(danger_level="safe")
    def force_sync() -> dict:
        """Declared safe: overrides the force_* pattern."""
        return {"synced": True}

    app.deleted = deleted  # type: ignore[attr-defined]
    return app


class FakeClock:
    """A wall clock the test moves (``advance``) instead of sleeping past a TTL (issue 12 §6).

    It starts at the real time and only goes forward, so records the store purges by its own
    (real) clock are never purged earlier than the safety layer expects."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    def __init__(self, app: Adapter, safety: Safety, config: Config | None = None) -> None:
        self.app = app
        self.safety = safety
        self.engine = app.engine(config or Config.load(env={}))
        self.session = self.engine.new_session()
        self.agents_are_identities = False
        self.clock = FakeClock()  # build() replaces it with the clock the safety layer was given
        self._sessions: dict[str, Any] = {}

    def as_(self, identity: str, *, per_request: bool = False) -> Any:
        """A new session whose transport established ``identity`` (what auth will set)."""
        s = self.engine.new_session()
        s.identity = identity
        s.per_request = per_request
        return s

    def _by_element(self, params: dict[str, Any]) -> Any:
        """With ``agents_are_identities`` set, each element_name calls through its own identity's
        session (as if every agent had its own endpoint or credentials)."""
        name = params.get("element_name")
        if not self.agents_are_identities or not isinstance(name, str):
            return None
        if name not in self._sessions:
            self._sessions[name] = self.as_(name)
        return self._sessions[name]

    def code_of(self, cid: str) -> str:
        """What the operator reads on the human channel (this process's approval page)."""
        code = self.safety.challenges.code_of(cid)
        assert code is not None, f"no pending challenge {cid} issued by this process"
        return code

    async def call(self, operation: str, session: Any = None, **params: Any) -> dict[str, Any]:
        s = session or self._by_element(params) or self.session
        return await self.engine.execute({"operation": operation, "params": params}, self.engine.context(s))

    async def raw(self, request: Any, session: Any = None, tool: str | None = None) -> dict[str, Any]:
        s = session or self.session
        ctx = self.engine.context(s)
        if tool is None:
            return await self.engine.execute(request, ctx)
        return await self.engine.call_tool(tool, request, ctx)


def build(store: Store, app: Adapter | None = None, config: Config | None = None, **safety: Any) -> Harness:
    app = app or make_adapter()
    clock = FakeClock()
    s = install_safety(app, SafetyConfig(**safety), store=store, clock=clock)
    h = Harness(app, s, config)
    h.clock = clock
    return h
