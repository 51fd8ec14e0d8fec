"""The error-code registry and the one exception type the core raises.

Every failure inside the pipeline is an :class:`MCPAQLError` carrying ``(code, message,
details)``; :mod:`mcpaql.protocol.dispatch` turns it into a failure envelope in exactly one
place. Codes, message templates and recoverability follow CHECKLIST Part B; recoverability
drives ``CallToolResult.isError`` (MCPI §4.1.3: recoverable → ``isError: false``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One registered code: recoverable codes are domain errors an agent can fix itself."""

    code: str
    recoverable: bool
    http_status: int
    meaning: str


_CODES: tuple[ErrorCode, ...] = (
    # Validation (MVP + documented extensions)
    ErrorCode("VALIDATION_MISSING_PARAM", True, 400, "Required parameter not provided"),
    ErrorCode("VALIDATION_INVALID_TYPE", True, 400, "Parameter has the wrong type"),
    ErrorCode("VALIDATION_INVALID_VALUE", True, 400, "Value violates a declared constraint"),
    ErrorCode("VALIDATION_UNKNOWN_PARAM", False, 400, "Parameter not defined by the operation"),
    ErrorCode("VALIDATION_UNKNOWN_FIELD", False, 400, "Field not defined by the resource schema"),
    ErrorCode("VALIDATION_INVALID_ENCODING", False, 400, "Invalid character encoding in request"),
    ErrorCode("VALIDATION_PAYLOAD_TOO_LARGE", False, 413, "Request or response exceeds a size limit"),
    # Part F #3/#18: structured, names the right tool; outside MCPI §4.1.3's list → isError true.
    ErrorCode("VALIDATION_ENDPOINT_MISMATCH", False, 400, "Operation sent to the wrong endpoint"),
    ErrorCode("VALIDATION_ERROR", False, 400, "Malformed request"),
    ErrorCode("VALIDATION_READ_ONLY_FIELD", False, 400, "Attempt to change a read-only field"),
    ErrorCode("BATCH_VALIDATION_ERROR", False, 400, "Malformed batch request"),
    ErrorCode("INVALID_QUERY_TYPE", False, 400, "Unsupported introspection query"),
    # Not found
    ErrorCode("NOT_FOUND_OPERATION", True, 404, "Requested operation does not exist"),  # Part F #4
    ErrorCode("NOT_FOUND_RESOURCE", True, 404, "Target resource not found"),
    # Permission
    ErrorCode("PERMISSION_DENIED", True, 403, "Access denied"),
    ErrorCode("PERMISSION_TRUST_LEVEL_INSUFFICIENT", False, 403, "Adapter trust below the minimum"),
    ErrorCode("PERMISSION_DANGER_LEVEL_DENIED", False, 403, "Danger level exceeds what trust allows"),
    ErrorCode("CONFIRMATION_REQUIRED", True, 403, "Dangerous operation needs confirmation"),
    # Conflict
    ErrorCode("CONFLICT_ALREADY_EXISTS", False, 409, "Resource already exists"),
    ErrorCode("CONFLICT_VERSION_MISMATCH", False, 409, "Optimistic-concurrency precondition failed"),
    # Rate limits
    ErrorCode("RATE_LIMIT_EXCEEDED", True, 429, "Rate limit reached"),
    ErrorCode("RATE_LIMIT_QUOTA_PAUSE", True, 429, "Quota pause threshold reached"),
    ErrorCode("RATE_LIMIT_QUOTA_EXHAUSTED", False, 429, "Quota hard stop reached"),
    # Tokens
    ErrorCode("TOKEN_INVALID", False, 400, "Confirmation token unknown or malformed"),
    ErrorCode("TOKEN_EXPIRED", False, 400, "Confirmation token expired"),
    ErrorCode("TOKEN_ALREADY_USED", False, 400, "Confirmation token already used"),
    ErrorCode("TOKEN_SCOPE_MISMATCH", False, 403, "Confirmation token issued for another call"),
    # Internal
    ErrorCode("INTERNAL_ERROR", False, 500, "Unexpected failure"),
    ErrorCode("INTROSPECTION_ERROR", False, 500, "Introspection failed"),
)

