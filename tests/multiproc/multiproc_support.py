"""Several real ``mcpaql serve --transport http --stateless`` processes acting as one deployment
(imported as ``multiproc_support``): one shared Redis, one shared demo database file, and the
official MCP client going round-robin over them (:mod:`mcpaql.mcp.balancer`)."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcpaql.store.testing import free_port

MCPAQL = str(Path(sys.executable).with_name("mcpaql"))
READ, CREATE, UPDATE, DELETE = (f"tasks_mcpaql_{c}" for c in ("read", "create", "update", "delete"))


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the server gets SIGKILL when the test process dies, however it dies."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Process:
    """One ``mcpaql serve`` process on a free loopback port."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, log: Path | None = None) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.origin}/mcp"
        cmd = [MCPAQL, "serve", "--transport", "http", "--port", str(self.port), *args]
        self.log = log
        out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115 - closed by the child's exit
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.proc = subprocess.Popen(
            cmd, env=full_env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, preexec_fn=_die_with_parent
        )
        self.wait_ready()

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"mcpaql serve exited early with code {self.proc.returncode}: {self.stderr()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2) as s:
                    s.sendall(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    if b" 200 " in s.recv(64):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("mcpaql serve did not become ready within 30 s")

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log is not None and self.log.exists() else ""

    def kill(self) -> None:
        """SIGKILL: no cleanup of any kind runs."""
        self.proc.kill()
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def envelope(result: tuple[Any, bool, dict[str, Any]]) -> dict[str, Any]:
    body, _is_error, raw = result
    assert isinstance(body, dict), raw
    return body


def policy_file(path: Path, **extra: Any) -> Path:
    """A safety policy: the demo is trusted (CRUDE allowed, DELETE still needs a confirmation
    token: destructive) plus ``extra`` settings (e.g. rate_limits)."""
    path.write_text(json.dumps({"trust": "community_reviewed", **extra}), encoding="utf-8")
    return path


def flush(store_url: str) -> None:
    """Empty one Redis database (each deployment in the tests gets its own number)."""
    import redis

    client = redis.Redis.from_url(store_url)
    try:
        client.flushdb()
    finally:
        client.close()


class Deployment:
    """``n`` stateless processes: one Redis store (``--store``, which also keeps the deployment
    secret, since none is configured), one demo database, one safety policy."""

    def __init__(self, n: int, *, store: str, directory: Path, **policy: Any) -> None:
        flush(store)
        self.store = store
        self.db = directory / "demo.db"
        self.policy = policy_file(directory / "policy.json", **policy)
        env = {"MCPAQL_SECRET": "", "MCPAQL_STORE": ""}  # the secret must come from the store
        args = ("--stateless", "--db", str(self.db), "--store", store, "--safety", str(self.policy))
        self.procs: list[Process] = []
        try:
            for i in range(n):
                self.procs.append(Process(*args, env=env, log=directory / f"p{i}.log"))
        except BaseException:
            self.stop()
            raise

    @property
    def urls(self) -> list[str]:
        return [p.url for p in self.procs]

    def stop(self) -> None:
        for p in self.procs:
            p.stop()
