"""Background executions (mcpaql.safety.jobs): lifecycle operations over the durable store,
progress object and notifications (MCPI §5.4), session end (REQ-EXEC-013), introspection."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from aql_support import LEAK_PATTERNS, assert_valid_introspection
from mcpaql import Adapter, Config
from mcpaql.protocol.context import Context
from mcpaql.protocol.errors import MCPAQLError
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.safety.jobs import LIFECYCLE, Jobs, install_jobs, notification_progress
from mcpaql.store.base import Store

pytestmark = pytest.mark.anyio


class World:
    """An adapter with background operations whose progress the test drives by events."""

    def __init__(self, store: Store, *, install_first: bool = False, clock: Any = time.time) -> None:
        app = Adapter("jobs")
        self.gate = asyncio.Event()
        self.started = asyncio.Event()
        self.cancelled = False
        self.fail_times = 0
        self.runs = 0
        if install_first:
            self.jobs = install_jobs(app, store, clock=clock)

        @app.read
        def ping() -> dict:
            """Ping."""
            return {"pong": True}

        @app.execute(background=True)
        async def rebuild_index(shard: str, steps: int = 4, *, ctx: Context) -> dict:
            """Rebuild one shard's index."""
            self.runs += 1
            self.started.set()
            try:
                await ctx.report_progress(0, steps, "starting")
                await self.gate.wait()
                for i in range(steps):
                    await ctx.report_progress(i + 1, steps, f"segment {i + 1}")
            except asyncio.CancelledError:
                self.cancelled = True
                raise
            if self.fail_times:
                self.fail_times -= 1
                raise MCPAQLError(
                    "NOT_FOUND_RESOURCE",
                    f"Resource 'shard' not found: '{shard}'",
                    {"resource_type": "shard", "resource_id": shard},
                )
            return {"rebuilt": shard, "segments": steps}

        @app.execute(background=True)
        async def explode() -> dict:
            """Fails with an unexpected exception."""
            raise RuntimeError("secret /src/internal.py detail")

        @app.execute(background=True)
        def sync_job(n: int) -> dict:
            """A plain function, run in a worker thread."""
            return {"double": 2 * n}

        if not install_first:
            self.jobs = install_jobs(app, store, clock=clock)
        self.app = app
        self.engine = app.engine(Config.load(env={}))
        self.session = self.engine.new_session()

    async def call(self, op: str, session: Any = None, sink: Any = None, **params: Any) -> dict[str, Any]:
        ctx = self.engine.context(session or self.session, progress_sink=sink)
        return await self.engine.execute({"operation": op, "params": params}, ctx)

    async def state(self, eid: str) -> dict[str, Any]:
        env = await self.call("get_execution_state", execution_id=eid)
        assert env["success"], env
        return env["data"]

    async def poll(self, eid: str, until: set[str], timeout: float = 5.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                st = await self.state(eid)
                if st["status"] in until:
                    return st
                await asyncio.sleep(0.01)


@pytest.fixture
async def world(sqlite_store: Store) -> AsyncIterator[World]:
    w = World(sqlite_store)
    yield w
    await w.jobs.close()


async def test_start_returns_at_once_then_completes_with_result(world: World) -> None:
    env = await world.call("rebuild_index", shard="s1")
    assert env["success"], env
    data = env["data"]
    assert data["status"] == "running" and data["operation"] == "rebuild_index"
    assert data["execution_id"].startswith("exec_") and data["actions"] == ["cancel_execution"]
    assert data["progress"] == {"percentage": 0}
    eid = data["execution_id"]
    await world.started.wait()
    st = await world.poll(eid, {"running"})
    assert st["progress"]["message"] == "starting" and st["progress"]["total"] == 4
    world.gate.set()
    st = await world.poll(eid, {"completed"})
    assert st["result"] == {"rebuilt": "s1", "segments": 4}
    assert st["progress"]["percentage"] == 100 and st["progress"]["message"] == "segment 4"
    assert st["started_at"] and st["finished_at"] and st["attempt"] == 1
    assert st["allowed_events"] == [] and st["actions"] == []
    assert "error" not in st


async def test_progress_object_tracks_report_progress(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s1", steps=2))["data"]["execution_id"]
    await world.started.wait()
    st = await world.poll(eid, {"running"})
    for _ in range(100):
        if st["progress"].get("message") == "starting":
            break
        await asyncio.sleep(0.01)
        st = await world.state(eid)
    assert st["progress"] == {"current": 0, "total": 2, "percentage": 0.0, "message": "starting"}
    world.gate.set()
    await world.jobs.wait(eid, 5)
    st = await world.state(eid)
    assert st["progress"] == {"current": 2, "total": 2, "percentage": 100, "message": "segment 2"}


async def test_progress_notifications_mapped_per_mcpi_5_4(world: World) -> None:
    calls: list[tuple[float, float | None, str | None]] = []

    async def sink(p: float, total: float | None, msg: str | None) -> None:
        calls.append((p, total, msg))

    world.gate.set()
    eid = (await world.call("rebuild_index", sink=sink, shard="s1", steps=4))["data"]["execution_id"]
    assert calls[:2] == [(0.0, 100.0, "pending"), (10.0, 100.0, "running")]  # sent before the response
    await world.jobs.wait(eid, 5)
    values = [c[0] for c in calls]
    assert values == [0.0, 10.0, 30.0, 50.0, 70.0, 90.0, 100.0]
    assert values == sorted(set(values))  # MCP: strictly increasing
    assert all(t == 100.0 for _, t, _ in calls)
    assert calls[-1][2] == "completed"
    assert notification_progress("pending") == 0 and notification_progress("completed") == 100
    assert notification_progress("running", 0.5) == 50 and notification_progress("queued") == 0
    assert notification_progress("paused", 1.0) == 90  # adapter state → its core state


async def test_no_sink_means_no_notifications_and_no_error(world: World) -> None:
    world.gate.set()
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    assert (await world.jobs.wait(eid, 5))["status"] == "completed"


async def test_failure_keeps_mcpaql_error_code(world: World) -> None:
    world.fail_times = 1
    world.gate.set()
    eid = (await world.call("rebuild_index", shard="gone"))["data"]["execution_id"]
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "failed"
    assert st["error"]["code"] == "NOT_FOUND_RESOURCE"
    assert st["error"]["details"] == {"resource_type": "shard", "resource_id": "gone"}
    assert "result" not in st and st["actions"] == ["retry_execution"] and st["allowed_events"] == ["retry"]


async def test_unexpected_exception_is_internal_error_without_leaks(world: World) -> None:
    eid = (await world.call("explode"))["data"]["execution_id"]
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "failed"
    assert st["error"] == {"code": "INTERNAL_ERROR", "message": "the execution failed unexpectedly"}
    text = json.dumps(await world.call("get_execution_state", execution_id=eid))
    assert not any(p.search(text) for p in LEAK_PATTERNS), text
    assert "secret" not in text


async def test_sync_handler_runs_in_background(world: World) -> None:
    eid = (await world.call("sync_job", n=21))["data"]["execution_id"]
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "completed" and st["result"] == {"double": 42}


async def test_cancel_running_really_cancels_the_task(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.started.wait()
    env = await world.call("cancel_execution", execution_id=eid)
    assert env["success"], env
    assert env["data"]["status"] == "cancelled" and env["data"]["reason"] == "cancelled_by_client"
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "cancelled" and world.cancelled
    assert not world.jobs._tasks  # the task ended
    assert st["actions"] == ["retry_execution"] and st["finished_at"]


async def test_cancel_terminal_is_structured_error_naming_state(world: World) -> None:
    world.gate.set()
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.jobs.wait(eid, 5)
    env = await world.call("cancel_execution", execution_id=eid)
    assert not env["success"]
    err = env["error"]
    assert err["code"] == "VALIDATION_INVALID_VALUE" and "completed" in err["message"]
    assert err["details"]["status"] == "completed" and err["details"]["allowed_events"] == []
    assert (await world.state(eid))["status"] == "completed"


async def test_unknown_and_foreign_execution_ids_are_not_found(world: World, sqlite_store: Store) -> None:
    for op in ("get_execution_state", "cancel_execution", "retry_execution"):
        env = await world.call(op, execution_id="exec_nope")
        assert env["error"]["code"] == "NOT_FOUND_RESOURCE", env
        assert env["error"]["details"] == {"resource_type": "execution", "resource_id": "exec_nope"}
    # a safety-loop execution in the same store is not a background execution
    rec = await world.jobs.executions.create("agent", world.session.id)
    env = await world.call("get_execution_state", execution_id=rec["execution_id"])
    assert env["error"]["code"] == "NOT_FOUND_RESOURCE"


async def test_retry_after_failure_same_id_completes(world: World) -> None:
    world.fail_times = 1
    world.gate.set()
    eid = (await world.call("rebuild_index", shard="s2"))["data"]["execution_id"]
    assert (await world.jobs.wait(eid, 5))["status"] == "failed"
    env = await world.call("retry_execution", execution_id=eid)
    assert env["success"], env
    assert env["data"]["execution_id"] == eid and env["data"]["status"] == "running" and env["data"]["attempt"] == 2
    assert "error" not in env["data"] and "finished_at" not in env["data"]
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "completed" and st["result"]["rebuilt"] == "s2" and "error" not in st
    assert world.runs == 2


async def test_retry_after_cancel_starts_new_execution(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s3"))["data"]["execution_id"]
    await world.started.wait()
    await world.call("cancel_execution", execution_id=eid)
    await world.jobs.wait(eid, 5)
    world.gate.set()
    env = await world.call("retry_execution", execution_id=eid)
    assert env["success"], env
    new = env["data"]["execution_id"]
    assert new != eid and env["data"]["retry_of"] == eid and env["data"]["attempt"] == 2
    st = await world.jobs.wait(new, 5)
    assert st["status"] == "completed" and st["result"]["rebuilt"] == "s3"
    assert (await world.state(eid))["status"] == "cancelled"  # terminal stays terminal (REQ-EXEC-004)


async def test_retry_of_running_or_completed_is_refused(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    env = await world.call("retry_execution", execution_id=eid)
    assert env["error"]["code"] == "VALIDATION_INVALID_VALUE" and "running" in env["error"]["message"]
    assert env["error"]["details"]["status"] == "running"
    world.gate.set()
    await world.jobs.wait(eid, 5)
    env = await world.call("retry_execution", execution_id=eid)
    assert env["error"]["details"]["status"] == "completed"


async def test_retry_in_another_process_is_refused(world: World, sqlite_store: Store) -> None:
    world.fail_times = 1
    world.gate.set()
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.jobs.wait(eid, 5)
    other = World(sqlite_store)  # same store, fresh runtime: as another process would be
    st = await other.state(eid)
    assert st["status"] == "failed"  # state is readable anywhere the store is
    env = await other.call("retry_execution", execution_id=eid)
    assert env["error"]["code"] == "VALIDATION_INVALID_VALUE"
    assert env["error"]["details"]["constraint"] == "retry_unavailable"


# Run by a second interpreter: an adapter of the same name over the same SQLite file, which reads
# the execution this process started and cancels it.
CANCEL_ELSEWHERE = """
import asyncio, json, sys
from mcpaql import Adapter, Config, install_jobs

async def main(store_url, eid):
    app = Adapter("jobs")
    jobs = install_jobs(app, store_url)
    engine = app.engine(Config.load(env={}))
    ctx = engine.context(engine.new_session())
    seen = await engine.execute({"operation": "get_execution_state", "params": {"execution_id": eid}}, ctx)
    cancel = await engine.execute({"operation": "cancel_execution", "params": {"execution_id": eid}}, ctx)
    await jobs.close()
    print(json.dumps({"seen": seen, "cancel": cancel}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def test_cancel_from_another_process_stops_task_at_next_checkpoint(world: World, tmp_path: Path) -> None:
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.started.wait()
    db = tmp_path / "safety.db"  # the file the ``sqlite_store`` fixture behind ``world`` opened
    assert db.exists()
    # A real second OS process; anyio's runner keeps this event loop (and the running task) going.
    done = await anyio.run_process([sys.executable, "-c", CANCEL_ELSEWHERE, f"sqlite:///{db}", eid], check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    out = json.loads(done.stdout)
    assert out["seen"]["data"]["status"] == "running", out  # the other process sees this one's execution
    assert out["cancel"]["success"] and out["cancel"]["data"]["status"] == "cancelled", out
    assert world.runs == 1 and not world.cancelled  # nothing here was told: only the store changed
    world.gate.set()  # the task reports progress next, sees the record cancelled and stops
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "cancelled" and "result" not in st and world.runs == 1
    assert not world.jobs._tasks
    assert world.cancelled  # stopped at its checkpoint, not left to finish


async def test_session_close_cancels_in_progress_executions(world: World) -> None:
    s2 = world.engine.new_session()
    eid = (await world.call("rebuild_index", session=s2, shard="s1"))["data"]["execution_id"]
    world.gate.set()
    done = (await world.call("rebuild_index", session=s2, shard="s2"))["data"]["execution_id"]
    await world.jobs.wait(done, 5)
    world.gate.clear()
    eid = (await world.call("rebuild_index", session=s2, shard="s3"))["data"]["execution_id"]
    other = (await world.call("rebuild_index", shard="s4"))["data"]["execution_id"]  # another session
    await asyncio.sleep(0.05)
    await s2.close()
    st = await world.jobs.wait(eid, 5)
    assert st["status"] == "cancelled" and st["reason"] == "session_closed"
    assert (await world.state(done))["status"] == "completed"  # terminal untouched
    assert (await world.state(other))["status"] == "running"
    world.gate.set()
    assert (await world.jobs.wait(other, 5))["status"] == "completed"


async def test_a_per_request_session_ending_does_not_cancel_its_execution(world: World) -> None:
    """Stateless HTTP and 2026-07-28 requests: the session ends with the request that started the
    execution, which must keep running (issue 11)."""
    s = world.engine.new_session()
    s.per_request = True
    eid = (await world.call("rebuild_index", session=s, shard="s1"))["data"]["execution_id"]
    await s.close()
    assert (await world.state(eid))["status"] == "running"
    world.gate.set()
    assert (await world.jobs.wait(eid, 5))["status"] == "completed"


async def test_any_session_may_read_and_cancel(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    s2 = world.engine.new_session()
    assert (await world.call("get_execution_state", session=s2, execution_id=eid))["data"]["status"] == "running"
    assert (await world.call("cancel_execution", session=s2, execution_id=eid))["data"]["status"] == "cancelled"


async def test_introspection_lifecycle_and_generated_operations(world: World) -> None:
    ops = await world.call("introspect", query="operations")
    assert_valid_introspection(ops)
    names = {o["name"]: o for o in ops["data"]["operations"]}
    assert names["get_execution_state"]["semantic_category"] == "READ"
    assert names["cancel_execution"]["semantic_category"] == "EXECUTE"
    assert names["retry_execution"]["semantic_category"] == "EXECUTE"
    for op in ("rebuild_index", "explode", "sync_job"):
        d = await world.call("introspect", query="operations", name=op)
        assert_valid_introspection(d)
        detail = d["data"]["operation"]
        lc = detail["lifecycle"]
        assert set(lc) == {"states", "supports_cancel", "supports_retry", "progress_reporting"}
        assert lc == LIFECYCLE and lc["states"] == ["pending", "running", "completed", "failed", "cancelled"]
        assert detail["returns"]["name"] == "BackgroundExecution"
        assert [p["name"] for p in detail["parameters"]] == (
            [] if op == "explode" else ["shard", "steps"] if op == "rebuild_index" else ["n"]
        )
    d = await world.call("introspect", query="operations", name="ping")
    assert "lifecycle" not in d["data"]["operation"]
    for op in ("get_execution_state", "cancel_execution", "retry_execution"):
        d = await world.call("introspect", query="operations", name=op)
        assert_valid_introspection(d)
        assert [p["name"] for p in d["data"]["operation"]["parameters"]] == ["execution_id"]
    types = await world.call("introspect", query="types", name="BackgroundExecution")
    assert_valid_introspection(types)
    assert types["data"]["type"]["kind"] == "object"


async def test_install_before_decorators_still_wraps(sqlite_store: Store) -> None:
    w = World(sqlite_store, install_first=True)
    try:
        w.gate.set()
        env = await w.call("rebuild_index", shard="x")
        assert env["data"]["status"] == "running"
        assert (await w.jobs.wait(env["data"]["execution_id"], 5))["status"] == "completed"
    finally:
        await w.jobs.close()


async def test_validation_happens_before_an_execution_is_created(world: World, sqlite_store: Store) -> None:
    env = await world.call("rebuild_index", steps=2)
    assert env["error"]["code"] == "VALIDATION_MISSING_PARAM"
    assert await sqlite_store.scan("execution") == []


async def test_close_cancels_everything(world: World) -> None:
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.started.wait()
    await world.jobs.close()
    assert (await world.state(eid))["status"] == "cancelled" and world.cancelled


async def test_only_execute_operations_can_be_background(sqlite_store: Store) -> None:
    app = Adapter("bad")

    @app.read(background=True)
    def peek() -> dict:
        """Peek."""
        return {}

    with pytest.raises(ValueError, match="only EXECUTE"):
        install_jobs(app, sqlite_store)
    with pytest.raises(TypeError):
        install_jobs(object(), sqlite_store)


async def test_works_with_safety_installed_on_the_same_store(sqlite_store: Store) -> None:
    app = Adapter("both")

    @app.execute(background=True)
    async def crunch(n: int) -> dict:
        """Crunch numbers."""
        return {"n": n}

    jobs = install_jobs(app, sqlite_store)
    install_safety(app, SafetyConfig(trust="validated"), store=sqlite_store)
    eng = app.engine(Config.load(env={}))
    s = eng.new_session()
    env = await eng.execute({"operation": "crunch", "params": {"n": 3}}, eng.context(s))
    assert env["success"], env
    st = await jobs.wait(env["data"]["execution_id"], 5)
    assert st["result"] == {"n": 3}
    env = await eng.execute({"operation": "get_execution_state", "params": {"execution_id": st["execution_id"]}}, eng.context(s))
    assert env["success"] and env["data"]["status"] == "completed"
    await jobs.close()
    assert isinstance(jobs, Jobs)


WORKER = Path(__file__).with_name("jobs_worker.py")


async def test_execution_of_a_killed_process_becomes_failed_not_running_forever(sqlite_store: Store, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'safety.db'}"  # the file behind sqlite_store
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WORKER), url, "1.5", stdout=asyncio.subprocess.PIPE)
    try:
        eid = json.loads(await asyncio.wait_for(proc.stdout.readline(), 60))["execution_id"]
        skew = [0.0]
        other = World(sqlite_store, clock=lambda: time.time() + skew[0])  # another process's view of the store
        await asyncio.sleep(2.5)  # longer than the TTL, in real time: a live owner keeps beating
        assert (await other.state(eid))["status"] == "running"
    finally:
        proc.kill()
        await proc.wait()
    skew[0] = 2.0  # the reader's clock moves past the TTL: no beat since (the injected clock, no sleep)
    st = await other.state(eid)
    assert st["status"] == "failed", st
    assert st["error"]["code"] == "INTERNAL_ERROR" and st["error"]["details"]["reason"] == "owner_lost"
    assert st["actions"] == ["retry_execution"]
    env = await other.call("retry_execution", execution_id=eid)  # its parameters died with it
    assert env["error"]["details"]["constraint"] == "retry_unavailable"
    await other.jobs.close()


async def test_own_running_executions_are_never_reaped(world: World) -> None:
    world.jobs.owner_ttl = 0.05
    eid = (await world.call("rebuild_index", shard="s1"))["data"]["execution_id"]
    await world.started.wait()
    await asyncio.sleep(0.2)
    assert (await world.state(eid))["status"] == "running"  # the reader is the owner
    world.gate.set()
    assert (await world.jobs.wait(eid, 5))["status"] == "completed"


async def test_REQ_EXEC_011_background_operations_name_their_transitions(world: World) -> None:
    env = await world.call("introspect", query="operations")
    desc = {o["name"]: o["description"] for o in env["data"]["operations"]}
    assert all(w in desc["rebuild_index"] for w in ("pending → running", "completed or failed", "→ cancelled"))
    assert "becomes cancelled" in desc["cancel_execution"]
    assert "failed or cancelled" in desc["retry_execution"] and "keeps its id" in desc["retry_execution"]
