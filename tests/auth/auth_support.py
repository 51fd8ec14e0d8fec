"""Helpers for the auth tests (imported as ``auth_support``: ``conftest`` is ambiguous, as
tests/ and other directories have their own conftest.py)."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

from issuer import free_port

HERE = Path(__file__).resolve().parent
APP = str(HERE / "auth_app.py")


class Served:
    """``mcpaql <argv>`` serving HTTP on a free loopback port; stderr kept for leak checks."""

    def __init__(self, argv: list[str], tmp: Path, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.errlog = tmp / f"server-{self.port}.log"
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        cmd = [sys.executable, "-m", "mcpaql.cli", *argv, "--transport", "http", "--port", str(self.port)]
        with self.errlog.open("wb") as err:
            self.proc = subprocess.Popen(cmd, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early ({self.proc.returncode}): {self.errlog.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("server did not start within 30 s")

    def log(self) -> str:
        return self.errlog.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class Keys:
    """Two API keys (plaintext, for the clients) and the file the server reads."""

    def __init__(self, tmp: Path) -> None:
        self.reader = "rk_" + secrets.token_urlsafe(24)
        self.writer = "wk_" + secrets.token_urlsafe(24)
        self.admin = "ak_" + secrets.token_urlsafe(24)
        self.file = tmp / "api-keys.txt"
        hashed = hashlib.sha256(self.admin.encode()).hexdigest()
        self.file.write_text(
            "# subject scopes key\n"
            f"reader mcpaql:read {self.reader}\n"
            f"writer mcpaql:read,mcpaql:create,mcpaql:update,mcpaql:delete {self.writer}\n"
            f"operator mcpaql:full,mcpaql:admin sha256:{hashed}\n"
        )
