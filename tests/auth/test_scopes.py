"""Scopes are a guarantee, tested adversarially like ``--read-only`` (tests/wrap): a caller sees
and calls only what its scopes grant — through every endpoint tool, the unified tool, every
spelling of an operation's name and batches — and the safety loop's human-facing operations
need ``mcpaql:admin``. Over real HTTP with the official client (semantic mode) and in process
for every endpoint mode (the narrowing is the engine's, whatever the transport)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from auth_app import make_app
from auth_support import Keys, Served

from mcpaql import Config
from mcpaql.auth.narrow import engine_for
from mcpaql.auth.scopes import Caller, categories_of
from mcpaql.mcp.client import connect
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

pytestmark = pytest.mark.anyio

WRITES = {
    "create_note": {"name": "pwned", "text": "x"},
    "update_note": {"name": "keep", "text": "LOST"},
    "delete_note": {"name": "keep"},
    "purge_notes": {},
}
REFUSED = {
    "NOT_FOUND_OPERATION",
    "PERMISSION_DENIED",
    "VALIDATION_ENDPOINT_MISMATCH",
    "VALIDATION_INVALID_TYPE",
    "BATCH_VALIDATION_ERROR",
}


def attacks(op: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    spellings = [op, op.upper(), op.title(), f"authdemo_{op}", op.replace("_", "-"), f" {op}", f"{op}\u200b"]
    out: list[dict[str, Any]] = [{"operation": s, "params": params} for s in spellings]
    out.append({"operations": [{"operation": op, "params": params}]})
    out.append({"operation": "batch", "operations": [{"operation": "whoami"}, {"operation": op, "params": params}] * 2})
    out.append({"operation": op, "params": {**params, "_confirmation": "x", "_meta": {"scope": "mcpaql:full"}}})
    return out


def assert_refused(body: dict[str, Any], where: Any) -> None:
    results = [item["result"] for item in body["results"]] if "results" in body else [body]
    refused = [r for r in results if r.get("success") is False]
    assert refused, (where, body)
    for r in results:
        if r.get("success") is False:
            assert r["error"]["code"] in REFUSED, (where, r)
        else:  # only the read operation inside a batch may succeed
            assert "identity" in json.dumps(r.get("data")), (where, r)


async def test_a_read_only_key_sees_and_calls_only_reads(keys: Keys, server: Served) -> None:
    full_tools = [f"authdemo_mcpaql_{e}" for e in ("create", "read", "update", "delete", "execute")]
    async with connect(server.url, headers={"Authorization": f"Bearer {keys.writer}"}) as writer:
        body, _e, _r = await writer.call_tool("authdemo_mcpaql_create", {"operation": "create_note", "params": {"name": "keep"}})
        assert body["success"], body
    async with connect(server.url, headers={"Authorization": f"Bearer {keys.reader}"}) as conn:
        assert [t["name"] for t in await conn.list_tools_raw()] == ["authdemo_mcpaql_read"]
        for tool in full_tools:  # hidden tools too: a client may call names it was never shown
            for op, params in WRITES.items():
                for attack in attacks(op, params):
                    body, _e, _r = await conn.call_tool(tool, attack)
                    assert isinstance(body, dict), (tool, attack, body)
                    assert_refused(body, (tool, attack))
        listing, _e, _r = await conn.call_tool(
            "authdemo_mcpaql_read", {"operation": "introspect", "params": {"query": "operations"}}
        )
        assert {o["name"] for o in listing["data"]["operations"]} == {"whoami", "list_notes", "introspect"}
        notes, _e, _r = await conn.call_tool("authdemo_mcpaql_read", {"operation": "list_notes"})
        assert "keep" in notes["data"] and "pwned" not in notes["data"], notes


def caller(*scopes: str) -> Caller:
    return Caller("tester", frozenset(scopes), "api_key")


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
async def test_every_mode_and_every_tool_refuses_what_scopes_do_not_grant(mode: str) -> None:
    engine = make_app().engine(Config(mode=mode))
    full_tools = [t.name for t in engine.tools]
    for scopes, allowed in [
        (("mcpaql:read",), {"whoami", "list_notes"}),
        (("mcpaql:read", "mcpaql:delete"), {"whoami", "list_notes", "delete_note"}),
        (("mcpaql:execute",), {"purge_notes"}),
        (("mcpaql:full",), {"whoami", "list_notes", *WRITES}),
    ]:
        narrowed = engine_for(engine, caller(*scopes))
        assert engine_for(engine, caller(*scopes)) is narrowed  # built once per grant
        visible = {o.name for o in narrowed.operations} - {"introspect"}
        assert visible == allowed, (mode, scopes)
        for t in narrowed.tools:
            assert t.family is None or any(o.family == t.family for o in narrowed.operations), (mode, scopes, t.name)
        ctx = Context(session=Session(identity="tester"))
        for tool in full_tools:
            for op, params in WRITES.items():
                if op in allowed:
                    continue
                for attack in attacks(op, params):
                    body = await narrowed.call_tool(tool, attack, ctx)
                    assert_refused(body, (mode, scopes, tool, attack))


def test_the_scope_table() -> None:
    assert categories_of({"mcpaql:read"}) == {"READ"}
    assert categories_of({"mcpaql:full"}) == {"CREATE", "READ", "UPDATE", "DELETE", "EXECUTE"}
    assert categories_of({"mcpaql:admin"}) == frozenset()
    assert categories_of({"read", "mcpaql:READ", "mcpaql:*", "openid"}) == frozenset()  # exact names only


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
async def test_a_task_handle_grants_nothing_the_callers_scopes_do_not(mode: str) -> None:
    """Issue 15 (Tasks × scopes): ``tasks/cancel`` runs ``cancel_execution`` through the caller's
    narrowed engine, so a read-only caller holding a task id still cannot cancel it, and the
    refusal is an error, not a silent ``{}``."""
    import anyio

    from mcpaql import Adapter, install_jobs
    from mcpaql.mcp.tasks import cancel_refused, tool_for

    app = Adapter("jobsdemo")
    release = anyio.Event()

    @app.execute(background=True)
    async def rebuild() -> bool:
        """A long job."""
        await release.wait()
        return True

    install_jobs(app)
    full = app.engine(Config(mode=mode))
    reader = engine_for(full, Caller("key:reader", frozenset({"mcpaql:read"}), "api_key"))
    session = Session(identity="key:reader")
    tool = tool_for(full, "rebuild")
    assert tool is not None
    started = await full.call_tool(tool, {"operation": "rebuild"}, Context(session=session))
    eid = started["data"]["execution_id"]
    read_tool = tool_for(reader, "get_execution_state")
    assert read_tool is not None  # a reader may still look at the task
    state = await reader.call_tool(
        read_tool, {"operation": "get_execution_state", "params": {"execution_id": eid}}, Context(session=session)
    )
    assert state["success"] is True
    cancel_tool = tool_for(reader, "cancel_execution")
    if cancel_tool is not None:  # single mode: the one tool exists, the operation is refused inside it
        refused = await reader.call_tool(
            cancel_tool, {"operation": "cancel_execution", "params": {"execution_id": eid}}, Context(session=session)
        )
        assert refused["success"] is False and refused["error"]["code"] in REFUSED
        assert cancel_refused(eid, refused) is not None
    after = await full.call_tool(
        read_tool if mode != "semantic" else tool_for(full, "get_execution_state") or "",
        {"operation": "get_execution_state", "params": {"execution_id": eid}},
        Context(session=session),
    )
    assert after["data"]["status"] in ("pending", "running")  # not cancelled
    release.set()


def test_cancelling_a_finished_task_is_not_an_error_but_a_refusal_is() -> None:
    from mcpaql.mcp.tasks import cancel_refused

    finished = {"success": False, "error": {"code": "VALIDATION_INVALID_VALUE", "details": {"constraint": "lifecycle"}}}
    assert cancel_refused("e1", finished) is None
    assert cancel_refused("e1", {"success": True, "data": {}}) is None
    denied = cancel_refused("e1", {"success": False, "error": {"code": "PERMISSION_DENIED", "details": {}}})
    assert denied is not None and "e1" in str(denied.error.data)
