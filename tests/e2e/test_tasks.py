"""Background executions as MCP Tasks (``io.modelcontextprotocol/tasks``), with the official
client over stdio and streamable HTTP (issue 15).

The client side of the extension is the SDK's own extension seam (``ClientExtension`` with a
``ResultClaim`` for ``resultType: "task"``): declaring it puts the extension in every request's
capabilities, and ``Client.call_tool`` resolves a task handle by polling ``tasks/get``. A client
that does not declare it gets today's state envelope.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from e2e_support import ENV_BASE, HERE, PY, HttpServer
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim

from mcpaql.mcp.client import RAW
from mcpaql.mcp.tasks import TASKS_EXTENSION

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

SCRIPT = str(HERE / "tasks_server.py")
EXECUTE = "tasks_app_mcpaql_execute"
TERMINAL = {"completed", "failed", "cancelled"}


class TaskHandle(types.Result):
    """``CreateTaskResult`` (the Task shape with ``resultType: "task"``)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    status_message: str | None = None


class GetTask(types.Request[types.GetTaskRequestParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: types.GetTaskRequestParams
    name_param = "taskId"  # Mcp-Name header on HTTP (the extension's routing header)


class CancelTask(types.Request[types.CancelTaskRequestParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: types.CancelTaskRequestParams
    name_param = "taskId"


async def get_task(client: Client, task_id: str) -> dict[str, Any]:
    return await client.session.send_request(GetTask(params=types.GetTaskRequestParams(task_id=task_id)), RAW)  # type: ignore[type-var]


async def poll(client: Client, task_id: str) -> dict[str, Any]:
    with anyio.fail_after(20):
        while True:
            task = await get_task(client, task_id)
            if task["status"] in TERMINAL:
                return task
            await anyio.sleep(task.get("pollIntervalMs", 100) / 1000)


class Tasks(ClientExtension):
    """A requester for the Tasks extension: polls a task handle to its CallToolResult."""

    identifier = TASKS_EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        async def resolve(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
            with anyio.fail_after(20):
                while True:
                    raw = await ctx.session.send_request(GetTask(params=types.GetTaskRequestParams(task_id=handle.task_id)), RAW)  # type: ignore[type-var]
                    if raw["status"] == "completed":
                        return types.CallToolResult.model_validate(raw["result"])
                    if raw["status"] in TERMINAL:
                        raise RuntimeError(f"task {raw['status']}")
                    await anyio.sleep(raw.get("pollIntervalMs", 100) / 1000)

        return [ResultClaim(result_type="task", model=TaskHandle, resolve=resolve)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_tasks() -> Any:
    servers: dict[str, HttpServer] = {}

    def get(flavour: str) -> HttpServer:
        if flavour not in servers:
            servers[flavour] = HttpServer(*(("--stateless",) if flavour == "stateless" else ()), script=SCRIPT)
        return servers[flavour]

    yield get
    for s in servers.values():
        s.stop()


@pytest.fixture(params=["stdio", "http", "http-stateless"])
def open_client(request: pytest.FixtureRequest, http_tasks: Callable[[str], HttpServer]) -> Any:
    transport = request.param

    @asynccontextmanager
    async def opened(mode: str, extensions: Sequence[ClientExtension] = ()) -> AsyncIterator[Client]:
        target: Any
        if transport == "stdio":
            target = StdioServerParameters(command=PY, args=[SCRIPT, "stdio"], env=ENV_BASE)
        else:
            target = http_tasks("stateless" if transport == "http-stateless" else "stateful").url
        async with Client(target, mode=mode, extensions=list(extensions), cache=None) as client:  # type: ignore[arg-type]
            yield client

    return opened


def envelope(result: types.CallToolResult) -> Any:
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def test_a_declaring_client_gets_a_task_and_polls_it_to_the_result(open_client: Any) -> None:
    async with open_client("2026-07-28", [Tasks()]) as client:
        discover = await client.session.send_request(types.DiscoverRequest(), RAW)  # type: ignore[type-var]
        assert TASKS_EXTENSION in discover["capabilities"]["extensions"]
        # transparently: Client.call_tool resolves the handle through the extension's claim
        result = await client.call_tool(EXECUTE, {"operation": "slow_job", "params": {"seconds": 0.05}})
        assert envelope(result) == {"success": True, "data": {"done": True, "seconds": 0.05}}
        assert result.structured_content == envelope(result)
        # by hand: the handle, a working task, then the completed one with the tool result
        handle = await client.session.call_tool(EXECUTE, {"operation": "slow_job", "params": {"seconds": 30}}, allow_claimed=True)
        assert isinstance(handle, TaskHandle) and handle.status == "working" and handle.poll_interval_ms
        working = await get_task(client, handle.task_id)
        assert working["status"] == "working" and working["resultType"] == "complete" and "result" not in working
        await client.call_tool(EXECUTE, {"operation": "release"})
        done = await poll(client, handle.task_id)
        assert done["status"] == "completed" and done["result"]["isError"] is False
        assert json.loads(done["result"]["content"][0]["text"])["data"]["done"] is True


async def test_cancel_and_a_failing_job(open_client: Any) -> None:
    async with open_client("2026-07-28", [Tasks()]) as client:
        handle = await client.session.call_tool(EXECUTE, {"operation": "slow_job", "params": {"seconds": 30}}, allow_claimed=True)
        assert isinstance(handle, TaskHandle)
        ack = await client.session.send_request(CancelTask(params=types.CancelTaskRequestParams(task_id=handle.task_id)), RAW)  # type: ignore[type-var]
        assert ack.get("resultType", "complete") == "complete"
        assert (await poll(client, handle.task_id))["status"] == "cancelled"
        # a domain error is a completed task whose result is the isError envelope (failed is for JSON-RPC errors)
        bad = await client.session.call_tool(EXECUTE, {"operation": "bad_job"}, allow_claimed=True)
        assert isinstance(bad, TaskHandle)
        task = await poll(client, bad.task_id)
        assert task["status"] == "completed"
        assert json.loads(task["result"]["content"][0]["text"])["error"]["code"] == "VALIDATION_INVALID_VALUE"
        with pytest.raises(MCPError) as unknown:
            await get_task(client, "no-such-task")
        assert unknown.value.error.code == types.INVALID_PARAMS


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_client_without_the_extension_gets_the_state_envelope(open_client: Any, mode: str) -> None:
    async with open_client(mode) as client:
        result = await client.call_tool(EXECUTE, {"operation": "slow_job", "params": {"seconds": 0.01}})
        data = envelope(result)["data"]
        assert data["status"] in ("pending", "running", "completed") and data["execution_id"]
        plain = await client.call_tool(EXECUTE.replace("execute", "read"), {"operation": "ping"})
        assert envelope(plain) == {"success": True, "data": "pong"}
