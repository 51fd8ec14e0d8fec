"""Sessions (src/mcpaql/protocol/session.py, context.py; CORE §2.3)."""

from __future__ import annotations

from aql_support import CREATE, READ, run
from mcpaql import Session


def test_session_ids_are_generated_and_unique_REQ_SESS_005_REQ_SESS_007(h):
    ids = {h.engine.new_session().id for _ in range(50)}
    assert len(ids) == 50
    assert all(i.startswith("sess_") and len(i) > 12 for i in ids)


def test_session_state_is_per_session(h):
    other = h.engine.new_session()
    assert h.call(CREATE, {"operation": "remember", "params": {"key": "k", "value": "v"}})["success"] is True
    assert h.call(READ, {"operation": "whoami"})["data"]["state"] == {"k": "v"}
    assert h.call(READ, {"operation": "whoami"}, other)["data"]["state"] == {}


def test_session_end_invalidates_state_REQ_SESS_002_REQ_SESS_003(h):
    h.call(CREATE, {"operation": "remember", "params": {"key": "token", "value": "conf_1"}})
    hooks: list[str] = []
    h.session.on_close(lambda s: hooks.append(s.id))

    async def async_hook(s: Session) -> None:
        hooks.append("async")

    h.session.on_close(async_hook)
    run(h.session.close())
    assert h.session.closed is True
    assert h.session.state == {}
    assert hooks == ["async", h.session.id]  # newest first
    run(h.session.close())  # idempotent
    assert len(hooks) == 2


def test_failing_close_hook_does_not_block_others_REQ_SESS_003():
    s = Session()
    ran: list[int] = []

    def boom(_: Session) -> None:
        raise RuntimeError("hook failed")

    s.on_close(lambda _: ran.append(1))
    s.on_close(boom)
    run(s.close())
    assert ran == [1] and s.state == {}


def test_reconnect_is_a_new_session_REQ_SESS_001(h):
    run(h.session.close())
    fresh = h.engine.new_session()
    assert fresh.id != h.session.id
    env = h.call(READ, {"operation": "introspect", "params": {"query": "operations"}}, fresh)
    assert env["data"]["_protocol"]["session_id"] == fresh.id


def test_client_meta_is_a_label_not_identity_REQ_SESS_006(h):
    env = h.call(READ, {"operation": "whoami", "_meta": {"session_id": "sess_evil", "user": "admin"}})
    assert env["data"]["session_id"] == h.session.id
    assert env["data"]["meta"]["_meta"] == {"session_id": "sess_evil", "user": "admin"}
    env = h.call(READ, {"operation": "introspect", "params": {"query": "operations"}, "_meta": {"session_id": "sess_evil"}})
    assert env["data"]["_protocol"]["session_id"] == h.session.id


def test_configuration_persists_across_sessions_REQ_SESS_004(h):
    first = h.call(READ, {"operation": "introspect", "params": {"query": "operations"}})["data"]
    run(h.session.close())
    second = h.call(READ, {"operation": "introspect", "params": {"query": "operations"}}, h.engine.new_session())["data"]
    assert first["operations"] == second["operations"]
    assert first["_protocol"]["session_id"] != second["_protocol"]["session_id"]
