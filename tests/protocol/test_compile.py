"""Binding a request to an operation's parameters (src/mcpaql/protocol/compile.py; OPS §5.4,
CORE §4.2, §4.6)."""

from __future__ import annotations

import pytest

from aql_support import CREATE, READ
from mcpaql import Config
from mcpaql.protocol.categories import Category
from mcpaql.protocol.compile import CompiledOperation
from mcpaql.protocol.operations import OperationSpec, ParamSpec

OWNER = {"name": "Ada", "address": {"street": "1 Rue"}}


def err(env: dict) -> dict:
    assert env["success"] is False, env
    return env["error"]


# ---- request format ---------------------------------------------------------------------


def test_operation_only_request_is_valid_REQ_RQF_001(h):
    env = h.call(READ, {"operation": "list_tasks"})
    assert env["success"] is True


def test_params_null_or_missing_treated_as_empty_REQ_RQF_001(h):
    assert h.call(READ, {"operation": "list_tasks", "params": None})["success"] is True
    assert h.call(READ, {"operation": "list_tasks", "params": {}})["success"] is True


@pytest.mark.parametrize("params", [[], "x", 3, True])
def test_params_must_be_an_object_REQ_RQF_002(h, params):
    e = err(h.call(READ, {"operation": "list_tasks", "params": params}))
    assert e["code"] == "VALIDATION_INVALID_TYPE"
    assert e["details"]["param_name"] == "params"
    assert e["details"]["expected_type"] == "object"


def test_top_level_parameter_resolution_REQ_RQF_005(h):
    env = h.call(READ, {"operation": "get_task", "task_id": "t7"})
    assert env["success"] is True and env["data"]["task_id"] == "t7"


def test_params_value_wins_over_top_level_REQ_RQF_006(h):
    env = h.call(READ, {"operation": "get_task", "task_id": "t2", "params": {"task_id": "t1"}})
    assert env["data"]["task_id"] == "t1"


def test_params_keys_match_introspected_parameter_names_REQ_RQF_007(h):
    detail = h.introspect(query="operations", name="echo")["data"]["operation"]
    names = [p["name"] for p in detail["parameters"]]
    request = {"operation": "echo", "params": {n: v for n, v in zip(names, ["t", 1, 0.25, True], strict=True)}}
    env = h.call(READ, request)
    assert env["success"] is True
    assert env["data"] == {"text": "t", "blob": "x", "ratio": 0.25, "flag": True}


# ---- unknown parameters ---------------------------------------------------------------------


def test_unknown_param_rejected_REQ_VAL_014_REQ_VAL_015(h):
    e = err(h.call(READ, {"operation": "list_tasks", "params": {"limit": 5, "bogus": 1, "extra": 2}}))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert e["details"] == {
        "operation": "list_tasks",
        "unknown_params": ["bogus", "extra"],
        "valid_params": ["limit", "priority", "query", "tags"],
    }


def test_unknown_param_message_REQ_VAL_020(h):
    e = err(h.call(READ, {"operation": "list_tasks", "params": {"bogus": 1}}))
    assert e["message"].startswith("Unknown parameter(s) for operation 'list_tasks': 'bogus'")


def test_unknown_top_level_param_rejected_REQ_VAL_016(h):
    e = err(h.call(READ, {"operation": "list_tasks", "sneaky": True}))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert e["details"]["unknown_params"] == ["sneaky"]


def test_underscore_metadata_is_exempt_REQ_VAL_016(h):
    env = h.call(
        READ,
        {
            "operation": "whoami",
            "_meta": {"progressToken": "p1"},
            "_request_id": "r1",
            "params": {"_trace": "abc"},
        },
    )
    assert env["success"] is True
    assert env["data"]["meta"] == {"_trace": "abc", "_meta": {"progressToken": "p1"}, "_request_id": "r1"}


def test_operation_with_no_params_rejects_any_param_REQ_VAL_014(h):
    e = err(h.call(READ, {"operation": "whoami", "params": {"x": 1}}))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert e["details"]["valid_params"] == []


def test_unknown_rejection_happens_before_defaults_and_missing_REQ_VAL_012(h):
    # create_task misses its required 'owner' AND has an unknown param: unknown is reported first.
    e = err(h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "ownr": OWNER}}))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert e["details"]["unknown_params"] == ["ownr"]


def test_strict_mode_is_the_default_REQ_VAL_018(h):
    assert Config().strict_mode is True
    protocol = h.introspect(query="operations")["data"]["_protocol"]
    assert not any("strict" in k for k in protocol)


def test_lenient_mode_only_when_explicitly_disabled_REQ_VAL_017(harness):
    h = harness(Config(strict_mode=False))
    env = h.call(READ, {"operation": "list_tasks", "params": {"bogus": 1}})
    assert env["success"] is True
    assert env["warnings"][0]["details"]["unknown_params"] == ["bogus"]


