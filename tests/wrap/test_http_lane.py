"""The HTTP upstream lane (mcp/http_lane.py) against real streamable-HTTP servers: the replay
server (the official SDK's server over uvicorn, event-stream and plain-JSON answers) and the real
``@modelcontextprotocol/server-everything`` (Node). Parity with the SDK session, JSON-RPC errors, progress,
timeouts and cancellation reaching the upstream, session expiry (a restarted server answers 404 → the
wrapper re-initializes and the call goes through), kill -9 during concurrent calls, and the number of
TCP connections 100 sequential calls open. Plus the event-stream decoder's properties."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wrap_helpers import FIXTURES, assert_retryable_unavailable, new_ctx

from aql_support import free_port
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.mcp.http_lane import HttpLane, SSEDecoder
from mcpaql.mcp.replay import argv_for

TIME = FIXTURES / "mcp-server-time.tools-list.json"
REPO = Path(__file__).resolve().parents[2]
NODE_BIN = Path(os.environ.get("MCPAQL_UPSTREAMS_DIR", REPO / ".cache-upstreams")) / "node_modules" / ".bin"


def wait_port(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the upstream server exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the upstream server did not listen")


class ReplayHTTP:
    """The replay server (with control tools) over streamable HTTP; restartable on the same port."""

    def __init__(self, json_response: bool) -> None:
        self.port = free_port()
        self.json_response = json_response
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        argv = [*argv_for(TIME, control=True), "--http", str(self.port), *(["--json-response"] if self.json_response else [])]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(10)


@pytest.fixture(params=[False, True], ids=["event-stream", "json"])
def replay_http(request: pytest.FixtureRequest) -> Iterator[ReplayHTTP]:
    server = ReplayHTTP(request.param)
    yield server
    server.stop()


def spec(server: ReplayHTTP, **kw) -> UpstreamSpec:
    return UpstreamSpec.from_url(server.url, name="time", transport="streamable_http", **kw)


async def run(w, op: str, ctx=None, **params) -> dict:
    return await w.engine.execute({"operation": op, "params": params}, ctx or new_ctx())


async def stats(w) -> dict:
    env = await run(w, "replay_stats")
    assert env["success"], env
    return json.loads(env["data"])


def connections_to(port: int) -> int:
    """Client-side TCP sockets to 127.0.0.1:port in any state but LISTEN (TIME-WAIT included)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" and int(cols[2].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


@pytest.mark.anyio
async def test_lane_and_sdk_session_give_the_same_result_for_any_size(replay_http: ReplayHTTP) -> None:
    async with wrap(spec(replay_http)) as w:
        up = w.upstreams["time"]
        lane = up._lane
        assert isinstance(lane, HttpLane) and lane.open and lane.session_id
        for args in ({"timezone": "Europe/Paris"}, {"timezone": "x" * 600_000, "nested": {"a": [1, None, True]}}):
            via_lane = await lane.call("get_current_time", args)
            via_sdk = await up._client.call_tool("get_current_time", args)  # no lane: the SDK session
            assert via_lane["content"] == via_sdk["content"]
            assert json.loads(via_lane["content"][0]["text"])["arguments"] == args
        huge = {"timezone": "é✓" * 300_000}  # ~3.6 MB on the wire: over the SDK client's 1 MB event limit
        assert json.loads((await lane.call("get_current_time", huge))["content"][0]["text"])["arguments"] == huge
        before = lane.calls
        env = await run(w, "get_current_time", timezone="UTC")
        assert env["success"] and lane.calls == before + 1


@pytest.mark.anyio
async def test_errors_and_error_results_keep_code_and_message(replay_http: ReplayHTTP) -> None:
    async with wrap(spec(replay_http)) as w:
        env = await run(w, "replay_rpc_error", code=-32602, message="bad tz")
        assert env["error"]["code"] == "VALIDATION_INVALID_TYPE" and "bad tz" in env["error"]["message"]
        assert env["error"]["details"]["upstream_code"] == -32602
        env = await run(w, "replay_error", message="no such zone: Mars/Olympus")
        assert env["success"] is False and "Mars/Olympus" in env["error"]["message"]


@pytest.mark.anyio
async def test_progress_is_forwarded(replay_http: ReplayHTTP) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def sink(p: float, total: float | None, msg: str | None) -> None:
        seen.append((p, total, msg))

    async with wrap(spec(replay_http)) as w:
        env = await run(w, "replay_progress", new_ctx(progress_sink=sink), steps=3)
        assert env["success"], env
    if replay_http.json_response:  # a plain JSON answer carries no notifications
        assert seen == []
    else:
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


