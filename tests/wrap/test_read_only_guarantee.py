"""``--read-only`` is a guarantee, tested adversarially against REAL upstreams (issue 10 point 1).

mcp-server-duckdb's one tool ``query`` ("Execute a query", no annotations) runs ``CREATE TABLE``
as readily as ``SELECT``; office-word-mcp-server's ``search_and_replace`` rewrites a document
(``destructiveHint: true``). Under ``mcpaql wrap --read-only`` neither may be reached through
any endpoint tool, the unified tool, a batch, or any spelling of its name; the wrap output lists
each with its reason. Without ``--read-only`` the same attack does write (the control), and under
``--trust validated`` the destructive one asks for confirmation. Servers come from
``tests/wrap/install_upstreams.sh`` (pinned, one venv each).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session
from mcpaql.safety import SafetyConfig

pytestmark = [pytest.mark.upstream, pytest.mark.anyio]

REPO = Path(__file__).resolve().parents[2]
VENVS = Path(os.environ.get("MCPAQL_UPSTREAMS_DIR", REPO / ".cache-upstreams")) / "venvs"
DUCKDB = VENVS / "duckdb" / "bin" / "mcp-server-duckdb"
WORD = VENVS / "office-word" / "bin" / "word_mcp_server"
CREATE = "CREATE TABLE pwned AS SELECT 42 AS x"


def _bin(path: Path) -> str:
    if not path.exists():
        pytest.fail(f"{path} is missing: run tests/wrap/install_upstreams.sh")
    return str(path)


def _attacks(op: str, params: dict[str, Any], upstream_params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every way a request could name the operation: its name in any case, prefixed, batched."""
    spellings = [
        op,
        op.upper(),
        op.title(),
        f"duckdb_{op}",
        f"word_{op}",
        f"mcp_server_duckdb_{op}",
        op.replace("_", "-"),
        f"{op}_2",
        " " + op,
    ]
    out: list[dict[str, Any]] = [{"operation": s, "params": p} for s in spellings for p in (params, upstream_params)]
    out.append({"operations": [{"operation": op, "params": params}]})
    out.append({"operation": "batch", "operations": [{"operation": op, "params": params}] * 3})
    out.append({"operation": "introspect", "params": {"query": "operations", "name": op}})
    return out


async def _attack_over_stdio(
    argv: list[str], op: str, params: dict[str, Any], upstream_params: dict[str, Any], tmp_path: Path
) -> tuple[list[str], list[str], str]:
    """Wrap with --read-only over real stdio and send every attack through every tool."""
    errlog = tmp_path / "stderr.txt"
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ERRLOG": str(errlog)}
    served: list[str] = []
    # the wrapper's stderr goes to a file (a shell redirect: the client does not expose it)
    cmd = ["-c", 'exec "$@" 2>"$ERRLOG"', "sh", sys.executable, "-m", "mcpaql.cli", *argv]
    if True:
        async with Client(StdioServerParameters(command="/bin/sh", args=cmd, env=env), mode="legacy", cache=None) as c:
            tools = [t.name for t in (await c.list_tools()).tools]
            for tool in tools:
                for attack in _attacks(op, params, upstream_params):
                    body = json.loads((await c.call_tool(tool, attack)).content[0].text)
                    if attack.get("operation") == "introspect":
                        assert body["success"] is False or op not in json.dumps(body["data"]), body
                        continue
                    results = [item["result"] for item in body["results"]] if "results" in body else [body]
                    for r in results:
                        assert r.get("success") is False, (tool, attack, body)
                        assert r["error"]["code"] in (
                            "NOT_FOUND_OPERATION",
                            "VALIDATION_WRONG_ENDPOINT",
                            "VALIDATION_INVALID_TYPE",
                            "BATCH_VALIDATION_ERROR",
                        ), r
            listing = json.loads(
                (await c.call_tool(tools[0], {"operation": "introspect", "params": {"query": "operations"}})).content[0].text
            )
            served = [o["name"] for o in listing["data"]["operations"]]
    return tools, served, errlog.read_text()