def test_unknown_params_never_silently_ignored_REQ_VAL_022(harness):
    strict = harness().call(READ, {"operation": "list_tasks", "params": {"bogus": 1}})
    assert strict["success"] is False
    lenient = harness(Config(strict_mode=False)).call(READ, {"operation": "list_tasks", "params": {"bogus": 1}})
    assert lenient["warnings"], "even the lenient mode reports the ignored parameter"


# ---- missing / type / constraint ------------------------------------------------------------


def test_missing_required_param_REQ_VAL_008(h):
    e = err(h.call(READ, {"operation": "get_task"}))
    assert e["code"] == "VALIDATION_MISSING_PARAM"
    assert e["details"]["param_name"] == "task_id"
    assert e["details"]["operation"] == "get_task"
    assert e["message"].startswith("Missing required parameter 'task_id'")


def test_missing_param_message_names_expected_type_REQ_RSP_015(h):
    e = err(h.call(READ, {"operation": "get_task"}))
    assert e["message"] == "Missing required parameter 'task_id' (expected 'string')"
    # the description is free text: details, never the message (runner leak patterns, REQ-ERR-005)
    assert e["details"]["description"] == "Task id" and e["details"]["expected_type"] == "string"


def test_required_param_given_as_null_is_a_type_error_REQ_VAL_009(h):
    e = err(h.call(READ, {"operation": "get_task", "params": {"task_id": None}}))
    assert e["code"] == "VALIDATION_INVALID_TYPE"
    assert e["details"]["actual_type"] == "null"


@pytest.mark.parametrize(
    ("params", "param", "expected", "actual"),
    [
        ({"limit": "5"}, "limit", "integer", "string"),
        ({"limit": 2.5}, "limit", "integer", "number"),
        ({"limit": True}, "limit", "integer", "boolean"),
        ({"query": 5}, "query", "string", "integer"),
        ({"tags": "a"}, "tags", "string[]", "string"),
        ({"tags": ["a", 1]}, "tags[1]", "string", "integer"),
    ],
)
def test_wrong_type_REQ_VAL_009(h, params, param, expected, actual):
    e = err(h.call(READ, {"operation": "list_tasks", "params": params}))
    assert e["code"] == "VALIDATION_INVALID_TYPE"
    assert e["details"]["param_name"] == param
    assert e["details"]["expected_type"] == expected
    assert e["details"]["actual_type"] == actual
    assert e["message"] == f"Parameter '{param}' expected '{expected}', got '{actual}'"


def test_bool_is_not_a_number_and_numbers_are_not_bools_REQ_VAL_009(h):
    assert err(h.call(READ, {"operation": "echo", "params": {"ratio": False}}))["code"] == "VALIDATION_INVALID_TYPE"
    assert err(h.call(READ, {"operation": "echo", "params": {"flag": 1}}))["code"] == "VALIDATION_INVALID_TYPE"


def test_integral_float_accepted_for_integer_REQ_VAL_009(h):
    env = h.call(READ, {"operation": "list_tasks", "params": {"limit": 5.0}})
    assert env["data"][0]["limit"] == 5 and isinstance(env["data"][0]["limit"], int)


@pytest.mark.parametrize(
    ("op", "params", "constraint"),
    [
        ("list_tasks", {"limit": 0}, "minimum"),
        ("list_tasks", {"limit": 101}, "maximum"),
        ("list_tasks", {"priority": "urgent"}, "enum"),
        ("get_task", {"task_id": "x1"}, "pattern"),
        ("get_task", {"task_id": "t"}, "minLength"),
        ("get_task", {"task_id": "t12345678"}, "maxLength"),
        ("echo", {"size": -1}, "minimum"),
    ],
)
def test_declared_constraints_enforced_before_execution_REQ_VAL_010(h, op, params, constraint):
    e = err(h.call(READ, {"operation": op, "params": params}))
    assert e["code"] == "VALIDATION_INVALID_VALUE"
    assert e["details"]["constraint"] == constraint
    assert e["details"]["param_name"] == next(iter(params))
    assert f"'{next(iter(params))}'" in e["message"]


def test_enum_error_lists_allowed_values_REQ_RSP_015(h):
    e = err(h.call(READ, {"operation": "list_tasks", "params": {"priority": "urgent"}}))
    assert e["details"]["allowed"] == ["low", "high"]
    assert "'low'" in e["message"] and "'high'" in e["message"]


def test_constraint_boundaries_accepted_REQ_VAL_010(h):
    assert h.call(READ, {"operation": "list_tasks", "params": {"limit": 1}})["success"]
    assert h.call(READ, {"operation": "list_tasks", "params": {"limit": 100}})["success"]
    assert h.call(READ, {"operation": "get_task", "params": {"task_id": "t1234567"}})["success"]


