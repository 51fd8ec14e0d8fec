"""Issue 11, the audit's attacks kept as regression tests: the safety loop's identity comes from
the connection (``session.identity``, else the operator's agent id), never from a request
field; a block or pause stops that identity's operations in every endpoint mode and batch
item; renaming the element does not escape it; wrong codes only ever count against the
caller; confirmation tokens work once, for their caller, for their parameters."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from safety_support import build

from mcpaql import Config
from mcpaql.safety import SafetyConfig
from mcpaql.safety.identity import DEFAULT_AGENT_ID, agent_id
from mcpaql.store.base import NS_TOKEN

pytestmark = pytest.mark.anyio

AUTONOMY = {"deny": ["drop_*"], "requires_approval": ["delete_*"]}
TOOLS = {
    "semantic": {
        "create": "tasks_mcpaql_create",
        "read": "tasks_mcpaql_read",
        "delete": "tasks_mcpaql_delete",
        "execute": "tasks_mcpaql_execute",
    },
    "single": dict.fromkeys(("create", "read", "delete", "execute"), "tasks_mcpaql"),
    "all": dict.fromkeys(("create", "read", "delete", "execute"), "tasks_mcpaql"),
}


def loop(store, mode="semantic", **kw):
    return build(store, config=Config(mode=mode), trust="validated", loop_mode="enforcing", autonomy=AUTONOMY, **kw)


def reason(env):
    return (env.get("error") or {}).get("details", {}).get("reason")


def cid_of(directive, kind):
    return next(n["metadata"]["verificationId"] for n in directive["notifications"] if n["type"] == kind)


async def block(h, element="agentA", session=None):
    await h.call("execute_agent", session=session, element_name=element)
    d = (await h.call("record_execution_step", session=session, element_name=element, next_action_hint="drop_table users"))[
        "data"
    ]
    assert d["stopped"] is True
    return cid_of(d, "danger_zone")


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
async def test_a_blocked_identity_writes_nothing_in_any_mode_or_batch(sqlite_store, mode) -> None:
    h = loop(sqlite_store, mode)
    t = TOOLS[mode]
    early = await h.raw({"operation": "delete_task", "params": {"task_id": "t0"}}, tool=t["delete"])
    token = early["error"]["details"]["confirmation_token"]  # asked for before the block
    cid = await block(h)
    # the audit: the same session creates, confirms and deletes; a renamed element starts afresh
    for tool, req in (
        (t["create"], {"operation": "create_task", "params": {"title": "x"}}),
        (t["delete"], {"operation": "delete_task", "params": {"task_id": "t1"}}),
        (t["delete"], {"operation": "delete_task", "params": {"task_id": "t0", "_confirmation": token}}),
        (t["read"], {"operation": "get_task", "params": {"task_id": "t1"}}),
        (t["execute"], {"operation": "execute_agent", "params": {"element_name": "agentA-v2"}}),
        (t["execute"], {"operation": "abort_execution", "params": {"element_name": "agentA"}}),
    ):
        env = await h.raw(req, tool=tool)
        assert env["success"] is False and reason(env) == "agent_blocked", (req, env)
        assert "confirmation" not in env  # no token is even issued to a blocked identity
    batch = await h.raw(
        {
            "operations": [
                {"operation": "create_task", "params": {"title": "a"}},
                {"operation": "create_task", "params": {"title": "b"}},
            ]
        },
        tool=t["create"],
    )
    assert [reason(r["result"]) for r in batch["results"]] == ["agent_blocked", "agent_blocked"], batch
    other_connection = h.engine.new_session()  # a new connection is the same identity without auth
    assert reason(await h.call("create_task", session=other_connection, title="x")) == "agent_blocked"
    assert h.app.deleted == []
    # still open: discovery, the directive (with its challenge id) and the way out
    assert (await h.raw({"operation": "introspect", "params": {"query": "operations"}}, tool=t["read"]))["success"]
    d = (await h.call("record_execution_step", element_name="agentA-v2", next_action_hint="read_file a"))["data"]
    assert d["stopped"] is True and cid_of(d, "danger_zone") == cid
    # another identity is not affected
    assert (await h.call("create_task", session=h.as_("someone-else"), title="x"))["success"] is True
    ok = await h.call("verify_challenge", challenge_id=cid, code=h.code_of(cid))
    assert ok["data"]["unblocked"] is True
    assert (await h.raw({"operation": "create_task", "params": {"title": "x"}}, tool=t["create"]))["success"] is True
    done = await h.raw({"operation": "delete_task", "params": {"task_id": "t0", "_confirmation": token}}, tool=t["delete"])
    assert done["success"] is True and h.app.deleted == ["t0"]  # the early token was never consumed


async def test_a_paused_identity_reads_but_does_not_write_until_a_human_confirms(sqlite_store) -> None:
    h = loop(sqlite_store)
    await h.call("execute_agent", element_name="agentA")
    first = await h.call("delete_task", task_id="t1")  # gatekeeper inside a loop → permission_pending
    token = first["error"]["details"]["confirmation_token"]
    again = await h.call("delete_task", task_id="t1", _confirmation=token)
    assert reason(again) == "agent_paused" and h.app.deleted == []  # a token alone is not the human's approval
    assert reason(await h.call("create_task", title="x")) == "agent_paused"
    assert reason(await h.call("execute_agent", element_name="agentA-v2")) == "agent_paused"
    assert (await h.call("get_task", task_id="t1"))["success"] is True  # reads stay open while paused
    d = (await h.call("record_execution_step", element_name="agentA", next_action_hint="read_file a"))["data"]
    cid = cid_of(d, "permission_pending")
    ok = await h.call("confirm_operation", challenge_id=cid, code=h.code_of(cid))
    assert ok["success"] is True
    assert (await h.call("delete_task", task_id="t1", _confirmation=token))["success"] is True
    assert h.app.deleted == ["t1"]


async def test_element_name_cannot_select_the_identity(sqlite_store) -> None:
    """A paused agent naming another element gets the same (paused) state; naming the blocked
    agent from another identity neither sees its challenge id nor lifts its block."""
    h = loop(sqlite_store)
    victim = h.as_("agentC")
    cid = await block(h, "agentC", session=victim)
    intruder = h.as_("intruder")
    await h.call("execute_agent", session=intruder, element_name="agentC")  # its own execution, own identity
    d = (await h.call("record_execution_step", session=intruder, element_name="agentC", next_action_hint="read_file a"))["data"]
    assert d["continue"] is True and cid not in json.dumps(d)
    r = await h.call("verify_challenge", session=intruder, challenge_id=cid, code="AAAA-BBBB")
    assert r["error"]["details"]["reason"] == "verification_failed"
    assert reason(await h.call("create_task", session=victim, title="x")) == "agent_blocked"
    ok = await h.call("verify_challenge", session=victim, challenge_id=cid, code=h.code_of(cid))
    assert ok["data"]["unblocked"] is True  # the intruder's attempt did not burn the challenge


async def test_one_identity_cannot_burn_another_identitys_approval(any_store) -> None:
    """The audit: ten confirm_operation calls with random ids and element_name "agentC" made the
    human's right code for agentC fail with RATE_LIMIT_EXCEEDED for 60 s."""
    h = loop(any_store, max_failed_verifications=10)
    victim = h.as_("agentC")
    await h.call("execute_agent", session=victim, element_name="agentC")
    d = (await h.call("record_execution_step", session=victim, element_name="agentC", next_action_hint="delete_user 7"))["data"]
    cid = cid_of(d, "autonomy_pause")
    attacker = h.as_("agentX")
    codes = []
    for i in range(12):
        target = cid if i % 3 == 0 else str(uuid.uuid4())  # the real id too (as if it had leaked)
        r = await h.call("confirm_operation", session=attacker, challenge_id=target, code=f"GUESS-{i}", element_name="agentC")
        codes.append(r["error"]["code"])
    assert codes[:10] == ["PERMISSION_DENIED"] * 10 and codes[10:] == ["RATE_LIMIT_EXCEEDED"] * 2
    ok = await h.call("confirm_operation", session=victim, challenge_id=cid, code=h.code_of(cid))
    assert ok["success"] is True and ok["data"]["resumed"] is True


