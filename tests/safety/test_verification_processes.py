"""Out-of-band verification across processes and restarts (REQ-OOB-010, REQ-OOB-014), the
webhook display channel, and one block / one rate limit shared through Redis."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from safety_support import build

from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.safety.verification import WebhookChannel
from mcpaql.store.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio
WORKER = Path(__file__).with_name("worker.py")


class Worker:
    """A real server process speaking JSON lines (see worker.py)."""

    def __init__(self, store_url: str, extra: dict[str, Any] | None = None, codes: Path | None = None) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"MCPAQL_TEST_CODES": str(codes)} if codes else {})}
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), store_url, json.dumps(extra or {})],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert "ready" in json.loads(self._line())

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("worker died")
        return line

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"operation": operation, "params": params}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self._line())

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def code_from(codes: Path, cid: str) -> str:
    """The code the operator got on the human channel (the workers' code file)."""
    return next(r["code"] for r in map(json.loads, codes.read_text().splitlines()) if r["id"] == cid)


def danger_id(directive: dict[str, Any]) -> str:
    return next(n["metadata"]["verificationId"] for n in directive["notifications"] if n["type"] == "danger_zone")


async def test_REQ_OOB_014_brute_force_stopped_by_rate_limit(any_store) -> None:
    h = build(any_store, trust="validated", loop_mode="enforcing", max_failed_verifications=10)
    await h.call("execute_agent", element_name="bot")
    d = (await h.call("record_execution_step", element_name="bot", next_action_hint="rm -rf /srv"))["data"]
    assert d["stopped"] is True
    refusals = []
    for i in range(12):
        d = (await h.call("record_execution_step", element_name="bot", next_action_hint="read_file a"))["data"]
        r = await h.call("verify_challenge", challenge_id=danger_id(d), code=f"GUESS-{i:04d}")
        refusals.append(r["error"]["code"])
    assert refusals[:10] == ["PERMISSION_DENIED"] * 10
    assert refusals[10:] == ["RATE_LIMIT_EXCEEDED"] * 2
    # even the right code is refused now (REQ-OOB-014: further attempts rejected)
    d = (await h.call("record_execution_step", element_name="bot", next_action_hint="read_file a"))["data"]
    cid = danger_id(d)
    right = h.code_of(cid)
    r = await h.call("verify_challenge", challenge_id=cid, code=right)
    assert r["error"]["code"] == "RATE_LIMIT_EXCEEDED" and r["error"]["details"]["retry_after_seconds"] >= 1
    events = [e["event"] for e in await any_store.read_audit()]
    assert events.count("VERIFICATION_FAILED") == 10 and "VERIFICATION_RATE_LIMITED" in events


async def test_REQ_OOB_010_hard_block_survives_kill_9_and_restart(tmp_path) -> None:
    db = tmp_path / "safety.db"
    url = f"sqlite:///{db}"
    codes = tmp_path / "codes.jsonl"
    w = Worker(url, codes=codes)
    try:
        assert w.call("execute_agent", element_name="bot")["success"] is True
        d = w.call("record_execution_step", element_name="bot", next_action_hint="calling drop_table users")["data"]
        assert d["stopped"] is True
        first = danger_id(d)
        bad = w.call("verify_challenge", challenge_id=first, code="NOPE")
        assert bad["error"]["code"] == "PERMISSION_DENIED"
    finally:
        w.kill9()
    w2 = Worker(url, codes=codes)  # a new server process on the same file
    try:
        d = w2.call("record_execution_step", element_name="bot", next_action_hint="read_file a")["data"]
        assert d["stopped"] is True and d["continue"] is False
        r = w2.call("execute_agent", element_name="bot")
        assert r["error"]["details"]["reason"] == "agent_blocked"
        store = SQLiteStore(db)
        assert (await store.peek_window("oobfail:default", 60)).count == 1  # failure count persisted too
        cid = danger_id(d)
        await store.close()
        code = code_from(codes, cid)
        ok = w2.call("verify_challenge", challenge_id=cid, code=code)
        assert ok["success"] is True and ok["data"]["unblocked"] is True
        assert w2.call("execute_agent", element_name="bot")["success"] is True
    finally:
        w2.close()


@pytest.mark.parametrize("backend", ["redis", "sqlite"])
async def test_two_processes_sharing_a_store_enforce_one_block_and_one_rate_limit(backend, request, tmp_path) -> None:
    if backend == "redis":
        url = request.getfixturevalue("redis_server").url.rsplit("/", 1)[0] + "/3"
        import redis

        redis.Redis.from_url(url).flushdb()
    else:
        url = f"sqlite:///{tmp_path / 'shared.db'}"
    extra = {"rate_limits": [{"limit": 5, "window": "hour", "scope": "operation", "match": "get_task"}]}
    codes = tmp_path / "codes.jsonl"
    a, b = Worker(url, extra, codes), Worker(url, extra, codes)
    try:
        a.call("execute_agent", element_name="bot")
        d = a.call("record_execution_step", element_name="bot", next_action_hint="rm -rf /var/lib")["data"]
        assert d["stopped"] is True
        # process B sees the same block: refuses new executions and steps for that agent
        assert b.call("execute_agent", element_name="bot")["error"]["details"]["reason"] == "agent_blocked"
        assert b.call("record_execution_step", element_name="bot", next_action_hint="read_file a")["data"]["stopped"]
        # the gatekeeper of both processes refuses the blocked identity's operations, reads included
        assert a.call("get_task", task_id="x")["error"]["details"]["reason"] == "agent_blocked"
        assert b.call("create_task", title="x")["error"]["details"]["reason"] == "agent_blocked"
        # verifying through B unblocks for A as well
        cid = danger_id(d)
        code = code_from(codes, cid)  # issued by A (or re-issued by B): the human read it on the channel
        assert b.call("verify_challenge", challenge_id=cid, code=code)["data"]["unblocked"] is True
        assert a.call("record_execution_step", element_name="bot", next_action_hint="read_file a")["data"]["continue"]
        # one rate limit across both processes
        results = [(a if i % 2 else b).call("get_task", task_id=str(i)) for i in range(10)]
        assert sum(1 for c in results if c["success"]) == 5
        assert {c["error"]["code"] for c in results if not c["success"]} == {"RATE_LIMIT_EXCEEDED"}
    finally:
        a.close()
        b.close()


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Hook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *a: Any) -> None:
        pass


