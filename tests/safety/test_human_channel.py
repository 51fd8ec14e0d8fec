"""The safety loop's human channel, on by default wherever the loop is served (issue 11 §4).

``mcpaql serve --safety-loop enforcing`` (real subprocess, the official MCP client over real
stdio and real HTTP) starts the approval page in-process; an agent is paused; the operator
opens the page from the owner-only URL file in real headless Chromium, sees the challenge,
clicks Approve, and the agent continues. Around it, the page's promises are tested as an
adversary on the same machine would probe them (no key, wrong Host, cross-site form post),
and a busy or non-loopback approval address is one line and exit status 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mcpaql.mcp import connect

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"), reason="chromium not installed (Debian package: chromium)"
)


def mcpaql(*args: str) -> list[str]:
    return [sys.executable, "-m", "mcpaql.cli", *args]


def env_for(tmp: Path) -> dict[str, str]:
    return {**os.environ, "MCPAQL_HOME": str(tmp / "home"), "PYTHONUNBUFFERED": "1"}


def serve_args(tmp: Path, *extra: str) -> list[str]:
    return mcpaql(
        "serve",
        "--db",
        str(tmp / "demo.db"),
        "--safety-loop",
        "enforcing",
        "--approval-url-file",
        str(tmp / "approval-url"),
        *extra,
    )


def wait_for_file(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was not written"
        time.sleep(0.05)
    return path.read_text().strip()


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: the sockets are held until all are chosen, so the MCP port and
    the approval page's port can never be the same number (a port-0 page could otherwise land on
    the port the MCP server is about to bind, and the readiness probe would reach the page)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Agent:
    """The guarded agent: the tasks demo's loop operations through the official client."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.wire: list[str] = []

    async def call(self, endpoint: str, op: str, **params: Any) -> dict[str, Any]:
        body, _, raw = await self.conn.call_tool(f"tasks_mcpaql_{endpoint}", {"operation": op, "params": params})
        self.wire.append(json.dumps(raw))
        return body

    async def run_until_paused(self) -> dict[str, Any]:
        started = await self.call("execute", "execute_agent", element_name="agentA")
        assert started["success"], started
        ok = await self.call("create", "record_execution_step", element_name="agentA", next_action_hint="list_tasks")
        assert ok["data"]["continue"] is True
        paused = await self.call("create", "record_execution_step", element_name="agentA", next_action_hint="delete_task t_1")
        assert paused["data"]["continue"] is False, paused
        return paused

    async def continues(self) -> bool:
        step = await self.call("create", "record_execution_step", element_name="agentA", next_action_hint="list_tasks")
        return bool(step["data"]["continue"])


async def operator_approves_in_chromium(url: str, profile: Path) -> list[str]:
    """What the human does: open the page, read the pending challenge, click Approve."""
    from cdp import Chromium

    browser = await asyncio.to_thread(Chromium, profile)
    try:
        await asyncio.to_thread(browser.goto, url)
        codes = await asyncio.to_thread(
            browser.evaluate, "[...document.querySelectorAll('#challenges span.code')].map(e => e.textContent)"
        )
        await asyncio.to_thread(
            browser.click_and_wait, "#challenges tr[data-challenge] button", "!!document.querySelector('#challenges')"
        )
        assert await asyncio.to_thread(browser.evaluate, "document.body.innerText.includes('No pending challenges')")
        return codes
    finally:
        await asyncio.to_thread(browser.close)


