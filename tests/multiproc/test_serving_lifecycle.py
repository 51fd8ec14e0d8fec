"""Issue 15, HTTP deployments: bounded stateful sessions (a flood does not lock a legitimate
client out), ``/healthz`` and ``/readyz``, and graceful shutdown (SIGTERM lets the call in
flight finish, within the configured grace). Real ``mcpaql serve`` processes and the official
MCP client, except where an in-process app is the only way to reach a seam (the admission hook)."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from multiproc_support import READ, Process, envelope

from mcpaql.mcp import connect
from mcpaql.mcp.sessions import SessionLimits
from mcpaql.mcp.transports import http_app
from mcpaql.store.testing import RedisServer

pytestmark = pytest.mark.anyio
SLOW_APP = str(Path(__file__).with_name("slow_app.py"))
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "flood", "version": "0"}},
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


async def open_raw(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    """One bare ``initialize`` (what a flood sends): a session the sender never uses again."""
    return await http.post(url, json=INIT, headers=HEADERS)


async def ping(http: httpx2.AsyncClient, url: str, sid: str) -> int:
    r = await http.post(url, json=PING, headers={**HEADERS, "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"})
    return r.status_code


@pytest.fixture
def demo_db(tmp_path: Path) -> str:
    return str(tmp_path / "demo.db")


async def test_a_flood_of_initialize_requests_does_not_lock_out_a_legitimate_client(demo_db: str, tmp_path: Path) -> None:
    p = Process("--db", demo_db, "--max-sessions", "5", log=tmp_path / "server.log")
    try:
        async with connect(p.url) as early, httpx2.AsyncClient(timeout=10) as http:
            assert (envelope(await early.call_tool(READ, {"operation": "list_tasks"})))["success"]
            flood = [await open_raw(http, p.url) for _ in range(40)]
            assert {r.status_code for r in flood} == {200}  # room is made: the oldest idle session ends
            sids = [r.headers["mcp-session-id"] for r in flood]
            assert await ping(http, p.url, sids[0]) == 404  # oldest idle first
            assert await ping(http, p.url, sids[-1]) == 200
            async with connect(p.url) as late:  # a legitimate client after the flood gets in
                assert envelope(await late.call_tool(READ, {"operation": "list_tasks"}))["success"]
                for _ in range(20):  # and a second flood while it is connected
                    assert (await open_raw(http, p.url)).status_code == 200
                assert envelope(await late.call_tool(READ, {"operation": "list_tasks"}))["success"]
            # the early client holds its GET stream open, so it was never idle: it survived both floods
            assert envelope(await early.call_tool(READ, {"operation": "list_tasks"}))["success"]
    finally:
        p.stop()
    assert "Traceback" not in p.stderr()


async def test_sessions_never_used_after_initialize_are_evicted_before_older_used_ones(demo_db: str) -> None:
    p = Process("--db", demo_db, "--max-sessions", "3")
    try:
        async with httpx2.AsyncClient(timeout=10) as http:
            used = (await open_raw(http, p.url)).headers["mcp-session-id"]
            assert await ping(http, p.url, used) == 200  # the oldest, but used: idle, not abandoned
            bare = [(await open_raw(http, p.url)).headers["mcp-session-id"] for _ in range(4)]
            assert [await ping(http, p.url, s) for s in bare[:2]] == [404, 404]  # the first bare ones went
            assert await ping(http, p.url, used) == 200
    finally:
        p.stop()


async def test_when_every_session_is_busy_a_new_one_is_refused_with_503(demo_db: str) -> None:
    p = Process("--db", demo_db, "--max-sessions", "2")
    try:
        async with connect(p.url) as a, connect(p.url) as b, httpx2.AsyncClient(timeout=10) as http:
            for c in (a, b):
                assert envelope(await c.call_tool(READ, {"operation": "list_tasks"}))["success"]
            refused = await open_raw(http, p.url)
            assert refused.status_code == 503 and refused.headers["retry-after"]
            assert refused.json()["error"]["message"] == "Too many open sessions, all busy"
    finally:
        p.stop()


async def test_an_idle_session_ends_after_the_idle_timeout(demo_db: str) -> None:
    p = Process("--db", demo_db, "--session-idle-timeout", "1")
    try:
        async with httpx2.AsyncClient(timeout=10) as http:
            sid = (await open_raw(http, p.url)).headers["mcp-session-id"]
            assert await ping(http, p.url, sid) == 200
            await anyio.sleep(2.5)
            assert await ping(http, p.url, sid) == 404
    finally:
        p.stop()


@pytest.mark.parametrize("bad", ["0", "-3", "nan", "inf"])
def test_a_bad_session_bound_is_refused_at_start_in_one_line(bad: str, demo_db: str) -> None:
    import subprocess

    from multiproc_support import MCPAQL

    for flag in ("--max-sessions", "--session-idle-timeout", "--shutdown-grace"):
        if flag == "--max-sessions" and bad in ("nan", "inf"):
            continue
        if flag == "--shutdown-grace" and bad == "0":
            continue  # zero grace is allowed: stop at once
        r = subprocess.run(
            [MCPAQL, "serve", "--transport", "http", "--db", demo_db, flag, bad], capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 2, (flag, bad, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and flag in r.stderr, r.stderr


async def test_the_admission_hook_decides_who_may_open_a_session(shared_app: Any) -> None:
    """The one check auth plugs into: here, only requests carrying a header may open a session;
    refused ones get the hook's own response and open nothing."""
    from starlette.responses import JSONResponse

    def admit(scope: Any) -> Any:
        if (b"x-allowed", b"yes") in scope["headers"]:
            return None
        return JSONResponse({"error": "authenticate first"}, status_code=401, headers={"WWW-Authenticate": "Bearer"})

    app = http_app(shared_app.engine(), sessions=SessionLimits(2, 60, admit))
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8000", timeout=10) as http,
    ):
        for _ in range(10):
            r = await http.post("/mcp", json=INIT, headers=HEADERS)
            assert r.status_code == 401 and "mcp-session-id" not in r.headers
        ok = await http.post("/mcp", json=INIT, headers={**HEADERS, "x-allowed": "yes"})
        assert ok.status_code == 200 and ok.headers["mcp-session-id"]