REGISTRY: dict[str, ErrorCode] = {c.code: c for c in _CODES}


def is_recoverable(code: str) -> bool:
    """Unknown codes are treated as unrecoverable, as MCPI §4.1.3's reference function does."""
    entry = REGISTRY.get(code)
    return entry.recoverable if entry else False


class MCPAQLError(Exception):
    """The single exception type of the protocol core: a structured, client-safe failure.

    ``message`` is shown to the model, so it must never contain tracebacks, file paths or
    class names; ``details`` carries the machine-readable context.
    """

    __slots__ = ("code", "details", "message")

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            err["details"] = self.details
        return err


# ---- constructors for the common cases: one message template per code (ERR §4) -----------


def missing_param(
    name: str,
    operation: str | None = None,
    expected: str | None = None,
    *,
    description: str | None = None,
    missing: list[str] | None = None,
) -> MCPAQLError:
    """VALIDATION_MISSING_PARAM naming every missing parameter in the message (REQ-ERR-005).

    Only names and the type label are quoted into the message; free text (a parameter's
    description) goes to ``details.description`` — quoted into a message it could read like
    leaked internals to a client (the spec runner matches ``/at\\s+\\S+/i``)."""
    names = missing if missing and len(missing) > 1 else [name]
    msg = f"Missing required parameters: {repr_list(names)}"
    if len(names) == 1:
        msg = f"Missing required parameter '{name}'" + (f" (expected '{expected}')" if expected else "")
    details: dict[str, Any] = {"param_name": name}
    if operation:
        details["operation"] = operation
    if expected:
        details["expected_type"] = expected
    if description:
        details["description"] = description
    if len(names) > 1:
        details["missing_params"] = names
    return MCPAQLError("VALIDATION_MISSING_PARAM", msg, details)


def repr_q(value: Any) -> str:
    """A dynamic value as messages show it: in single quotes (REQ-ERR-005)."""
    return f"'{value}'"


def repr_list(values: Any) -> str:
    """Names as messages list them: each in single quotes, comma separated."""
    return ", ".join(repr_q(v) for v in values)


def invalid_type(name: str, expected: str, actual: str) -> MCPAQLError:
    return MCPAQLError(
        "VALIDATION_INVALID_TYPE",
        f"Parameter '{name}' expected '{expected}', got '{actual}'",
        {"param_name": name, "expected_type": expected, "actual_type": actual},
    )


def invalid_value(name: str, constraint: str, message: str, **extra: Any) -> MCPAQLError:
    return MCPAQLError(
        "VALIDATION_INVALID_VALUE",
        f"Parameter '{name}' {message}",
        {"param_name": name, "constraint": constraint, **extra},
    )


def not_found_operation(name: str, available: list[str] | None = None) -> MCPAQLError:
    details: dict[str, Any] = {"operation": name}
    if available is not None:
        details["available"] = available
    hint = " Call introspect with query 'operations' to list valid operations."
    return MCPAQLError("NOT_FOUND_OPERATION", f"Unknown operation: '{name}'.{hint}", details)


def not_found_resource(resource_type: str, resource_id: Any) -> MCPAQLError:
    return MCPAQLError(
        "NOT_FOUND_RESOURCE",
        f"Resource '{resource_type}' not found: '{resource_id}'",
        {"resource_type": resource_type, "resource_id": str(resource_id)},
    )


def payload_too_large(limit_type: str, limit_value: int, actual_value: int, unit: str) -> MCPAQLError:
    return MCPAQLError(
        "VALIDATION_PAYLOAD_TOO_LARGE",
        f"Payload exceeds {limit_type} limit of {limit_value}",
        {"limit_type": limit_type, "limit_value": limit_value, "actual_value": actual_value, "unit": unit},
    )


def internal_error(description: str = "the operation failed unexpectedly", details: dict[str, Any] | None = None) -> MCPAQLError:
    """INTERNAL_ERROR in its one message form; ``details`` says what failed (``retryable``,
    the operation, the upstream) without putting it in the message."""
    return MCPAQLError("INTERNAL_ERROR", f"Internal error: '{description}'", details)
