"""Saying when wrapping does not pay (issue 10): a one-tool server costs more wrapped than
discrete; ``mcpaql tokens`` and ``mcpaql wrap`` (one stderr line at start) say so and point at
``--upstream``, which combines several servers behind one adapter. Real captures, replayed."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from wrap_helpers import FIXTURES

from mcpaql.adapters.upstream import token_report
from mcpaql.adapters.upstream.report import break_even
from mcpaql.mcp.replay import argv_for

HERE = Path(__file__).resolve().parent / "surfaces"
POSTGRES = HERE / "server-postgres.tools-list.json"
REDIS = HERE / "server-redis.tools-list.json"
DUCKDB = HERE / "mcp-server-duckdb.tools-list.json"


def test_one_tool_server_costs_more_wrapped_and_the_report_says_so() -> None:
    be = token_report(POSTGRES)["break_even"]
    assert be["pays"] is False and be["wrapped_tokens"] > be["discrete_tokens"] == 32
    assert be["break_even_tools"] == -(-be["wrapped_tokens"] // 32)
    assert be["message"].startswith(f"wrapping does not pay here: {be['wrapped_tokens']} o200k tokens wrapped vs 32")
    assert "--upstream" in be["message"]
    big = token_report(FIXTURES / "github-mcp-all.tools-list.json")["break_even"]
    assert big["pays"] is True and big["break_even_tools"] is None and big["message"].startswith("wrapping pays")


def test_break_even_arithmetic() -> None:
    assert break_even(100, 120, 4) | {"message": ""} == {
        "pays": False,
        "discrete_tokens": 100,
        "wrapped_tokens": 120,
        "tools": 4,
        "tokens_per_tool": 25.0,
        "break_even_tools": 5,
        "message": "",
    }
    assert break_even(0, 50, 0)["break_even_tools"] is None  # no tools: nothing to divide
    assert "from 3 upstreams" in break_even(10, 90, 2, upstreams=3)["message"]


def test_tokens_cli_prints_the_break_even() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", "tokens", "--fixture", str(POSTGRES)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert "wrapping does not pay here" in out.stdout and "it pays from about" in out.stdout


async def _wrap_stderr(args: list[str], tmp_path: Path) -> str:
    errlog = tmp_path / "stderr.txt"
    env = {**os.environ, "ERRLOG": str(errlog)}
    cmd = ["-c", 'exec "$@" 2>"$ERRLOG"', "sh", sys.executable, "-m", "mcpaql.cli", "wrap", *args]
    async with Client(StdioServerParameters(command="/bin/sh", args=cmd, env=env), mode="legacy", cache=None) as c:
        assert (await c.list_tools()).tools  # serving did not wait for the count
        deadline = time.monotonic() + 60
        while "mcpaql wrap: wrapping" not in errlog.read_text() and time.monotonic() < deadline:
            await anyio.sleep(0.1)
    return errlog.read_text()


@pytest.mark.anyio
async def test_wrap_says_at_start_whether_it_pays(tmp_path: Path) -> None:
    one = await _wrap_stderr(["--", *argv_for(POSTGRES)], tmp_path)
    lines = [ln for ln in one.splitlines() if ln.startswith("mcpaql wrap: ")]
    assert len(lines) == 1 and "does not pay here" in lines[0] and "for 1 tool(s);" in lines[0], one
    ups = [
        f"{n}={shlex.join(argv_for(f))}"
        for n, f in (("pg", POSTGRES), ("redis", REDIS), ("duck", DUCKDB), ("gh", FIXTURES / "github-mcp-all.tools-list.json"))
    ]
    many = await _wrap_stderr([a for u in ups for a in ("--upstream", u)], tmp_path)
    assert "mcpaql wrap: wrapping pays:" in many, many
