"""The gatekeeper guard and confirmation tokens through a real Engine
(REQ-GATE-*, REQ-TOKEN-*, REQ-DANGER-007..009, REQ-TRUST-008, REQ-SESS-002/003)."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from safety_support import build, make_adapter

from mcpaql import Config
from mcpaql.safety.confirmation import TOKEN_RE, token_id
from mcpaql.store.base import NS_TOKEN

pytestmark = pytest.mark.anyio


async def confirm_flow(h, op="delete_task", **params):
    first = await h.call(op, **params)
    assert first["error"]["code"] == "CONFIRMATION_REQUIRED", first
    return first, first["error"]["details"]["confirmation_token"]


async def test_REQ_TOKEN_007_confirmation_required_shape_part_f_7(sqlite_store, assert_valid_envelope) -> None:
    h = build(sqlite_store, trust="validated")
    env, token = await confirm_flow(h, task_id="t1")
    assert_valid_envelope(env)
    d = env["error"]["details"]
    assert d["operation"] == "delete_task" and d["danger_level"] == "destructive"
    assert d["reasons"] and d["confirmation_message"] and d["expires_at"].endswith("Z")
    assert env["confirmation"] == {
        "token": token,
        "expires_at": d["expires_at"],
        "message": d["confirmation_message"],
        "reasons": d["reasons"],
    }
    assert TOKEN_RE.match(token) and token.startswith("conf_") and 8 <= len(token) <= 80  # REQ-TOKEN-003
    assert len(token) - len("conf_") >= 32  # ≥128 bits of url-safe base64 (REQ-TOKEN-005)


async def test_REQ_TOKEN_002_016_single_use_replay_is_already_used(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")
    ok = await h.call("delete_task", task_id="t1", _confirmation=token)
    assert ok == {"success": True, "data": {"deleted": "t1"}}
    replay = await h.call("delete_task", task_id="t1", _confirmation=token)
    assert replay["error"]["code"] == "TOKEN_ALREADY_USED"
    assert h.app.deleted == ["t1"]


async def test_REQ_TOKEN_006_008_tampered_params_or_operation_is_scope_mismatch(sqlite_store) -> None:
    h = build(sqlite_store, trust="certified", policies=[{"operation": "create_task", "permission": "confirm"}])
    _, token = await confirm_flow(h, task_id="t1")
    tampered = await h.call("delete_task", task_id="t2", _confirmation=token)
    assert tampered["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    assert "t2" not in json.dumps(tampered) and "t1" not in json.dumps(tampered)  # REQ-TOKEN-018: no param values
    flag = await h.call("delete_task", task_id="t1", force=True, _confirmation=token)
    assert flag["error"]["code"] == "TOKEN_SCOPE_MISMATCH"  # scope modifiers are critical params
    other_op = await h.call("create_task", title="x", _confirmation=token)
    assert other_op["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    # a scope mismatch does not consume the token: the genuine retry still works
    assert (await h.call("delete_task", task_id="t1", _confirmation=token))["success"] is True


async def test_REQ_TOKEN_006_defaults_are_part_of_the_binding(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")  # force defaults to false
    assert (await h.call("delete_task", task_id="t1", force=False, _confirmation=token))["success"] is True


async def test_REQ_TOKEN_008_018_unknown_malformed_and_wrong_prefix_are_invalid(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated", quotas=[])
    for bad in (
        "conf_doesnotexist",
        "nonsense",
        "",
        42,
        None,
        {"t": 1},
        "conf_" + "a" * 65,
        "quota_continue_abc",
        "conf_bad token",
    ):
        r = await h.call("delete_task", task_id="t1", _confirmation=bad)
        if bad is None:
            assert r["error"]["code"] == "CONFIRMATION_REQUIRED"
        else:
            assert r["error"]["code"] == "TOKEN_INVALID", (bad, r)


async def test_REQ_TOKEN_001_009_expired_token(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated", token_ttl_seconds=0.2, clock_skew_tolerance_seconds=0)
    _, token = await confirm_flow(h, task_id="t1")
    h.clock.advance(0.3)
    r = await h.call("delete_task", task_id="t1", _confirmation=token)
    assert r["error"]["code"] == "TOKEN_EXPIRED"
    assert set(r["error"]["details"]) == {"token_id", "expired_at", "current_time"}
    assert r["error"]["details"]["token_id"] == token_id(token) and token not in json.dumps(r)


async def test_REQ_TOKEN_011_clock_skew_tolerance_is_added_to_expiry(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated", token_ttl_seconds=0.1, clock_skew_tolerance_seconds=5)
    _, token = await confirm_flow(h, task_id="t1")
    h.clock.advance(0.2)
    assert (await h.call("delete_task", task_id="t1", _confirmation=token))["success"] is True


@pytest.mark.parametrize(
    "bad",
    [
        {"clock_skew_tolerance_seconds": 301},
        {"clock_skew_tolerance_seconds": -1},
        {"token_ttl_seconds": 901},
        {"token_ttl_seconds": 0},
        {"forbidden_token_ttl_seconds": 301},
        {"quota_token_ttl_seconds": 601},
    ],
)
async def test_REQ_TOKEN_009_011_ttl_and_skew_bounds_are_validated(sqlite_store, bad) -> None:
    with pytest.raises(ValueError):
        build(sqlite_store, trust="validated", **bad)


async def test_REQ_TOKEN_022_other_session_token_is_invalid_and_close_revokes(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")
    other = h.engine.new_session()
    r = await h.call("delete_task", session=other, task_id="t1", _confirmation=token)
    assert r["error"]["code"] == "TOKEN_INVALID"
    await h.session.close()  # REQ-SESS-003: session end invalidates session-scoped tokens
    assert await sqlite_store.get(NS_TOKEN, token) is None
    fresh = h.engine.new_session()
    r = await h.call("delete_task", session=fresh, task_id="t1", _confirmation=token)
    assert r["error"]["code"] == "TOKEN_INVALID"


async def test_REQ_TOKEN_022_persisted_tokens_survive_session_end_when_configured(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated", persist_tokens=True)
    _, token = await confirm_flow(h, task_id="t1")
    await h.session.close()
    fresh = h.engine.new_session()
    assert (await h.call("delete_task", session=fresh, task_id="t1", _confirmation=token))["success"] is True


async def test_REQ_TOKEN_016_concurrent_redemption_has_one_winner(any_store) -> None:
    h = build(any_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")
    results = await asyncio.gather(*(h.call("delete_task", task_id="t1", _confirmation=token) for _ in range(10)))
    assert sum(1 for r in results if r["success"]) == 1
    assert {r["error"]["code"] for r in results if not r["success"]} == {"TOKEN_ALREADY_USED"}


async def test_REQ_TRUST_008_untested_allows_only_introspection(sqlite_store) -> None:
    h = build(sqlite_store)  # no trust block → untested (REQ-TRUST-009)
    r = await h.call("get_task", task_id="1")
    assert r["error"]["code"] == "PERMISSION_TRUST_LEVEL_INSUFFICIENT"
    assert r["error"]["details"] == {
        "operation": "get_task",
        "required_trust": "generated",
        "actual_trust": "untested",
        "danger_level": 0,
    }
    assert (await h.call("introspect", query="operations"))["success"] is True


async def test_REQ_DANGER_009_matrix_denial_details(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    r = await h.call("bulk_delete_tasks", project="p")
    assert r["error"]["code"] == "PERMISSION_DANGER_LEVEL_DENIED"
    d = r["error"]["details"]
    assert d["danger_level"] == "dangerous" and d["adapter_trust"] == "validated"
    assert d["minimum_trust_required"] == "community_reviewed" and d["reasons"]
    r = await h.call("create_task", title="x")
    assert r["success"] is True
    h2 = build(sqlite_store, trust="generated")
    assert (await h2.call("create_task", title="x"))["error"]["code"] == "PERMISSION_DANGER_LEVEL_DENIED"


async def test_REQ_DANGER_007_destructive_needs_confirmation_even_when_matrix_allows(sqlite_store) -> None:
    h = build(sqlite_store, trust="certified")
    assert (await h.call("delete_task", task_id="1"))["error"]["code"] == "CONFIRMATION_REQUIRED"
    assert (await h.call("drop_project", project="p"))["error"]["code"] == "CONFIRMATION_REQUIRED"
    assert (await h.call("force_sync"))["success"] is True  # declared safe wins over force_*
    relaxed = build(sqlite_store, trust="certified", confirm_destructive=False)
    assert (await relaxed.call("delete_task", task_id="1"))["success"] is True


async def test_REQ_TOKEN_009_forbidden_tokens_get_the_short_ttl(sqlite_store) -> None:
    h = build(sqlite_store, trust="certified")
    _r, token = await confirm_flow(h, "drop_project", project="p")
    rec = await sqlite_store.get(NS_TOKEN, token_id(token))
    import time

    assert rec["expires_at"] - time.time() <= 121


async def test_REQ_GATE_005_policy_globs_most_restrictive_wins(sqlite_store) -> None:
    h = build(
        sqlite_store,
        trust="certified",
        confirm_destructive=False,
        policies=[
            {"operation": "*_task", "permission": "allow"},
            {"operation": "create_*", "permission": "confirm"},
            {"operation": "update_task", "permission": "deny"},
            {"adapter": "other", "operation": "*", "permission": "deny"},
            {"adapter": "tas*", "operation": "get_task", "permission": "allow"},
        ],
    )
    assert (await h.call("get_task", task_id="1"))["success"] is True
    assert (await h.call("create_task", title="x"))["error"]["code"] == "CONFIRMATION_REQUIRED"
    r = await h.call("update_task", task_id="1", title="y")
    assert r["error"]["code"] == "PERMISSION_DENIED" and r["error"]["details"]["policy"] == "*/update_task"
    assert (await h.call("delete_task", task_id="1"))["success"] is True


async def test_REQ_GATE_005_bad_policy_permission_rejected(sqlite_store) -> None:
    with pytest.raises(ValueError, match="allow, confirm or deny"):
        build(sqlite_store, trust="certified", policies=[{"operation": "*", "permission": "maybe"}])


async def test_REQ_GATE_002_enforced_in_single_mode_and_batches(sqlite_store, assert_valid_envelope) -> None:
    h = build(sqlite_store, trust="validated", config=Config.load(env={}, mode="single"))
    tool = h.engine.single_tool
    r = await h.raw({"operation": "delete_task", "params": {"task_id": "1"}}, tool=tool)
    assert r["error"]["code"] == "CONFIRMATION_REQUIRED"
    batch = await h.raw(
        {
            "operations": [
                {"operation": "get_task", "params": {"task_id": "1"}},
                {"operation": "delete_task", "params": {"task_id": "2"}},
                {"operation": "get_task", "params": {"task_id": "3"}},
            ]
        },
        tool=tool,
    )
    assert_valid_envelope(batch)
    # batch-operation.schema.json's halted shape (docs/conformance.md decision B1)
    assert batch["summary"] == {"total": 3, "succeeded": 1, "failed": 0, "halted": 1, "pending": 1}
    assert [r["index"] for r in batch["results"]] == [0]
    assert batch["halted_at"]["index"] == 1 and batch["halted_at"]["operation"] == "delete_task"
    halted = batch["halted_at"]["result"]
    assert halted["error"]["code"] == "CONFIRMATION_REQUIRED" and "confirmation" not in halted
    assert batch["pending_operations"] == [{"index": 2, "operation": "get_task", "params": {"task_id": "3"}}]
    token = halted["error"]["details"]["confirmation_token"]
    assert token.startswith("conf_")
    again = await h.raw(
        {"operations": [{"operation": "delete_task", "params": {"task_id": "2", "_confirmation": token}}]}, tool=tool
    )
    assert again["summary"]["succeeded"] == 1 and h.app.deleted == ["2"]
    denied = await h.raw({"operations": [{"operation": "bulk_delete_tasks", "params": {"project": "p"}}]}, tool=tool)
    assert denied["results"][0]["result"]["error"]["code"] == "PERMISSION_DANGER_LEVEL_DENIED"


async def test_REQ_GATE_002_semantic_mode_read_tool_cannot_smuggle_delete(sqlite_store) -> None:
    h = build(sqlite_store, trust="certified", confirm_destructive=False)
    read_tool = h.engine.tool_for_family["read"]
    r = await h.raw({"operations": [{"operation": "delete_task", "params": {"task_id": "1"}}]}, tool=read_tool)
    assert r["results"][0]["result"]["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    assert h.app.deleted == []


async def test_REQ_TOKEN_019_REQ_GATE_007_REQ_DANGER_008_audit_trail(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")
    await h.call("delete_task", task_id="t1", _confirmation=token)
    await h.call("delete_task", task_id="t1", _confirmation=token)
    await h.call("bulk_delete_tasks", project="p")
    events = [e["event"] for e in await sqlite_store.read_audit()]
    for ev in (
        "TOKEN_ISSUED",
        "CONFIRMATION_REQUIRED",
        "TOKEN_VALIDATED",
        "CONFIRMATION_GRANTED",
        "DANGEROUS_OPERATION",
        "TOKEN_REJECTED",
        "OPERATION_DENIED",
    ):
        assert ev in events, ev
    entries = await sqlite_store.read_audit()
    confirmed = [e for e in entries if e["event"] == "DANGEROUS_OPERATION" and e["outcome"] == "confirmed"]
    assert confirmed and confirmed[0]["danger_level"] == 2 and confirmed[0]["adapter_trust"] == "validated"
    assert confirmed[0]["parameters"] == {"task_id": "t1", "force": False}
    rejected = next(e for e in entries if e["event"] == "TOKEN_REJECTED")
    assert rejected["failure_reason"] == "already_used" and rejected["adapter_name"] == "tasks"


async def test_capabilities_advertised(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    caps = (await h.call("introspect", query="operations"))["data"]["_protocol"]["capabilities"]
    assert caps["confirmation"] is True and caps["dangerous_operations"] is True
    assert "execution_safety_loop" not in caps  # loop not installed → field omitted (REQ-LOOP-003)


async def test_a_built_engine_is_immutable_safety_builds_a_new_one(sqlite_store) -> None:
    """Issue 12 §1: install_safety no longer patches a built Engine; ``engine.extend`` builds a
    new engine with the guard, and the original stays as it was."""
    from mcpaql.safety import Safety, SafetyConfig, install_safety

    app = make_adapter()
    engine = app.engine(Config.load(env={}))
    with pytest.raises(ValueError, match="immutable"):
        install_safety(engine, SafetyConfig(trust="validated"), store=sqlite_store)
    with pytest.raises(AttributeError):
        engine.guards.append(None)  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        engine.capabilities["confirmation"] = True  # type: ignore[index]
    safety = Safety(SafetyConfig(trust="validated"), "tasks", sqlite_store)
    guarded = engine.extend(dataclasses.replace(safety.extension(), rewrite=None))
    r = await guarded.execute({"operation": "delete_task", "params": {"task_id": "1"}}, guarded.context(guarded.new_session()))
    assert r["error"]["code"] == "CONFIRMATION_REQUIRED"
    r = await engine.execute({"operation": "introspect", "params": {"query": "operations"}}, engine.context(engine.new_session()))
    assert r["data"]["_protocol"]["capabilities"]["confirmation"] is False  # the original is untouched
    loop = Safety(SafetyConfig(trust="validated", loop_mode="enforcing"), "tasks", sqlite_store)
    with pytest.raises(ValueError, match="frozen"):
        engine.extend(loop.extension())


async def test_REQ_TOKEN_020_failed_validations_are_rate_limited(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    h.safety.tokens.max_failures = 5
    codes = [(await h.call("delete_task", task_id="1", _confirmation=f"conf_guess{i}"))["error"]["code"] for i in range(7)]
    assert codes == ["TOKEN_INVALID"] * 5 + ["RATE_LIMIT_EXCEEDED"] * 2
    other = h.as_("someone-else")  # per calling identity: nobody can lock another caller out
    r = await h.call("delete_task", session=other, task_id="1", _confirmation="conf_guess")
    assert r["error"]["code"] == "TOKEN_INVALID"


async def test_REQ_TOKEN_015_expired_records_are_purged(sqlite_store) -> None:
    import time

    h = build(sqlite_store, trust="validated")
    await sqlite_store.put(NS_TOKEN, "conf_old", {"id": "conf_old"}, purge_at=time.time() - 1)
    h.safety.gatekeeper._next_purge = 0
    await h.call("get_task", task_id="1")
    import sqlite3

    rows = sqlite3.connect(sqlite_store.path).execute("SELECT count(*) FROM records WHERE key='conf_old'").fetchone()
    assert rows == (0,)


async def test_REQ_DANGER_010_danger_in_introspection_stays_schema_valid(sqlite_store, assert_valid_introspection) -> None:
    h = build(sqlite_store, trust="validated")
    detail = await h.call("introspect", query="operations", name="delete_task")
    assert_valid_introspection(detail)
    desc = detail["data"]["operation"]["description"]
    assert desc.endswith("Danger level: destructive; requires confirmation (resend with params._confirmation).")
    listing = await h.call("introspect", query="operations")
    assert_valid_introspection(listing)
    by_name = {o["name"]: o["description"] for o in listing["data"]["operations"]}
    assert "Danger level: safe; allowed." in by_name["get_task"]
    assert "Danger level: dangerous; denied" in by_name["bulk_delete_tasks"]
    assert "Danger level: safe; allowed." in by_name["force_sync"]


async def test_REQ_TOKEN_004_server_side_record_fields(sqlite_store) -> None:
    from mcpaql.safety.confirmation import params_hash

    h = build(sqlite_store, trust="validated")
    _, token = await confirm_flow(h, task_id="t1")
    rec = await sqlite_store.get(NS_TOKEN, token_id(token))
    assert {
        "id",
        "type",
        "operation",
        "params_hash",
        "adapter_name",
        "issued_at",
        "expires_at",
        "consumed",
        "context",
        "identity",
        "session_id",
        "secret",
    } <= set(rec)
    assert token not in json.dumps(rec) and token.removeprefix(rec["id"]) not in json.dumps(rec)  # a salted hash only
    assert rec["id"] == token_id(token) and rec["type"] == "confirmation" and rec["operation"] == "delete_task"
    assert rec["adapter_name"] == "tasks" and rec["consumed"] is False and rec["issued_at"].endswith("Z")
    assert rec["params_hash"] == params_hash("delete_task", {"task_id": "t1", "force": False})  # defaults bound too
    assert rec["context"]["danger_level"] == "destructive" and rec["context"]["reasons"]
    assert "t1" not in json.dumps(rec)  # parameters are hashed, never stored
    await h.call("delete_task", task_id="t1", _confirmation=token)
    used = await sqlite_store.get(NS_TOKEN, token_id(token))
    assert used["consumed"] is True and used["consumed_at"].endswith("Z")
