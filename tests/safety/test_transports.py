"""Issue 11 over real transports with the official ``mcp`` client: confirmation tokens and the
safety loop work on stateful HTTP, on ``--stateless`` HTTP across two server processes sharing
one store, with 2026-07-28 (sessionless) requests, and over stdio — and only for their caller."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpaql.mcp import connect
from mcpaql.store.testing import free_port

pytestmark = pytest.mark.anyio
SERVER = str(Path(__file__).with_name("identity_server.py"))
DELETE, READ, CREATE, EXECUTE = (f"tasks_mcpaql_{c}" for c in ("delete", "read", "create", "execute"))
ENV = {"PYTHONUNBUFFERED": "1"}


class Served:
    """``identity_server.py http`` in a subprocess; stdin is a pipe we never write, so if the test
    run dies the server follows."""

    def __init__(self, store: str, codes: Path, *flags: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = {**os.environ, **ENV, "MCPAQL_TEST_CODES": str(codes)}
        self.proc = subprocess.Popen(
            [sys.executable, SERVER, "http", store, "--port", str(self.port), *flags], env=env, stdin=subprocess.PIPE
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "server exited early"
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("server did not start within 20 s")

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'shared.db'}"


@pytest.fixture
def codes(tmp_path: Path) -> Path:
    return tmp_path / "codes.jsonl"


@pytest.fixture
def servers(store: str, codes: Path) -> Iterator[Any]:
    started: list[Served] = []

    def start(*flags: str) -> Served:
        started.append(Served(store, codes, *flags))
        return started[-1]

    yield start
    for s in started:
        s.stop()


def human_code(codes: Path, cid: str) -> str:
    return next(r["code"] for r in map(json.loads, codes.read_text().splitlines()) if r["id"] == cid)


async def call(conn: Any, tool: str, operation: str, **params: Any) -> dict[str, Any]:
    env, _, _ = await conn.call_tool(tool, {"operation": operation, "params": params})
    return env


async def token_for(conn: Any, task_id: str) -> str:
    env = await call(conn, DELETE, "delete_task", task_id=task_id)
    assert env["error"]["code"] == "CONFIRMATION_REQUIRED", env
    return env["error"]["details"]["confirmation_token"]


async def test_stateful_http_token_works_for_its_session_only(servers: Any) -> None:
    srv = servers()
    async with connect(srv.url, mode="legacy") as mine, connect(srv.url, mode="legacy") as other:
        token = await token_for(mine, "t1")
        stolen = await call(other, DELETE, "delete_task", task_id="t1", _confirmation=token)
        assert stolen["error"]["code"] == "TOKEN_INVALID"  # same identity, another connection
        assert (await call(mine, DELETE, "delete_task", task_id="t1", _confirmation=token))["success"] is True
        replay = await call(mine, DELETE, "delete_task", task_id="t1", _confirmation=token)
        assert replay["error"]["code"] == "TOKEN_ALREADY_USED"


async def test_stateless_http_two_processes_share_tokens_and_the_loop(servers: Any, codes: Path) -> None:
    a, b = servers("--stateless"), servers("--stateless")
    async with connect(a.url, mode="legacy") as ca, connect(b.url, mode="legacy") as cb:
        token = await token_for(ca, "t1")  # issued by process A in a request of its own
        assert (await call(cb, DELETE, "delete_task", task_id="t1", _confirmation=token))["success"] is True
        assert (await call(ca, DELETE, "delete_task", task_id="t1", _confirmation=token))["error"]["code"] == "TOKEN_ALREADY_USED"
        # the loop across requests and processes: start on A, report on B, paused everywhere
        assert (await call(ca, EXECUTE, "execute_agent", element_name="bot"))["data"]["status"] == "running"
        d = (await call(cb, CREATE, "record_execution_step", element_name="bot", next_action_hint="delete_user 7"))["data"]
        assert d["continue"] is False
        cid = next(n["metadata"]["verificationId"] for n in d["notifications"] if n["type"] == "autonomy_pause")
        paused = await call(ca, CREATE, "create_task", title="x")
        assert paused["error"]["details"]["reason"] == "agent_paused"
        ok = await call(ca, EXECUTE, "confirm_operation", challenge_id=cid, code=human_code(codes, cid))
        assert ok["success"] is True
        assert (await call(cb, CREATE, "create_task", title="x"))["success"] is True
        # a hard block on B stops A too, and renaming the element does not help
        d = (await call(cb, CREATE, "record_execution_step", element_name="bot", next_action_hint="drop_table users"))["data"]
        assert d["stopped"] is True
        for conn, op, params in ((ca, "create_task", {"title": "y"}), (cb, "execute_agent", {"element_name": "bot-v2"})):
            env = await call(conn, CREATE if op == "create_task" else EXECUTE, op, **params)
            assert env["error"]["details"]["reason"] == "agent_blocked"


async def test_sessionless_2026_requests_redeem_tokens(servers: Any) -> None:
    srv = servers()  # a stateful server; the 2026-07-28 client sends every request on its own
    async with connect(srv.url, mode="auto") as conn:
        sid1 = (await call(conn, READ, "introspect", query="operations"))["data"]["_protocol"]["session_id"]
        token = await token_for(conn, "t1")
        sid2 = (await call(conn, READ, "introspect", query="operations"))["data"]["_protocol"]["session_id"]
        assert sid1 != sid2  # each request really is its own session
        assert (await call(conn, DELETE, "delete_task", task_id="t1", _confirmation=token))["success"] is True
    other = servers("--agent-id", "someone-else")  # another identity, same store
    async with connect(srv.url, mode="auto") as conn, connect(other.url, mode="auto") as thief:
        token = await token_for(conn, "t2")
        assert (await call(thief, DELETE, "delete_task", task_id="t2", _confirmation=token))["error"]["code"] == "TOKEN_INVALID"
        assert (await call(conn, DELETE, "delete_task", task_id="t2", _confirmation=token))["success"] is True


async def test_stdio_tokens_and_a_block_that_outlives_the_process(store: str, codes: Path) -> None:
    argv = [sys.executable, SERVER, "stdio", store, "--agent-id", "desk-7"]
    env = {**ENV, "MCPAQL_TEST_CODES": str(codes)}
    async with connect(argv, env=env) as conn:
        token = await token_for(conn, "t1")
        assert (await call(conn, DELETE, "delete_task", task_id="t1", _confirmation=token))["success"] is True
        await call(conn, EXECUTE, "execute_agent", element_name="bot")
        d = (await call(conn, CREATE, "record_execution_step", element_name="bot", next_action_hint="drop_table users"))["data"]
        assert d["stopped"] is True
        cid = next(n["metadata"]["verificationId"] for n in d["notifications"] if n["type"] == "danger_zone")
    async with connect(argv, env=env) as conn:  # the client restarts the server: still the same identity
        env_ = await call(conn, CREATE, "create_task", title="x")
        assert env_["error"]["details"]["reason"] == "agent_blocked"
        ok = await call(conn, CREATE, "verify_challenge", challenge_id=cid, code=human_code(codes, cid))
        assert ok["data"]["unblocked"] is True
        assert (await call(conn, CREATE, "create_task", title="x"))["success"] is True
