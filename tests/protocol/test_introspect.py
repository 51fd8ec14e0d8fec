"""The ``introspect`` operation (src/mcpaql/protocol/introspect.py; CORE §7, INTRO, CHECKLIST Part C).

Every response here goes through ``Harness.call``, which validates it against both
introspection-response.schema.json and operation-result.schema.json.
"""

from __future__ import annotations

import re

import pytest

from aql_support import CREATE, DELETE, READ, SINGLE, assert_valid_input, make_alt_app
from mcpaql import Config

PROTOCOL_TYPES = {
    "SemanticCategory",
    "OperationInput",
    "OperationSuccess",
    "OperationFailure",
    "EndpointPermissions",
    "OperationResult",
}
JSON_TYPES = {"string", "integer", "number", "boolean", "object", "array", "any", "null"}


def ops_list(h, tool=READ):
    return h.introspect(tool, query="operations")["data"]


def detail(h, name, tool=READ):
    return h.introspect(tool, query="operations", name=name)["data"]["operation"]


# ---- availability -------------------------------------------------------------------------


def test_introspect_always_present_and_READ_REQ_INTRO_001_REQ_INTRO_002(h):
    ops = {o["name"]: o for o in ops_list(h)["operations"]}
    assert ops["introspect"] == {
        "name": "introspect",
        "semantic_category": "READ",
        "endpoint": "read",
        "description": ops["introspect"]["description"],
    }


def test_introspect_params_REQ_INTRO_003(h):
    d = detail(h, "introspect")
    params = {p["name"]: p for p in d["parameters"]}
    assert params["query"]["type"] == "string" and params["query"]["required"] is True
    assert params["query"]["enum"] == ["operations", "types"]
    assert params["name"]["type"] == "string" and params["name"]["required"] is False


def test_introspect_reachable_in_single_mode_REQ_INTRO_002(harness):
    h = harness(Config(mode="single"))
    data = ops_list(h, SINGLE)
    assert data["_protocol"]["mode"] == "single"
    assert detail(h, "introspect", SINGLE)["mcpTool"] == SINGLE