def test_nested_model_is_validated_REQ_VAL_004(h):
    e = err(h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "owner": {"name": "Ada"}}}))
    assert e["code"] == "VALIDATION_MISSING_PARAM"
    assert e["details"]["param_name"] == "owner.address"
    bad = {"name": "Ada", "address": {"street": 5}}
    e = err(h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "owner": bad}}))
    assert e["code"] == "VALIDATION_INVALID_TYPE"
    assert e["details"]["param_name"] == "owner.address.street"
    short = {"name": "", "address": {"street": "s"}}
    e = err(h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "owner": short}}))
    assert e["code"] == "VALIDATION_INVALID_VALUE"
    assert e["details"]["param_name"] == "owner.name"


def test_validation_runs_before_the_handler_REQ_VAL_004(harness):
    from mcpaql import Adapter

    calls = []
    app = Adapter("probe")

    @app.create
    def create_thing(count: int) -> int:
        calls.append(count)
        return count

    h = harness(adapter=app)
    assert h.call("probe_mcpaql_create", {"operation": "create_thing", "params": {"count": "x"}})["success"] is False
    assert calls == []


# ---- defaults and aliases -----------------------------------------------------------------


def test_defaults_applied_REQ_VAL_011(h):
    env = h.call(READ, {"operation": "list_tasks"})
    assert env["data"] == [{"limit": 10, "priority": None, "query": None, "tags": None}]
    env = h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "owner": OWNER}})
    assert env["data"]["priority"] == "low"
    assert env["data"]["owner"]["address"]["city"] == "Paris"  # nested model default


def test_mutable_defaults_are_not_shared_between_calls_REQ_VAL_011(h):
    for _ in range(3):
        env = h.call(CREATE, {"operation": "create_task", "params": {"title": "a", "owner": OWNER}})
        assert env["success"] is True
    detail = h.introspect(query="operations", name="create_task")["data"]["operation"]
    tags = next(p for p in detail["parameters"] if p["name"] == "tags")
    assert tags["default"] == []


def test_explicit_null_for_optional_param_means_absent_REQ_VAL_032(h):
    """``X | None = None`` is introspected as optional ``X``; an explicit ``null`` is accepted
    and behaves like omission (the handler's default applies)."""
    detail = h.introspect(query="operations", name="list_tasks")["data"]["operation"]
    query = next(p for p in detail["parameters"] if p["name"] == "query")
    assert query == {"name": "query", "type": "string", "required": False, "description": "Text search over titles"}
    env = h.call(READ, {"operation": "list_tasks", "params": {"query": None, "priority": None, "tags": None}})
    assert env["data"] == h.call(READ, {"operation": "list_tasks"})["data"]


def test_explicit_null_rejected_where_the_type_has_no_null_REQ_VAL_032_REQ_VAL_033(h):
    """A non-optional parameter with a non-None default (``limit: int = 10``) rejects ``null``."""
    e = err(h.call(READ, {"operation": "list_tasks", "params": {"limit": None}}))
    assert e["code"] == "VALIDATION_INVALID_TYPE" and e["details"]["actual_type"] == "null"


def test_nullable_schema_accepts_explicit_null_REQ_VAL_032():
    spec = OperationSpec(
        "set_note",
        Category.UPDATE,
        "Set or clear a note",
        params=(ParamSpec("note", {"type": ["string", "null"]}, description="null clears the note"),),
    )
    bound = CompiledOperation(spec).bind({"operation": "set_note", "params": {"note": None}}, True, False, [])
    assert bound.kwargs == {"note": None}
    assert CompiledOperation(spec).bind({"operation": "set_note"}, True, False, []).kwargs == {}


def test_camel_case_alias_accepted_REQ_VAL_002(h):
    env = h.call(READ, {"operation": "get_task", "params": {"taskId": "t3"}})
    assert env["success"] is True and env["data"]["task_id"] == "t3"
    env = h.call(READ, {"operation": "get_task", "taskId": "t4"})
    assert env["data"]["task_id"] == "t4"
    detail = h.introspect(query="operations", name="get_task")["data"]["operation"]
    assert [p["name"] for p in detail["parameters"]] == ["task_id"]  # canonical name stays snake_case


def test_snake_case_wins_over_camel_alias_REQ_VAL_002(h):
    e = err(h.call(READ, {"operation": "get_task", "params": {"task_id": "t1", "taskId": "t2"}}))
    assert e["code"] == "VALIDATION_UNKNOWN_PARAM"
    assert e["details"]["unknown_params"] == ["taskId"]


def test_enum_param_converted_for_handler_REQ_VAL_006(h):
    env = h.call(READ, {"operation": "list_tasks", "params": {"priority": "high"}})
    assert env["data"][0]["priority"] == "high"


def test_compiled_operation_direct_bind():
    spec = OperationSpec(
        "do_it",
        Category.READ,
        "Do it",
        handler=lambda **kw: kw,
        params=(ParamSpec("item_id", {"type": "string"}, required=True), ParamSpec("n", {"type": "integer"}, default=3)),
    )
    compiled = CompiledOperation(spec)
    bound = compiled.bind({"operation": "do_it", "params": {"itemId": "a"}, "_meta": {"x": 1}}, True, False, [])
    assert bound.kwargs == {"item_id": "a", "n": 3}
    assert bound.meta == {"_meta": {"x": 1}}