async def test_tokens_are_bound_to_identity_and_session(any_store) -> None:
    h = build(any_store, trust="validated")
    me = h.as_("me")
    token = (await h.call("delete_task", session=me, task_id="t1"))["error"]["details"]["confirmation_token"]
    for other in (h.as_("someone-else"), h.as_("me")):  # another identity; my identity on another connection
        r = await h.call("delete_task", session=other, task_id="t1", _confirmation=token)
        assert r["error"]["code"] == "TOKEN_INVALID" and token not in json.dumps(r)
    assert (await h.call("delete_task", session=me, task_id="t1", _confirmation=token))["success"] is True


async def test_per_request_sessions_redeem_through_the_identity(any_store) -> None:
    """Stateless HTTP and 2026-07-28 requests: each request is its own session, so the token is
    bound to the identity alone and survives the issuing request's session."""
    h = build(any_store, trust="validated")
    issuing = h.as_("me", per_request=True)
    token = (await h.call("delete_task", session=issuing, task_id="t1"))["error"]["details"]["confirmation_token"]
    await issuing.close()
    assert (await h.call("delete_task", session=h.as_("other", per_request=True), task_id="t1", _confirmation=token))["error"][
        "code"
    ] == "TOKEN_INVALID"
    ok = await h.call("delete_task", session=h.as_("me", per_request=True), task_id="t1", _confirmation=token)
    assert ok["success"] is True
    again = await h.call("delete_task", session=h.as_("me", per_request=True), task_id="t1", _confirmation=token)
    assert again["error"]["code"] == "TOKEN_ALREADY_USED"


