"""The ``mcpaql`` command line, run as a real subprocess against real servers over stdio:
serve → introspect/call, wrap → introspect/call/conformance, tokens, capture → schema build →
serve adapter file, and tools/list_changed forwarded from a wrapped upstream."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
SURFACES = REPO.parent / "shared" / "fixtures" / "surfaces"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))
MEMORY = REPO / ".cache-upstreams" / "node_modules" / ".bin" / "mcp-server-memory"


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
    return subprocess.run([MCPAQL, *args], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO)


def memory_bin() -> str:
    if not MEMORY.exists():
        pytest.fail(f"{MEMORY} is missing: run scripts/upstreams.sh")
    return str(MEMORY)


@pytest.fixture(autouse=True)
def _private_memory_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrapped server-memory writes its graph to MEMORY_FILE_PATH: one file per test, never the
    package's shared default."""
    monkeypatch.setenv("MEMORY_FILE_PATH", str(tmp_path / "memory.jsonl"))


@pytest.fixture
def demo_env(tmp_path: Path) -> dict[str, str]:
    return {"MCPAQL_DEMO_DB": str(tmp_path / "demo.db")}


def test_serve_demo_introspect_json(demo_env: dict[str, str]) -> None:
    r = run_cli("introspect", "--json", "--", MCPAQL, "serve", env=demo_env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    names = {t["name"] for t in out["tools"]}
    assert names == {f"tasks_mcpaql_{e}" for e in ("create", "read", "update", "delete", "execute")}
    ops = {o["name"] for o in out["introspection"]["data"]["operations"]}
    assert {"create_task", "list_tasks", "update_task", "delete_task", "introspect"} <= ops


def test_call_routes_by_introspection_and_exit_codes(demo_env: dict[str, str]) -> None:
    r = run_cli("call", "--json", "-o", "create_project", "-p", '{"name": "CLI project"}', "--", MCPAQL, "serve", env=demo_env)
    assert r.returncode == 0, r.stderr
    env = json.loads(r.stdout)
    assert env["success"] is True and env["data"]["name"] == "CLI project"
    # a domain error: printed as an envelope, exit code 1
    r = run_cli("call", "--json", "-o", "get_task", "-p", '{"task_id": "nope"}', "--", MCPAQL, "serve", env=demo_env)
    assert r.returncode == 1
    assert json.loads(r.stdout)["error"]["code"] == "NOT_FOUND_RESOURCE"
    # forcing the wrong endpoint shows the gatekeeper
    r = run_cli(
        "call", "--json", "-o", "delete_task", "--endpoint", "read", "-p", '{"task_id": "x"}', "--", MCPAQL, "serve", env=demo_env
    )
    assert json.loads(r.stdout)["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"


def test_bad_params_json_is_a_clear_error() -> None:
    r = run_cli("call", "-o", "x", "-p", "{not json", "--", MCPAQL, "serve")
    assert r.returncode == 2 and "--params must be a JSON object" in r.stderr
    assert "Traceback" not in r.stderr


def test_serve_rejects_bad_config_clearly() -> None:
    r = run_cli("serve", "--prefix", "Bad-Prefix")
    assert r.returncode == 2 and "prefix" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("serve", "no_such_module_xyz:app")
    assert r.returncode == 2 and "cannot import" in r.stderr and "Traceback" not in r.stderr


def test_serve_single_mode_and_prefix(demo_env: dict[str, str]) -> None:
    r = run_cli("introspect", "--json", "--", MCPAQL, "serve", "--mode", "single", "--prefix", "work_", env=demo_env)
    assert r.returncode == 0, r.stderr
    assert [t["name"] for t in json.loads(r.stdout)["tools"]] == ["work_tasks_mcpaql"]


def test_tokens_report_from_fixture() -> None:
    r = run_cli("tokens", "--json", "--fixture", str(SURFACES / "github-mcp-all.tools-list.json"))
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["tools"] == 89
    assert rep["wrapped"]["single"]["tokens"] < rep["wrapped"]["semantic"]["tokens"] < rep["discrete"]["tokens"] / 10
    per, det = rep["per_operation"], rep["detail"]
    assert len(per) == 89
    assert det["larger_than_definition"] == sum(1 for p in per if p["detail_tokens"] > p["tool_tokens"])
    assert det["max_ratio"] == round(max(p["detail_tokens"] / p["tool_tokens"] for p in per), 3)
    assert det["max_ratio_as_sent"] < 1 < det["median_ratio"] <= det["max_ratio"]  # GitHub sends icons
    r = run_cli("tokens", "--fixture", str(SURFACES / "github-mcp-all.tools-list.json"))
    assert f"{det['larger_than_definition']} of 89 larger" in " ".join(r.stdout.split())


def test_wrap_memory_server_call_and_conformance() -> None:
    mem = memory_bin()
    r = run_cli(
        "call",
        "--json",
        "-o",
        "create_entities",
        "-p",
        json.dumps({"entities": [{"name": "ada", "entityType": "person", "observations": ["wrote notes"]}]}),
        "--",
        MCPAQL,
        "wrap",
        "--",
        mem,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["success"] is True
    r = run_cli("conformance", "--level", "1", "--read-only", "--", MCPAQL, "wrap", "--", mem, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:]
    # a read-only run cannot exercise the round trip: the verdict says so instead of MET
    assert "Level 1 UNVERIFIED (RT-1 not run" in " ".join(r.stdout.split())


def test_wrap_read_only_exposes_only_reads() -> None:
    r = run_cli("introspect", "--json", "--", MCPAQL, "wrap", "--read-only", "--", memory_bin())
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [t["name"] for t in out["tools"]] == ["memory_mcpaql_read"]
    cats = {o["semantic_category"] for o in out["introspection"]["data"]["operations"]}
    assert cats == {"READ"}


def test_capture_build_and_serve_adapter_file(tmp_path: Path) -> None:
    bundle, schema, report = tmp_path / "bundle.json", tmp_path / "adapter.json", tmp_path / "report.md"
    r = run_cli("capture", "--out", str(bundle), "--", memory_bin())
    assert r.returncode == 0, r.stderr
    captured = json.loads(bundle.read_text())
    assert len(captured["raw_capture"]["tools"]) == 9 and len(captured["normalized_bundle"]["operations"]) == 9
    r = run_cli("schema", "build", str(bundle), "--out", str(schema), "--report", str(report))
    assert r.returncode == 0, r.stderr
    assert json.loads(schema.read_text())["name"] and "Build report" in report.read_text()
    r = run_cli("call", "--json", "-o", "read_graph", "--", MCPAQL, "serve", str(schema))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["success"] is True


@pytest.mark.anyio
async def test_list_changed_is_forwarded_through_the_wrapper() -> None:
    fixture = SURFACES / "mcp-server-time.tools-list.json"
    replay = [sys.executable, "-m", "mcpaql.mcp.replay", str(fixture), "--control"]
    params = StdioServerParameters(command=MCPAQL, args=["wrap", "--name", "time", "--", *replay], env=dict(os.environ))
    seen: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification | types.ToolListChangedNotification):
            seen.append(message)

    async with Client(params, mode="legacy", message_handler=on_message) as client:
        first = await client.list_tools()
        read = next(t.name for t in first.tools if t.name.endswith("_read"))
        res = await client.call_tool(read, {"operation": "introspect", "params": {"query": "operations"}})
        ops = {o["name"] for o in json.loads(res.content[0].text)["data"]["operations"]}
        assert "list_widgets" not in ops
        tools = {t.name: t for t in first.tools}
        add_tool = next(n for n in tools if n.endswith("_execute") or n.endswith("_create") or n.endswith("_update"))
        # replay_add_tool makes the upstream add a tool and send tools/list_changed
        for name in tools:
            res = await client.call_tool(name, {"operation": "replay_add_tool", "params": {"name": "list_widgets"}})
            if json.loads(res.content[0].text).get("success"):
                break
        else:
            pytest.fail(f"replay_add_tool not reachable via {add_tool}")
        with anyio.fail_after(15):
            while not seen:
                await anyio.sleep(0.05)
        res = await client.call_tool(read, {"operation": "introspect", "params": {"query": "operations"}})
        ops = {o["name"] for o in json.loads(res.content[0].text)["data"]["operations"]}
        assert "list_widgets" in ops


@pytest.mark.anyio
async def test_serve_with_safety_confirms_destructive_operations(tmp_path: Path) -> None:
    """`mcpaql serve --trust validated`: a DELETE needs a confirmation token bound to its
    parameters (REQ-TOKEN-*), redeemed once through `_confirmation` in the same session."""
    env = {**os.environ, "MCPAQL_DEMO_DB": str(tmp_path / "demo.db"), "HOME": str(tmp_path)}
    params = StdioServerParameters(command=MCPAQL, args=["serve", "--trust", "validated"], env=env)

    async def call(client: Client, tool: str, operation: str, p: dict[str, Any]) -> dict[str, Any]:
        res = await client.call_tool(tool, {"operation": operation, "params": p})
        return json.loads(res.content[0].text)

    async with Client(params, mode="legacy") as client:
        created = await call(client, "tasks_mcpaql_create", "create_project", {"name": "Doomed"})
        assert created["success"], created
        pid = created["data"]["project_id"]
        first = await call(client, "tasks_mcpaql_delete", "delete_project", {"project_id": pid})
        assert first["error"]["code"] == "CONFIRMATION_REQUIRED"
        token = first["error"]["details"]["confirmation_token"]
        assert first["confirmation"]["token"] == token
        other = await call(client, "tasks_mcpaql_delete", "delete_project", {"project_id": "prj_other", "_confirmation": token})
        assert other["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
        fresh = await call(client, "tasks_mcpaql_delete", "delete_project", {"project_id": pid})
        token = fresh["error"]["details"]["confirmation_token"]
        done = await call(client, "tasks_mcpaql_delete", "delete_project", {"project_id": pid, "_confirmation": token})
        assert done["success"], done
        replay = await call(client, "tasks_mcpaql_delete", "delete_project", {"project_id": pid, "_confirmation": token})
        assert replay["error"]["code"] == "TOKEN_ALREADY_USED"


def test_wrap_passes_the_callers_environment_to_a_stdio_upstream(tmp_path: Path) -> None:
    """server-memory reads MEMORY_FILE_PATH: the wrapped upstream must see the caller's environment."""
    memfile = tmp_path / "graph.jsonl"
    r = run_cli(
        "call",
        "--json",
        "-o",
        "create_entities",
        "-p",
        json.dumps({"entities": [{"name": "env-check", "entityType": "probe", "observations": []}]}),
        "--",
        MCPAQL,
        "wrap",
        "--",
        memory_bin(),
        env={"MEMORY_FILE_PATH": str(memfile)},
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert memfile.exists() and "env-check" in memfile.read_text()


@pytest.mark.anyio
async def test_batch_travels_through_the_official_client(tmp_path: Path) -> None:
    """The tool input schema requires `operation`, so the schema-compliant batch form is
    `{operation: "batch", operations: [...]}`; the bare `{operations: [...]}` works too."""
    env = {**os.environ, "MCPAQL_DEMO_DB": str(tmp_path / "demo.db")}
    params = StdioServerParameters(command=MCPAQL, args=["serve"], env=env)
    async with Client(params, mode="legacy") as client:
        items = [{"operation": "list_projects"}, {"operation": "get_task", "params": {"task_id": "nope"}}]
        for args in ({"operation": "batch", "operations": items}, {"operations": items}):
            res = await client.call_tool("tasks_mcpaql_read", args)
            env_ = json.loads(res.content[0].text)
            assert res.is_error is False and env_["success"] is True and env_["data"] is None
            assert env_["summary"] == {"total": 2, "succeeded": 1, "failed": 1}
            assert [r["index"] for r in env_["results"]] == [0, 1]
            assert env_["results"][1]["result"]["error"]["code"] == "NOT_FOUND_RESOURCE"