@pytest.mark.anyio
async def test_timeout_and_cancellation_reach_the_upstream(replay_http: ReplayHTTP) -> None:
    async with wrap(spec(replay_http, call_timeout=0.5)) as w:
        env = await run(w, "replay_sleep", seconds=5)
        assert env["error"]["code"] == "INTERNAL_ERROR" and "Timed out" in env["error"]["message"]
        with anyio.move_on_after(0.3) as scope:
            await run(w, "replay_sleep", seconds=0.4)
        assert scope.cancelled_caught
        with anyio.fail_after(10):
            while (await stats(w))["cancelled"] < 2:  # both notifications/cancelled reached the upstream
                await anyio.sleep(0.05)
        assert (await stats(w))["finished_sleeps"] == 0
        assert (await run(w, "replay_sleep", seconds=0.01))["success"]  # and the lane still works


@pytest.mark.parametrize("lane", [True, False], ids=["lane", "sdk-transport"])
@pytest.mark.anyio
async def test_an_expired_session_is_reinitialized_and_the_call_goes_through(
    replay_http: ReplayHTTP, monkeypatch: pytest.MonkeyPatch, lane: bool
) -> None:
    if not lane:
        monkeypatch.setenv("MCPAQL_UPSTREAM_LANE", "0")
    async with wrap(spec(replay_http)) as w:
        up = w.upstreams["time"]
        first = up._session_id
        assert (await run(w, "get_current_time", timezone="UTC"))["success"]
        replay_http.stop()
        replay_http.start()  # same URL, no sessions: our session id now gets 404
        out: list[dict] = []

        async def one(i: int) -> None:
            out.append(await run(w, "get_current_time", timezone=f"tz-{i}"))

        async with anyio.create_task_group() as tg:  # ten calls hear the 404; one re-initialize serves them all
            for i in range(10):
                tg.start_soon(one, i)
        if lane:
            assert all(env["success"] for env in out), out
            assert up.restarts == 1
        else:  # the SDK session closes under the calls in flight on it: they may fail, retryably
            for env in out:
                if not env["success"]:
                    assert_retryable_unavailable(env)
            assert (await run(w, "get_current_time", timezone="UTC"))["success"]
        if lane:
            assert up._lane.session_id not in (None, first)


@pytest.mark.anyio
async def test_sequential_calls_reuse_a_few_connections(replay_http: ReplayHTTP) -> None:
    async with wrap(spec(replay_http)) as w:
        assert (await run(w, "get_current_time", timezone="UTC"))["success"]
        before = connections_to(replay_http.port)
        for i in range(100):
            assert (await run(w, "get_current_time", timezone=f"tz-{i}"))["success"]
        opened = connections_to(replay_http.port) - before
        assert opened <= 3, f"{opened} new TCP connections for 100 calls"


@pytest.mark.anyio
async def test_concurrent_calls_are_matched_to_their_responses(replay_http: ReplayHTTP) -> None:
    async with wrap(spec(replay_http)) as w:
        results: dict[int, dict] = {}

        async def one(i: int) -> None:
            results[i] = json.loads((await run(w, "get_current_time", timezone=f"tz-{i}"))["data"])

        async with anyio.create_task_group() as tg:
            for i in range(40):
                tg.start_soon(one, i)
        assert all(results[i]["arguments"] == {"timezone": f"tz-{i}"} for i in range(40))


@pytest.mark.parametrize("anyio_backend", [pytest.param(("asyncio", {"use_uvloop": True}), id="uvloop")])
@pytest.mark.parametrize("lane", [True, False], ids=["lane", "sdk-transport"])
@pytest.mark.anyio
async def test_kill_9_of_the_upstream_fails_every_call_in_flight_cleanly(monkeypatch: pytest.MonkeyPatch, lane: bool) -> None:
    if not lane:
        monkeypatch.setenv("MCPAQL_UPSTREAM_LANE", "0")
    server = ReplayHTTP(json_response=False)
    try:
        async with wrap(spec(server, call_timeout=20)) as w:
            assert isinstance(w.upstreams["time"]._lane, HttpLane) is lane
            out: list[dict] = []

            async def sleeper(seconds: float) -> None:
                out.append(await run(w, "replay_sleep", seconds=seconds))

            async with anyio.create_task_group() as tg:
                for i in range(30):
                    tg.start_soon(sleeper, 5 + i / 100)
                await anyio.sleep(0.5)
                server.stop(signal.SIGKILL)
                for _ in range(5):  # calls arriving after the upstream died
                    tg.start_soon(sleeper, 0.01)
                    await anyio.sleep(0.01)
            assert len(out) == 35
            for env in out:
                assert_retryable_unavailable(env)
            server.start()  # back on the same port: the wrapper reconnects on its own
            with anyio.fail_after(30):
                while not (await run(w, "get_current_time", timezone="UTC"))["success"]:
                    await anyio.sleep(0.2)
    finally:
        server.stop()


