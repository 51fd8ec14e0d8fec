"""``Adapter(lifespan=...)`` over real transports: the backend's resources open before the first
request and close when serving stops — stdio (the client closes stdin) and HTTP (SIGTERM) —
driven by the official MCP client against ``mcpaql serve`` subprocesses (issue 12 §1)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_support import free_port

from mcpaql.mcp.client import connect

APP = '''
import contextlib
from pathlib import Path
from mcpaql import Adapter

LOG = Path({log!r})
state = {{"open": False}}


@contextlib.asynccontextmanager
async def lifespan():
    state["open"] = True
    LOG.write_text(LOG.read_text() + "open\\n" if LOG.exists() else "open\\n")
    try:
        yield
    finally:
        state["open"] = False
        LOG.write_text(LOG.read_text() + "close\\n")


app = Adapter("life", lifespan=lifespan)


@app.read
def get_status() -> dict:
    """Whether the backend's resource is open."""
    LOG.write_text(LOG.read_text() + ("call:open\\n" if state["open"] else "call:closed\\n"))
    return {{"open": state["open"]}}
'''

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _app(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "life.log"
    src = tmp_path / "life_app.py"
    src.write_text(APP.format(log=str(log)), encoding="utf-8")
    return src, log


async def _call(conn) -> dict:  # type: ignore[no-untyped-def]
    tools = await conn.list_tools_raw()
    name = next(t["name"] for t in tools if "read" in t["name"] or t["name"].startswith("life"))
    body, is_error, _ = await conn.call_tool(name, {"operation": "get_status", "params": {}})
    assert not is_error, body
    return body["data"]


async def test_stdio_lifespan_opens_before_and_closes_after_serving(tmp_path: Path) -> None:
    src, log = _app(tmp_path)
    async with connect([sys.executable, "-m", "mcpaql.cli", "serve", str(src)]) as conn:
        assert await _call(conn) == {"open": True}
    deadline = time.monotonic() + 10
    while "close" not in (log.read_text() if log.exists() else "") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text().split() == ["open", "call:open", "close"]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


async def test_http_lifespan_closes_on_shutdown(tmp_path: Path) -> None:
    src, log = _app(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpaql.cli", "serve", str(src), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while not (log.exists() and "open" in log.read_text()) or not _listening(port):
            # uvicorn runs the lifespan's startup before it binds: wait for both
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        async with connect(f"http://127.0.0.1:{port}/mcp") as conn:
            assert await _call(conn) == {"open": True}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert log.read_text().split() == ["open", "call:open", "close"]
    assert b"Traceback" not in err
