"""Process hygiene (src/mcpaql/reaper.py): no upstream outlives its wrapper, however the wrapper is stopped.

A real ``mcpaql wrap`` process wraps a real MCP server that ignores EOF, SIGTERM, SIGINT and SIGHUP and
has a grandchild that ignores them too and holds its pipes. The wrapper is stopped each way a client or
an operator stops it (stdin closed, SIGTERM, SIGINT, SIGHUP, SIGKILL), with the stdio lane and with the
SDK transport, and /proc must show neither the upstream nor its grandchild alive shortly after.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcpaql import reaper

STUBBORN = Path(__file__).with_name("stubborn_upstream.py")
BOUND = 5.0  # seconds within which every upstream process must be gone (the shutdown takes ~1.5 s)


def alive(pid: int) -> bool:
    """Running per /proc (a zombie has exited; whether PID 1 reaps it is not ours to decide)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids: list[int], bound: float = BOUND) -> list[int]:
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


class Wrapper:
    """``mcpaql wrap -- python stubborn_upstream.py`` spoken to over raw JSON-RPC lines."""

    def __init__(self, tmp: Path, lane: bool) -> None:
        self.pidfile = tmp / "pids"
        env = {**os.environ, "MCPAQL_UPSTREAM_LANE": "1" if lane else "0"}
        argv = [
            sys.executable,
            "-m",
            "mcpaql.cli",
            "wrap",
            "--name",
            "stub",
            "--",
            sys.executable,
            str(STUBBORN),
            str(self.pidfile),
        ]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.ids = 0

    def request(self, method: str, params: dict) -> dict:
        self.ids += 1
        self.send({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the wrapper closed its output"
            msg = json.loads(line)
            if msg.get("id") == self.ids:
                return msg

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def start(self) -> list[int]:
        init = self.request(
            "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        )
        assert "result" in init, init
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        res = self.request("tools/call", {"name": "stub_mcpaql_read", "arguments": {"operation": "get_status", "params": {}}})
        body = json.loads(res["result"]["content"][0]["text"])
        assert body["success"], body
        upstream, grandchild = (int(x) for x in self.pidfile.read_text().split())
        assert f"running as {upstream}" in json.dumps(body)
        shim = int(Path(f"/proc/{upstream}/stat").read_text().rsplit(")", 1)[1].split()[1])
        return [shim, upstream, grandchild]


STOPS = ["stdin-closed", "SIGTERM", "SIGINT", "SIGHUP", "SIGKILL"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")
@pytest.mark.parametrize("lane", [True, False], ids=["lane", "sdk-transport"])
@pytest.mark.parametrize("stop", STOPS)
def test_no_upstream_process_outlives_the_wrapper(tmp_path: Path, stop: str, lane: bool) -> None:
    w = Wrapper(tmp_path, lane)
    try:
        pids = w.start()
        assert all(alive(p) for p in pids)
        if stop == "stdin-closed":
            assert w.proc.stdin is not None
            w.proc.stdin.close()
            # the wrapper shuts down on its own: EOF to the upstream, then the shim's SIGTERM/SIGKILL
            assert w.proc.wait(timeout=20) == 0
        else:
            w.proc.send_signal(getattr(signal, stop))
            w.proc.wait(timeout=20)
        assert wait_gone(pids) == [], f"still running after the wrapper stopped ({stop})"
    finally:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()
        if w.pidfile.exists():
            for pid in (int(x) for x in w.pidfile.read_text().split()):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")
def test_a_server_started_by_connect_dies_with_its_client(tmp_path: Path) -> None:
    """``mcpaql.mcp.connect`` (the CLI's client, conformance, tokens) spawns under the shim too."""
    pidfile = tmp_path / "pids"
    code = (
        "import anyio, sys\nfrom mcpaql.mcp import connect\n"
        "async def main():\n"
        "    async with connect([sys.executable, sys.argv[1], sys.argv[2]]) as c:\n"
        "        await c.list_tools_raw()\n        print('ready', flush=True)\n        await anyio.sleep(600)\n"
        "anyio.run(main)\n"
    )
    client = subprocess.Popen(
        [sys.executable, "-c", code, str(STUBBORN), str(pidfile)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert client.stdout is not None and client.stdout.readline() == b"ready\n"
        pids = [int(x) for x in pidfile.read_text().split()]
        client.kill()
        client.wait()
        assert wait_gone(pids) == []
    finally:
        if client.poll() is None:
            client.kill()


def shim(*argv: str) -> list[str]:
    return [sys.executable, "-I", "-S", reaper.__file__, str(os.getpid()), "--", *argv]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks processes through /proc")
def test_what_a_server_leaves_in_its_group_is_killed_when_it_exits() -> None:
    p = subprocess.run(shim("sh", "-c", "sleep 600 & echo $!; exit 3"), capture_output=True, timeout=20, start_new_session=True)
    assert p.returncode == 3  # the server's own exit code
    assert wait_gone([int(p.stdout)]) == []


def test_a_missing_or_unrunnable_command_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope-not-a-command"):
        reaper.guarded("nope-not-a-command", [])
    with pytest.raises(FileNotFoundError):
        reaper.guarded(str(tmp_path / "missing"), [])
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    p = subprocess.run(shim(str(script)), capture_output=True, timeout=20)
    assert p.returncode == 127 and b"cannot run" in p.stderr and b"Permission denied" in p.stderr


def test_the_shim_starts_nothing_when_its_parent_is_already_gone() -> None:
    p = subprocess.run([sys.executable, "-I", "-S", reaper.__file__, "1", "--", "sleep", "600"], timeout=20)
    assert p.returncode == 1
    bad = subprocess.run([sys.executable, "-I", "-S", reaper.__file__, "x", "sleep"], capture_output=True, timeout=20)
    assert bad.returncode == 2 and b"usage" in bad.stderr