@pytest.fixture
def http_serve(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    port, page_port = free_ports(2)
    errlog = tmp_path / "stderr.txt"
    with errlog.open("wb") as err:
        proc = subprocess.Popen(
            serve_args(tmp_path, "--transport", "http", "--port", str(port), "--approval-port", str(page_port)),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env_for(tmp_path),
        )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, errlog.read_text()
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc, errlog
    finally:
        proc.terminate()
        proc.wait(30)


@needs_chromium
async def test_first_blocked_agent_approved_in_chromium_over_stdio(tmp_path: Path) -> None:
    with tempfile.TemporaryFile("w+") as errlog:
        async with connect(serve_args(tmp_path), env={"MCPAQL_HOME": str(tmp_path / "home")}, errlog=errlog) as conn:
            agent = Agent(conn)
            await agent.run_until_paused()
            url = wait_for_file(tmp_path / "approval-url")
            shown = await operator_approves_in_chromium(url, tmp_path / "profile")
            assert await agent.continues()
        errlog.seek(0)
        stderr = errlog.read()
    assert_channel_kept_its_secrets(tmp_path, url, shown, "\n".join(agent.wire), stderr)


@needs_chromium
async def test_first_blocked_agent_approved_in_chromium_over_http(tmp_path: Path, http_serve: Any) -> None:
    mcp_url, _, errlog = http_serve
    async with connect(mcp_url) as conn:
        agent = Agent(conn)
        await agent.run_until_paused()
        url = wait_for_file(tmp_path / "approval-url")
        shown = await operator_approves_in_chromium(url, tmp_path / "profile")
        assert await agent.continues()
    assert_channel_kept_its_secrets(tmp_path, url, shown, "\n".join(agent.wire), errlog.read_text())


def assert_channel_kept_its_secrets(tmp: Path, url: str, codes: list[str], wire: str, stderr: str) -> None:
    key = url.split("key=")[1]
    assert len(codes) == 1 and codes[0]
    assert (tmp / "approval-url").stat().st_mode & 0o777 == 0o600
    # exactly one line says where approvals go; it names the page and the file, not the key
    lines = [ln for ln in stderr.splitlines() if "safety loop enforcing" in ln]
    assert len(lines) == 1, stderr
    assert url.split("?")[0] in lines[0] and str(tmp / "approval-url") in lines[0]
    for secret in (key, codes[0], codes[0].replace("-", "")):
        assert secret not in wire and secret not in stderr
    assert "Traceback" not in stderr


async def test_the_page_refuses_whoever_lacks_the_key(tmp_path: Path, http_serve: Any) -> None:
    """An agent (or another local user) that can reach loopback but never saw the URL file."""
    mcp_url, _, _ = http_serve
    async with connect(mcp_url) as conn:
        agent = Agent(conn)
        await agent.run_until_paused()
        url = wait_for_file(tmp_path / "approval-url")
        base, key = url.split("?")[0], url.split("key=")[1]
        async with httpx.AsyncClient() as http:
            state = (await http.get(base + "api/state", params={"key": key})).json()
            (challenge,) = state["challenges"]
            code, cid = challenge["code"], challenge["id"]
            attempts = [
                await http.get(base),
                await http.get(base, params={"key": key[:-1] + ("A" if key[-1] != "A" else "B")}),
                await http.get(base + "api/state"),
                await http.post(base + "approve", data={"challenge_id": cid}),  # no key: CSRF refused
                # DNS rebinding: a hostile name resolving to 127.0.0.1, even with the key
                await http.get(base, params={"key": key}, headers={"host": f"evil.example:{base.split(':')[2][:-1]}"}),
                # a cross-site form post from a page the operator visits, carrying the key and cookie
                await http.post(
                    base + "approve",
                    data={"key": key, "challenge_id": cid},
                    headers={"origin": "http://evil.example", "sec-fetch-site": "cross-site"},
                ),
            ]
            for r in attempts:
                assert r.status_code == 403, r.request.url
                assert code not in r.text and key not in r.text
        assert not await agent.continues()  # nothing above approved anything
        # the agent cannot approve itself through MCP without the human's code either
        forged = await agent.call("create", "confirm_operation", challenge_id=cid, code="000000", element_name="agentB")
        assert forged["success"] is False


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("command", ["serve", "guard"])
def test_a_busy_approval_port_is_one_line_and_exit_2(tmp_path: Path, busy_port: int, command: str) -> None:
    args = (
        serve_args(tmp_path, "--approval-port", str(busy_port))
        if command == "serve"
        else mcpaql("guard", "--store", f"sqlite:///{tmp_path / 'g.db'}", "--approval-port", str(busy_port))
    )
    r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env_for(tmp_path), timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1, r.stderr
    assert f"cannot listen on 127.0.0.1:{busy_port}" in r.stderr and "Traceback" not in r.stderr


def test_the_page_is_loopback_only_and_no_page_says_where_codes_go(tmp_path: Path) -> None:
    def run(*a):
        return subprocess.run(
            serve_args(tmp_path, *a),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env_for(tmp_path),
            timeout=60,
        )

    r = run("--approval-host", "0.0.0.0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "loopback only" in r.stderr
    r = run("--no-approval-page")  # stdin at EOF: the server starts, says where codes go, and ends
    assert r.returncode == 0, r.stderr
    (say,) = [ln for ln in r.stderr.splitlines() if "safety loop enforcing" in ln]
    assert "no approval page" in say and "mcpaql guard --store" in say
    assert not (tmp_path / "approval-url").exists()
    policy = tmp_path / "policy.yaml"
    policy.write_text("store: 'sqlite://:memory:'\n")
    r = run("--no-approval-page", "--safety", str(policy))
    assert r.returncode == 2 and "needs a human channel" in r.stderr and r.stderr.count("\n") == 1


MINI_API = {
    "openapi": "3.0.3",
    "info": {"title": "Mini", "version": "1"},
    "servers": [{"url": "http://127.0.0.1:9"}],
    "paths": {
        "/items/{id}": {
            "delete": {
                "operationId": "deleteItem",
                "responses": {"204": {"description": "ok"}},
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            }
        }
    },
}


@pytest.mark.parametrize("command", ["wrap", "openapi"])
def test_wrap_and_openapi_open_the_channel_too(tmp_path: Path, command: str) -> None:
    from mcpaql.mcp.replay import argv_for

    url_file = tmp_path / "approval-url"
    common = ("--safety-loop", "enforcing", "--approval-url-file", str(url_file))
    if command == "wrap":
        fixture = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces" / "mcp-server-time.tools-list.json"
        args = mcpaql("wrap", *common, "--", *argv_for(fixture))
    else:
        spec = tmp_path / "mini.json"
        spec.write_text(json.dumps(MINI_API))
        args = mcpaql("openapi", str(spec), *common)
    # stdin at EOF: the server starts, opens the channel, serves nothing and ends cleanly
    r = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env_for(tmp_path), timeout=60)
    assert r.returncode == 0, r.stderr
    (say,) = [ln for ln in r.stderr.splitlines() if "safety loop enforcing" in ln]
    url = url_file.read_text().strip()
    assert url.split("?")[0] in say and "key=" in url and url.split("key=")[1] not in r.stderr
    assert url_file.stat().st_mode & 0o777 == 0o600
