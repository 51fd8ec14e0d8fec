"""Response envelopes (src/mcpaql/protocol/envelope.py; CORE §5.1, S:operation-result)."""

from __future__ import annotations

import pytest

from aql_support import assert_valid_envelope
from mcpaql.protocol import MCPAQLError, failure, is_error, success
from mcpaql.protocol.envelope import MAX_WARNINGS, collapse_warnings


def test_success_shape_REQ_RSP_001_REQ_RSP_002():
    for data in (None, 0, "", [], {}, {"a": [1, 2]}):
        env = success(data)
        assert env == {"success": True, "data": data}
        assert_valid_envelope(env)


def test_failure_shape_REQ_RSP_003_REQ_RSP_007():
    env = failure(MCPAQLError("NOT_FOUND_RESOURCE", "Resource 'task' not found: 't1'", {"resource_id": "t1"}))
    assert env == {
        "success": False,
        "error": {"code": "NOT_FOUND_RESOURCE", "message": "Resource 'task' not found: 't1'", "details": {"resource_id": "t1"}},
    }
    assert_valid_envelope(env)
    bare = failure(MCPAQLError("INVALID_QUERY_TYPE", "m", {"x": 1}), with_details=False)
    assert bare == {"success": False, "error": {"code": "INVALID_QUERY_TYPE", "message": "m"}}


def test_warnings_only_on_success_REQ_RSP_005_REQ_RSP_006():
    env = success({"a": 1}, [{"code": "DEPRECATION_WARNING", "message": "old"}])
    assert env["warnings"] == [{"code": "DEPRECATION_WARNING", "message": "old"}]
    assert_valid_envelope(env)
    assert "warnings" not in success(1, [])


def test_duplicate_warnings_collapse_and_cap():
    w = {"code": "VALIDATION_TRUNCATED_WARNING", "message": "cut", "details": {"field": "items"}}
    out = collapse_warnings([w, w, w])
    assert out == [
        {"code": "VALIDATION_TRUNCATED_WARNING", "message": "cut", "details": {"field": "items", "occurrence_count": 3}}
    ]
    assert w["details"] == {"field": "items"}  # inputs are not mutated
    many = [{"code": f"W_{i}", "message": "m", "severity": "high" if i == 20 else "low"} for i in range(25)]
    capped = collapse_warnings(many)
    assert len(capped) == MAX_WARNINGS and capped[0]["code"] == "W_20"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("NOT_FOUND_RESOURCE", False),
        ("NOT_FOUND_OPERATION", False),
        ("VALIDATION_MISSING_PARAM", False),
        ("VALIDATION_INVALID_TYPE", False),
        ("VALIDATION_INVALID_VALUE", False),
        ("PERMISSION_DENIED", False),
        ("RATE_LIMIT_EXCEEDED", False),
        ("RATE_LIMIT_QUOTA_PAUSE", False),
        ("CONFIRMATION_REQUIRED", False),
        ("VALIDATION_UNKNOWN_PARAM", True),
        ("VALIDATION_ENDPOINT_MISMATCH", True),
        ("VALIDATION_INVALID_ENCODING", True),
        ("VALIDATION_PAYLOAD_TOO_LARGE", True),
        ("INTERNAL_ERROR", True),
        ("TOKEN_EXPIRED", True),
        ("NOT_A_REGISTERED_CODE", True),
    ],
)
def test_is_error_mapping_REQ_MCP_015(code, expected):
    assert is_error(failure(MCPAQLError(code, "m"))) is expected


def test_success_is_never_is_error_REQ_MCP_015():
    assert is_error(success(None)) is False
    assert is_error({"success": False}) is True  # malformed failure → treated as internal