async def test_persisted_tokens_stay_bound_to_the_identity(sqlite_store, caplog) -> None:
    caplog.set_level("DEBUG")
    h = build(sqlite_store, trust="validated", persist_tokens=True)
    first = h.as_("me")
    token = (await h.call("delete_task", session=first, task_id="t1"))["error"]["details"]["confirmation_token"]
    await first.close()  # persisted: survives the session
    assert (await h.call("delete_task", session=h.as_("thief"), task_id="t1", _confirmation=token))["error"][
        "code"
    ] == "TOKEN_INVALID"
    assert (await h.call("delete_task", session=h.as_("me"), task_id="t1", _confirmation=token))["success"] is True
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "TOKEN_ISSUED" in logged and token not in logged and token[-43:] not in logged


async def test_a_token_is_redeemed_once_across_processes(any_store) -> None:
    """Two Safety instances on one store stand for two server processes: concurrent retries with
    the same token, exactly one wins (compare-and-set in one store transaction)."""
    a = build(any_store, trust="validated", persist_tokens=True)
    b = build(any_store, trust="validated", persist_tokens=True)
    token = (await a.call("delete_task", task_id="t1"))["error"]["details"]["confirmation_token"]
    results = await asyncio.gather(
        *[(a if i % 2 else b).call("delete_task", task_id="t1", _confirmation=token) for i in range(8)]
    )
    assert sum(r["success"] for r in results) == 1
    assert {r["error"]["code"] for r in results if not r["success"]} == {"TOKEN_ALREADY_USED"}
    assert len(a.app.deleted) + len(b.app.deleted) == 1


async def test_tokens_are_parameter_bound_and_expire(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated", token_ttl_seconds=0.3, clock_skew_tolerance_seconds=0)
    token = (await h.call("delete_task", task_id="t1"))["error"]["details"]["confirmation_token"]
    assert (await h.call("delete_task", task_id="t2", _confirmation=token))["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    assert (await h.call("delete_task", task_id="t1", force=True, _confirmation=token))["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    h.clock.advance(0.4)
    assert (await h.call("delete_task", task_id="t1", _confirmation=token))["error"]["code"] == "TOKEN_EXPIRED"
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")  # right id, wrong secret
    assert (await h.call("delete_task", task_id="t1", _confirmation=forged))["error"]["code"] == "TOKEN_INVALID"
    assert [r["id"] for r in await sqlite_store.scan(NS_TOKEN)] == [token[:21]]


def test_agent_id_is_operator_configuration(monkeypatch) -> None:
    monkeypatch.delenv("MCPAQL_AGENT_ID", raising=False)
    assert agent_id(None) == DEFAULT_AGENT_ID
    monkeypatch.setenv("MCPAQL_AGENT_ID", "ci-bot")
    assert agent_id(None) == "ci-bot" and agent_id("desk@alice") == "desk@alice"
    for bad in ("", " x", "a b", "x" * 200, "é"):
        with pytest.raises(ValueError, match="agent_id"):
            SafetyConfig(agent_id=bad) if bad else agent_id("-")


async def test_the_operator_agent_id_names_the_identity(sqlite_store, monkeypatch) -> None:
    a = loop(sqlite_store, agent_id="desk-a")
    b = loop(sqlite_store, agent_id="desk-b")
    await block(a)
    assert reason(await a.call("create_task", title="x")) == "agent_blocked"
    assert (await b.call("create_task", title="x"))["success"] is True  # another endpoint, another identity
    assert [blk["agent"] for blk in await sqlite_store.scan("block")] == ["desk-a"]


async def test_cli_agent_id_is_checked_at_start() -> None:
    import sys

    import anyio

    proc = await anyio.run_process(
        [
            sys.executable,
            "-m",
            "mcpaql.cli",
            "wrap",
            "--trust",
            "validated",
            "--agent-id",
            "not an id",
            "--",
            sys.executable,
            "-c",
            "pass",
        ],
        check=False,
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "agent_id" in err and "Traceback" not in err


async def test_per_session_rate_limits_count_per_identity_for_per_request_sessions(sqlite_store) -> None:
    """A per-request session would start every count at zero; its calls count for the identity."""
    h = build(
        sqlite_store,
        trust="validated",
        rate_limits=[{"limit": 3, "window": "hour", "scope": "operation", "match": "get_task", "per_session": True}],
    )
    results = [await h.call("get_task", session=h.as_("me", per_request=True), task_id="1") for _ in range(5)]
    assert [r["success"] for r in results] == [True, True, True, False, False]
    assert (await h.call("get_task", session=h.as_("you", per_request=True), task_id="1"))["success"] is True
    assert (await h.call("get_task", session=h.as_("me"), task_id="1"))["success"] is True  # a connection's own count
