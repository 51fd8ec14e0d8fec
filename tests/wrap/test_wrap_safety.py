"""The safety layer on wrapped upstreams and adapter files (wrap/serve --safety/--trust/--safety-loop,
the file's own ``trust`` and ``rate_limits`` blocks): confirmation of destructive wrapped operations,
one store across engine rebuilds, and the CLI over real stdio with the official client."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from wrap_helpers import FIXTURES

from mcpaql.adapters.schema import build_schema, capture_live, serve_adapter, write_schema
from mcpaql.adapters.schema.load import rate_rules
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.mcp.replay import argv_for
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session
from mcpaql.safety import SafetyConfig

pytestmark = pytest.mark.anyio

MEMORY = FIXTURES / "server-memory.tools-list.json"
DELETE = {"operation": "delete_entities", "params": {"entity_names": ["ada"]}}


def memory(control: bool = False) -> UpstreamSpec:
    return UpstreamSpec.from_argv(argv_for(MEMORY, control), name="memory")


def safety(tmp_path: Path, **kw) -> SafetyConfig:
    return SafetyConfig(store=f"sqlite:///{tmp_path / 'safety.db'}", **kw)


async def test_destructive_wrapped_operation_needs_confirmation(tmp_path: Path) -> None:
    async with wrap(memory(), safety=safety(tmp_path, trust="validated")) as w:
        ctx = Context(session=Session())
        env = await w.engine.execute(DELETE, ctx)
        assert env["error"]["code"] == "CONFIRMATION_REQUIRED", env
        token = env["error"]["details"]["confirmation_token"]
        env = await w.engine.execute({**DELETE, "params": {**DELETE["params"], "_confirmation": token}}, ctx)
        assert env["success"], env
        assert json.loads(env["data"])["arguments"] == {"entityNames": ["ada"]}  # mapped, token not forwarded
        read = await w.engine.execute({"operation": "read_graph"}, ctx)
        assert read["success"]  # reads stay ungated
        detail = (
            await w.engine.execute({"operation": "introspect", "params": {"query": "operations", "name": "delete_entities"}}, ctx)
        )["data"]
        assert "Danger level: destructive; requires confirmation" in detail["operation"]["description"]
        info = await w.engine.execute({"operation": "introspect", "params": {"query": "adapter_info"}}, ctx)
        assert info["data"]["trust"]["level"] == "validated"


async def test_one_store_across_engine_rebuilds(tmp_path: Path) -> None:
    async with wrap(memory(control=True), safety=safety(tmp_path, trust="validated", loop_mode="monitoring")) as w:
        ctx = Context(session=Session())
        token = (await w.engine.execute(DELETE, ctx))["error"]["details"]["confirmation_token"]
        before = w.engine
        await before.execute({"operation": "replay_add_tool", "params": {"name": "list_widgets"}}, ctx)
        with anyio.fail_after(10):
            while w.engine is before:
                await anyio.sleep(0.05)
        after = w.engine
        assert after.registry.get("record_execution_step") is not None  # the loop is on the new engine too
        assert after.registry.get("list_widgets") is not None
        env = await after.execute({**DELETE, "params": {**DELETE["params"], "_confirmation": token}}, ctx)
        assert env["success"], env  # issued before the rebuild, redeemed after it


async def test_adapter_file_rate_limits_and_trust(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # the default store (~/.mcpaql/safety.db) holds the rate windows
    schema, _ = build_schema(await capture_live(memory()))
    schema["rate_limits"] = {"requests_per_minute": 2}
    schema["trust"] = {"level": "high"}  # adapter-schema vocabulary → community_reviewed
    path = tmp_path / "memory-adapter.json"
    write_schema(schema, path)
    async with serve_adapter(path) as rt:  # no safety settings: the file's limits alone apply
        ctx = Context(session=Session())
        results = [await rt.engine.execute({"operation": "read_graph"}, ctx) for _ in range(3)]
        assert [r["success"] for r in results] == [True, True, False]
        assert results[2]["error"]["code"] == "RATE_LIMIT_EXCEEDED"
        assert (await rt.engine.execute(DELETE, ctx))["error"]["code"] == "RATE_LIMIT_EXCEEDED"  # no confirmation gate
    async with serve_adapter(path, safety=safety(tmp_path)) as rt:  # safety on: the file's trust level is used
        ctx = Context(session=Session())
        info = await rt.engine.execute({"operation": "introspect", "params": {"query": "adapter_info"}}, ctx)
        assert info["data"]["trust"]["level"] == "community_reviewed"
        assert (await rt.engine.execute(DELETE, ctx))["error"]["code"] == "CONFIRMATION_REQUIRED"


def test_rate_limit_block_becomes_windows() -> None:
    assert rate_rules({"requests_per_minute": 60, "requests_per_day": 1000, "burst_limit": 5}) == [
        {"limit": 60, "window": "minute", "scope": "global"},
        {"limit": 1000, "window": "day", "scope": "global"},
        {"limit": 5, "window": "second", "scope": "global"},
    ]


async def test_cli_wrap_with_trust_over_stdio(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "mcpaql.cli", "wrap", "--name", "memory", "--trust", "validated", "--", *argv_for(MEMORY)]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}  # the default store lives under ~/.mcpaql
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), mode="legacy", cache=None) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["memory_mcpaql_delete"].annotations.destructive_hint is True
        r = await c.call_tool("memory_mcpaql_delete", DELETE)
        body = json.loads(r.content[0].text)
        assert body["error"]["code"] == "CONFIRMATION_REQUIRED"
        token = body["error"]["details"]["confirmation_token"]
        r = await c.call_tool("memory_mcpaql_delete", {**DELETE, "params": {**DELETE["params"], "_confirmation": token}})
        assert json.loads(r.content[0].text)["success"] is True
    assert (tmp_path / ".mcpaql").exists()


async def test_cli_rejects_bad_safety_settings(tmp_path: Path) -> None:
    proc = await anyio.run_process(
        [sys.executable, "-m", "mcpaql.cli", "wrap", "--trust", "sky-high", "--", *argv_for(MEMORY)], check=False
    )
    assert proc.returncode == 2
    assert b"unknown trust level" in proc.stderr and b"Traceback" not in proc.stderr


async def test_cli_serve_adapter_file_with_safety_loop(tmp_path: Path) -> None:
    schema, _ = build_schema(await capture_live(memory()))
    path = tmp_path / "memory-adapter.json"
    write_schema(schema, path)
    argv = [sys.executable, "-m", "mcpaql.cli", "serve", str(path), "--trust", "validated", "--safety-loop", "monitoring"]
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=env), mode="legacy", cache=None) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        delete = next(t for t in tools if t.endswith("_delete"))
        body = json.loads((await c.call_tool(delete, DELETE)).content[0].text)
        assert body["error"]["code"] == "CONFIRMATION_REQUIRED"
        read = next(t for t in tools if t.endswith("_read"))
        listing = await c.call_tool(read, {"operation": "introspect", "params": {"query": "operations"}})
        ops = json.loads(listing.content[0].text)
        assert "record_execution_step" in {o["name"] for o in ops["data"]["operations"]}


BASE = {
    "name": "x-api",
    "type": "adapter",
    "version": "1.0.0",
    "description": "d",
    "target": {"base_url": "http://127.0.0.1:9", "transport": "http", "protocol": "rest", "serialization": "json"},
    "operations": {"read": [{"name": "get_a", "maps_to": "GET /a"}]},
}


@pytest.mark.parametrize(
    ("block", "error"),
    [
        ({"trust": {"level": "sky-high"}}, "trust.level: 'sky-high' is not one of untested, generated"),
        ({"trust": {}}, "trust.level: is required"),
        ({"trust": {"level": "verified", "verification_date": "yesterday"}}, "trust.verification_date: must be a date"),
        ({"rate_limits": {"requests_per_minute": 0}}, "rate_limits.requests_per_minute: must be an integer >= 1"),
        ({"rate_limits": {"burst_limit": True}}, "rate_limits.burst_limit: must be an integer >= 1"),
    ],
)
def test_REQ_ADPT_018_trust_and_rate_limit_blocks_are_checked(block: dict, error: str) -> None:
    from mcpaql.adapters.schema.load import check_adapter_schema
    from mcpaql.protocol.registry import SchemaError

    with pytest.raises(SchemaError, match=re.escape(error)):
        check_adapter_schema({**BASE, **block})
    check_adapter_schema(
        {
            **BASE,
            "trust": {"level": "verified", "verified_by": "ops", "verification_date": "2026-01-31"},
            "rate_limits": {"requests_per_minute": 60, "burst_limit": 5},
        }
    )
