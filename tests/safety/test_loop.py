"""The execution safety loop through a real Engine (REQ-LOOP-*, REQ-AUTO-*, REQ-OOB-*)."""

from __future__ import annotations

import json
import logging
import re

import pytest
from safety_support import build

from mcpaql import Adapter, Config
from mcpaql.safety import guard_engine
from mcpaql.store.base import NS_BLOCK

pytestmark = pytest.mark.anyio

AUTONOMY = {
    "max_autonomous_steps": 5,
    "deny": ["drop_*", "rm -rf*"],
    "requires_approval": ["delete_*"],
    "auto_approve": ["read_*"],
}


def loop_harness(store, mode="enforcing", **kw):
    return build(store, trust="validated", loop_mode=mode, autonomy=kw.pop("autonomy", AUTONOMY), **kw)


async def step(h, hint, agent="bot", session=None, **kw):
    r = await h.call("record_execution_step", session=session, element_name=agent, next_action_hint=hint, **kw)
    assert r["success"] is True, r
    return r["data"]


async def human_code(h, cid):
    """What the operator reads on the human channel (the approval page of this process)."""
    return h.code_of(cid)


def vid(directive, kind):
    return next(n["metadata"]["verificationId"] for n in directive["notifications"] if n["type"] == kind)


async def test_REQ_LOOP_005_006_021_dongle_surface_and_categories(sqlite_store, assert_valid_introspection) -> None:
    engine, _safety = guard_engine(store=sqlite_store, engine_config=Config.load(env={}))
    env = await engine.execute(
        {"operation": "introspect", "params": {"query": "operations"}}, engine.context(engine.new_session())
    )
    assert_valid_introspection(env)
    ops = {o["name"]: o for o in env["data"]["operations"]}
    assert set(ops) == {
        "introspect",
        "execute_agent",
        "record_execution_step",
        "complete_execution",
        "abort_execution",
        "confirm_operation",
        "verify_challenge",
    }
    assert ops["record_execution_step"]["semantic_category"] == "CREATE"
    assert ops["verify_challenge"]["semantic_category"] == "CREATE"
    for name in ("execute_agent", "complete_execution", "abort_execution", "confirm_operation"):
        assert ops[name]["semantic_category"] == "EXECUTE"
    caps = env["data"]["_protocol"]["capabilities"]
    assert caps["execution_safety_loop"] == "enforcing"  # REQ-LOOP-002..004
    assert caps["execution_safety_loop_config"]["max_autonomous_steps"] == 50  # REQ-AUTO-009
    detail = await engine.execute(
        {"operation": "introspect", "params": {"query": "operations", "name": "record_execution_step"}},
        engine.context(engine.new_session()),
    )
    assert_valid_introspection(detail)
    params = [p["name"] for p in detail["data"]["operation"]["parameters"]]
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", p) for p in params)  # Part F #14: snake_case
    assert {"element_name", "next_action_hint", "step_description", "outcome", "findings"} <= set(params)
    assert "max_autonomous_steps=50" in detail["data"]["operation"]["description"]  # REQ-AUTO-004 default documented
    code_param = next(
        p
        for p in (
            await engine.execute(
                {"operation": "introspect", "params": {"query": "operations", "name": "verify_challenge"}},
                engine.context(engine.new_session()),
            )
        )["data"]["operation"]["parameters"]
        if p["name"] == "code"
    )
    assert code_param.get("sensitive") is True