def test_introspect_not_callable_through_other_families_REQ_MODE_005(h):
    env = h.call(CREATE, {"operation": "introspect", "params": {"query": "operations"}})
    assert env["success"] is False and env["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH"
    assert READ in env["error"]["message"]
    assert env["error"]["details"]["expected_endpoint"] == READ  # like every operation (decision E2)


# ---- operations list ------------------------------------------------------------------------


def test_operations_list_shape_REQ_INTRO_005_REQ_INTRO_006_REQ_INTRO_007(h, app):
    data = ops_list(h)
    assert set(data) == {"_protocol", "operations"}
    names = [o["name"] for o in data["operations"]]
    assert set(names) == {s.name for s in app.registry().operations} | {"introspect"}
    for info in data["operations"]:
        assert set(info) == {"name", "semantic_category", "endpoint", "description"}
        assert info["description"]


def test_crude_endpoints_are_lowercase_family_names_REQ_INTRO_012_REQ_MODE_027(h):
    for info in ops_list(h)["operations"]:
        assert info["endpoint"] == info["semantic_category"].lower()


def test_protocol_metadata_REQ_INTRO_008_REQ_INTRO_009_REQ_INTRO_010(h):
    p = ops_list(h)["_protocol"]
    assert re.fullmatch(r"\d+\.\d+\.\d+(-[a-zA-Z0-9.-]+)?", p["version"])
    assert p["version"] == "1.0.0-draft"
    assert p["conformance"] in ("level-1", "level-2")
    assert p["mode"] == "semantic"
    assert p["adapter"] == "tasks"
    assert p["display_name"] == "Task Tracker"
    assert p["concurrency"] in ("serialized", "read-concurrent", "fully-concurrent", "resource-locked")
    assert set(p["limits"]) == {
        "max_request_size",
        "max_response_size",
        "max_string_length",
        "max_array_elements",
        "max_nesting_depth",
    }


def test_protocol_capabilities_REQ_INTRO_011(h):
    caps = ops_list(h)["_protocol"]["capabilities"]
    for flag in (
        "batch",
        "field_selection",
        "aggregations",
        "computed_fields",
        "pagination",
        "relationship_queries",
        "warnings",
        "confirmation",
        "dangerous_operations",
    ):
        assert isinstance(caps[flag], bool), flag
    assert caps["batch"] is True


def test_engine_capabilities_override(harness):
    h = harness(capabilities={"field_selection": True, "pagination": True})
    p = ops_list(h)["_protocol"]
    assert p["capabilities"]["field_selection"] is True
    assert p["conformance"] == "level-2"


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_protocol_mode_reported_REQ_INTRO_010(harness, mode):
    h = harness(Config(mode=mode))
    tool = SINGLE if mode == "single" else READ
    assert ops_list(h, tool)["_protocol"]["mode"] == mode


def test_alternate_profile_reports_semantic_mode_REQ_INTRO_010(harness):
    h = harness(adapter=make_alt_app())
    data = ops_list(h, "inventory_mcpaql_query")
    assert data["_protocol"]["mode"] == "semantic"
    assert {o["name"]: o["endpoint"] for o in data["operations"]} == {
        "list_items": "query",
        "create_item": "manage",
        "delete_item": "manage",
        "introspect": "query",
    }


def test_session_id_in_protocol_REQ_INTRO_034_REQ_SESS_007(h):
    sid = ops_list(h)["_protocol"]["session_id"]
    assert sid == h.session.id and sid.startswith("sess_")
    other = h.engine.new_session()
    assert (
        h.call(READ, {"operation": "introspect", "params": {"query": "operations"}}, other)["data"]["_protocol"]["session_id"]
        == other.id
        != sid
    )


def test_strict_mode_not_exposed_REQ_VAL_018(h):
    assert "strict_mode" not in str(ops_list(h)["_protocol"])


# ---- operation detail -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category", "tool", "read_only", "destructive"),
    [
        ("list_tasks", "READ", READ, True, False),
        ("create_task", "CREATE", CREATE, False, False),
        ("update_task", "UPDATE", "tasks_mcpaql_update", False, True),
        ("delete_task", "DELETE", DELETE, False, True),
        ("run_export", "EXECUTE", "tasks_mcpaql_execute", False, True),
    ],
)
def test_operation_detail_REQ_INTRO_013_REQ_INTRO_014_REQ_MODE_008(h, name, category, tool, read_only, destructive):
    d = detail(h, name)
    assert set(d) <= {
        "name",
        "semantic_category",
        "endpoint",
        "mcpTool",
        "description",
        "permissions",
        "parameters",
        "returns",
        "examples",
        "computed_fields",
        "aggregation_support",
        "relationship_capabilities",
        "lifecycle",
    }
    assert d["name"] == name
    assert d["semantic_category"] == category
    assert d["endpoint"] == category.lower()
    assert d["mcpTool"] == tool
    assert d["permissions"] == {"readOnly": read_only, "destructive": destructive}
    assert set(d["returns"]) <= {"name", "kind", "description"}


def test_parameter_info_REQ_INTRO_015_REQ_VAL_003_REQ_VAL_006(h):
    params = {p["name"]: p for p in detail(h, "list_tasks")["parameters"]}
    assert params["limit"] == {
        "name": "limit",
        "type": "integer",
        "required": False,
        "description": "Maximum number of tasks",
        "default": 10,
        "minimum": 1,
        "maximum": 100,
    }
    assert params["priority"]["enum"] == ["low", "high"]
    assert params["tags"]["type"] == "string[]"
    assert "items" not in params["tags"]  # {"type": "string"} would only repeat "string[]"
    assert params["query"]["description"] == "Text search over titles"  # from the docstring Args section
    get = {p["name"]: p for p in detail(h, "get_task")["parameters"]}
    assert get["task_id"] == {
        "name": "task_id",
        "type": "string",
        "required": True,
        "description": "Task id",
        "minLength": 2,
        "maxLength": 8,
        "pattern": "^t[0-9]+$",
    }


def test_sensitive_parameter_flagged_REQ_INTRO_015(h):
    params = {p["name"]: p for p in detail(h, "create_task")["parameters"]}
    assert params["api_key"]["sensitive"] is True
    assert "sensitive" not in params["title"]


def test_context_parameter_not_introspected_REQ_INTRO_021(h):
    assert detail(h, "whoami")["parameters"] == []
    assert [p["name"] for p in detail(h, "get_task")["parameters"]] == ["task_id"]


