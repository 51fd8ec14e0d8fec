"""A third-party client: the MCP Inspector CLI (TypeScript SDK) against our stdio and HTTP
servers. It is the closest thing to what real MCP hosts speak."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable

import pytest
from e2e_support import ADAPTER, APP, PY, HttpServer

pytestmark = pytest.mark.e2e

NPX = shutil.which("npx")
# Pinned so a fresh machine runs what was verified here; override to try another release.
INSPECTOR = os.environ.get("MCPAQL_INSPECTOR_PKG", "@modelcontextprotocol/inspector@2.12.0")


def inspector(*args: str) -> dict:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([NPX or "npx", "-y", INSPECTOR, "--cli", *args], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.skipif(NPX is None and not os.environ.get("CI"), reason="npx (Node.js) is not installed")
def test_inspector_cli_over_stdio() -> None:
    listed = inspector(PY, APP, "stdio", "--method", "tools/list")
    read = next(t for t in listed["tools"] if t["name"] == f"{ADAPTER}_mcpaql_read")
    assert read["annotations"]["readOnlyHint"] is True
    assert read["annotations"]["title"] == "Display — Read"

    called = inspector(
        PY,
        APP,
        "stdio",
        "--method",
        "tools/call",
        "--tool-name",
        f"{ADAPTER}_mcpaql_read",
        "--tool-arg",
        "operation=introspect",
        "--tool-arg",
        'params={"query": "operations"}',
    )
    assert called["isError"] is False
    envelope = json.loads(called["content"][0]["text"])
    assert envelope["success"] is True
    assert envelope["data"]["_protocol"]["adapter"] == ADAPTER


@pytest.mark.skipif(NPX is None and not os.environ.get("CI"), reason="npx (Node.js) is not installed")
def test_inspector_cli_over_http(http_servers: Callable[[str], HttpServer]) -> None:
    url = http_servers("stateful").url
    called = inspector(
        url,
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        f"{ADAPTER}_mcpaql_read",
        "--tool-arg",
        "operation=get_item",
        "--tool-arg",
        'params={"item_id": "i1"}',
    )
    assert called["isError"] is False
    assert json.loads(called["content"][0]["text"]) == {"success": True, "data": {"item_id": "i1", "name": "first", "size": 1}}