async def test_REQ_LOOP_013_REQ_AUTO_001_directive_contract(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    started = await h.call("execute_agent", element_name="bot", goal="tidy")
    assert started["data"]["status"] == "running" and started["data"]["execution_id"].startswith("exec_")
    d = await step(h, "read_file notes.txt")
    assert d["continue"] is True and isinstance(d["factors"], list) and d["factors"]
    assert d["stepsRemaining"] == 4 and d["nextStepRisk"] == "advisory"
    d = await step(h, "checking the weather", outcome="success", step_description="read notes", findings="nothing")
    assert d["continue"] is True and "stopped" not in d


async def test_REQ_LOOP_011_camel_case_spelling_is_accepted_but_snake_is_canonical(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    await h.call("execute_agent", element_name="bot")
    r = await h.raw({"operation": "record_execution_step", "params": {"element_name": "bot", "nextActionHint": "read_file a"}})
    assert r["success"] is True and r["data"]["continue"] is True
    bad = await h.call("record_execution_step", element_name="bot")
    assert bad["error"]["code"] == "VALIDATION_MISSING_PARAM"
    bad = await h.call("record_execution_step", element_name="bot", next_action_hint="x", outcome="great")
    assert bad["error"]["code"] == "VALIDATION_INVALID_VALUE"


async def test_REQ_LOOP_013_no_execution_still_returns_a_directive(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    d = await step(h, "read_file a", agent="ghost")
    assert d["continue"] is False and "execute_agent" in d["reason"]


async def test_REQ_AUTO_004_step_limit_pause_needs_human_then_resumes(sqlite_store) -> None:
    h = loop_harness(sqlite_store, autonomy={**AUTONOMY, "max_autonomous_steps": 2})
    await h.call("execute_agent", element_name="bot")
    assert (await step(h, "read_file a"))["continue"] is True
    assert (await step(h, "read_file b"))["continue"] is True
    d = await step(h, "read_file c")
    assert d["continue"] is False and d["reason"] == "Step limit exceeded"
    cid = vid(d, "autonomy_pause")
    again = await step(h, "read_file c")  # REQ-LOOP-016: no progress without a human
    assert again["continue"] is False and cid in again["reason"]
    ok = await h.call("confirm_operation", challenge_id=cid, code=await human_code(h, cid))
    assert ok["success"] is True and ok["data"]["resumed"] is True
    d = await step(h, "read_file c")
    assert d["continue"] is True and d["stepsRemaining"] == 1
    assert any(n["type"] == "status" for n in d["notifications"])  # pull-based status note (REQ-AUTO-014)


async def test_REQ_AUTO_005_failure_outcome_pauses(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    await h.call("execute_agent", element_name="bot")
    d = await step(h, "read_file a", outcome="failure")
    assert d["continue"] is False and vid(d, "autonomy_pause")


async def test_REQ_AUTO_006_requires_approval_and_REQ_AUTO_015_self_approval_refused(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    await h.call("execute_agent", element_name="bot")
    d = await step(h, "delete_user 42")
    assert d["continue"] is False and "stopped" not in d
    cid = vid(d, "autonomy_pause")
    code = await human_code(h, cid)
    selfie = await h.call("confirm_operation", challenge_id=cid, code=code, element_name="bot")
    assert selfie["error"]["code"] == "PERMISSION_DENIED" and selfie["error"]["details"]["reason"] == "self_approval"
    guess = await h.call("confirm_operation", challenge_id=cid, code="AAAA-BBBB")
    assert guess["error"]["details"]["reason"] == "verification_failed"
    # the wrong guess burned the challenge (one-time use): even the right code fails now
    burned = await h.call("confirm_operation", challenge_id=cid, code=code)
    assert burned["error"]["code"] == "PERMISSION_DENIED"
    still = await step(h, "delete_user 42")
    assert still["continue"] is False


async def test_REQ_OOB_002_009_011_deny_hard_blocks_agent_level(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    peer_session = h.as_("peer-identity")
    await h.call("execute_agent", element_name="bot")
    await h.call("execute_agent", element_name="peer", session=peer_session)
    d = await step(h, "calling drop_table users on staging")
    assert d["continue"] is False and d["stopped"] is True
    cid = vid(d, "danger_zone")
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", cid)  # UUID v4
    # broadcast to every executing agent (REQ-AUTO-013), the challenge id only to the blocked identity
    peer = await step(h, "read_file a", agent="peer", session=peer_session)
    zone = next(n for n in peer["notifications"] if n["type"] == "danger_zone")
    assert peer["continue"] is True and zone["metadata"]["agent"] == "bot" and "verificationId" not in zone["metadata"]
    # every later execution operation of the blocked agent is refused (REQ-OOB-009) ...
    again = await step(h, "read_file a")
    assert again["stopped"] is True and again["continue"] is False
    for op, params in (("complete_execution", {}), ("abort_execution", {}), ("execute_agent", {})):
        r = await h.call(op, element_name="bot", **params)
        assert r["error"]["code"] == "PERMISSION_DENIED" and r["error"]["details"]["reason"] == "agent_blocked"
    # ... including from a brand-new session (no bypass by new execution, REQ-OOB-011)
    other = h.engine.new_session()
    assert (await h.call("execute_agent", session=other, element_name="bot"))["error"]["code"] == "PERMISSION_DENIED"
    # verify_challenge with the human's code lifts it (REQ-OOB-006)
    ok = await h.call("verify_challenge", challenge_id=cid, code=await human_code(h, cid))
    assert ok["success"] is True and ok["data"]["unblocked"] is True
    assert (await step(h, "read_file a"))["continue"] is True
    peer = await step(h, "read_file b", agent="peer", session=peer_session)
    assert not any(n["type"] == "danger_zone" for n in peer.get("notifications", []))


async def test_REQ_OOB_002_012_verify_tier_pause_not_stop_and_expiry_reevaluates(sqlite_store) -> None:
    h = loop_harness(sqlite_store, challenge_ttl_seconds=1.0)
    await h.call("execute_agent", element_name="bot")
    d = await step(h, "git push --force to the shared branch")
    assert d["continue"] is False and "stopped" not in d and d["nextStepRisk"] == "verify"
    cid = vid(d, "autonomy_pause")
    pending = await step(h, "read_file a")
    assert pending["continue"] is False and cid in pending["reason"]  # REQ-OOB-012
    assert (await h.call("confirm_operation", challenge_id=cid, code="x"))["error"]["code"] == "VALIDATION_INVALID_VALUE"
    h.clock.advance(1.1)
    assert (await step(h, "read_file a"))["continue"] is True  # expired pause lifted, re-evaluated
    d2 = await step(h, "git push --force to the shared branch")
    assert vid(d2, "autonomy_pause") != cid  # a new challenge
    expired_cid = vid(d2, "autonomy_pause")
    h.clock.advance(1.1)
    r = await h.call("verify_challenge", challenge_id=expired_cid, code=await human_code(h, expired_cid))
    assert r["error"]["details"]["reason"] == "challenge_expired"  # REQ-OOB-008


async def test_REQ_OOB_012_verify_pause_does_not_survive_restart(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    await h.call("execute_agent", element_name="bot")
    d = await step(h, "git push --force to main")
    assert d["continue"] is False
    restarted = build(sqlite_store, trust="validated", loop_mode="enforcing", autonomy=AUTONOMY)
    assert (await step(restarted, "read_file a"))["continue"] is True


async def test_REQ_LOOP_017_monitoring_mode_never_blocks(sqlite_store) -> None:
    h = loop_harness(sqlite_store, mode="monitoring")
    await h.call("execute_agent", element_name="bot")
    for hint in ("drop_table users", "delete_user 1", "rm -rf /", "git push --force"):
        d = await step(h, hint)
        assert d["continue"] is True and d.get("stopped") is not True
        assert any("Monitoring mode" in f for f in d["factors"])
    assert await sqlite_store.scan(NS_BLOCK) == []
    caps = (await h.call("introspect", query="operations"))["data"]["_protocol"]["capabilities"]
    assert caps["execution_safety_loop"] == "monitoring"


@pytest.mark.parametrize("mode", ["logging", "disabled"])
async def test_REQ_LOOP_019_020_logging_and_disabled_modes(sqlite_store, mode) -> None:
    h = loop_harness(sqlite_store, mode=mode)
    d = await step(h, "drop_table users")
    assert d["continue"] is True and mode in d["factors"][0]
    events = [e["event"] for e in await sqlite_store.read_audit()]
    assert ("STEP_RECORDED" in events) is (mode == "logging")
    caps = (await h.call("introspect", query="operations"))["data"]["_protocol"]["capabilities"]
    assert caps["execution_safety_loop"] == mode


async def test_REQ_AUTO_017_gatekeeper_confirmation_inside_loop_is_permission_pending(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    await h.call("execute_agent", element_name="bot")
    r = await h.call("delete_task", task_id="1")
    assert r["error"]["code"] == "CONFIRMATION_REQUIRED"
    d = await step(h, "read_file a")
    assert d["continue"] is False
    pend = next(n for n in d["notifications"] if n["type"] == "permission_pending")
    assert pend["metadata"]["operation"] == "delete_task" and pend["metadata"]["level"] == "destructive"
    cid = pend["metadata"]["verificationId"]
    assert (await h.call("confirm_operation", challenge_id=cid, code="WRONG"))["success"] is False
    d = await step(h, "read_file a")
    assert d["continue"] is False  # failed attempts do not clear it (REQ-AUTO-011)
    fresh = next(n for n in d["notifications"] if n["type"] == "permission_pending")["metadata"]["verificationId"]
    assert fresh != cid  # the burned challenge was replaced
    ok = await h.call("confirm_operation", challenge_id=fresh, code=await human_code(h, fresh))
    assert ok["success"] is True
    d = await step(h, "read_file a")
    assert d["continue"] is True and not any(n["type"] == "permission_pending" for n in d.get("notifications", []))


async def test_REQ_EXEC_lifecycle_through_loop_ops(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    started = (await h.call("execute_agent", element_name="bot"))["data"]
    done = await h.call("complete_execution", element_name="bot", summary="ok")
    assert done["data"]["status"] == "completed" and done["data"]["finished_at"]
    again = await h.call("complete_execution", element_name="bot", execution_id=started["execution_id"])
    assert again["error"]["code"] == "VALIDATION_INVALID_VALUE"  # terminal state (REQ-EXEC-004)
    assert (await h.call("abort_execution", element_name="bot"))["error"]["code"] == "NOT_FOUND_RESOURCE"
    await h.call("execute_agent", element_name="bot")
    aborted = await h.call("abort_execution", element_name="bot", reason="user cancelled")
    assert aborted["data"]["status"] == "cancelled"
    await h.call("execute_agent", element_name="bot")
    await h.session.close()  # REQ-EXEC-013
    assert all(
        e["status"] == "cancelled"
        for e in await sqlite_store.scan("execution", {"element_name": "bot"})
        if e["status"] != "completed"
    )


async def test_REQ_OOB_013_code_never_reaches_agent_or_logs(sqlite_store, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    envelopes: list[dict] = []
    h = loop_harness(sqlite_store)

    async def call(op, **params):
        r = await h.call(op, **params)
        envelopes.append(r)
        return r

    await call("execute_agent", element_name="bot")
    await call("record_execution_step", element_name="bot", next_action_hint="drop_table users")
    await call("record_execution_step", element_name="bot", next_action_hint="read_file a")
    codes = [c["code"] for c in await h.safety.challenges.pending(with_codes=True)]
    cid = (await h.safety.challenges.pending())[0]["id"]
    await call("verify_challenge", challenge_id=cid, code="WRONG-CODE")
    await call("record_execution_step", element_name="bot", next_action_hint="read_file a")  # re-issues a challenge
    codes += [c["code"] for c in await h.safety.challenges.pending(with_codes=True)]
    cid = (await h.safety.challenges.pending())[0]["id"]
    await call("verify_challenge", challenge_id=cid, code=await human_code(h, cid))
    await call("execute_agent", element_name="bot2")
    await call("record_execution_step", element_name="bot2", next_action_hint="delete_user 1")
    await call("record_execution_step", element_name="bot2", next_action_hint="git push --force")
    codes += [c["code"] for c in await h.safety.challenges.pending(with_codes=True)]
    await call("introspect", query="operations")
    assert len(set(codes)) >= 3
    text = json.dumps(envelopes) + "\n".join(r.getMessage() for r in caplog.records)
    text += "\n".join(str(r.args) for r in caplog.records)
    text += json.dumps(await sqlite_store.read_audit())
    for code in codes:
        for form in (code, code.replace("-", ""), code.lower(), code.replace("-", "").lower()):
            assert form not in text
    assert any(r.name == "mcpaql.audit" for r in caplog.records)  # the logs were really captured


async def test_REQ_OOB_003_code_entropy_and_uniqueness(sqlite_store) -> None:
    from mcpaql.safety.verification import CODE_BYTES, new_code, normalize_code

    assert CODE_BYTES * 8 >= 128
    codes = {new_code() for _ in range(2000)}
    assert len(codes) == 2000
    assert all(len(normalize_code(c)) == 32 for c in codes)  # 160 bits of base32


async def test_second_adapter_in_same_store_is_isolated(sqlite_store) -> None:
    other = Adapter("other")

    @other.read
    def ping() -> str:
        return "pong"

    h = loop_harness(sqlite_store)
    assert (await h.call("get_task", task_id="1"))["success"] is True


async def test_REQ_LOOP_007_execute_agent_needs_explicit_human_approval_when_configured(sqlite_store) -> None:
    h = loop_harness(sqlite_store, approve_start=True)
    started = (await h.call("execute_agent", element_name="bot", goal="tidy"))["data"]
    assert started["status"] == "pending" and started["verificationId"]
    d = await step(h, "read_file a")
    assert d["continue"] is False and "approval" in d["reason"]
    selfie = await h.call("confirm_operation", challenge_id=started["verificationId"], code="x", element_name="bot")
    assert selfie["error"]["details"]["reason"] == "self_approval"
    ok = await h.call(
        "confirm_operation", challenge_id=started["verificationId"], code=await human_code(h, started["verificationId"])
    )
    assert ok["data"]["status"] == "running"
    assert (await step(h, "read_file a"))["continue"] is True


async def test_REQ_AUTO_001_010_directive_types_are_introspectable(sqlite_store, assert_valid_introspection) -> None:
    engine, _ = guard_engine(store=sqlite_store, engine_config=Config.load(env={}))
    ctx = engine.context(engine.new_session())
    listing = await engine.execute({"operation": "introspect", "params": {"query": "types"}}, ctx)
    assert_valid_introspection(listing)
    names = {t["name"] for t in listing["data"]["types"]}
    assert {"AutonomyDirective", "AgentNotification", "SafetyTier", "ExecutionState", "VerificationResult"} <= names
    d = await engine.execute(
        {"operation": "introspect", "params": {"query": "types", "name": "AutonomyDirective"}},
        engine.context(engine.new_session()),
    )
    assert_valid_introspection(d)


async def test_REQ_DANGER_017_gatekeeper_blocks_inside_a_loop_follow_the_danger_tiers(sqlite_store) -> None:
    h = build(sqlite_store, trust="certified", loop_mode="enforcing", autonomy=AUTONOMY)
    await h.call("execute_agent", element_name="bot")
    await h.call("execute_agent", element_name="peer", session=(peer_session := h.as_("peer-identity")))
    # destructive → permission_pending (confirm tier) is covered above; dangerous → verify tier
    assert (await h.call("bulk_delete_tasks", project="p"))["error"]["code"] == "CONFIRMATION_REQUIRED"
    d = await step(h, "read_file a")
    assert d["continue"] is False
    assert not any(n["type"] == "permission_pending" for n in d["notifications"])
    cid = vid(d, "autonomy_pause")
    pause = next(n for n in d["notifications"] if n["type"] == "autonomy_pause")["metadata"]
    assert pause["level"] == "verify" and "bulk_delete_tasks" in pause["operation"]
    peer = await step(h, "read_file a", agent="peer", session=peer_session)
    assert peer["continue"] is True and not peer.get("notifications")  # the pause is that agent's only
    ok = await h.call("verify_challenge", challenge_id=cid, code=await human_code(h, cid))
    assert ok["success"] is True and ok["data"]["resumed"] is True
    assert (await step(h, "read_file a"))["continue"] is True
    # forbidden → danger_zone: hard block, broadcast, persisted
    assert (await h.call("drop_project", project="p"))["error"]["code"] == "CONFIRMATION_REQUIRED"
    d = await step(h, "read_file a")
    assert d["continue"] is False and d["stopped"] is True
    zone = vid(d, "danger_zone")
    seen = await step(h, "read_file a", agent="peer", session=peer_session)
    assert any(n["type"] == "danger_zone" and n["metadata"]["agent"] == "bot" for n in seen["notifications"])
    fresh = build(sqlite_store, trust="certified", loop_mode="enforcing", autonomy=AUTONOMY)  # as after a restart
    r = await fresh.call("execute_agent", element_name="bot")
    assert r["error"]["code"] == "PERMISSION_DENIED" and r["error"]["details"]["reason"] == "agent_blocked"
    ok = await fresh.call("verify_challenge", challenge_id=zone, code=await human_code(h, zone))
    assert ok["data"]["unblocked"] is True


async def test_REQ_EXEC_011_transition_operations_name_the_states_they_lead_to(sqlite_store) -> None:
    h = loop_harness(sqlite_store)
    env = await h.call("introspect", query="operations")
    desc = {o["name"]: o["description"] for o in env["data"]["operations"]}
    expected = {
        "execute_agent": ("running", "pending"),
        "complete_execution": ("running → completed",),
        "abort_execution": ("→ cancelled",),
        "confirm_operation": ("pending → running",),
    }
    for op, words in expected.items():
        assert all(w in desc[op] for w in words), (op, desc[op])
