"""The live suite against the embedded demo adapter (``mcpaql serve``) over real stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpaql.conformance import Report, Status, grade_bundle, run_conformance
from mcpaql.mcp.client import connect

from .conftest import SCHEMAS, demo_cmd

pytestmark = pytest.mark.e2e
HAVE_SCHEMAS = (SCHEMAS / "introspection-response.schema.json").is_file()


def run(target: Any, **kw: Any) -> Report:
    return anyio.run(lambda: run_conformance(target, schemas=SCHEMAS if HAVE_SCHEMAS else None, **kw))


async def snapshot(cmd: list[str]) -> dict[str, Any]:
    """Every record the demo lists, to prove the run left the data as it found it."""
    async with connect(cmd) as conn:
        tools = {t["name"] for t in await conn.list_tools_raw()}
        tool = "tasks_mcpaql" if "tasks_mcpaql" in tools else "tasks_mcpaql_read"
        out = {}
        full = {"fields": "full", "limit": 100}
        for op, params in (("list_projects", full), ("list_tasks", {**full, "include_archived": True})):
            body, _, _ = await conn.call_tool(tool, {"operation": op, "params": params})
            assert body["success"] is True and body["data"]["pagination"]["has_more"] is False, body
            out[op] = body
        for task in out["list_tasks"]["data"]["items"]:  # notes and links, by task (get_task is the full detail)
            body, _, _ = await conn.call_tool(tool, {"operation": "get_task", "params": {"task_id": task["task_id"]}})
            out[task["task_id"]] = body
        return out


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_demo_meets_level2_in_every_mode(mode: str, tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    cmd = demo_cmd(mode, db)
    before = anyio.run(snapshot, cmd)
    r = run(cmd, level=2)
    assert r.fatal is None
    failed = {x.id: x.message for x in r.results if x.status is Status.FAIL}
    assert not failed
    assert r.level1_met and r.achieved_level == 2 and r.met and r.exit_code == 0
    assert not [x.id for x in r.results if x.status is Status.WARN]
    ids = {x.id: x.status for x in r.results}
    for cid in ("RT-1", "RT-2", "RT-3", "PH-1", "PH-2", "IF-4", "IF-11", "L2-1", "L2-2", "L2-3"):
        assert ids[cid] is Status.PASS, (cid, next(x.message for x in r.results if x.id == cid))
    assert anyio.run(snapshot, cmd) == before  # everything the run created was deleted again
    assert r.evidence_bundle["capabilities"] == {"field_selection": True, "batch_operations": True}
    l21 = next(x.message for x in r.results if x.id == "L2-1")
    if mode == "all":
        assert r.modes == ["semantic", "single"] and "both exposed" in l21
    else:  # one mode served, both declared in _protocol.supported_modes
        assert r.modes == [mode] and "not exercised" in l21
    if HAVE_SCHEMAS:
        g = grade_bundle(json.loads(json.dumps(r.evidence_bundle)), 1, SCHEMAS)
        assert g.exit_code == 0, g.failures()
