"""URL-mode elicitation as an out-of-band verification channel (issue 15).

``mcpaql serve --safety-loop enforcing`` (a real subprocess) under the official MCP client, in
both protocol eras, over stdio and HTTP. The client declares URL-mode elicitation; its
elicitation callback plays the human: it gets the approval link through the client, follows it
with httpx to the approval page the channel serves (holding the operator's key cookie, as the
operator's browser would), reads the code there and approves. The agent then continues. The
link carries neither the page key nor the code, the page refuses it without the key, and the
code is in no byte the model could see.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from test_human_channel import env_for, free_ports, serve_args, wait_for_file

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Human:
    """The operator at the client: sees elicited links, follows them, reads and approves."""

    def __init__(self, url_file: Path) -> None:
        self.url_file = url_file
        self.links: list[str] = []
        self.codes: list[str] = []
        self.keyless: list[httpx.Response] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams) and params.mode == "url"
        self.links.append(params.url)
        admin_url = wait_for_file(self.url_file)
        origin = admin_url.split("/?")[0]
        async with httpx.AsyncClient() as anyone:  # a local caller without the key (the agent, say)
            self.keyless.append(await anyone.get(params.url))
        async with httpx.AsyncClient() as browser:
            await browser.get(admin_url)  # the operator opened the page once: the key cookie is set
            page = await browser.get(params.url)
            assert page.status_code == 200, page.text
            rows = re.findall(r"data-challenge='([^']+)'.*?<span class='code'>([^<]*)</span>", page.text)
            assert len(rows) == 1 and params.url.endswith("/c/" + rows[0][0])
            challenge_id, code = rows[0]
            self.codes.append(code)
            form = {"key": admin_url.split("key=")[1], "challenge_id": challenge_id}
            approved = await browser.post(origin + "/approve", data=form, headers={"Origin": origin})
            assert approved.status_code in (200, 303)
        return types.ElicitResult(action="accept")


@asynccontextmanager
async def served(tmp_path: Path, transport: str, mode: str, human: Human) -> AsyncIterator[Client]:
    env = env_for(tmp_path)
    if transport == "stdio":
        target: Any = StdioServerParameters(command=serve_args(tmp_path)[0], args=serve_args(tmp_path)[1:], env=env)
        async with Client(target, mode=mode, elicitation_callback=human, cache=None) as client:  # type: ignore[arg-type]
            yield client
        return
    port, page_port = free_ports(2)
    args = serve_args(tmp_path, "--transport", "http", "--port", str(port), "--approval-port", str(page_port))
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/", timeout=0.5)
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        async with Client(url, mode=mode, elicitation_callback=human, cache=None) as client:  # type: ignore[arg-type]
            yield client
    finally:
        proc.terminate()
        proc.wait(30)


async def step(client: Client, wire: list[str], endpoint: str, op: str, **params: Any) -> dict[str, Any]:
    result = await client.call_tool(f"tasks_mcpaql_{endpoint}", {"operation": op, "params": params})
    wire.append(json.dumps(result.model_dump(by_alias=True, mode="json")))
    return json.loads(result.content[0].text)  # type: ignore[union-attr,no-any-return]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_approval_link_reaches_the_human_through_the_client(tmp_path: Path, transport: str, mode: str) -> None:
    human = Human(tmp_path / "approval-url")
    wire: list[str] = []
    async with served(tmp_path, transport, mode, human) as client:
        assert (await step(client, wire, "execute", "execute_agent", element_name="agentA"))["success"]
        ok = await step(client, wire, "create", "record_execution_step", element_name="agentA", next_action_hint="list_tasks")
        assert ok["data"]["continue"] is True and not human.links  # nothing to approve, nothing elicited
        paused = await step(
            client, wire, "create", "record_execution_step", element_name="agentA", next_action_hint="delete_task t_1"
        )
        # the model sees the pause and the challenge id, as before; the human got the link meanwhile
        assert paused["data"]["continue"] is False
        challenge_id = paused["data"]["notifications"][0]["metadata"]["verificationId"]
        assert len(human.links) == 1 and len(human.codes) == 1
        link = urlsplit(human.links[0])
        assert link.hostname == "127.0.0.1" and link.path == f"/c/{challenge_id}" and not link.query
        again = await step(client, wire, "create", "record_execution_step", element_name="agentA", next_action_hint="list_tasks")
        assert again["data"]["continue"] is True  # approved on the page: the agent goes on
    code = human.codes[0]
    assert code and human.keyless[0].status_code == 403 and code not in human.keyless[0].text
    key = wait_for_file(tmp_path / "approval-url").split("key=")[1]
    for secret in (code, code.replace("-", ""), key):
        assert all(secret not in w for w in wire)  # not in any result, structured or text
        assert secret not in human.links[0]


async def test_a_client_without_url_elicitation_keeps_todays_channel(tmp_path: Path) -> None:
    wire: list[str] = []
    target = StdioServerParameters(command=serve_args(tmp_path)[0], args=serve_args(tmp_path)[1:], env=env_for(tmp_path))
    async with Client(target, mode="2026-07-28", cache=None) as client:
        await step(client, wire, "execute", "execute_agent", element_name="agentA")
        paused = await step(
            client, wire, "create", "record_execution_step", element_name="agentA", next_action_hint="delete_task t_1"
        )
        assert paused["data"]["continue"] is False  # a plain result: the page (and its start line) as before
    assert os.path.exists(tmp_path / "approval-url")
