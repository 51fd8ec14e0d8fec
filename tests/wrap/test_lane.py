"""The stdio lane and raw fidelity of wrapped upstreams (mcp/lane.py, runtime.py), over real pipes
to the replay server: parity with the SDK session path, big results, JSON-RPC errors, timeouts
and cancellation reaching the upstream, crashes, and the SDK fallback when the lane is off."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from wrap_helpers import FIXTURES, assert_retryable_unavailable, new_ctx

from mcpaql.adapters.schema.bundle import capture_live
from mcpaql.adapters.upstream import runtime
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.mcp.lane import Lane, lane_stdio_client
from mcpaql.mcp.replay import argv_for

pytestmark = pytest.mark.anyio

TIME = FIXTURES / "mcp-server-time.tools-list.json"


def replay(control: bool = True, **kw) -> UpstreamSpec:
    return UpstreamSpec.from_argv(argv_for(TIME, control), name="time", **kw)


def params() -> StdioServerParameters:
    argv = argv_for(TIME, control=True)
    return StdioServerParameters(command=argv[0], args=argv[1:])


async def stats(w) -> dict:
    env = await w.engine.execute({"operation": "replay_stats"}, new_ctx())
    assert env["success"], env
    return json.loads(env["data"])


async def test_lane_and_sdk_session_give_the_same_result_for_any_size() -> None:
    lane = Lane("time")
    big = "é✓" * 300_000  # one ~1.5 MB JSON-RPC line each way, far over asyncio's 64 KiB default
    async with Client(lane_stdio_client(params(), lane), mode="legacy", cache=None) as client:
        for args in ({"timezone": "Europe/Paris"}, {"timezone": big, "nested": {"a": [1, None, True]}}):
            via_lane = await lane.call("get_current_time", args)
            via_sdk = await client.call_tool("get_current_time", args)
            assert via_lane["content"] == [c.model_dump(exclude_none=True) for c in via_sdk.content]
            assert json.loads(via_lane["content"][0]["text"])["arguments"] == args
        assert lane.calls == 2
        assert (await client.list_tools()).tools  # the SDK's own traffic shares the pipes


async def test_wrapper_calls_go_through_the_lane() -> None:
    async with wrap(replay()) as w:
        lane = w.upstreams["time"]._lane
        assert lane is not None and lane.open
        before = lane.calls
        env = await w.engine.execute({"operation": "get_current_time", "params": {"timezone": "UTC"}}, new_ctx())
        assert env["success"] and json.loads(env["data"])["tool"] == "get_current_time"
        assert lane.calls == before + 1


async def test_json_rpc_errors_keep_code_and_message() -> None:
    async with wrap(replay()) as w:
        request = {"operation": "replay_rpc_error", "params": {"code": -32602, "message": "bad tz"}}
        env = await w.engine.execute(request, new_ctx())
        assert env["error"]["code"] == "VALIDATION_INVALID_TYPE"
        assert "bad tz" in env["error"]["message"] and env["error"]["details"]["upstream_code"] == -32602


async def test_timeout_cancels_the_upstream_request_and_the_connection_stays_usable() -> None:
    async with wrap(replay(call_timeout=0.3)) as w:
        env = await w.engine.execute({"operation": "replay_sleep", "params": {"seconds": 5}}, new_ctx())
        assert env["error"]["code"] == "INTERNAL_ERROR" and "Timed out" in env["error"]["message"]
        with anyio.fail_after(5):
            while (await stats(w))["cancelled"] < 1:  # notifications/cancelled reached the upstream
                await anyio.sleep(0.05)
        assert w.upstreams["time"]._lane._pending == {}
        env = await w.engine.execute({"operation": "replay_sleep", "params": {"seconds": 0.01}}, new_ctx())
        assert env["success"]


async def test_caller_cancellation_reaches_the_upstream() -> None:
    async with wrap(replay()) as w:
        with anyio.move_on_after(0.3) as scope:
            await w.engine.execute({"operation": "replay_sleep", "params": {"seconds": 5}}, new_ctx())
        assert scope.cancelled_caught
        with anyio.fail_after(5):
            while (await stats(w))["cancelled"] < 1:
                await anyio.sleep(0.05)
        assert (await stats(w))["finished_sleeps"] == 0
        assert w.upstreams["time"]._lane._pending == {}


async def test_concurrent_calls_are_matched_to_their_responses() -> None:
    async with wrap(replay()) as w:
        results: dict[int, dict] = {}

        async def one(i: int) -> None:
            env = await w.engine.execute({"operation": "get_current_time", "params": {"timezone": f"tz-{i}"}}, new_ctx())
            results[i] = json.loads(env["data"])

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, i)
        assert all(results[i]["arguments"] == {"timezone": f"tz-{i}"} for i in range(50))


async def test_crash_mid_call_fails_the_call_and_reconnects() -> None:
    async with wrap(replay()) as w:
        up = w.upstreams["time"]
        first = up._lane

        async def sleeper() -> dict:
            return await w.engine.execute({"operation": "replay_sleep", "params": {"seconds": 5}}, new_ctx())

        async with anyio.create_task_group() as tg:
            out: list[dict] = []
            tg.start_soon(lambda: _collect(out, sleeper()))
            await anyio.sleep(0.2)
            crash = await w.engine.execute({"operation": "replay_crash"}, new_ctx())
        assert crash["error"]["details"]["retryable"] is True
        assert out[0]["error"]["details"]["retryable"] is True  # the call in flight failed at once, clearly
        with anyio.fail_after(20):
            while not (up.state == "ready" and up._lane is not first and up._lane.open):
                await anyio.sleep(0.05)
        env = await w.engine.execute({"operation": "get_current_time", "params": {"timezone": "UTC"}}, new_ctx())
        assert env["success"]


async def _collect(out: list, coro) -> None:
    out.append(await coro)


async def test_sdk_transport_is_used_when_the_lane_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "lane_available", lambda: False)
    async with wrap(replay()) as w:
        assert w.upstreams["time"]._lane is None
        env = await w.engine.execute({"operation": "get_current_time", "params": {"timezone": "UTC"}}, new_ctx())
        assert env["success"]
        seen = []

        async def sink(p, total, msg):
            seen.append(p)

        env = await w.engine.execute({"operation": "replay_progress", "params": {"steps": 2}}, new_ctx(progress_sink=sink))
        assert env["success"] and seen == [1, 2]


RAW_UPSTREAM = Path(__file__).with_name("raw_upstream.py")


async def test_definitions_and_results_keep_fields_the_sdk_models_do_not_know() -> None:
    spec = UpstreamSpec.from_argv([sys.executable, str(RAW_UPSTREAM)], name="raw")
    async with wrap(spec) as w:
        tools = {t["name"]: t for t in w.upstreams["raw"].tools}
        assert set(tools) == {"get_weather", "set_alarm"}  # both pages of tools/list
        assert tools["get_weather"]["x-vendor"] == {"tier": "gold"}
        assert tools["get_weather"]["annotations"]["x-costHint"] == "cheap"
        assert tools["get_weather"]["inputSchema"]["properties"]["city"]["x-example"] == "Oslo"
        env = await w.engine.execute({"operation": "get_weather", "params": {"city": "Oslo"}}, new_ctx())
        assert env["success"], env
        assert env["data"]["content"][0]["x-lang"] == "en"  # an unknown block field is not dropped
        assert w.engine.registry.get("set_alarm").category.value == "UPDATE"  # "set" is an update verb
    bundle = await capture_live(spec)
    assert bundle["raw_capture"]["tools"][0]["x-vendor"] == {"tier": "gold"}


async def test_cli_call_timeout_over_stdio(tmp_path: Path) -> None:
    argv = [
        sys.executable,
        "-m",
        "mcpaql.cli",
        "wrap",
        "--name",
        "time",
        "--call-timeout",
        "0.5",
        "--",
        *argv_for(TIME, control=True),
    ]
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy", cache=None) as c:
        t0 = anyio.current_time()
        r = await c.call_tool("time_mcpaql_execute", {"operation": "replay_sleep", "params": {"seconds": 30}})
        body = json.loads(r.content[0].text)
        assert r.is_error and "Timed out" in body["error"]["message"]
        assert anyio.current_time() - t0 < 10
        r = await c.call_tool("time_mcpaql_read", {"operation": "get_current_time", "params": {"timezone": "UTC"}})
        assert json.loads(r.content[0].text)["success"] is True
    bad = await anyio.run_process([*argv[:7], "0", "--", *argv_for(TIME)], check=False)
    assert bad.returncode == 2 and b"--call-timeout" in bad.stderr


# uvloop, as `mcpaql wrap` runs: its pipe transports raise RuntimeError (with their repr) once closed
@pytest.mark.parametrize("anyio_backend", [pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
@pytest.mark.parametrize("lane", [True, False], ids=["lane", "sdk-transport"])
async def test_kill_9_of_the_upstream_fails_every_call_in_flight_cleanly(monkeypatch: pytest.MonkeyPatch, lane: bool) -> None:
    if not lane:
        monkeypatch.setenv("MCPAQL_UPSTREAM_LANE", "0")
    async with wrap(replay()) as w:
        pid = (await stats(w))["pid"]
        out: list[dict] = []

        async def sleeper(seconds: float) -> None:
            out.append(await w.engine.execute({"operation": "replay_sleep", "params": {"seconds": seconds}}, new_ctx()))

        async with anyio.create_task_group() as tg:
            for i in range(30):
                tg.start_soon(sleeper, 5 + i / 100)
            await anyio.sleep(0.5)
            os.kill(pid, signal.SIGKILL)
            for _ in range(10):  # calls arriving while the pipe dies and the upstream restarts
                tg.start_soon(sleeper, 0.01)
                await anyio.sleep(0.005)
        assert len(out) == 40
        for env in out[:30]:
            assert_retryable_unavailable(env)
        for env in out[30:]:
            if not env["success"]:
                assert_retryable_unavailable(env)
        with anyio.fail_after(20):  # and the wrapper recovers on its own
            while not (await w.engine.execute({"operation": "replay_stats"}, new_ctx()))["success"]:
                await anyio.sleep(0.1)
