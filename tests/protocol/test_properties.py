"""Property tests: malformed requests never raise, always yield a schema-valid envelope, and
failure messages never leak internals (REQ-VAL-013, REQ-RSP-001, REQ-RSP-011, REQ-RSP-013)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aql_support import (
    SECRET_PATH,
    assert_no_leak,
    assert_valid_envelope,
    assert_valid_introspection,
    make_app,
    run,
)
from mcpaql import Adapter, Config, Engine, Limits

SETTINGS = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# One engine in 'all' mode (every tool exists), small limits so the limit paths are reachable.
ENGINE = make_app().engine(
    Config(
        mode="all", limits=Limits(max_request_size=65_536, max_string_length=65_536, max_array_elements=100, max_nesting_depth=8)
    )
)
TOOLS = [t.name for t in ENGINE.tools] + ["tasks_mcpaql_nope", ""]
OPS = [op.name for op in ENGINE.operations]
PARAM_NAMES = sorted({p.name for op in ENGINE.operations for p in op.params} | {"taskId", "_meta", "params", "operation"})

any_char = st.characters(exclude_categories=())  # includes lone surrogates, NUL, controls
text = st.text(alphabet=any_char, max_size=20)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text | st.sampled_from(PARAM_NAMES), children, max_size=5),
    max_leaves=25,
)
op_names = st.sampled_from(OPS) | text | st.sampled_from(["Introspect", "list_tasks ", "LIST_TASKS", ""])
param_dicts = st.dictionaries(st.sampled_from(PARAM_NAMES) | text, json_values, max_size=6)

requests = st.one_of(
    json_values,
    st.fixed_dictionaries({"operation": op_names}, optional={"params": param_dicts | json_values}),
    st.fixed_dictionaries(
        {"operation": op_names, "params": param_dicts},
        optional={"task_id": json_values, "_meta": json_values, "junk": json_values},
    ),
    st.fixed_dictionaries(
        {
            "operation": st.just("introspect"),
            "params": st.fixed_dictionaries(
                {"query": st.sampled_from(["operations", "types", "nope", ""]) | json_values},
                optional={"name": st.sampled_from([*OPS, "Owner", "Priority", "Task", "Nope"]) | json_values},
            ),
        }
    ),
    st.fixed_dictionaries(
        {
            "operations": st.lists(
                json_values | st.fixed_dictionaries({"operation": op_names}, optional={"params": param_dicts}), max_size=5
            )
            | json_values
        },
        optional={"_stop_on_failure": json_values, "extra": json_values},
    ),
    st.dictionaries(text | st.sampled_from(["operation", "params", "operations"]), json_values, max_size=5),
)


def strings_in(value: Any) -> list[str]:
    out: list[str] = []
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.extend(strings_in(k))
            out.extend(strings_in(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(strings_in(v))
    return out


def check_messages(env: dict, request: Any) -> None:
    """Leak check on messages with the request's own strings removed (echoing input is fine)."""
    echoes = sorted((s for s in strings_in(request) if s), key=len, reverse=True)

    def visit(e: dict) -> None:
        if e.get("success") is False:
            message = e["error"]["message"]
            for s in echoes:
                message = message.replace(s, "")
            assert_no_leak(message)
            assert SECRET_PATH not in e["error"]["message"]
        for item in e.get("results") or ():
            visit(item["result"])

    visit(env)


def no_unexpected_internal_errors(env: dict, request: Any) -> None:
    """Malformed input is a client problem: only the deliberately failing handler may produce
    INTERNAL_ERROR."""

    def visit(e: dict) -> None:
        if e.get("success") is False and e["error"]["code"] == "INTERNAL_ERROR":
            assert "run_export" in json.dumps(request, default=str, ensure_ascii=True), (request, e)
        for item in e.get("results") or ():
            visit(item["result"])

    visit(env)


@pytest.fixture(autouse=True)
def _quiet_logs():
    logging.disable(logging.CRITICAL)  # run_export logs a traceback on purpose
    yield
    logging.disable(logging.NOTSET)


@SETTINGS
@given(tool=st.sampled_from(TOOLS), request=requests)
def test_malformed_requests_always_get_a_valid_envelope_REQ_VAL_013_REQ_RSP_011(tool, request):
    session = ENGINE.new_session()
    env = run(ENGINE.call_tool(tool, request, ENGINE.context(session)))
    assert_valid_envelope(env)
    assert isinstance(env["success"], bool)
    if tool in ENGINE.tools_by_name and isinstance(request, dict) and request.get("operation") == "introspect":
        assert_valid_introspection(env)
    check_messages(env, request)
    no_unexpected_internal_errors(env, request)
    text, _ = ENGINE.render(env)
    assert json.loads(text) == env or env["success"] is False


