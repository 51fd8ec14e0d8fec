"""Parity with REAL upstream servers (npm: server-everything, server-filesystem, server-memory;
PyPI: mcp-server-git, mcp-server-time). Run alone with ``pytest -m upstream``; CI runs them.

Every tool of every server is called twice with the same arguments: directly with the
official MCP client against one server process, and through the wrapper against a second,
identically prepared process. The envelope data must equal what :func:`result_data` makes of
the direct result (errors: the same mapped code), and every tool's classification is asserted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, StdioServerParameters
from wrap_helpers import new_ctx

from aql_support import free_port
from mcpaql.adapters.upstream.ops import result_data
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.protocol.errors import MCPAQLError

pytestmark = [pytest.mark.upstream, pytest.mark.anyio]

REPO = Path(__file__).resolve().parents[2]
NODE_BIN = Path(os.environ.get("MCPAQL_UPSTREAMS_DIR", REPO / ".cache-upstreams")) / "node_modules" / ".bin"
PY_BIN = Path(sys.executable).parent


def _bin(path: Path) -> str:
    if not path.exists():
        pytest.fail(
            f"{path} is missing: run .ci/install-upstreams (npm install into .cache-upstreams, pip install "
            "mcp-server-git mcp-server-time)"
        )
    return str(path)


def _git_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    }
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "config", "user.email", "t@e"], ["git", "config", "user.name", "t"]):
        subprocess.run(cmd, cwd=path, check=True, env=env)
    (path / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "a.txt"], cwd=path, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "first"], cwd=path, check=True, env=env)
    (path / "a.txt").write_text("one\ntwo\n")
    (path / "b.txt").write_text("new\n")


def _fs_root(path: Path) -> None:
    (path / "docs").mkdir(parents=True, exist_ok=True)
    (path / "docs" / "a.txt").write_text("alpha\nbeta\n")
    (path / "docs" / "b.md").write_text("# B\n")
    (path / "img.png").write_bytes(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
            "1f15c4890000000d49444154789c6360000000020001e221bc330000000049454e44ae426082"
        )
    )


# name → (argv builder(workdir), prepare(workdir), [(tool, arguments)], {tool: category}, normalizer)
def _servers() -> dict[str, Any]:
    return {
        "everything": (
            lambda d: [_bin(NODE_BIN / "mcp-server-everything")],
            lambda d: None,
            [
                ("echo", {"message": "hello"}),
                ("get-annotated-message", {"messageType": "error", "includeImage": True}),
                ("get-env", {}),
                ("get-resource-links", {"count": 2}),
                ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
                ("get-structured-content", {"location": "Chicago"}),
                ("get-sum", {"a": 2, "b": 40}),
                ("get-tiny-image", {}),
                (
                    "gzip-file-as-resource",
                    {"name": "x.gz", "data": "data:text/plain;base64,aGVsbG8gd29ybGQ=", "outputType": "resource"},
                ),
                ("toggle-simulated-logging", {}),
                ("toggle-subscriber-updates", {}),
                ("trigger-long-running-operation", {"duration": 0.2, "steps": 2}),
                ("simulate-research-query", {"topic": "otters"}),
            ],
            {
                "echo": "READ",
                "get-annotated-message": "READ",
                "get-env": "READ",
                "get-resource-links": "READ",
                "get-resource-reference": "READ",
                "get-structured-content": "READ",
                "get-sum": "READ",
                "get-tiny-image": "READ",
                "gzip-file-as-resource": "EXECUTE",
                "toggle-simulated-logging": "UPDATE",
                "toggle-subscriber-updates": "UPDATE",
                "trigger-long-running-operation": "READ",
                "simulate-research-query": "EXECUTE",
            },
            "everything",
        ),
        "filesystem": (
            lambda d: [_bin(NODE_BIN / "mcp-server-filesystem"), str(d)],
            _fs_root,
            [
                ("list_allowed_directories", {}),
                ("read_file", {"path": "{d}/docs/a.txt"}),
                ("read_text_file", {"path": "{d}/docs/a.txt", "head": 1}),
                ("read_media_file", {"path": "{d}/img.png"}),
                ("read_multiple_files", {"paths": ["{d}/docs/a.txt", "{d}/docs/b.md"]}),
                ("write_file", {"path": "{d}/docs/c.txt", "content": "gamma\n"}),
                ("edit_file", {"path": "{d}/docs/c.txt", "edits": [{"oldText": "gamma", "newText": "delta"}], "dryRun": False}),
                ("create_directory", {"path": "{d}/new/deep"}),
                ("list_directory", {"path": "{d}/docs"}),
                ("list_directory_with_sizes", {"path": "{d}/docs", "sortBy": "name"}),
                ("directory_tree", {"path": "{d}/docs", "excludePatterns": ["*.md"]}),
                ("move_file", {"source": "{d}/docs/c.txt", "destination": "{d}/docs/d.txt"}),
                ("search_files", {"path": "{d}", "pattern": "*.txt"}),
                ("read_text_file", {"path": "{d}/missing.txt"}),
                ("read_text_file", {"path": "/etc/hostname"}),
            ],
            {
                "read_file": "READ",
                "read_text_file": "READ",
                "read_media_file": "READ",
                "read_multiple_files": "READ",
                "write_file": "CREATE",
                "edit_file": "UPDATE",
                "create_directory": "CREATE",
                "list_directory": "READ",
                "list_directory_with_sizes": "READ",
                "directory_tree": "READ",
                "move_file": "UPDATE",
                "search_files": "READ",
                "get_file_info": "READ",
                "list_allowed_directories": "READ",
            },
            "paths",
        ),
        "memory": (
            lambda d: [_bin(NODE_BIN / "mcp-server-memory")],
            lambda d: None,
            [
                (
                    "create_entities",
                    {
                        "entities": [
                            {"name": "ada", "entityType": "person", "observations": ["math"]},
                            {"name": "bab", "entityType": "machine", "observations": []},
                        ]
                    },
                ),
                ("create_relations", {"relations": [{"from": "ada", "to": "bab", "relationType": "designed"}]}),
                ("add_observations", {"observations": [{"entityName": "ada", "contents": ["poet's daughter"]}]}),
                ("read_graph", {}),
                ("search_nodes", {"query": "math"}),
                ("open_nodes", {"names": ["ada"]}),
                ("delete_observations", {"deletions": [{"entityName": "ada", "observations": ["math"]}]}),
                ("delete_relations", {"relations": [{"from": "ada", "to": "bab", "relationType": "designed"}]}),
                ("delete_entities", {"entityNames": ["bab"]}),
                ("add_observations", {"observations": [{"entityName": "nobody", "contents": ["x"]}]}),
                ("read_graph", {}),
            ],
            {
                "create_entities": "CREATE",
                "create_relations": "CREATE",
                "add_observations": "CREATE",
                "delete_entities": "DELETE",
                "delete_observations": "DELETE",
                "delete_relations": "DELETE",
                "read_graph": "READ",
                "search_nodes": "READ",
                "open_nodes": "READ",
            },
            None,
        ),
        "git": (
            lambda d: [_bin(PY_BIN / "mcp-server-git")],
            _git_repo,
            [
                ("git_status", {"repo_path": "{d}"}),
                ("git_diff_unstaged", {"repo_path": "{d}"}),
                ("git_add", {"repo_path": "{d}", "files": ["b.txt"]}),
                ("git_diff_staged", {"repo_path": "{d}"}),
                ("git_reset", {"repo_path": "{d}"}),
                ("git_add", {"repo_path": "{d}", "files": ["a.txt", "b.txt"]}),
                ("git_commit", {"repo_path": "{d}", "message": "second"}),
                ("git_log", {"repo_path": "{d}", "max_count": 5}),
                ("git_create_branch", {"repo_path": "{d}", "branch_name": "feature"}),
                ("git_checkout", {"repo_path": "{d}", "branch_name": "feature"}),
                ("git_branch", {"repo_path": "{d}", "branch_type": "local"}),
                ("git_diff", {"repo_path": "{d}", "target": "main"}),
                ("git_show", {"repo_path": "{d}", "revision": "HEAD:a.txt"}),
                ("git_show", {"repo_path": "{d}", "revision": "nope"}),
            ],
            {
                "git_status": "READ",
                "git_diff_unstaged": "READ",
                "git_diff_staged": "READ",
                "git_diff": "READ",
                "git_commit": "CREATE",
                "git_add": "CREATE",
                "git_reset": "UPDATE",
                "git_log": "READ",
                "git_create_branch": "CREATE",
                "git_checkout": "UPDATE",
                "git_show": "READ",
                "git_branch": "READ",
            },
            "git",
        ),
        "time": (
            lambda d: [_bin(PY_BIN / "mcp-server-time"), "--local-timezone", "UTC"],
            lambda d: None,
            [
                ("get_current_time", {"timezone": "Europe/Paris"}),
                ("convert_time", {"source_timezone": "UTC", "time": "12:30", "target_timezone": "Asia/Tokyo"}),
                ("get_current_time", {"timezone": "Not/AZone"}),
            ],
            {"get_current_time": "READ", "convert_time": "READ"},
            "time",
        ),
    }


SERVERS = _servers()


def _subst(value: Any, d: Path) -> Any:
    if isinstance(value, str):
        return value.replace("{d}", str(d))
    if isinstance(value, list):
        return [_subst(v, d) for v in value]
    if isinstance(value, dict):
        return {k: _subst(v, d) for k, v in value.items()}
    return value


def _normalize(obj: Any, kind: str | None, d: Path) -> Any:
    """Remove what legitimately differs between two server processes (their directories,
    commit hashes and clock readings); nothing else is touched."""
    import base64
    import json as _json

    def unblob(m: re.Match[str]) -> str:
        try:
            return '"blob": ' + _json.dumps(base64.b64decode(m.group(1)).decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return m.group(0)

    text = _json.dumps(obj, sort_keys=True)
    text = text.replace(str(d), "<D>")
    if kind == "everything":
        text = re.sub(r'"blob": "([A-Za-z0-9+/=]+)"', unblob, text)
        text = re.sub(r"\d{1,2}:\d\d:\d\d( [AP]M)?", "<T>", text)
    if kind == "git":
        text = re.sub(r"\b[0-9a-f]{7,40}\b", "<SHA>", text)
        text = re.sub(r"Date: [^\\\"]*", "Date: <T>", text)
    if kind == "time":
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", "<T>", text)
        text = re.sub(r'(day_of_week\\?": \\?")\w+', r"\1<W>", text)
        text = re.sub(r'(is_dst\\?": )(true|false)', r"\1null", text)
    if kind == "paths":
        text = re.sub(r"(modified|accessed|created): [^\\\"]*", r"\1: <T>", text)
    return _json.loads(text)


def _expected(result: dict[str, Any], tool: str) -> tuple[str, Any]:
    try:
        return "ok", result_data(result, tool)
    except MCPAQLError as e:
        return "error", e.code


@pytest.mark.parametrize("server", sorted(SERVERS))
async def test_parity_direct_vs_wrapped(server: str, tmp_path: Path) -> None:
    argv_of, prepare, calls, categories, kind = SERVERS[server]
    d1, d2 = tmp_path / "direct", tmp_path / "wrapped"
    d1.mkdir()
    d2.mkdir()
    prepare(d1)
    prepare(d2)
    env = {**os.environ, "MEMORY_FILE_PATH": str(d1 / "memory.jsonl")}
    argv1 = argv_of(d1)
    direct: list[tuple[str, Any]] = []
    async with Client(
        StdioServerParameters(command=argv1[0], args=argv1[1:], env=env, cwd=str(d1)), mode="legacy", cache=None
    ) as c:
        listed = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in (await c.list_tools()).tools]
        for tool, args in calls:
            try:
                r = await c.call_tool(tool, _subst(args, d1))
                direct.append(_expected(r.model_dump(by_alias=True, exclude_none=True, mode="json"), tool))
            except MCPError as e:
                direct.append(("rpc-error", e.code))
    assert {t["name"] for t in listed} == set(categories), "every upstream tool is in the classification table"

    argv2 = argv_of(d2)
    spec = UpstreamSpec.from_argv(argv2, name=server, env={"MEMORY_FILE_PATH": str(d2 / "memory.jsonl")}, cwd=str(d2))
    async with wrap(spec) as w:
        eng = w.engine
        by_origin = {op.origin: op for op in eng.registry.operations if op.origin}
        for tool, cat in categories.items():
            assert by_origin[tool].category.value == cat, tool
        for (tool, args), exp in zip(calls, direct, strict=True):
            op = by_origin[tool]
            params = {p.name: v for p in op.params for k, v in _subst(args, d2).items() if p.target == k}
            envl = await eng.execute({"operation": op.name, "params": params}, new_ctx())
            got = ("ok", envl["data"]) if envl["success"] else ("error", envl["error"]["code"])
            if exp[0] == "rpc-error":
                assert not envl["success"], (tool, envl)
                continue
            assert _normalize(got, kind, d2) == _normalize(exp, kind, d1), (tool, args)


@pytest.fixture(params=["streamableHttp", "sse"])
def http_everything(request: pytest.FixtureRequest):
    import socket
    import time

    port = free_port()
    proc = subprocess.Popen(
        [_bin(NODE_BIN / "mcp-server-everything"), request.param],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    path = "/mcp" if request.param == "streamableHttp" else "/sse"
    yield request.param, f"http://127.0.0.1:{port}{path}"
    proc.terminate()
    proc.wait(10)


async def test_http_upstreams_streamable_and_sse_fallback(http_everything: tuple[str, str]) -> None:
    kind, url = http_everything
    spec = UpstreamSpec.from_url(url, name="everything", headers={"X-Test": "${HOME}"})
    async with wrap(spec) as w:
        assert w.upstreams["everything"].transport_used == ("streamable_http" if kind == "streamableHttp" else "sse")
        env = await w.engine.execute({"operation": "echo", "params": {"message": "over http"}}, new_ctx())
        assert env == {"success": True, "data": "Echo: over http"}


async def test_real_progress_is_forwarded() -> None:
    seen: list[tuple[float, float | None]] = []

    async def sink(p: float, total: float | None, msg: str | None) -> None:
        seen.append((p, total))

    async with wrap(UpstreamSpec.from_argv([_bin(NODE_BIN / "mcp-server-everything")], name="everything")) as w:
        env = await w.engine.execute(
            {"operation": "trigger_long_running_operation", "params": {"duration": 0.3, "steps": 3}}, new_ctx(progress_sink=sink)
        )
        assert env["success"], env
    assert [p for p, _ in seen] == [1, 2, 3] and all(t == 3 for _, t in seen)


async def test_live_http_capture_is_a_valid_bundle(http_everything: tuple[str, str]) -> None:
    import json

    import jsonschema

    from mcpaql.adapters.schema import build_schema, capture_live

    kind, url = http_everything
    bundle = await capture_live(UpstreamSpec.from_url(url, name="everything", headers={"Authorization": "Bearer ${NOPE}"}))
    schema_dir = REPO.parent / "shared" / "spec" / "schemas"
    v = jsonschema.Draft202012Validator(json.loads((schema_dir / "discovery-bundle.schema.json").read_text()))
    errors = [e.message for e in v.iter_errors(bundle)]
    if kind == "streamableHttp":
        assert errors == []
    else:
        assert bundle["source"]["transport"] == "sse" and len(errors) == 1
    assert bundle["source"]["auth"] == {"type": "bearer", "header": "Authorization", "prefix": "Bearer ", "token_env": "NOPE"}
    assert bundle["source"]["server"]["name"] == "mcp-servers/everything"
    adapter, report = build_schema(bundle)
    av = jsonschema.Draft202012Validator(json.loads((schema_dir / "adapter-schema.schema.json").read_text()))
    assert [e.message for e in av.iter_errors(adapter)] == []
    assert report["by_category"]["READ"] >= 8
