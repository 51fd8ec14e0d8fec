"""Sync handlers run in worker threads, under a bound; async handlers stay on the loop
(src/mcpaql/protocol/workers.py, issue 14). Deterministic: threads meet at events and
barriers, never at timings."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from mcpaql import Adapter, Config
from mcpaql.config import ConfigError
from mcpaql.protocol.collections import Collection
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

pytestmark = pytest.mark.anyio

WAIT = 30  # seconds a thread waits for its partner before the test fails (never reached when green)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _ctx() -> Context:
    return Context(session=Session())


async def _data(engine: Any, operation: str, **params: Any) -> Any:
    env = await engine.execute({"operation": operation, "params": params}, _ctx())
    assert env["success"] is True, env
    return env["data"]


async def test_sync_handlers_run_off_the_loop_thread_and_async_ones_on_it() -> None:
    app = Adapter("threads")

    @app.read
    def where_sync() -> int:
        return threading.get_ident()

    @app.read
    async def where_async() -> int:
        return threading.get_ident()

    @app.read(collection=Collection(fields=["rid"]))
    def where_rows() -> list[dict[str, int]]:
        return [{"rid": threading.get_ident()}]

    engine = app.engine(Config())
    loop_thread = threading.get_ident()
    assert await _data(engine, "where_async") == loop_thread
    assert await _data(engine, "where_sync") != loop_thread
    rows = await _data(engine, "where_rows", fields=["rid"])
    assert rows["items"][0]["rid"] != loop_thread  # the collection switch's sync handler too


async def test_a_blocked_sync_handler_does_not_stall_a_concurrent_call() -> None:
    """The long call blocks its thread until the small call has been answered: run on the loop,
    it would wait its full time-out (and report it) and the small call would come second."""
    release = threading.Event()
    order: list[str] = []
    app = Adapter("blocking")

    @app.execute
    def long_call() -> bool:
        return release.wait(WAIT)

    @app.read
    def small_call() -> str:
        return "pong"

    engine = app.engine(Config())

    async def run_long() -> None:
        assert await _data(engine, "long_call") is True, "the long call timed out: the small one never ran"
        order.append("long")

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_long)
        assert await _data(engine, "small_call") == "pong"
        order.append("small")
        release.set()
    assert order == ["small", "long"]


async def test_worker_threads_are_bounded_by_config() -> None:
    """Four calls, a bound of two: they pass a two-party barrier in pairs, never more at once."""
    barrier = threading.Barrier(2, timeout=WAIT)
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    app = Adapter("bounded")

    @app.execute
    def pair_up() -> bool:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        try:
            barrier.wait()
        finally:
            with lock:
                state["now"] -= 1
        return True

    engine = app.engine(Config(handler_threads=2))
    results: list[Any] = []

    async def one() -> None:
        results.append(await _data(engine, "pair_up"))

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(one)
    assert results == [True] * 4
    assert state["peak"] == 2


async def test_handler_errors_and_unserializable_results_from_threads_stay_clean() -> None:
    app = Adapter("errors")

    @app.read
    def broken() -> str:
        raise RuntimeError("/secret/path.py")

    @app.read
    def odd() -> Any:
        return object()

    engine = app.engine(Config())
    for op in ("broken", "odd"):
        env = await engine.execute({"operation": op}, _ctx())
        assert env["success"] is False and env["error"]["code"] == "INTERNAL_ERROR"
        assert "secret" not in env["error"]["message"] and "object at" not in env["error"]["message"]


@pytest.mark.parametrize("bad", [0, -1, 1025, True, "8", 2.5])
def test_handler_threads_out_of_range_is_refused_in_one_line(bad: Any) -> None:
    with pytest.raises(ConfigError, match="handler_threads") as e:
        Config(handler_threads=bad)
    assert "\n" not in str(e.value)


def test_handler_threads_from_a_config_file(tmp_path: Any) -> None:
    path = tmp_path / "mcpaql.yaml"
    path.write_text("handler_threads: 4\n")
    assert Config.load(path, env={}).handler_threads == 4


async def test_a_sync_handler_declared_non_blocking_runs_on_the_loop() -> None:
    """``sync_to_thread=False``: the author says the handler never blocks, so no thread hop
    (bench_pipeline.py measures what the hop costs); everything else stays the same."""
    app = Adapter("inline")

    @app.read(sync_to_thread=False)
    def where_inline(n: int = 1) -> dict[str, int]:
        return {"thread": threading.get_ident(), "n": n}

    @app.read(sync_to_thread=False)
    async def where_async_flagged() -> int:  # the flag means nothing for an async handler
        return threading.get_ident()

    engine = app.engine(Config())
    loop_thread = threading.get_ident()
    assert await _data(engine, "where_inline", n=3) == {"thread": loop_thread, "n": 3}
    assert await _data(engine, "where_async_flagged") == loop_thread
    env = await engine.execute({"operation": "where_inline", "params": {"n": "x"}}, _ctx())
    assert env["success"] is False and env["error"]["code"].startswith("VALIDATION_")