def test_introspection_matches_what_the_handler_accepts_REQ_INTRO_021_REQ_INTRO_022(h):
    for info in ops_list(h)["operations"]:
        d = detail(h, info["name"])
        compiled = h.engine.compiled(info["name"])
        assert [p["name"] for p in d["parameters"]] == [p.name for p in compiled.spec.params]
        assert sorted(p["name"] for p in d["parameters"]) == compiled.valid_params
        for p in d["parameters"]:
            assert p["required"] is compiled.params[p["name"]].required
        # Omitting every parameter fails exactly on the first required one (or succeeds).
        required = [p["name"] for p in d["parameters"] if p["required"]]
        if info["name"] in ("run_export", "introspect"):
            continue
        env = h.call(d["mcpTool"], {"operation": info["name"]})
        if required:
            assert env["error"]["code"] == "VALIDATION_MISSING_PARAM"
            assert env["error"]["details"]["param_name"] == required[0]
        else:
            assert env["success"] is True


def test_examples_in_detail_REQ_INTRO_024(h):
    d = detail(h, "introspect")
    assert d["examples"][0]["request"] == {"operation": "introspect", "params": {"query": "operations"}}


def test_unknown_operation_name_is_null_not_error_REQ_INTRO_016(h):
    env = h.introspect(query="operations", name="no_such_op")
    assert env == {"success": True, "data": {"operation": None}}


def test_unknown_type_name_is_null_not_error_REQ_INTRO_016(h):
    env = h.introspect(query="types", name="NoSuchType")
    assert env == {"success": True, "data": {"type": None}}


# ---- types ------------------------------------------------------------------------------------


def test_types_list_REQ_INTRO_017_REQ_INTRO_019_REQ_INTRO_026(h):
    data = h.introspect(query="types")["data"]
    assert set(data) == {"types"}
    kinds = {t["name"]: t["kind"] for t in data["types"]}
    for t in data["types"]:
        assert set(t) <= {"name", "kind", "description"}
    assert set(kinds) >= PROTOCOL_TYPES
    assert kinds["SemanticCategory"] == "enum"
    assert kinds["OperationResult"] == "union"
    assert kinds["EndpointPermissions"] == "object"
    assert {"Priority": "enum", "Owner": "object", "Address": "object", "Task": "object"}.items() <= kinds.items()


def test_type_detail_variants_REQ_INTRO_018(h):
    def t(name):
        return h.introspect(query="types", name=name)["data"]["type"]

    assert t("Priority") == {
        "name": "Priority",
        "kind": "enum",
        "description": "How urgent a task is.",
        "values": ["low", "high"],
    }
    assert t("SemanticCategory")["values"] == ["CREATE", "READ", "UPDATE", "DELETE", "EXECUTE"]
    assert t("OperationResult")["members"] == ["OperationSuccess", "OperationFailure"]
    assert set(t("DateTime")) <= {"name", "kind", "description"}
    owner = t("Owner")
    assert owner["kind"] == "object" and set(owner) == {"name", "kind", "description", "fields"}


def test_nested_models_are_not_flattened_REQ_INTRO_019_REQ_INTRO_023(h):
    params = {p["name"]: p for p in detail(h, "create_task")["parameters"]}
    assert params["owner"]["type"] == "Owner"
    owner = h.introspect(query="types", name="Owner")["data"]["type"]
    fields = {f["name"]: f for f in owner["fields"]}
    assert fields["address"]["type"] == "Address" and fields["address"]["required"] is True
    assert fields["name"]["minLength"] == 1
    address = h.introspect(query="types", name="Address")["data"]["type"]
    assert {f["name"]: f.get("default") for f in address["fields"]} == {"street": None, "city": "Paris"}
    assert detail(h, "get_task")["returns"]["name"] == "Task"


def _referenced(type_label: str) -> list[str]:
    return [part.strip().removesuffix("[]") for part in type_label.split("|")]


def test_type_names_consistent_across_responses_REQ_INTRO_023(h):
    """Every non-primitive type name used by a parameter, field or ``returns`` is in the types list."""
    known = {t["name"] for t in h.introspect(query="types")["data"]["types"]}
    used: set[str] = set()
    for info in ops_list(h)["operations"]:
        d = detail(h, info["name"])
        for p in d["parameters"]:
            used.update(_referenced(p["type"]))
    for name in known:
        t = h.introspect(query="types", name=name)["data"]["type"]
        for f in t.get("fields", ()):
            used.update(_referenced(f["type"]))
        used.update(t.get("members", ()))
    missing = {u for u in used if u not in JSON_TYPES} - known
    assert not missing, f"type names used but not defined: {missing}"