async def test_REQ_OOB_016_webhook_channel_delivers_code_to_the_human(sqlite_store) -> None:
    srv = HTTPServer(("127.0.0.1", 0), _Hook)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Hook.received.clear()
    try:
        from safety_support import Harness, make_adapter

        app = make_adapter()
        safety = install_safety(
            app,
            SafetyConfig(trust="validated", loop_mode="enforcing"),
            store=sqlite_store,
            channels=[WebhookChannel(f"http://127.0.0.1:{srv.server_port}/hook")],
        )
        h = Harness(app, safety)
        await h.call("execute_agent", element_name="bot")
        d = (await h.call("record_execution_step", element_name="bot", next_action_hint="drop_table x"))["data"]
        cid = danger_id(d)
        for _ in range(50):
            if _Hook.received:
                break
            await asyncio.sleep(0.02)
        got = _Hook.received[0]
        assert got["id"] == cid and got["agent"] == "default" and got["element_name"] == "bot"
        assert got["kind"] == "danger_zone"
        assert got["code"] not in json.dumps(d)
        ok = await h.call("verify_challenge", challenge_id=cid, code=got["code"])
        assert ok["data"]["unblocked"] is True
        await safety.close()
    finally:
        srv.shutdown()


async def test_webhook_failure_is_logged_without_code(sqlite_store, caplog) -> None:
    from mcpaql.safety.verification import Challenges

    ch = Challenges(sqlite_store, [WebhookChannel("http://127.0.0.1:9/unreachable", timeout=0.5)])
    pub = await ch.create("bot", "verify", action="x")
    code = ch.code_of(pub["id"])
    assert "code" not in pub and "code_hash" not in pub
    assert any("webhook" in r.getMessage() for r in caplog.records)
    assert code not in caplog.text
    await ch.close()


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_REQ_RATE_001_concurrent_processes_never_exceed_a_shared_limit(backend, request, tmp_path) -> None:
    if backend == "redis":
        url = request.getfixturevalue("redis_server").url.rsplit("/", 1)[0] + "/4"
        import redis

        redis.Redis.from_url(url).flushdb()
    else:
        url = f"sqlite:///{tmp_path / 'stress.db'}"
    extra = {"rate_limits": [{"limit": 60, "window": "day"}]}
    workers = [Worker(url, extra) for _ in range(3)]
    try:

        def hammer(w: Worker) -> list[bool]:
            return [w.call("get_task", task_id=str(i))["success"] for i in range(40)]

        results = await asyncio.gather(*(asyncio.to_thread(hammer, w) for w in workers))
        assert sum(sum(r) for r in results) == 60
    finally:
        for w in workers:
            w.close()


async def test_REQ_OOB_016_os_dialog_channel_is_optional(sqlite_store, monkeypatch) -> None:
    from mcpaql.safety.verification import OSDialogChannel

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    if OSDialogChannel.detect() is None:  # headless Linux: the channel is simply not added
        h = build(sqlite_store, trust="validated", loop_mode="enforcing", os_dialog=True)
        assert not any(isinstance(c, OSDialogChannel) for c in h.safety.challenges.channels)
    else:  # macOS (osascript) has a dialog without DISPLAY
        assert OSDialogChannel.available()
