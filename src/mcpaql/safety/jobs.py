"""Background executions: long-running EXECUTE operations that return at once and run on
(CORE §8.4, REQ-EXEC-*; progress mapping MCPI §5.4, REQ-MCP-019).

Mark an operation and install the jobs runtime on the adapter::

    @app.execute(background=True)
    async def rebuild_index(shard: str, ctx: Context) -> dict:
        for i in range(10):
            await ctx.report_progress(i + 1, 10, f"segment {i + 1}")
        return {"rebuilt": shard}

    jobs = install_jobs(app, store)        # = app.use(jobs.extension()); before app.engine()

Calling ``rebuild_index`` now creates an execution record (``pending`` → ``running``), starts
the handler as an asyncio task and answers at once with the state response
``{execution_id, status, operation, progress, ...}``. Three operations are generated:
``get_execution_state`` (READ), ``cancel_execution`` and ``retry_execution`` (EXECUTE).

Every state change goes through :class:`~mcpaql.safety.lifecycle.Executions` (the table in
``lifecycle.py``, compare-and-set in the store), so the records are readable from any process
sharing the store. Decisions (also in docs/safety.md, "Background executions"):

* ``ctx.report_progress(current, total, message)`` inside the handler updates the record's
  ``progress`` ``{percentage, current, total, message}`` (REQ-EXEC-006: ``percentage`` is the
  real fraction) and, when the starting request carried a progress token, forwards an MCP
  progress notification mapped per MCPI §5.4: pending 0, running 10 + 80 × fraction,
  completed 100 (``total`` 100; only ever increasing).
* A handler's :class:`MCPAQLError` is stored as ``error`` with its code; anything else becomes
  ``INTERNAL_ERROR`` with a fixed message (the traceback goes to the server log only).
* ``retry_execution`` of a ``failed`` execution reuses its id (the table's ``failed → running``);
  a ``cancelled`` one is terminal (REQ-EXEC-004), so retrying it starts a *new* execution with
  ``retry_of``. Either way the response carries the id to poll. Parameters are kept in memory
  only (they may be sensitive or non-JSON), so retry works in the process that ran it.
* Any session of the adapter may read, cancel or retry an execution (its id is an unguessable
  96-bit token); a retry moves ownership to the retrying session.
* When the starting session ends, its in-progress executions become ``cancelled`` with
  ``reason: session_closed`` (REQ-EXEC-013) and their tasks are cancelled — except a per-request
  session's (stateless HTTP, 2026-07-28 requests), which ends with the very request that started
  the execution.
* A cancel issued by another process only changes the record; the owning task notices at its
  next ``report_progress`` and stops.
* Every runtime has an instance id and, while it runs executions, writes a heartbeat to the store
  (every ``owner_ttl / 3`` seconds). An execution whose owner has not been heard from for
  ``owner_ttl`` seconds (its process was killed or lost the store) is orphaned: the next read,
  cancel or retry from anywhere turns it ``failed`` with ``error.details.reason: owner_lost``
  (``cancelled`` if it never started), so no record stays ``running`` forever.

Uses asyncio directly (tasks outlive the request), which is why it lives here and not in the
sans-IO protocol core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from ..protocol.categories import Category
from ..protocol.context import Context, ProgressSink
from ..protocol.errors import MCPAQLError, not_found_resource
from ..protocol.extension import Extension
from ..protocol.operations import OperationSpec, ParamSpec, TypeRef, TypeSpec
from ..protocol.session import Session
from ..store.base import Store, open_store
from .lifecycle import (
    TERMINAL,
    Event,
    Executions,
    State,
    allowed_events,
    core_state,
    illegal_now,
    lifecycle_info,
    retry_plan,
)

log = logging.getLogger("mcpaql.safety.jobs")

CTX_KEY = "_mcpaql_jobs_ctx"
KIND = "background"
LIFECYCLE: dict[str, Any] = lifecycle_info(cancel=True, retry=True, progress=True)
INTERNAL = {"code": "INTERNAL_ERROR", "message": "the execution failed unexpectedly"}
OWNER_LOST = {
    "code": "INTERNAL_ERROR",
    "message": "the process running this execution stopped before it finished",
    "details": {"reason": "owner_lost", "retryable": True},
}
OWNERS = "execution-owner"  # store namespace of runtime heartbeats
OWNER_TTL = 30.0
OPERATIONS = ("get_execution_state", "cancel_execution", "retry_execution")


def notification_progress(status: str, fraction: float | None = None) -> float:
    """MCPI §5.4: the progress (of 100) a notification carries for an execution state."""
    state = core_state(status)
    if state is State.PENDING:
        return 0.0
    if state is State.COMPLETED:
        return 100.0
    if state is State.RUNNING:
        f = 0.0 if fraction is None else min(max(fraction, 0.0), 1.0)
        return round(10 + 80 * f, 2)
    return 0.0  # failed / cancelled: no notification is sent for them


@dataclass
class _Run:
    """In-process bookkeeping of one execution: its task, handler and parameters."""

    operation: str
    kwargs: dict[str, Any]
    session: Session
    sink: ProgressSink | None
    task: asyncio.Task[None] | None = None
    sent: float = -1.0  # last notification value (MCP progress must increase)


class Jobs:
    """The background-execution runtime of one adapter (see module doc)."""

    def __init__(
        self, store: Store, adapter: str, *, owner_ttl: float = OWNER_TTL, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.adapter = adapter
        # Wall-clock seconds (injectable: tests move time instead of sleeping past owner_ttl).
        self.clock = clock
        self.executions = Executions(store, clock=clock)
        self.instance = secrets.token_hex(8)
        self.owner_ttl = owner_ttl
        self._specs: dict[str, OperationSpec] = {}
        self._runs: dict[str, _Run] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # strong references until done
        self._heartbeat: asyncio.Task[None] | None = None

    # ---- wrapping ---------------------------------------------------------------------------

    def extension(self) -> Extension:
        """The runtime as an :class:`~mcpaql.protocol.extension.Extension`: ``background=True``
        operations rewritten into their background form, the three execution operations, and a
        lifespan that cancels this process's executions when the server stops."""

        @contextlib.asynccontextmanager
        async def lifespan() -> AsyncIterator[None]:
            try:
                yield None
            finally:
                await self.close()

        return Extension(
            "jobs",
            operations=tuple(self.operations()),
            lifespan=lifespan,
            rewrite=lambda spec: self.wrap(spec) if spec.extensions.get("background") else spec,
        )

    def wrap(self, spec: OperationSpec) -> OperationSpec:
        """The background form of an EXECUTE operation (idempotent)."""
        if spec.extensions.get("background") == "installed":
            return spec
        if spec.category is not Category.EXECUTE:
            raise ValueError(f"operation '{spec.name}': only EXECUTE operations can run in the background")
        self._specs[spec.name] = spec
        name = spec.name

        async def start_background(**kwargs: Any) -> dict[str, Any]:
            ctx: Context = kwargs.pop(CTX_KEY)
            return await self.start(name, kwargs, ctx)

        start_background.__name__ = getattr(spec.handler, "__name__", name)
        start_background.__doc__ = getattr(spec.handler, "__doc__", None)
        note = (
            " Runs in the background: returns {execution_id, status, progress} at once (pending → running, "
            "then completed or failed); poll get_execution_state, stop with cancel_execution (→ cancelled), "
            "rerun with retry_execution."
        )
        return replace(
            spec,
            handler=start_background,
            context_param=CTX_KEY,
            is_async=True,
            lifecycle=dict(LIFECYCLE),
            description=spec.description.rstrip() + note,
            returns=TypeRef("BackgroundExecution", "object", "{execution_id, status, operation, progress, ...}"),
            types=(*spec.types, *TYPES),
            extensions={**spec.extensions, "background": "installed"},
        )

    # ---- running ----------------------------------------------------------------------------

    async def start(self, operation: str, kwargs: dict[str, Any], ctx: Context) -> dict[str, Any]:
        self._session_hook(ctx.session)
        await self._beat()
        rec = await self.executions.create(
            operation,
            ctx.session.id,
            operation=operation,
            kind=KIND,
            adapter=self.adapter,
            attempt=1,
            progress={"percentage": 0},
            owner=self.instance,
        )
        run = _Run(operation, dict(kwargs), ctx.session, ctx.progress_sink)
        await self._notify(run, State.PENDING.value)
        return await self._launch(rec["execution_id"], run, Event.START, ctx, {})

    async def _launch(self, eid: str, run: _Run, event: Event, ctx: Context, changes: dict[str, Any]) -> dict[str, Any]:
        await self._beat()
        rec = await self.executions.fire(eid, event, owner=self.instance, **changes)
        self._runs[eid] = run
        await self._notify(run, State.RUNNING.value, 0.0)
        job_ctx = Context(
            session=run.session,
            operation=run.operation,
            endpoint=ctx.endpoint,
            request_meta=dict(ctx.request_meta),
            progress_sink=self._sink(eid, run),
            extensions=ctx.extensions,
            logger=ctx.logger,
        )
        task = asyncio.get_running_loop().create_task(self._run(eid, run, job_ctx), name=f"mcpaql-job-{eid}")
        run.task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._keep_alive(), name="mcpaql-jobs-heartbeat")
        return self.view(rec)

    # ---- owner liveness ---------------------------------------------------------------------

    async def _beat(self) -> None:
        now = self.clock()
        await self.store.put(OWNERS, self.instance, {"alive_until": now + self.owner_ttl}, purge_at=now + 4 * self.owner_ttl)

    async def _keep_alive(self) -> None:
        """Heartbeat while this runtime has executions in flight (then the last one just expires)."""
        while any(not t.done() for t in self._tasks):
            try:
                await self._beat()
            except Exception:  # a store hiccup: the next beat retries; a long outage orphans our runs
                log.warning("background executions: heartbeat to the store failed", exc_info=True)
            await asyncio.sleep(self.owner_ttl / 3)

    async def _reap_if_orphaned(self, rec: dict[str, Any]) -> dict[str, Any]:
        """An in-progress record whose owner stopped beating becomes failed (or cancelled)."""
        state = core_state(rec["status"])
        owner = rec.get("owner")
        if state not in (State.PENDING, State.RUNNING) or not owner or owner == self.instance:
            return rec
        beat = await self.store.get(OWNERS, owner)
        if beat is not None and float(beat.get("alive_until", 0)) >= self.clock():
            return rec
        eid = rec["execution_id"]
        log.warning(
            "background execution %s (%s): its process stopped; marking it %s",
            eid,
            rec.get("operation"),
            "failed" if state is State.RUNNING else "cancelled",
        )
        if state is State.RUNNING:
            await self._quietly(eid, Event.FAIL, error=dict(OWNER_LOST))
        else:
            await self._quietly(eid, Event.CANCEL, reason="owner_lost")
        return await self.executions.get(eid) or rec

    async def _run(self, eid: str, run: _Run, ctx: Context) -> None:
        spec = self._specs[run.operation]
        kwargs = dict(run.kwargs)
        if spec.context_param:
            kwargs[spec.context_param] = ctx
        try:
            if spec.is_async:
                result = await spec.handler(**kwargs)  # type: ignore[misc]
            else:
                result = await asyncio.to_thread(spec.handler, **kwargs)  # type: ignore[arg-type]
                if hasattr(result, "__await__"):
                    result = await result
            data = to_jsonable_python(result, by_alias=True)
        except asyncio.CancelledError:
            await self._quietly(eid, Event.CANCEL, reason="cancelled")
            raise
        except MCPAQLError as e:
            await self._quietly(eid, Event.FAIL, error=e.to_error())
            return
        except PydanticSerializationError:
            log.error("background execution %s (%s) returned a value that is not JSON-serializable", eid, run.operation)
            await self._quietly(eid, Event.FAIL, error=dict(INTERNAL))
            return
        except Exception:
            log.exception("background execution %s (%s) failed", eid, run.operation)
            await self._quietly(eid, Event.FAIL, error=dict(INTERNAL))
            return
        rec = await self.executions.get(eid)
        progress = {**((rec or {}).get("progress") or {}), "percentage": 100}
        if await self._quietly(eid, Event.COMPLETE, result=data, progress=progress):
            await self._notify(run, State.COMPLETED.value)

    async def _quietly(self, eid: str, event: Event, **changes: Any) -> bool:
        """Fire ``event``; False if it is no longer legal (e.g. cancelled meanwhile)."""
        try:
            await self.executions.fire(eid, event, **changes)
            return True
        except MCPAQLError:
            return False

    def _sink(self, eid: str, run: _Run) -> ProgressSink:
        async def sink(current: float, total: float | None = None, message: str | None = None) -> None:
            progress: dict[str, Any] = {"current": current}
            fraction = None
            if total:
                fraction = min(max(current / total, 0.0), 1.0)
                progress["total"] = total
                progress["percentage"] = round(100 * fraction, 1)
            if message is not None:
                progress["message"] = message
            done = await self.store.cas("execution", eid, {"status": State.RUNNING.value}, {"progress": progress})
            if done is None:  # cancelled (perhaps by another process): stop at this checkpoint
                raise asyncio.CancelledError
            await self._notify(run, State.RUNNING.value, fraction, message)

        return sink

    async def _notify(self, run: _Run, status: str, fraction: float | None = None, message: str | None = None) -> None:
        value = notification_progress(status, fraction)
        if run.sink is None or value <= run.sent or run.session.closed:
            return
        run.sent = value
        try:
            await run.sink(value, 100.0, message if message is not None else status)
        except Exception:  # advisory: a lost notification must not fail the execution
            log.debug("progress notification dropped", exc_info=True)

    # ---- sessions ---------------------------------------------------------------------------

    def _session_hook(self, session: Session) -> None:
        key = f"mcpaql.jobs.hook.{id(self)}"
        if session.per_request or session.state.get(key):
            return  # a per-request session ends with its request: the execution must outlive it
        session.state[key] = True
        sid = session.id

        async def close(_s: Session) -> None:
            await self.end_session(sid)

        session.on_close(close)

    async def end_session(self, session_id: str) -> int:
        """REQ-EXEC-013: the session's in-progress executions become ``cancelled``."""
        n = 0
        where = {"session_id": session_id, "kind": KIND, "adapter": self.adapter}
        for rec in await self.store.scan("execution", where):
            if core_state(rec["status"]) in TERMINAL:
                continue
            eid = rec["execution_id"]
            if await self._quietly(eid, Event.CANCEL, reason="session_closed"):
                n += 1
            run = self._runs.get(eid)
            if run is not None and run.task is not None:
                run.task.cancel()
        return n

    # ---- the generated operations -----------------------------------------------------------

    async def _record(self, eid: str) -> dict[str, Any]:
        rec = await self.executions.get(eid) if isinstance(eid, str) else None
        if rec is None or rec.get("kind") != KIND or rec.get("adapter") != self.adapter:
            raise not_found_resource("execution", eid)
        return await self._reap_if_orphaned(rec)

    async def get_state(self, execution_id: str) -> dict[str, Any]:
        return self.view(await self._record(execution_id))

    async def cancel(self, execution_id: str) -> dict[str, Any]:
        await self._record(execution_id)
        rec = await self.executions.fire(execution_id, Event.CANCEL, reason="cancelled_by_client")
        run = self._runs.get(execution_id)
        if run is not None and run.task is not None:
            run.task.cancel()
        return self.view(rec)

    async def retry(self, execution_id: str, ctx: Context) -> dict[str, Any]:
        rec = await self._record(execution_id)
        plan = retry_plan(rec["status"])
        if plan is None:
            status = rec["status"]
            why = "only failed or cancelled executions can be retried"
            raise illegal_now(status, f"Execution '{execution_id}' is {status}; {why}")
        old = self._runs.get(execution_id)
        if old is None or rec["operation"] not in self._specs:
            raise MCPAQLError(
                "VALIDATION_INVALID_VALUE",
                f"Execution '{execution_id}' cannot be retried here: its parameters are only kept by the process "
                "which started it; start the operation again",
                {"param_name": "execution_id", "constraint": "retry_unavailable", "status": rec["status"]},
            )
        self._session_hook(ctx.session)
        run = _Run(old.operation, dict(old.kwargs), ctx.session, ctx.progress_sink)
        attempt = int(rec.get("attempt") or 1) + 1
        if plan == "same":  # the table's failed → running, same id
            changes = {
                "session_id": ctx.session.id,
                "attempt": attempt,
                "error": None,
                "result": None,
                "finished_at": None,
                "progress": {"percentage": 0},
            }
            return await self._launch(execution_id, run, Event.RETRY, ctx, changes)
        new = await self.executions.create(
            rec["operation"],
            ctx.session.id,
            operation=rec["operation"],
            kind=KIND,
            adapter=self.adapter,
            attempt=attempt,
            retry_of=execution_id,
            progress={"percentage": 0},
        )
        return await self._launch(new["execution_id"], run, Event.START, ctx, {})

    async def wait(self, execution_id: str, timeout: float | None = None) -> dict[str, Any]:
        """Wait for this process's task of an execution to end; return its state (tests, shutdown)."""
        run = self._runs.get(execution_id)
        if run is not None and run.task is not None and not run.task.done():
            await asyncio.wait({run.task}, timeout=timeout)
        return await self.get_state(execution_id)

    async def close(self) -> None:
        """Cancel every task this process runs (their records become ``cancelled``)."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        tasks = [t for t in self._tasks if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @staticmethod
    def view(rec: dict[str, Any]) -> dict[str, Any]:
        """The state response (CORE §8.4.3) plus what may be done next."""
        keys = (
            "execution_id",
            "status",
            "operation",
            "created_at",
            "started_at",
            "finished_at",
            "progress",
            "result",
            "error",
            "reason",
            "attempt",
            "retry_of",
        )
        out = {k: rec[k] for k in keys if rec.get(k) is not None}
        events = [e.value for e in allowed_events(rec["status"])]
        out["allowed_events"] = events
        actions = []
        if "cancel" in events:
            actions.append("cancel_execution")
        if retry_plan(rec["status"]) is not None:
            actions.append("retry_execution")
        out["actions"] = actions
        return out

    def operations(self) -> list[OperationSpec]:
        eid = ParamSpec(
            "execution_id",
            {"type": "string", "minLength": 1, "maxLength": 100},
            required=True,
            description="The execution_id a background operation returned",
        )
        ret = TypeRef("BackgroundExecution", "object", "{execution_id, status, operation, progress, result?, error?, ...}")

        async def get_execution_state(execution_id: str) -> dict[str, Any]:
            return await self.get_state(execution_id)

        async def cancel_execution(execution_id: str) -> dict[str, Any]:
            return await self.cancel(execution_id)

        async def retry_execution(execution_id: str, ctx: Context) -> dict[str, Any]:
            return await self.retry(execution_id, ctx)

        table: list[tuple[Callable[..., Awaitable[Any]], Category, str, str | None]] = [
            (
                get_execution_state,
                Category.READ,
                "State of a background execution: status, progress {percentage, current, total, message}, result "
                "when completed, error {code, message} when failed, and the actions allowed now.",
                None,
            ),
            (
                cancel_execution,
                Category.EXECUTE,
                "Cancel a pending or running background execution (status becomes cancelled). Cancelling a finished "
                "execution is an error naming its status.",
                None,
            ),
            (
                retry_execution,
                Category.EXECUTE,
                "Run a failed or cancelled background execution again with the same parameters. A failed execution "
                "keeps its id; a cancelled one starts a new execution (retry_of links them). Poll the returned id.",
                "ctx",
            ),
        ]
        return [
            OperationSpec(
                fn.__name__,
                cat,
                doc,
                handler=fn,
                params=(eid,),
                returns=ret,
                context_param=ctxp,
                is_async=True,
                origin="mcpaql.safety.jobs",
                types=TYPES,
                danger_level="safe" if cat is Category.READ else "reversible",
            )
            for fn, cat, doc, ctxp in table
        ]


def _f(name: str, type_: str, required: bool, description: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "required": required, "description": description, **extra}


TYPES = (
    TypeSpec(
        "BackgroundExecution",
        "object",
        "State of a background execution (CORE §8.4.3)",
        fields=(
            _f("execution_id", "string", True, "Execution id"),
            _f("status", "string", True, "Core state", enum=[s.value for s in State]),
            _f("operation", "string", True, "The background operation"),
            _f("progress", "ExecutionProgress", False, "Latest progress"),
            _f("result", "any", False, "The operation's result, when completed"),
            _f("error", "ErrorInfo", False, "{code, message, details?}, when failed"),
            _f("reason", "string", False, "Why it was cancelled: cancelled_by_client, session_closed, cancelled"),
            _f("created_at", "string", False, "ISO 8601"),
            _f("started_at", "string", False, "ISO 8601"),
            _f("finished_at", "string", False, "ISO 8601"),
            _f("attempt", "integer", False, "1 for the first run, +1 per retry"),
            _f("retry_of", "string", False, "The cancelled execution this one retries"),
            _f("allowed_events", "string[]", True, "Lifecycle events legal now"),
            _f("actions", "string[]", True, "Operations that apply now: cancel_execution, retry_execution"),
        ),
    ),
    TypeSpec(
        "ExecutionProgress",
        "object",
        "Progress of an execution (REQ-EXEC-006)",
        fields=(
            _f("percentage", "number", False, "0-100"),
            _f("current", "number", False, "Units done"),
            _f("total", "number", False, "Units in all"),
            _f("message", "string", False, "What is happening"),
        ),
    ),
)


def install_jobs(
    adapter: Any, store: Store | str | None = None, *, owner_ttl: float = OWNER_TTL, clock: Callable[[], float] = time.time
) -> Jobs:
    """Run the adapter's ``background=True`` EXECUTE operations as background executions and add
    ``get_execution_state`` / ``cancel_execution`` / ``retry_execution`` (a thin helper over
    ``adapter.use(jobs.extension())``). ``store`` is a Store, a store URL, or None (the default
    SQLite file, as :class:`SafetyConfig`); share ``safety.store`` when safety is installed too.
    Operations marked after this call are wrapped too (the rewrite runs when an engine is built).
    ``owner_ttl``: seconds without a heartbeat after which another process may declare this
    one's in-progress executions lost (see the module doc)."""
    if not callable(getattr(adapter, "use", None)) or not isinstance(getattr(adapter, "name", None), str):
        raise TypeError("install_jobs needs an mcpaql Adapter")
    st = store if isinstance(store, Store) else open_store(store)
    jobs = Jobs(st, adapter.name, owner_ttl=owner_ttl, clock=clock)
    adapter.use(jobs.extension())
    return jobs
