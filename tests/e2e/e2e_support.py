"""Helpers shared by the end-to-end tests (imported as ``e2e_support``: ``conftest`` is
ambiguous here, since tests/ has its own conftest.py)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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

    def __init__(self, *flags: str, env: dict[str, str] | None = None, script: str = APP, app: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        full_env = {**os.environ, **ENV_BASE, **(env or {})}
        cmd = [PY, app or script, "http", "--port", str(self.port), "--exit-with-stdin", *flags]
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


def serve_main(make_engine: Any, argv: list[str] | None = None) -> None:
    """The command line of the test servers (``app_server.py``, ``tasks_server.py``):
    ``stdio`` or ``http --port N [--stateless]``; ``make_engine(mode)`` builds the engine."""
    import argparse
    import threading

    import anyio

    from mcpaql.mcp import serve_http, serve_stdio

    p = argparse.ArgumentParser()
    p.add_argument("transport", choices=["stdio", "http"])
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--stateless", action="store_true")
    p.add_argument("--mode", default=None)
    p.add_argument("--exit-with-stdin", action="store_true", help="exit when stdin closes (the test runner died)")
    a = p.parse_args(argv)
    if a.exit_with_stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    engine = make_engine(a.mode)
    if a.transport == "stdio":
        anyio.run(serve_stdio, engine)
    else:
        serve_http(engine, port=a.port, stateless=a.stateless)