@pytest.mark.upstream
@pytest.mark.anyio
async def test_real_server_everything_over_http_takes_the_lane() -> None:
    port = free_port()
    binary = NODE_BIN / "mcp-server-everything"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run tests/wrap/install_upstreams.sh")
    proc = subprocess.Popen(
        [str(binary), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        seen: list[float] = []

        async def sink(p: float, total: float | None, msg: str | None) -> None:
            seen.append(p)

        async with wrap(UpstreamSpec.from_url(f"http://127.0.0.1:{port}/mcp", name="everything")) as w:
            lane = w.upstreams["everything"]._lane
            assert isinstance(lane, HttpLane)
            assert await run(w, "echo", message="over the lane") == {"success": True, "data": "Echo: over the lane"}
            env = await run(w, "get_sum", a=2, b=40)
            assert env["success"] and "42" in json.dumps(env["data"])
            env = await run(w, "trigger_long_running_operation", new_ctx(progress_sink=sink), duration=0.3, steps=3)
            assert env["success"], env
            assert seen == [1, 2, 3] and lane.calls == 3
            before = connections_to(port)
            for i in range(100):
                assert (await run(w, "echo", message=str(i)))["success"]
            assert connections_to(port) - before <= 3
    finally:
        proc.terminate()
        proc.wait(10)


# ---- the event-stream decoder -----------------------------------------------------------------

_data_line = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=40)
_event = st.lists(_data_line, min_size=1, max_size=4)
_newline = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def _stream(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    """An event stream as a server may write it, and the payloads a client must see."""
    parts: list[str] = []
    expected: list[bytes] = []
    for data in draw(st.lists(_event, max_size=6)):
        if draw(st.booleans()):
            parts.append(":" + draw(_data_line) + draw(_newline))  # a comment
        if draw(st.booleans()):
            parts.append("event: message" + draw(_newline) + "id: " + draw(st.text("abc123", max_size=4)) + draw(_newline))
        values = []
        for line in data:
            sep = draw(st.sampled_from(["data:", "data: "]))
            parts.append(sep + line + draw(_newline))
            values.append(line[1:] if sep == "data:" and line.startswith(" ") else line)  # one space is dropped
        blank = draw(_newline)
        parts.append("\r\n" if blank == "\n" and parts[-1].endswith("\r") else blank)  # CR + LF would be one ending
        payload = "\n".join(values)
        if payload:
            expected.append(payload.encode())
    return "".join(parts).encode(), expected


@settings(max_examples=300, deadline=None)
@given(_stream(), st.lists(st.integers(min_value=1, max_value=64), max_size=20))
def test_sse_decoder_gives_every_event_whatever_the_chunking(stream: tuple[bytes, list[bytes]], cuts: list[int]) -> None:
    raw, expected = stream
    decoder, got, pos = SSEDecoder(), [], 0
    for size in cuts:
        got += decoder.feed(raw[pos : pos + size])
        pos += size
    got += decoder.feed(raw[pos:])
    assert got == expected


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512), st.lists(st.integers(min_value=1, max_value=32), max_size=20))
def test_sse_decoder_never_fails_on_arbitrary_bytes(raw: bytes, cuts: list[int]) -> None:
    decoder, pos = SSEDecoder(), 0
    for size in cuts:
        for data in decoder.feed(raw[pos : pos + size]):
            assert isinstance(data, bytes) and data
        pos += size
    decoder.feed(raw[pos:])


def test_sse_decoder_examples() -> None:
    d = SSEDecoder()
    assert d.feed(b"id: 1\ndata:\n\n") == []  # a priming event (empty data) is not dispatched
    assert d.feed(b'event: message\r\ndata: {"a":\r') == []
    assert d.feed(b"\ndata: 1}\r\n") == []
    assert d.feed(b"\r\n") == [b'{"a":\n1}']
    assert d.feed(b"data:  two spaces\n\ndata\n\n") == [b" two spaces"]  # "data" alone: empty data
    assert d.feed(b"data: unfinished") == []  # dropped if the stream ends here


@pytest.mark.anyio
async def test_server_requests_during_a_call_are_answered_never_left_hanging() -> None:
    """``ping`` gets its empty result; sampling, which the wrapper does not offer, a JSON-RPC error."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("asking_upstream.py")), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, proc)
        spec = UpstreamSpec.from_url(f"http://127.0.0.1:{port}/mcp", name="asking", transport="streamable_http", call_timeout=30)
        async with wrap(spec) as w:
            assert isinstance(w.upstreams["asking"]._lane, HttpLane)
            env = await run(w, "ask_client")
            assert env["success"], env
            replies = json.loads(env["data"])
            assert replies["srv-ping"] == {"jsonrpc": "2.0", "id": "srv-ping", "result": {}}
            assert replies["srv-sample"]["error"]["code"] == -32601
    finally:
        proc.terminate()
        proc.wait(10)
