"""Helpers shared by the end-to-end tests (imported as ``e2e_support``: ``conftest`` is
ambiguous here, since tests/ has its own conftest.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
APP = str(HERE / "app_server.py")
PY = sys.executable
ADAPTER = "e2e_shop"
ENV_BASE = {"PYTHONUNBUFFERED": "1"}


def stdio_target(*extra: str) -> list[str]:
    return [PY, APP, "stdio", *extra]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpServer:
    """``app_server.py http`` (or another ``app`` script) in a subprocess on a free loopback port."""

    def __init__(self, *flags: str, env: dict[str, str] | None = None, app: str = APP) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        full_env = {**os.environ, **ENV_BASE, **(env or {})}
        cmd = [PY, app, "http", "--port", str(self.port), "--exit-with-stdin", *flags]
        # stdin is a pipe we never write: if the test run dies, EOF takes the server down with it.
        self.proc = subprocess.Popen(cmd, env=full_env, stdin=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"HTTP test server exited early with code {self.proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("HTTP test server did not start within 20 s")

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
