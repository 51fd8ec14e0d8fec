"""Sessions over real transports (CORE §2.3): one mcpaql session per MCP connection, with an
id we generate, and session-scoped state dropped (close hooks run) when the connection ends."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e_support import ADAPTER, ENV_BASE, HttpServer, stdio_target

from mcpaql.mcp import connect

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

READ = f"{ADAPTER}_mcpaql_read"
CREATE = f"{ADAPTER}_mcpaql_create"
INTROSPECT = {"operation": "introspect", "params": {"query": "operations"}}


async def session_id(conn: Any) -> str:
    env, _, _ = await conn.call_tool(READ, INTROSPECT)
    return env["data"]["_protocol"]["session_id"]


def wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path.name} was not written within {timeout} s")


@pytest.mark.parametrize(
    ("kind", "mode"),
    [("stdio", "legacy"), ("stdio", "auto"), ("http", "legacy")],
)
async def test_session_id_stable_within_and_distinct_across_connections(
    kind: str, mode: str, http_servers: Callable[[str], HttpServer]
) -> None:
    target = stdio_target() if kind == "stdio" else http_servers("stateful").url
    async with connect(target, env=ENV_BASE, mode=mode) as a:
        first, second = await session_id(a), await session_id(a)
    async with connect(target, env=ENV_BASE, mode=mode) as b:
        other = await session_id(b)
    assert first == second
    assert other != first
    assert first.startswith("sess_") and other.startswith("sess_")


@pytest.mark.parametrize(("flavour", "mode"), [("stateless", "legacy"), ("stateless", "auto"), ("stateful", "auto")])
async def test_http_without_a_session_makes_each_request_its_own_session(
    flavour: str, mode: str, http_servers: Callable[[str], HttpServer]
) -> None:
    """Stateless HTTP, and every 2026-07-28 HTTP request, has no connection to hang a session on."""
    async with connect(http_servers(flavour).url, mode=mode) as conn:
        assert await session_id(conn) != await session_id(conn)


async def test_stdio_session_state_is_dropped_when_the_connection_closes(marker_dir: Path) -> None:
    env = {**ENV_BASE, "MCPAQL_TEST_MARKER_DIR": str(marker_dir)}
    async with connect(stdio_target(), env=env) as conn:
        await conn.call_tool(CREATE, {"operation": "remember", "params": {"value": "a"}})
        data, _, _ = await conn.call_tool(CREATE, {"operation": "remember", "params": {"value": "b"}})
        sid = data["data"]["session_id"]
        assert data["data"]["notes"] == ["a", "b"]
        assert not (marker_dir / f"{sid}.closed").exists()
    assert wait_for(marker_dir / f"{sid}.closed") == "a,b"


async def test_http_session_state_is_scoped_and_dropped_on_close(
    marker_dir: Path, http_servers: Callable[[str], HttpServer]
) -> None:
    url = http_servers("stateful").url
    async with connect(url) as conn:
        data, _, _ = await conn.call_tool(CREATE, {"operation": "remember", "params": {"value": "x"}})
        sid = data["data"]["session_id"]
        recalled, _, _ = await conn.call_tool(READ, {"operation": "recall"})
        assert recalled["data"] == {"session_id": sid, "notes": ["x"]}
        async with connect(url) as other:
            theirs, _, _ = await other.call_tool(READ, {"operation": "recall"})
            assert theirs["data"]["notes"] == [] and theirs["data"]["session_id"] != sid
    assert wait_for(marker_dir / f"{sid}.closed") == "x"  # client exit sends DELETE: the session ends
