from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SERVERS = HERE / "servers"
SCHEMAS = Path(__file__).resolve().parents[3] / "shared" / "spec" / "schemas"


def tasks_cmd() -> list[str]:
    return [sys.executable, str(SERVERS / "tasks_server.py")]


def broken_cmd(defect: str) -> list[str]:
    return [sys.executable, str(SERVERS / "broken_server.py"), defect]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_tasks_server() -> Iterator[str]:
    """The tasks adapter over streamable HTTP (mode all, handler-level field selection)."""
    port = _free_port()
    env = {"MCP_AQL_ENDPOINT_MODE": "all", "TASKS_HANDLER_FIELDS": "1", "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen([*tasks_cmd(), "http", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"HTTP server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def demo_cmd(mode: str, db: Path) -> list[str]:
    """The embedded demo adapter (``mcpaql serve``) over stdio with its own SQLite file."""
    exe = Path(sys.executable).parent / "mcpaql"
    base = [str(exe)] if exe.exists() else [sys.executable, "-c", "from mcpaql.cli import main; main()"]
    return [*base, "serve", "--mode", mode, "--db", str(db)]
