"""The error-code registry (src/mcpaql/protocol/errors.py; CHECKLIST Part B, MCPI §4.1)."""

from __future__ import annotations

import re

import pytest

from mcpaql.protocol import ERROR_CODES, MCPAQLError
from mcpaql.protocol.errors import (
    internal_error,
    invalid_type,
    is_recoverable,
    missing_param,
    not_found_operation,
    not_found_resource,
    payload_too_large,
)

PREFIXES = ("VALIDATION_", "NOT_FOUND_", "PERMISSION_", "CONFLICT_", "RATE_LIMIT_", "TOKEN_", "SCHEMA_", "INTERNAL_")
# B.3 codes used by the spec's docs/schemas outside the prefix scheme.
NON_PREFIXED = {"BATCH_VALIDATION_ERROR", "INVALID_QUERY_TYPE", "INTROSPECTION_ERROR", "CONFIRMATION_REQUIRED"}
RECOVERABLE = {  # MCPI §4.1.3 reference function, literally (CHECKLIST Part B "isError (MCPI)" column, Part F #18)
    "NOT_FOUND_RESOURCE",
    "NOT_FOUND_OPERATION",
    "VALIDATION_MISSING_PARAM",
    "VALIDATION_INVALID_TYPE",
    "PERMISSION_DENIED",
    "RATE_LIMIT_EXCEEDED",
    "CONFIRMATION_REQUIRED",
    "VALIDATION_INVALID_VALUE",
    "RATE_LIMIT_QUOTA_PAUSE",
}
B1 = {
    "VALIDATION_MISSING_PARAM",
    "VALIDATION_INVALID_TYPE",
    "VALIDATION_UNKNOWN_PARAM",
    "VALIDATION_INVALID_ENCODING",
    "VALIDATION_PAYLOAD_TOO_LARGE",
    "NOT_FOUND_OPERATION",
    "NOT_FOUND_RESOURCE",
    "PERMISSION_DENIED",
    "INTERNAL_ERROR",
    "PERMISSION_TRUST_LEVEL_INSUFFICIENT",
    "PERMISSION_DANGER_LEVEL_DENIED",
    "CONFIRMATION_REQUIRED",
    "RATE_LIMIT_EXCEEDED",
    "RATE_LIMIT_QUOTA_PAUSE",
    "RATE_LIMIT_QUOTA_EXHAUSTED",
    "TOKEN_INVALID",
    "TOKEN_EXPIRED",
    "TOKEN_ALREADY_USED",
    "TOKEN_SCOPE_MISMATCH",
}


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_codes_follow_the_naming_scheme_REQ_ERR_002(code):
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", code)
    assert code.startswith(PREFIXES) or code in NON_PREFIXED


def test_registry_holds_every_runtime_code_of_part_B1_REQ_ERR_001():
    assert set(ERROR_CODES) >= B1


@pytest.mark.parametrize("code", sorted(ERROR_CODES))
def test_recoverability_follows_MCPI_reference_REQ_MCP_015(code):
    assert is_recoverable(code) is (code in RECOVERABLE)


def test_unknown_codes_are_unrecoverable_REQ_MCP_015():
    assert is_recoverable("SOMETHING_ELSE") is False


def test_message_templates_REQ_ERR_004_REQ_ERR_005():
    assert missing_param("owner", "create_task").message == "Missing required parameter 'owner'"
    assert missing_param("owner").details == {"param_name": "owner"}
    e = invalid_type("limit", "integer", "string")
    assert e.message == "Parameter 'limit' expected 'integer', got 'string'"
    assert e.details == {"param_name": "limit", "expected_type": "integer", "actual_type": "string"}
    assert not_found_operation("x").message.startswith("Unknown operation: 'x'")
    assert not_found_operation("x", ["a"]).details == {"operation": "x", "available": ["a"]}
    assert not_found_resource("task", 5).message == "Resource 'task' not found: '5'"
    assert payload_too_large("request_size", 10, 11, "bytes").message == "Payload exceeds request_size limit of 10"
    assert internal_error("boom").message == "Internal error: 'boom'"


def test_error_to_dict_omits_empty_details_REQ_RSP_004():
    assert MCPAQLError("INTERNAL_ERROR", "x").to_error() == {"code": "INTERNAL_ERROR", "message": "x"}
    assert MCPAQLError("INTERNAL_ERROR", "x", {"a": 1}).to_error()["details"] == {"a": 1}


def test_http_status_mapping_REQ_VAL_021():
    assert ERROR_CODES["VALIDATION_UNKNOWN_PARAM"].http_status in (400, 422)
    assert ERROR_CODES["NOT_FOUND_RESOURCE"].http_status == 404
    assert ERROR_CODES["RATE_LIMIT_EXCEEDED"].http_status == 429
    assert ERROR_CODES["INTERNAL_ERROR"].http_status >= 500
