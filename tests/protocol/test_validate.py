"""Schema checkers (src/mcpaql/protocol/validate.py; OPS §5.2, §5.4)."""

from __future__ import annotations

import pytest

from mcpaql.protocol.errors import MCPAQLError
from mcpaql.protocol.validate import compile_schema


def fails(schema: dict, value, code: str, **details) -> MCPAQLError:
    with pytest.raises(MCPAQLError) as exc:
        compile_schema(schema)(value, "p")
    assert exc.value.code == code
    for k, v in details.items():
        assert exc.value.details[k] == v
    return exc.value


@pytest.mark.parametrize(
    ("schema", "good", "bad", "actual"),
    [
        ({"type": "string"}, "a", 1, "integer"),
        ({"type": "integer"}, 3, "3", "string"),
        ({"type": "number"}, 1.5, None, "null"),
        ({"type": "boolean"}, False, 0, "integer"),
        ({"type": "object"}, {}, [], "array"),
        ({"type": "array"}, [], {}, "object"),
    ],
)
def test_json_types_REQ_VAL_006_REQ_VAL_009(schema, good, bad, actual):
    assert compile_schema(schema)(good, "p") == good
    fails(schema, bad, "VALIDATION_INVALID_TYPE", expected_type=schema["type"], actual_type=actual)


def test_integer_accepts_integral_float_and_normalises():
    assert compile_schema({"type": "integer"})(4.0, "p") == 4
    fails({"type": "integer"}, 4.5, "VALIDATION_INVALID_TYPE")
    fails({"type": "integer"}, float("nan"), "VALIDATION_INVALID_TYPE")


@pytest.mark.parametrize(
    ("schema", "bad", "constraint"),
    [
        ({"type": "string", "enum": ["a", "b"]}, "c", "enum"),
        ({"type": "integer", "minimum": 1}, 0, "minimum"),
        ({"type": "integer", "maximum": 5}, 6, "maximum"),
        ({"type": "number", "exclusiveMinimum": 0}, 0, "exclusiveMinimum"),
        ({"type": "number", "exclusiveMaximum": 1}, 1, "exclusiveMaximum"),
        ({"type": "string", "pattern": "^[a-z]+$"}, "A", "pattern"),
        ({"type": "string", "minLength": 2}, "a", "minLength"),
        ({"type": "string", "maxLength": 2}, "abc", "maxLength"),
        ({"type": "array", "minItems": 1}, [], "minItems"),
        ({"type": "array", "maxItems": 1}, [1, 2], "maxItems"),
        ({"type": "array", "uniqueItems": True}, [1, 1], "uniqueItems"),
        ({"type": "string", "format": "date-time"}, "yesterday", "format"),
        ({"type": "string", "format": "date"}, "2026-13-01", "format"),
        ({"const": "x"}, "y", "const"),
    ],
)
def test_constraints_REQ_VAL_007_REQ_VAL_010(schema, bad, constraint):
    fails(schema, bad, "VALIDATION_INVALID_VALUE", constraint=constraint, param_name="p")


def test_enum_does_not_confuse_bool_and_int_REQ_VAL_010():
    fails({"enum": [1, 2]}, True, "VALIDATION_INVALID_VALUE")
    assert compile_schema({"enum": [True, 1]})(True, "p") is True


@pytest.mark.parametrize("value", ["2026-02-04", "2026-02-04T10:30:00Z", "2026-02-04T10:30:00+05:30"])
def test_iso8601_dates_accepted_REQ_VAL_025(value):
    fmt = "date" if len(value) == 10 else "date-time"
    assert compile_schema({"type": "string", "format": fmt})(value, "p") == value


def test_nested_object_paths_REQ_VAL_009():
    schema = {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}},
        "required": ["a"],
    }
    check = compile_schema(schema)
    assert check({"a": {"b": 1}}, "p") == {"a": {"b": 1}}
    fails(schema, {}, "VALIDATION_MISSING_PARAM", param_name="p.a")
    fails(schema, {"a": {"b": "x"}}, "VALIDATION_INVALID_TYPE", param_name="p.a.b")


def test_closed_objects_reject_unknown_fields():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    fails(schema, {"a": "x", "z": 1}, "VALIDATION_UNKNOWN_FIELD", unknown_fields=["z"], valid_fields=["a"])
    open_schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert compile_schema(open_schema)({"a": "x", "z": 1}, "p") == {"a": "x", "z": 1}
    with pytest.raises(MCPAQLError):
        compile_schema(open_schema, closed_objects=True)({"a": "x", "z": 1}, "p")


def test_union_reports_most_specific_failure():
    schema = {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "null"}]}
    assert compile_schema(schema)(None, "p") is None
    fails(schema, 1, "VALIDATION_INVALID_VALUE", constraint="minimum")
    fails(schema, "x", "VALIDATION_INVALID_TYPE")


def test_array_items_are_checked_with_index_paths():
    fails({"type": "array", "items": {"type": "string"}}, ["a", 2], "VALIDATION_INVALID_TYPE", param_name="p[1]")


def test_invalid_pattern_in_schema_is_ignored_not_crashing():
    assert compile_schema({"type": "string", "pattern": "("})("x", "p") == "x"
