"""tools/call over real transports and both protocol eras: envelopes, the isError mapping
(MCPI §4.1), no leaks from unexpected exceptions, and progress notifications (MCPI §5).

Each (transport, era) pair runs one scripted conversation on one connection (spawning a
stdio server costs about a second); the tests below check what it recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from e2e_support import ADAPTER, ENV_BASE

from aql_support import assert_no_leak
from mcpaql.mcp import connect

pytestmark = pytest.mark.e2e

READ = f"{ADAPTER}_mcpaql_read"
CREATE = f"{ADAPTER}_mcpaql_create"
EXECUTE = f"{ADAPTER}_mcpaql_execute"

# name → (tool, arguments, wants progress)
SCRIPT: dict[str, tuple[str, dict[str, Any], bool]] = {
    "introspect": (READ, {"operation": "introspect", "params": {"query": "operations"}}, False),
    "get_item": (READ, {"operation": "get_item", "params": {"item_id": "i1"}}, False),
    "wrong_tool": (READ, {"operation": "create_item", "params": {"item_id": "x", "name": "y"}}, False),
    "unknown_op": (READ, {"operation": "no_such_op"}, False),
    "unknown_param": (READ, {"operation": "get_item", "params": {"item_id": "i1", "bogus": 1}}, False),
    "unknown_tool": (f"{ADAPTER}_mcpaql_nope", {"operation": "introspect"}, False),
    "boom": (READ, {"operation": "boom"}, False),
    "after_boom": (READ, {"operation": "list_items"}, False),
    "job_with_progress": (EXECUTE, {"operation": "run_job", "params": {"steps": 3}}, True),
    "job_without_progress": (EXECUTE, {"operation": "run_job", "params": {"steps": 1}}, False),
}


@dataclass
class Reply:
    envelope: Any
    is_error: bool
    raw: dict[str, Any]
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)


_cache: dict[tuple[str, str], dict[str, Reply]] = {}


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def replies(transport: str, mode: str, target: Any) -> dict[str, Reply]:
    key = (transport, mode)
    if key not in _cache:

        async def converse() -> dict[str, Reply]:
            out: dict[str, Reply] = {}
            async with connect(target, env=ENV_BASE, mode=mode) as conn:
                for name, (tool, args, wants_progress) in SCRIPT.items():
                    seen: list[tuple[float, float | None, str | None]] = []

                    async def on_progress(p: float, total: float | None, msg: str | None, seen: list = seen) -> None:
                        seen.append((p, total, msg))

                    env, is_error, raw = await conn.call_tool(tool, args, progress=on_progress if wants_progress else None)
                    out[name] = Reply(env, is_error, raw, seen)
            return out

        _cache[key] = anyio.run(converse)
    return _cache[key]


def test_introspect_and_plain_call(replies: dict[str, Reply]) -> None:
    r = replies["introspect"]
    assert r.is_error is False and r.raw["isError"] is False and r.envelope["success"] is True
    proto = r.envelope["data"]["_protocol"]
    assert proto["adapter"] == ADAPTER and proto["display_name"] == "Display"
    assert proto["session_id"].startswith("sess_")
    assert {"get_item", "create_item", "run_job", "introspect"} <= {op["name"] for op in r.envelope["data"]["operations"]}
    r = replies["get_item"]
    assert (r.envelope, r.is_error) == ({"success": True, "data": {"item_id": "i1", "name": "first", "size": 1}}, False)


def test_wrong_endpoint_is_an_error_naming_the_right_tool(replies: dict[str, Reply]) -> None:
    r = replies["wrong_tool"]
    assert r.envelope["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH" and r.is_error is True  # Part F #18
    assert CREATE in r.envelope["error"]["message"]


def test_unknown_operation_is_recoverable(replies: dict[str, Reply]) -> None:
    r = replies["unknown_op"]
    assert r.envelope["error"]["code"] == "NOT_FOUND_OPERATION" and r.is_error is False


def test_unknown_param_is_an_error(replies: dict[str, Reply]) -> None:
    r = replies["unknown_param"]
    assert r.envelope["error"]["code"] == "VALIDATION_UNKNOWN_PARAM" and r.is_error is True


def test_unknown_tool_is_an_envelope_not_a_json_rpc_error(replies: dict[str, Reply]) -> None:
    r = replies["unknown_tool"]
    assert r.envelope["success"] is False and r.envelope["error"]["code"] == "NOT_FOUND_OPERATION"


def test_unexpected_exception_leaks_nothing_and_server_keeps_serving(replies: dict[str, Reply]) -> None:
    r = replies["boom"]
    assert r.is_error is True
    assert set(r.envelope) == {"success", "error"} and set(r.envelope["error"]) == {"code", "message"}
    assert r.envelope["error"]["code"] == "INTERNAL_ERROR"
    text = r.raw["content"][0]["text"]
    assert_no_leak(text)
    for leak in ("/secret", "path.py", "RuntimeError", "app_server"):
        assert leak not in text
    assert replies["after_boom"].envelope["success"] is True and replies["after_boom"].is_error is False


def test_progress_notifications_reach_the_client(replies: dict[str, Reply]) -> None:
    r = replies["job_with_progress"]
    assert r.envelope == {"success": True, "data": {"steps": 3, "wanted_progress": True}} and r.is_error is False
    assert r.progress == [(1.0, 3.0, "step 1/3"), (2.0, 3.0, "step 2/3"), (3.0, 3.0, "step 3/3")]
    # Without a progress token the handler is told nobody is listening.
    assert replies["job_without_progress"].envelope["data"]["wanted_progress"] is False
