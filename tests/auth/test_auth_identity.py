"""The authenticated subject is the caller's identity everywhere it matters (issue 15): rate
limits and quotas count per identity (not per session, not per process), confirmation tokens
are bound to the identity as well as the session, and the safety loop's human-facing
operations need ``mcpaql:admin``. Over real HTTP where a transport is involved."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from auth_app import make_app
from auth_support import APP, Keys, Served

from mcpaql import Config
from mcpaql.auth.narrow import engine_for
from mcpaql.auth.scopes import Caller
from mcpaql.mcp.client import connect
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session
from mcpaql.safety import SafetyConfig
from mcpaql.safety.install import install_safety
from mcpaql.store.base import open_store

pytestmark = pytest.mark.anyio
READ = "authdemo_mcpaql_read"
DELETE = "authdemo_mcpaql_delete"


@pytest.fixture(scope="module")
def guarded(keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """API keys, ``--trust validated`` (deletes need confirmation) and a per-identity limit."""
    tmp = tmp_path_factory.mktemp("guarded")
    policy = tmp / "policy.json"
    rule = {"limit": 3, "window": "minute", "scope": "operation", "match": "whoami", "per_identity": True}
    policy.write_text(json.dumps({"rate_limits": [rule], "store": f"sqlite:///{tmp / 'safety.db'}"}))
    argv = ["serve", APP, "--api-keys-file", str(keys.file), "--trust", "validated", "--safety", str(policy)]
    srv = Served(argv, tmp, env={"MCPAQL_HOME": str(tmp)})
    yield srv
    srv.stop()


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def call(conn: Any, tool: str, request: dict[str, Any]) -> dict[str, Any]:
    body, _e, _r = await conn.call_tool(tool, request)
    assert isinstance(body, dict), body
    return body


async def test_rate_limits_count_per_identity_not_per_session(keys: Keys, guarded: Served) -> None:
    async with connect(guarded.url, headers=auth(keys.reader)) as conn:
        for _ in range(3):
            assert (await call(conn, READ, {"operation": "whoami"}))["success"]
        over = await call(conn, READ, {"operation": "whoami"})
        assert over["error"]["code"] == "RATE_LIMIT_EXCEEDED" and over["error"]["details"]["retry_after_seconds"] >= 0
    async with connect(guarded.url, headers=auth(keys.reader)) as again:  # a new session does not reset it
        assert (await call(again, READ, {"operation": "whoami"}))["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    async with connect(guarded.url, headers=auth(keys.writer)) as other:  # another identity has its own budget
        me = await call(other, READ, {"operation": "whoami"})
        assert me["success"] and me["data"]["identity"] == "key:writer"


async def test_a_confirmation_token_is_bound_to_its_identity(keys: Keys, guarded: Served) -> None:
    request = {"operation": "delete_note", "params": {"name": "n"}}
    async with connect(guarded.url, headers=auth(keys.writer)) as a:
        first = await call(a, DELETE, request)
        assert first["error"]["code"] == "CONFIRMATION_REQUIRED", first
        token = first["error"]["details"]["confirmation_token"]
        async with connect(guarded.url, headers=auth(keys.admin)) as b:
            stolen = await call(b, DELETE, {**request, "params": {**request["params"], "_confirmation": token}})
            assert stolen["error"]["code"] == "TOKEN_INVALID", stolen
            assert token not in json.dumps(stolen)
        mine = await call(a, DELETE, {**request, "params": {**request["params"], "_confirmation": token}})
        assert mine["success"], mine


def caller(identity: str, *scopes: str) -> Caller:
    return Caller(identity, frozenset(scopes), "jwt")


async def test_same_session_id_other_identity_cannot_redeem(tmp_path: Path) -> None:
    """Even on one session object (one session id) a token issued to A is refused for B."""
    app = make_app()
    install_safety(app, SafetyConfig(trust="validated"), store=open_store(f"sqlite:///{tmp_path / 's.db'}"))
    engine = engine_for(app.engine(Config()), caller("alice", "mcpaql:full"))
    session = Session(identity="alice")
    request = {"operation": "delete_note", "params": {"name": "n"}}
    first = await engine.call_tool(DELETE, request, Context(session=session))
    token = first["error"]["details"]["confirmation_token"]
    session.identity = "bob"
    stolen = await engine.call_tool(
        DELETE, {**request, "params": {"name": "n", "_confirmation": token}}, Context(session=session)
    )
    assert stolen["error"]["code"] == "TOKEN_INVALID", stolen
    session.identity = "alice"
    ok = await engine.call_tool(DELETE, {**request, "params": {"name": "n", "_confirmation": token}}, Context(session=session))
    assert ok["success"], ok


async def test_human_facing_operations_need_the_admin_scope(tmp_path: Path) -> None:
    app = make_app()
    install_safety(
        app, SafetyConfig(trust="validated", loop_mode="enforcing"), store=open_store(f"sqlite:///{tmp_path / 's.db'}")
    )
    engine = app.engine(Config())
    ctx = Context(session=Session(identity="agent-1"))
    for op, tool in (("confirm_operation", "authdemo_mcpaql_execute"), ("verify_challenge", "authdemo_mcpaql_create")):
        request = {"operation": op, "params": {"challenge_id": "ch_x", "code": "123456"}}
        agent = await engine_for(engine, caller("agent-1", "mcpaql:full")).call_tool(tool, request, ctx)
        assert agent["error"]["code"] == "PERMISSION_DENIED", agent
        assert agent["error"]["details"] == {"reason": "insufficient_scope", "operation": op, "required_scope": "mcpaql:admin"}
        human = await engine_for(engine, caller("operator", "mcpaql:full", "mcpaql:admin")).call_tool(tool, request, ctx)
        assert human["error"]["code"] != "PERMISSION_DENIED" or human["error"]["details"].get("reason") != "insufficient_scope"


async def test_the_audit_log_and_the_safety_loop_use_the_authenticated_identity(tmp_path: Path) -> None:
    """The loop's agent id is the caller's identity: ``element_name`` (chosen by the agent) does
    not change it; audit entries name the identity that acted."""
    app = make_app()
    store = open_store(f"sqlite:///{tmp_path / 's.db'}")
    install_safety(app, SafetyConfig(trust="validated", loop_mode="enforcing"), store=store)
    engine = engine_for(app.engine(Config()), caller("alice", "mcpaql:full"))
    ctx = Context(session=Session(identity="alice"))
    started = await engine.call_tool(
        "authdemo_mcpaql_execute", {"operation": "execute_agent", "params": {"element_name": "bob"}}, ctx
    )
    assert started["success"], started
    executions = await store.scan("execution", {})
    assert [e["identity"] for e in executions] == ["alice"]
    await engine.call_tool(DELETE, {"operation": "delete_note", "params": {"name": "n"}}, ctx)
    entries = [e for e in await store.read_audit() if e["event"] == "CONFIRMATION_REQUIRED"]
    assert entries and all(e["identity"] == "alice" for e in entries), entries


async def test_quotas_count_per_identity(tmp_path: Path) -> None:
    app = make_app()
    quota = {"metric": "requests_per_minute", "warn": 1, "pause": 2, "hard_stop": 3, "per_identity": True}
    install_safety(app, SafetyConfig(trust="validated", quotas=[quota]), store=open_store(f"sqlite:///{tmp_path / 's.db'}"))
    engine = engine_for(app.engine(Config()), caller("x", "mcpaql:read"))
    whoami = {"operation": "whoami"}
    alice = [await engine.call_tool(READ, whoami, Context(session=Session(identity="alice"))) for _ in range(3)]
    assert alice[0]["success"] and alice[2]["error"]["code"] == "RATE_LIMIT_QUOTA_PAUSE", alice
    bob = await engine.call_tool(READ, whoami, Context(session=Session(identity="bob")))
    assert bob["success"] and not bob.get("warnings"), bob  # bob's count starts at his own zero
    status = await engine.call_tool(
        READ, {"operation": "introspect", "params": {"query": "quota_status"}}, Context(session=Session(identity="bob"))
    )
    assert status["data"]["quotas"][0]["current"] == 2, status  # bob's own two calls (introspect counts too)
