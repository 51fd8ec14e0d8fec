"""stdio hygiene: stdout carries JSON-RPC and nothing else, even when a handler prints, and
the server exits on its own when the client closes stdin (that is what ends the session)."""

from __future__ import annotations

import json
import os
import subprocess
import threading

import pytest
from e2e_support import ADAPTER, APP, PY

pytestmark = pytest.mark.e2e

CLIENT = {"name": "raw", "version": "0"}


def rpc(id_: int, method: str, params: dict) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}) + "\n"


def test_stdout_is_only_json_rpc_and_eof_ends_the_server() -> None:
    lines = [
        rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n",
        rpc(2, "tools/call", {"name": f"{ADAPTER}_mcpaql_read", "arguments": {"operation": "noisy"}}),
        rpc(3, "tools/call", {"name": f"{ADAPTER}_mcpaql_read", "arguments": {"operation": "boom"}}),
    ]
    # Unbuffered off on purpose: a buffered stdout flushed at exit must not reach the wire either.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen(
        [PY, APP, "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    watchdog = threading.Timer(30, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(lines))
        proc.stdin.flush()
        wire: list[str] = []
        while len([m for m in wire if '"id"' in m]) < 3:  # EOF cancels in-flight calls: wait for all answers
            line = proc.stdout.readline()
            assert line, "server closed stdout early"
            wire.append(line)
        proc.stdin.close()  # the client hangs up
        wire.extend(proc.stdout.read().splitlines())  # returns at EOF: the server exited on its own
        stderr = proc.stderr.read() if proc.stderr else ""
        proc.wait(20)
    finally:
        watchdog.cancel()
    assert proc.returncode == 0
    messages = [json.loads(line) for line in wire if line.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    results = {m["id"]: m["result"] for m in messages if "id" in m}
    assert set(results) == {1, 2, 3}
    assert json.loads(results[2]["content"][0]["text"]) == {"success": True, "data": "ok"}
    assert results[3]["isError"] is True
    assert "stray print from a handler" in stderr
    assert "raw write to fd 1" in stderr and "output of a child process" in stderr
    assert "/secret/path.py" in stderr  # the traceback goes to the server log, not the client


def test_stdin_from_a_regular_file_uses_the_threaded_fallback(tmp_path) -> None:
    """fd 0 that the event loop cannot watch (a file, not a pipe) still serves: the SDK's own
    thread-backed streams take over (mcpaql.mcp.stdio_pipes returns None)."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text(rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}))
    with requests.open("rb") as stdin:
        proc = subprocess.run([PY, APP, "stdio"], stdin=stdin, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    first = json.loads(proc.stdout.splitlines()[0])
    assert first["id"] == 1 and first["result"]["serverInfo"]["name"] == ADAPTER