async def _duckdb_tables(db: Path) -> list[str]:
    spec = UpstreamSpec.from_argv([_bin(DUCKDB), "--db-path", str(db)], name="duckdb")
    async with wrap(spec) as w:
        env = await w.engine.execute(
            {"operation": "query", "params": {"query": "SELECT table_name FROM information_schema.tables ORDER BY 1"}},
            Context(session=Session()),
        )
        assert env["success"], env
        return re.findall(r"'([^']+)'", str(env["data"]))  # the server answers with a Python repr: [('t',)]


async def test_duckdb_query_cannot_write_under_read_only(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    argv = ["wrap", "--read-only", "--name", "duckdb", "--", _bin(DUCKDB), "--db-path", str(db)]
    _, served, stderr = await _attack_over_stdio(argv, "query", {"query": CREATE}, {"query": CREATE}, tmp_path)
    assert "query" not in served
    assert "--read-only: serving 0 guaranteed read operation(s); left out 1" in stderr
    assert "query (duckdb): EXECUTE" in stderr and "generic 'query' tool" in stderr
    assert "pwned" not in await _duckdb_tables(db)
    # the control: the same request without --read-only does create the table
    spec = UpstreamSpec.from_argv([_bin(DUCKDB), "--db-path", str(db)], name="duckdb")
    async with wrap(spec) as w:
        op = w.engine.registry.get("query")
        assert op is not None and op.category.value == "EXECUTE"
        env = await w.engine.execute({"operation": "query", "params": {"query": CREATE}}, Context(session=Session()))
        assert env["success"], env
    assert "pwned" in await _duckdb_tables(db)


async def _word(tmp_path: Path, **kw: Any) -> Any:
    return wrap(UpstreamSpec.from_argv([_bin(WORD)], name="word", cwd=str(tmp_path)), **kw)


async def test_word_search_and_replace_under_read_only_and_trust(tmp_path: Path) -> None:
    doc = str(tmp_path / "memo.docx")
    ctx = Context(session=Session())
    async with await _word(tmp_path) as w:
        for req in (
            {"operation": "create_document", "params": {"filename": doc}},
            {"operation": "add_paragraph", "params": {"filename": doc, "text": "keep this text"}},
        ):
            env = await w.engine.execute(req, ctx)
            assert env["success"], env
        sr = w.engine.registry.get("search_and_replace")
        assert (sr.category.value, sr.danger_level) == ("UPDATE", "destructive")
        tools = {t.name: t.annotations for t in w.engine.tools}
        # the UPDATE tool hosts search_and_replace, the CREATE tool copy_document: both destructive
        assert tools["word_mcpaql_update"]["destructiveHint"] is True
        assert tools["word_mcpaql_create"]["destructiveHint"] is True
        assert tools["word_mcpaql_read"]["readOnlyHint"] is True
    replace = {"filename": doc, "find_text": "keep", "replace_text": "LOST"}
    argv = ["wrap", "--read-only", "--name", "word", "--", _bin(WORD)]
    tools, served, stderr = await _attack_over_stdio(argv, "search_and_replace", replace, replace, tmp_path)
    assert tools == ["word_mcpaql_read"]
    assert "search_and_replace" not in served and "convert_to_pdf" not in served and "get_document_text" in served
    assert "search_and_replace (word): UPDATE" in stderr and "convert_to_pdf (word): EXECUTE" in stderr
    store = f"sqlite:///{tmp_path / 'safety.db'}"
    async with await _word(tmp_path, safety=SafetyConfig(store=store, trust="validated")) as w:
        text = await w.engine.execute({"operation": "get_document_text", "params": {"filename": doc}}, ctx)
        assert "keep this text" in str(text["data"]) and "LOST" not in str(text["data"])
        # an upstream-destructive UPDATE needs confirmation under --trust, like a DELETE
        env = await w.engine.execute({"operation": "search_and_replace", "params": replace}, ctx)
        assert env["error"]["code"] == "CONFIRMATION_REQUIRED", env
        # so does a CREATE the upstream marks destructive (copy_document overwrites its target)
        env = await w.engine.execute({"operation": "copy_document", "params": {"source_filename": doc}}, ctx)
        assert env["error"]["code"] == "CONFIRMATION_REQUIRED", env