@SETTINGS
@given(raw=st.binary(max_size=200))
def test_random_bytes_get_a_valid_envelope_REQ_VAL_023(raw):
    env = run(ENGINE.call_raw(raw, ENGINE.context(ENGINE.new_session()), "tasks_mcpaql_read"))
    assert_valid_envelope(env)
    assert env["success"] is False or isinstance(json.loads(raw.decode("utf-8")), dict)
    check_messages(env, raw.decode("utf-8", "replace"))


@SETTINGS
@given(request=requests, data=st.data())
def test_mutated_raw_json_gets_a_valid_envelope_REQ_VAL_023(request, data):
    raw = bytearray(json.dumps(request, ensure_ascii=data.draw(st.booleans())).encode("utf-8", "surrogatepass"))
    if raw and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    env = run(ENGINE.call_raw(bytes(raw), ENGINE.context(ENGINE.new_session()), data.draw(st.sampled_from(TOOLS[:-2]))))
    assert_valid_envelope(env)
    check_messages(env, request)
    no_unexpected_internal_errors(env, request)


def _nesting(value: Any) -> int:
    """Container levels in ``value`` (a scalar is 0, ``[]`` and ``{}`` are 1)."""
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    return 0


def _keeper_engine() -> Engine:
    """An operation whose parameter takes any JSON, so only the nesting limit can refuse a value."""
    app = Adapter("deep")

    @app.read
    def keep(payload: Any = None) -> dict[str, Any]:
        """Return the payload as given."""
        return {"payload": payload}

    return app.engine(Config(mode="all", limits=Limits(max_nesting_depth=8)))


KEEPER = _keeper_engine()
# Well-formed leaves (no lone surrogates, no U+0000): the encoding checks must not refuse them first.
_clean = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=10)
clean_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _clean,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_clean, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None, database=None)
@given(depth=st.integers(1, 40), leaf=clean_json_values, via=st.sampled_from(["dict", "list"]))
def test_deep_nesting_is_rejected_cleanly_REQ_LIMIT_002(depth, leaf, via):
    value: Any = leaf
    for _ in range(depth):
        value = {"k": value} if via == "dict" else [value]
    request = {"operation": "keep", "params": {"payload": value}}
    env = run(KEEPER.call_tool("deep_mcpaql_read", request, KEEPER.context(KEEPER.new_session())))
    assert_valid_envelope(env)
    levels = 2 + _nesting(value)  # the request object is level 1, ``params`` level 2
    if levels <= 8:
        assert env["success"] is True, env
        assert env["data"] == {"payload": value}
    else:
        assert env["success"] is False
        assert env["error"]["code"] == "VALIDATION_PAYLOAD_TOO_LARGE"
        assert env["error"]["details"] == {"limit_type": "nesting_depth", "limit_value": 8, "actual_value": 9, "unit": "levels"}


@settings(max_examples=15, deadline=None, database=None)
@given(size=st.integers(60_000, 70_000), char=st.sampled_from(["a", "é", "😀", "\x01", '"']))
def test_huge_strings_are_limited_or_accepted_REQ_LIMIT_002(size, char):
    s = char * (size // len(char.encode()))
    env = run(
        ENGINE.call_tool("tasks_mcpaql_read", {"operation": "echo", "params": {"text": s}}, ENGINE.context(ENGINE.new_session()))
    )
    assert_valid_envelope(env)
    request = {"operation": "echo", "params": {"text": s}}
    wire = len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode())
    if len(s.encode()) > 65_536 or wire > 65_536:
        assert env["error"]["code"] == "VALIDATION_PAYLOAD_TOO_LARGE"
    elif "\x00" not in s:
        assert env["success"] is True


clean_text = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=50)


@SETTINGS
@given(
    params=st.fixed_dictionaries(
        {},
        optional={
            "text": clean_text,
            "size": st.integers(0, 50),
            "ratio": st.floats(allow_nan=False, allow_infinity=False),
            "flag": st.booleans(),
        },
    ),
    top_level=st.booleans(),
)
def test_well_formed_requests_succeed_with_defaults_applied_REQ_VAL_011_REQ_RQF_005(params, top_level):
    request = {"operation": "echo", **params} if top_level else {"operation": "echo", "params": params}
    env = run(ENGINE.call_tool("tasks_mcpaql_read", request, ENGINE.context(ENGINE.new_session())))
    assert_valid_envelope(env)
    assert env["success"] is True, env
    data = env["data"]
    assert data["text"] == params.get("text", "")
    assert data["blob"] == "x" * params.get("size", 0)
    assert data["ratio"] == params.get("ratio", 0.5)
    assert data["flag"] is params.get("flag", False)
