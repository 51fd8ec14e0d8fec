"""Token scope across adapters (REQ-TOKEN-008), the token audit trail (REQ-TOKEN-019) and the shape
of every AgentNotification the loop emits (REQ-AUTO-010)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import pytest
from safety_support import build, make_adapter

from mcpaql.safety.confirmation import token_id

pytestmark = pytest.mark.anyio

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


async def test_REQ_TOKEN_008_token_of_another_adapter_is_scope_mismatch(sqlite_store) -> None:
    # persisted tokens are not session-bound, so only the adapter binding can refuse this one
    tasks = build(sqlite_store, trust="validated", persist_tokens=True)
    other = build(sqlite_store, app=make_adapter("other"), trust="validated", persist_tokens=True)
    first = await tasks.call("delete_task", task_id="t1")
    token = first["error"]["details"]["confirmation_token"]
    r = await other.call("delete_task", task_id="t1", _confirmation=token)
    assert r["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    assert other.app.deleted == []
    assert (await tasks.call("delete_task", task_id="t1", _confirmation=token))["success"] is True


async def test_REQ_TOKEN_019_every_token_event_is_logged_with_its_fields(sqlite_store) -> None:
    h = build(sqlite_store, trust="validated")
    first = await h.call("delete_task", task_id="t1")
    used = first["error"]["details"]["confirmation_token"]
    assert (await h.call("delete_task", task_id="t1", _confirmation=used))["success"] is True
    await h.call("delete_task", task_id="t1", _confirmation=used)  # replay → rejected
    pending = (await h.call("delete_task", task_id="t2"))["error"]["details"]["confirmation_token"]
    await h.session.close()  # revokes the session's outstanding token
    entries = [e for e in await sqlite_store.read_audit() if e["event"].startswith("TOKEN_")]
    assert {e["event"] for e in entries} == {"TOKEN_ISSUED", "TOKEN_VALIDATED", "TOKEN_REJECTED", "TOKEN_REVOKED"}
    for e in entries:
        assert ISO_Z.match(e["timestamp"]), e
        assert e["token_id"].startswith("conf_") and e["operation"] == "delete_task", e
        assert e["adapter_name"] == "tasks" and e["outcome"], e
    rejected = next(e for e in entries if e["event"] == "TOKEN_REJECTED")
    assert rejected["failure_reason"] == "already_used"
    assert token_id(pending) in {e["token_id"] for e in entries if e["event"] == "TOKEN_REVOKED"}
    assert not any(used in str(e) or pending in str(e) for e in entries)  # only the public id is logged


NOTIFICATION_TYPES = {"permission_pending", "autonomy_pause", "danger_zone", "status", "error"}


def check_notification(n: dict[str, Any]) -> None:
    assert set(n) <= {"type", "message", "metadata", "timestamp"}, n
    assert n["type"] in NOTIFICATION_TYPES, n
    assert isinstance(n["message"], str) and n["message"], n
    assert ISO_Z.match(n["timestamp"]), n
    datetime.fromisoformat(n["timestamp"].replace("Z", "+00:00"))
    meta = n.get("metadata", {})
    assert isinstance(meta, dict)
    # the spec's keys are strings; danger_zone notes also name the blocked agent (extra key `agent`)
    assert set(meta) <= {"operation", "reason", "level", "verificationId", "agent"}, n
    assert all(isinstance(v, str) for v in meta.values()), n


async def test_REQ_AUTO_010_every_notification_has_the_agent_notification_shape(sqlite_store) -> None:
    h = build(
        sqlite_store,
        trust="validated",
        loop_mode="enforcing",
        autonomy={"max_autonomous_steps": 50, "deny": ["drop_*"], "requires_approval": ["delete_*"]},
    )
    seen: list[dict[str, Any]] = []

    sessions = {agent: h.as_(agent) for agent in ("bot", "rogue", "peer", "pusher")}  # four identities

    async def step(agent: str, hint: str) -> dict[str, Any]:
        d = (await h.call("record_execution_step", session=sessions[agent], element_name=agent, next_action_hint=hint))["data"]
        seen.extend(d.get("notifications", []))
        return d

    for agent in ("bot", "rogue", "peer", "pusher"):
        await h.call("execute_agent", session=sessions[agent], element_name=agent)
    await step("bot", "delete_user 1")  # requires approval → autonomy_pause
    await step("rogue", "drop_table users")  # deny → danger_zone, broadcast
    await h.call("delete_task", session=sessions["peer"], task_id="1")  # gatekeeper → permission_pending
    await step("peer", "read_file a")
    await step("pusher", "git push --force to main")  # verify tier → autonomy_pause with verificationId
    await step("peer", "read_file b")
    assert {"autonomy_pause", "permission_pending", "danger_zone"} <= {n["type"] for n in seen}
    for n in seen:
        check_notification(n)
