"""The live conformance suite against real servers over real stdio and HTTP.

Good servers: the tasks adapter (built with ``mcpaql.Adapter``) in semantic, single and all
modes. Broken servers: the same adapter behind a low-level MCP server that injects one defect
each (``servers/broken_server.py``); every defect must be caught by the check that targets it.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mcpaql.conformance import Report, Status, grade_bundle, render, run_conformance, write_evidence

from .conftest import SCHEMAS, broken_cmd, tasks_cmd

pytestmark = pytest.mark.e2e
HAVE_SCHEMAS = (SCHEMAS / "introspection-response.schema.json").is_file()
MUTATING_PREFIXES = ("create_", "update_", "delete_", "archive_")


def run(target: Any, **kw: Any) -> Report:
    kw.setdefault("schemas", SCHEMAS if HAVE_SCHEMAS else None)
    return anyio.run(lambda: run_conformance(target, **kw))


def by_id(report: Report) -> dict[str, Status]:
    return {r.id: r.status for r in report.results}


def not_passing(report: Report) -> dict[str, str]:
    return {r.id: f"{r.status.value}: {r.message}" for r in report.results if r.status in (Status.FAIL, Status.WARN)}


# ---- good servers ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def all_mode() -> Report:
    return run(tasks_cmd(), level=2, env={"MCP_AQL_ENDPOINT_MODE": "all"})


@pytest.fixture(scope="module")
def all_mode_fields() -> Report:
    return run(tasks_cmd(), level=2, env={"MCP_AQL_ENDPOINT_MODE": "all", "TASKS_HANDLER_FIELDS": "1"})


@pytest.mark.parametrize("mode", ["semantic", "single"])
def test_one_mode_meets_level1_not_level2(mode: str) -> None:
    report = run(tasks_cmd(), level=2, env={"MCP_AQL_ENDPOINT_MODE": mode})
    assert report.fatal is None
    assert report.modes == [mode]
    assert report.level1_met, not_passing(report)
    assert report.achieved_level == 1 and report.exit_code == 2  # no field selection on this server (L2-2)
    # one mode is served; the engine declares both in _protocol.supported_modes, and that is what L2-1 accepts
    l21 = next(x for x in report.results if x.id == "L2-1")
    assert l21.status is Status.PASS and "supported_modes" in l21.message and "not exercised" in l21.message
    assert by_id(report)["L2-2"] is Status.WARN
    assert by_id(report)["L2-3"] is Status.PASS  # batch works in every mode
    if mode == "single":
        assert by_id(report)["EP-1"] is Status.SKIP
    else:
        assert by_id(report)["EP-1"] is Status.PASS


@pytest.mark.parametrize(
    ("env", "tools", "modes"),
    [
        (
            {"MCP_AQL_ENDPOINT_MODE": "all", "MCPAQL_BARE_NAMES": "1", "MCP_AQL_TOOL_PREFIX": "github_"},
            ["github_mcp_aql_read", "github_mcp_aql"],
            ["semantic", "single"],
        ),
        (
            {
                "MCP_AQL_ENDPOINT_MODE": "all",
                "MCPAQL_TOOL_PATTERN": "{adapter}_{endpoint}",
                "MCPAQL_SINGLE_PATTERN": "{adapter}_all",
            },
            ["tasks_read", "tasks_all"],
            ["semantic", "single"],
        ),
        ({"MCP_AQL_ENDPOINT_MODE": "semantic", "MCPAQL_TOOL_PATTERN": "{adapter}_{endpoint}"}, ["tasks_read"], ["semantic"]),
        ({"MCP_AQL_ENDPOINT_MODE": "single", "MCPAQL_SINGLE_PATTERN": "{adapter}_all"}, ["tasks_all"], ["single"]),
    ],
)
def test_tool_discovery_with_prefixes_and_custom_names(env: dict[str, str], tools: list[str], modes: list[str]) -> None:
    r = run(tasks_cmd(), level=1, env=env)
    assert set(tools) <= set(r.tools)
    assert r.modes == modes
    assert r.met, not_passing(r)


def test_all_mode_level1_met_and_level2_matches_core_field_selection(all_mode: Report) -> None:
    r = all_mode
    assert r.modes == ["semantic", "single"]
    ids = by_id(r)
    failed = {k: v for k, v in not_passing(r).items() if v.startswith("FAIL")}
    assert not failed
    for cid in (
        "IF-1",
        "IF-2",
        "IF-3",
        "IF-4",
        "IF-5",
        "PH-1",
        "PH-2",
        "PH-3",
        "PH-5",
        "EQ-1",
        "EQ-2",
        "RT-1",
        "RT-2",
        "RT-3",
        "EP-1",
        "EP-3",
        "MCP-1",
        "MCP-3",
        "MCP-4",
        "MCP-5",
        "L2-1",
        "L2-3",
        "CD-1",
    ):
        assert ids[cid] is Status.PASS, (cid, not_passing(r).get(cid))
    core_fields = any(
        any(p.get("name") == "fields" for p in d.get("parameters", []))
        for d in r.evidence_bundle["introspection"]["operation_details"]
    )
    # Field selection comes from another part of the core; Level 2 follows whether it is there.
    assert (ids["L2-2"] is Status.PASS) == core_fields
    assert r.met == core_fields and r.exit_code == (0 if core_fields else 2)


def test_all_mode_with_field_selection_is_level2(all_mode_fields: Report, tmp_path: Any) -> None:
    r = all_mode_fields
    assert r.achieved_level == 2 and r.met and r.exit_code == 0, not_passing(r)
    assert r.claim() == f"MCP-AQL Level 2 Conformant (spec {r.spec_version})"
    path = write_evidence(r, tmp_path / "evidence.json")
    bundle = json.loads(path.read_text())
    assert bundle["endpoint_modes"] == ["crude", "single"]
    assert bundle["capabilities"] == {"field_selection": True, "batch_operations": True}
    if HAVE_SCHEMAS:  # graded the way the spec's fixture runner grades it
        g = grade_bundle(bundle, 2, SCHEMAS)
        assert g.exit_code == 0, g.failures()


def test_suite_cleans_up_and_never_touches_foreign_records(all_mode: Report) -> None:
    # Mutating calls aim only at records this run created, or at an id that cannot exist.
    created: set[str] = set()
    for ex in all_mode.exchanges:
        args = ex.arguments if isinstance(ex.arguments, dict) else {}
        op, params = str(args.get("operation")), args.get("params") or {}
        if op.startswith("create_") and ex.ok:
            created.add(ex.data["task_id"])
        if op.startswith(("update_", "delete_")) and isinstance(params, dict) and "task_id" in params:
            assert params["task_id"] in created or params["task_id"].startswith("mcpaql-conformance-missing"), args
        assert not (op.startswith("archive_") and ex.ok)
    deletes = [ex for ex in all_mode.exchanges if (ex.arguments or {}).get("operation") == "delete_task" and ex.ok]
    assert {ex.arguments["params"]["task_id"] for ex in deletes} == created


def test_read_only_makes_no_mutating_call_succeed() -> None:
    r = run(tasks_cmd(), level=1, read_only=True, env={"MCP_AQL_ENDPOINT_MODE": "all"})
    ids = by_id(r)
    assert ids["RT-1"] is Status.SKIP and ids["RT-2"] is Status.SKIP and ids["RT-3"] is Status.SKIP
    for ex in r.exchanges:
        op = str((ex.arguments or {}).get("operation") if isinstance(ex.arguments, dict) else "")
        if op.startswith(MUTATING_PREFIXES):
            assert not ex.ok, ex.to_dict()
            assert "params" not in ex.arguments or "mcpaql_conformance_probe" in ex.arguments["params"] or not ex.ok
    assert r.level1_met and r.exit_code == 0  # Level 1 requested and met even without round trips


def test_http_transport(http_tasks_server: str) -> None:
    r = run(http_tasks_server, level=2)
    assert r.fatal is None and r.target == http_tasks_server
    assert r.met and r.achieved_level == 2, not_passing(r)

    async def remaining() -> list[str]:
        from mcpaql.mcp.client import connect

        async with connect(http_tasks_server) as conn:
            tools = {t["name"] for t in await conn.list_tools_raw()}
            body, _, _ = await conn.call_tool(
                "tasks_mcpaql_read" if "tasks_mcpaql_read" in tools else "tasks_mcpaql",
                {"operation": "list_tasks", "params": {"limit": 100}},
            )
            return [t["task_id"] for t in body["data"]["items"]]

    assert anyio.run(remaining) == ["t1", "t2"]  # only the seeded tasks: the run cleaned up after itself


def test_level1_request_reports_only_level1_categories() -> None:
    r = run(tasks_cmd(), level=1, env={"MCP_AQL_ENDPOINT_MODE": "semantic"})
    assert r.met and r.exit_code == 0 and r.achieved_level == 1
    assert not any(res.category.level == 2 for res in r.results)


# ---- broken servers ---------------------------------------------------------------------------

DEFECTS = {
    "wrong-endpoint": ("EP-1", Status.FAIL),
    "unknown-ignored": ("PH-2", Status.FAIL),
    "traceback": ("EQ-2", Status.FAIL),
    "no-annotations": ("MCP-4", Status.FAIL),
    "no-introspect-ref": ("MCP-3", Status.FAIL),
    "jsonrpc-errors": ("MCP-5", Status.FAIL),
    "iserror-wrong": ("MCP-6", Status.FAIL),
    "extra-keys": ("IF-3", Status.FAIL),
    "long-name": ("MCP-1", Status.FAIL),
}


def test_control_copy_of_the_broken_server_passes() -> None:
    r = run(broken_cmd("none"), level=1)
    assert r.met, not_passing(r)


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_each_defect_is_caught(defect: str) -> None:
    r = run(broken_cmd(defect), level=1)
    cid, status = DEFECTS[defect]
    result = next(x for x in r.results if x.id == cid)
    assert result.status is status, (defect, result.message)
    assert result.evidence or cid in ("MCP-1", "MCP-3", "MCP-4")  # request + response shown for call-level defects
    assert not r.met and r.exit_code == 1
    text = render(r, "text")
    assert cid in text and "NOT MET" in text


def test_one_mode_without_a_declaration_is_not_level2() -> None:
    r = run(broken_cmd("no-mode-claim"), level=2)
    assert r.modes == ["semantic"] and r.level1_met
    assert by_id(r)["L2-1"] is Status.WARN and r.achieved_level == 1 and r.exit_code == 2


def test_defect_evidence_is_graded_as_failing_by_the_fixture_runner_model() -> None:
    if not HAVE_SCHEMAS:
        pytest.skip("spec schemas not available")
    r = run(broken_cmd("traceback"), level=1)
    g = grade_bundle(r.evidence_bundle, 1, SCHEMAS)
    assert g.exit_code == 1 and _result(g, "Error messages do not leak implementation internals") == "FAIL"
    r = run(broken_cmd("extra-keys"), level=1)
    g = grade_bundle(r.evidence_bundle, 1, SCHEMAS)
    assert g.exit_code == 1 and _result(g, "Operation detail payloads validate") == "FAIL"


def test_without_schemas_structural_models_still_catch_extra_keys() -> None:
    r = run(broken_cmd("extra-keys"), level=1, schemas=None, use_schemas=False)
    ids = by_id(r)
    assert ids["IF-0"] is Status.SKIP  # schema validation reported as skipped
    assert ids["IF-3"] is Status.FAIL
    assert "danger" in next(x.message for x in r.results if x.id == "IF-3")


def test_unreachable_server_is_fatal() -> None:
    r = run(["/nonexistent/mcp-server-binary"], level=1)
    assert r.fatal and r.exit_code == 3 and not r.met


def _result(g, test: str) -> str:
    """The runner's result for the test named ``test`` (mcpaql.conformance.grade)."""
    return next(t.result for c in g.categories for t in c.tests if t.name == test)
