"""The wrapper runtime over real stdio, against the replay server (offline, deterministic)."""

from __future__ import annotations

import json

import anyio
import pytest
from wrap_helpers import FIXTURES, new_ctx

from mcpaql.adapters.upstream.runtime import UpstreamSpec, derive_name
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.mcp.replay import argv_for

pytestmark = pytest.mark.anyio


def replay(fixture: str, name: str, control: bool = False, **kw) -> UpstreamSpec:
    return UpstreamSpec.from_argv(argv_for(FIXTURES / f"{fixture}.tools-list.json", control), name=name, **kw)


async def test_single_upstream_names_origin_and_echo() -> None:
    async with wrap(replay("server-everything", "everything")) as w:
        ops = {op.name: op for op in w.engine.registry.operations}
        assert ops["get_tiny_image"].origin == "get-tiny-image"
        env = await w.engine.execute(
            {"operation": "get_resource_reference", "params": {"resource_type": "Text", "resource_id": 3}}, new_ctx()
        )
        assert env["success"], env
        assert json.loads(env["data"]) == {
            "arguments": {"resourceId": 3, "resourceType": "Text"},
            "tool": "get-resource-reference",
        }


async def test_prefix_only_on_collision() -> None:
    async with wrap(
        [replay("github-mcp-all", "gh_all"), replay("github-mcp-default", "gh"), replay("mcp-server-time", "time")], name="multi"
    ) as w:
        names = {op.name for op in w.engine.registry.operations}
        assert "gh_all_get_me" in names and "gh_get_me" in names and "get_me" not in names
        assert "actions_get" in names  # only in github-mcp-all: no prefix
        assert "get_current_time" in names
        env = await w.engine.execute({"operation": "gh_get_me"}, new_ctx())
        assert json.loads(env["data"])["tool"] == "get_me"
        assert w.engine.registry.get("gh_get_me").extensions["upstream"] == "gh"


async def test_read_only_and_globs() -> None:
    async with wrap(replay("github-mcp-all", "github"), read_only=True) as w:
        cats = {op.category.value for op in w.engine.registry.operations}
        assert cats == {"READ"}
        assert w.engine.registry.get("create_pull_request") is None
    async with wrap(replay("github-mcp-all", "github"), include=["*pull_request*"], exclude=["merge_*"]) as w:
        names = {op.name for op in w.engine.registry.operations} - {"introspect"}
        assert "create_pull_request" in names and "merge_pull_request" not in names
        assert all("pull_request" in n for n in names)
    spec = replay("github-mcp-all", "github", include=("get_*",))
    async with wrap(spec) as w:
        assert all(op.name.startswith("get_") for op in w.engine.registry.operations if op.name != "introspect")


async def test_progress_is_forwarded() -> None:
    seen = []

    async def sink(p, total, msg):
        seen.append((p, total, msg))

    async with wrap(replay("mcp-server-time", "time", control=True)) as w:
        env = await w.engine.execute({"operation": "replay_progress", "params": {"steps": 3}}, new_ctx(progress_sink=sink))
        assert env["success"]
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_is_error_maps_to_code() -> None:
    async with wrap(replay("mcp-server-time", "time", control=True)) as w:
        env = await w.engine.execute({"operation": "replay_error", "params": {"message": "404 Not Found"}}, new_ctx())
        assert env["error"]["code"] == "NOT_FOUND_RESOURCE"
        env = await w.engine.execute({"operation": "replay_error", "params": {"message": "kaboom"}}, new_ctx())
        assert env["error"]["code"] == "INTERNAL_ERROR" and "kaboom" in env["error"]["message"]


async def test_list_changed_rebuilds_the_engine() -> None:
    changed = []
    async with wrap(replay("mcp-server-time", "time", control=True)) as w:
        w.on_change(lambda e: changed.append(e))
        before = w.engine
        await before.execute({"operation": "replay_add_tool", "params": {"name": "list_widgets"}}, new_ctx())
        with anyio.fail_after(10):
            while not changed:
                await anyio.sleep(0.05)
        assert w.engine is not before and w.engine.registry.get("list_widgets").category.value == "READ"


async def test_crashed_upstream_is_restarted_with_a_clear_error_meanwhile() -> None:
    async with wrap(replay("mcp-server-time", "time", control=True)) as w:
        env = await w.engine.execute({"operation": "replay_crash"}, new_ctx())
        assert env["error"]["code"] == "INTERNAL_ERROR"
        assert env["error"]["details"]["retryable"] is True
        assert "restarted" in env["error"]["message"]
        with anyio.fail_after(20):
            while True:
                env = await w.engine.execute({"operation": "get_current_time", "params": {"timezone": "UTC"}}, new_ctx())
                if env["success"]:
                    break
                assert env["error"]["details"]["retryable"] is True
                await anyio.sleep(0.1)
        assert w.upstreams["time"].restarts >= 1


async def test_connect_failure_is_clear() -> None:
    with pytest.raises(ConnectionError, match="could not connect to upstream 'nope'"):
        async with wrap(UpstreamSpec.from_argv(["/nonexistent/binary"], name="nope")):
            pass


def test_derive_name() -> None:
    assert derive_name(["npx", "-y", "@modelcontextprotocol/server-memory"]) == "memory"
    assert derive_name(["uvx", "mcp-server-git"]) == "git"
    assert derive_name(["https://api.githubcopilot.com/mcp/"]) == "githubcopilot"
    assert derive_name(["npx", "@playwright/mcp@latest"]) == "mcp"


async def test_wrapped_server_end_to_end_over_stdio_with_progress() -> None:
    """client ──stdio──> mcpaql wrapper ──stdio──> replay upstream: tools, calls, progress."""
    import sys

    from mcp import Client, StdioServerParameters

    up = argv_for(FIXTURES / "mcp-server-time.tools-list.json", control=True)
    code = (
        "import sys; from mcpaql.serving import serve; from mcpaql.adapters.upstream import wrap; "
        "from mcpaql.adapters.upstream.runtime import UpstreamSpec; "
        "serve(wrap(UpstreamSpec.from_argv(sys.argv[1:], name='time')))"
    )
    seen = []

    async def progress(p, total, msg):
        seen.append((p, total, msg))

    params = StdioServerParameters(
        command=sys.executable, args=["-c", code, *up], env={"MCP_AQL_ENDPOINT_MODE": "semantic", "PATH": "/usr/bin:/bin"}
    )
    async with Client(params, mode="legacy", cache=None) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert {"time_mcpaql_read", "time_mcpaql_execute"} <= set(names) and all(n.startswith("time_mcpaql_") for n in names)
        r = await c.call_tool(
            "time_mcpaql_read",
            {"operation": "convert_time", "params": {"source_timezone": "UTC", "time": "10:00", "target_timezone": "Asia/Tokyo"}},
        )
        env = json.loads(r.content[0].text)
        assert env["success"] and json.loads(env["data"])["tool"] == "convert_time"
        r = await c.call_tool(
            "time_mcpaql_execute", {"operation": "replay_progress", "params": {"steps": 2}}, progress_callback=progress
        )
        assert json.loads(r.content[0].text)["success"]
    assert [p for p, _, _ in seen] == [1, 2]
