"""``mcpaql guard`` over real stdio with the official MCP client: the dongle's tools, a hard
block, the approval page as the human channel, and no code on the wire or in stderr."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

from mcpaql.mcp import connect

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_REQ_LOOP_021_guard_over_stdio_end_to_end(tmp_path: Path) -> None:
    db = tmp_path / "guard.db"
    url_file = tmp_path / "approval-url"
    with tempfile.TemporaryFile("w+") as errlog:
        argv = [
            sys.executable,
            "-m",
            "mcpaql.safety.guard",
            "--store",
            f"sqlite:///{db}",
            "--url-file",
            str(url_file),
            "--max-steps",
            "10",
        ]
        wire: list[str] = []
        async with connect(argv, errlog=errlog) as conn:
            tools = {t["name"]: t for t in await conn.list_tools_raw()}
            assert set(tools) == {"safety_mcpaql_create", "safety_mcpaql_read", "safety_mcpaql_execute"}

            async def call(tool: str, op: str, **params):
                body, is_error, raw = await conn.call_tool(f"safety_mcpaql_{tool}", {"operation": op, "params": params})
                wire.append(json.dumps(raw))
                return body, is_error

            intro, _ = await call("read", "introspect", query="operations")
            assert intro["data"]["_protocol"]["capabilities"]["execution_safety_loop"] == "enforcing"
            started, _ = await call("execute", "execute_agent", element_name="claude")
            assert started["data"]["max_autonomous_steps"] == 10
            ok, _ = await call("create", "record_execution_step", element_name="claude", next_action_hint="read_file a")
            assert ok["data"]["continue"] is True
            stop, _ = await call(
                "create", "record_execution_step", element_name="claude", next_action_hint="executing shell command: rm -rf /home"
            )
            assert stop["data"]["stopped"] is True
            cid = next(n["metadata"]["verificationId"] for n in stop["data"]["notifications"] if n["type"] == "danger_zone")
            # the human opens the approval page (URL from the private file) and reads the code
            page_url = url_file.read_text().strip()
            assert (url_file.stat().st_mode & 0o777) == 0o600
            async with httpx.AsyncClient() as http:
                state = (await http.get(page_url.replace("/?", "/api/state?"))).json()
            code = next(c["code"] for c in state["challenges"] if c["id"] == cid)
            wrong, _ = await call("create", "verify_challenge", challenge_id=cid, code="0000")
            assert wrong["error"]["code"] == "PERMISSION_DENIED"
            # the wrong attempt burned it; the next step re-issues a challenge
            again, _ = await call("create", "record_execution_step", element_name="claude", next_action_hint="read_file")
            cid = next(n["metadata"]["verificationId"] for n in again["data"]["notifications"] if n["type"] == "danger_zone")
            async with httpx.AsyncClient() as http:
                state = (await http.get(page_url.replace("/?", "/api/state?"))).json()
            code2 = next(c["code"] for c in state["challenges"] if c["id"] == cid)
            good, _ = await call("create", "verify_challenge", challenge_id=cid, code=code2)
            assert good["data"]["unblocked"] is True
            done, _ = await call("execute", "complete_execution", element_name="claude")
            assert done["data"]["status"] == "completed"
        errlog.seek(0)
        stderr = errlog.read()
    everything = "\n".join(wire) + stderr
    for c in (code, code2):
        assert c not in everything and c.replace("-", "") not in everything
    assert page_url.split("key=")[1] not in stderr  # the admin key is not logged either


async def test_REQ_CONF_guard_dongle_is_level_1_conformant(tmp_path: Path) -> None:
    from mcpaql.conformance import run_conformance

    argv = [sys.executable, "-m", "mcpaql.safety.guard", "--store", f"sqlite:///{tmp_path / 'g.db'}", "--no-approval-page"]
    report = await run_conformance(argv, level=1, read_only=True)
    assert report.exit_code == 0, [(r.id, r.message) for r in report.results if str(r.status).endswith("FAIL")]