async def test_healthz_and_readyz_follow_the_store(demo_db: str) -> None:
    with RedisServer() as redis:
        p = Process("--stateless", "--db", demo_db, "--store", redis.url)
        try:
            async with httpx2.AsyncClient(base_url=p.origin, timeout=10) as http:
                assert (await http.get("/healthz")).json() == {"status": "ok"}
                assert (await http.get("/readyz")).json() == {"status": "ready"}
                redis.stop()
                down = await http.get("/readyz")
                assert down.status_code == 503 and down.json() == {"status": "not ready", "failed": ["store"]}
                assert str(redis.port) not in down.text
                assert (await http.get("/healthz")).status_code == 200  # alive: do not restart it for this
        finally:
            p.stop()


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except OSError:
        return True
    return False


@pytest.mark.parametrize("stateless", [True, False])
async def test_sigterm_lets_the_call_in_flight_finish(stateless: bool, tmp_path: Path) -> None:
    flags = ("--stateless",) if stateless else ()
    p = Process(SLOW_APP, "--shutdown-grace", "20", *flags, log=tmp_path / "server.log")
    try:
        async with connect(p.url, read_timeout_seconds=30) as c:
            result: dict[str, Any] = {}

            async def slow() -> None:
                result.update(envelope(await c.call_tool("slow_mcpaql_read", {"operation": "wait", "params": {"seconds": 2}})))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await anyio.sleep(0.7)  # the call is in the handler now
                p.proc.send_signal(signal.SIGTERM)
                await anyio.sleep(0.5)
                assert refuses_connections(p.port)  # stopped accepting at once
                assert p.proc.poll() is None  # but still finishing the call
            assert result == {"success": True, "data": {"waited": 2}}, result
        p.proc.wait(20)
    finally:
        p.stop()
    assert "Traceback" not in p.stderr()


async def test_the_grace_period_bounds_the_wait(tmp_path: Path) -> None:
    p = Process(SLOW_APP, "--stateless", "--shutdown-grace", "1", log=tmp_path / "server.log")
    try:
        with anyio.move_on_after(15):
            async with connect(p.url, read_timeout_seconds=30) as c, anyio.create_task_group() as tg:

                async def slow() -> None:
                    with pytest.raises(Exception):  # noqa: B017 - the call is cut off; how the SDK says so varies
                        await c.call_tool("slow_mcpaql_read", {"operation": "wait", "params": {"seconds": 60}})

                tg.start_soon(slow)
                await anyio.sleep(0.7)
                t0 = time.monotonic()
                p.proc.send_signal(signal.SIGTERM)
                await anyio.to_thread.run_sync(p.proc.wait, 15)
                assert time.monotonic() - t0 < 8
    finally:
        p.stop()