# ---- failures ----------------------------------------------------------------------------------


def test_invalid_query_type_REQ_INTRO_020(h):
    env = h.introspect(query="invalid")
    assert env == {
        "success": False,
        "error": {
            "code": "INVALID_QUERY_TYPE",
            "message": "Unknown query type: 'invalid'. Supported types: operations, types",
        },
    }


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({}, "VALIDATION_MISSING_PARAM"),
        ({"query": 5}, "VALIDATION_INVALID_TYPE"),
        ({"query": "operations", "name": 5}, "VALIDATION_INVALID_TYPE"),
        ({"query": "operations", "bogus": 1}, "VALIDATION_UNKNOWN_PARAM"),
    ],
)
def test_introspection_failures_carry_details_like_every_operation_REQ_INTRO_020(h, params, code):
    """Decision E2 (docs/conformance.md): details on the wire, stripped from evidence."""
    from mcpaql.conformance.evidence import clean_introspection

    env = h.introspect(**params)
    assert env["success"] is False
    assert env["error"]["code"] == code
    assert set(env["error"]) == {"code", "message", "details"}
    assert set(clean_introspection(env)["error"]) == {"code", "message"}
    if code == "VALIDATION_UNKNOWN_PARAM":
        assert env["error"]["details"]["unknown_params"] == ["bogus"]
        assert "query" in env["error"]["details"]["valid_params"]


# ---- filtering, consistency ---------------------------------------------------------------------


def test_each_adapter_lists_only_its_own_operations_REQ_MCP_026(harness):
    tasks = {o["name"] for o in ops_list(harness())["operations"]}
    inv = {o["name"] for o in ops_list(harness(adapter=make_alt_app()), "inventory_mcpaql_query")["operations"]}
    assert tasks & inv == {"introspect"}


def test_disallowed_categories_hidden_from_introspection_REQ_MODE_009(harness):
    h = harness(Config(mode="single", allow=frozenset({"READ"})))
    cats = {o["semantic_category"] for o in ops_list(h, SINGLE)["operations"]}
    assert cats == {"READ"}
    assert h.introspect(SINGLE, query="operations", name="delete_task")["data"]["operation"] is None


def test_results_consistent_within_a_session_REQ_INTRO_028(h):
    first = [h.introspect(query=q) for q in ("operations", "types")]
    again = [h.introspect(query=q) for q in ("operations", "types")]
    assert first == again
    assert detail(h, "create_task") == detail(h, "create_task")


def test_introspection_derived_from_operation_specs_REQ_INTRO_027(h):
    for info in ops_list(h)["operations"]:
        spec = h.engine.compiled(info["name"]).spec
        assert info == spec.list_info()


def test_active_profile_exposed_REQ_MODE_017(harness):
    assert ops_list(harness())["_protocol"]["profile"] == "crude"
    alt = ops_list(harness(adapter=make_alt_app()), "inventory_mcpaql_query")["_protocol"]
    assert alt["profile"] == "custom"
    assert alt["endpoints"] == {"query": "inventory_mcpaql_query", "manage": "inventory_mcpaql_manage"}


def test_example_requests_are_valid_operation_inputs_REQ_RSP_011(h):
    for info in ops_list(h)["operations"]:
        for example in detail(h, info["name"]).get("examples", ()):
            assert_valid_input(example["request"])


def test_items_carry_element_facets_without_name_or_required_REQ_INTRO_015():
    from mcpaql.protocol.schema import parameter_info

    enum_items = {"type": "array", "items": {"type": "string", "enum": ["a", "b"], "description": "a letter"}}
    assert parameter_info("letters", enum_items, False)["items"] == {
        "type": "string",
        "description": "a letter",
        "enum": ["a", "b"],
    }
    nested = {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}}
    assert parameter_info("grid", nested, True)["items"] == {"type": "integer[]", "items": {"type": "integer", "minimum": 0}}
    assert "items" not in parameter_info("ids", {"type": "array", "items": {"type": "integer"}}, True)
