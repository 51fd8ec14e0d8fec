"""The ``introspect`` operation (CORE §7; CHECKLIST Part C).

Everything is rendered once when the engine is built, from the operation specs (the single
source of truth, INTRO §6.1); a call only picks a precomputed payload and, for the
operations list, adds ``_protocol`` with this session's id. Responses are therefore
consistent within a session and across sessions until the configuration changes.
"""

from __future__ import annotations

from typing import Any

from .categories import Category
from .errors import MCPAQLError, invalid_type
from .operations import OperationSpec, ParamSpec, TypeRef, TypeSpec
from .schema import json_type_of

SPEC_VERSION = "1.0.0-draft"
QUERY_TYPES = ("operations", "types")

PROTOCOL_TYPES: tuple[TypeSpec, ...] = (
    TypeSpec("SemanticCategory", "enum", "Effect of an operation on state", tuple(c.value for c in Category)),
    TypeSpec(
        "OperationInput",
        "object",
        "The request every MCP-AQL tool takes",
        fields=(
            {"name": "operation", "type": "string", "required": True, "description": "The operation to perform"},
            {"name": "params", "type": "object", "required": False, "description": "Operation-specific parameters"},
        ),
    ),
    TypeSpec(
        "OperationSuccess",
        "object",
        "Successful result",
        fields=(
            {"name": "success", "type": "boolean", "required": True, "description": "Always true"},
            {"name": "data", "type": "any", "required": True, "description": "Operation result"},
            {"name": "warnings", "type": "Warning[]", "required": False, "description": "Non-fatal notices"},
        ),
    ),
    TypeSpec(
        "OperationFailure",
        "object",
        "Failed result",
        fields=(
            {"name": "success", "type": "boolean", "required": True, "description": "Always false"},
            {"name": "error", "type": "ErrorInfo", "required": True, "description": "{code, message, details?}"},
        ),
    ),
    TypeSpec(
        "ErrorInfo",
        "object",
        "Structured error",
        fields=(
            {"name": "code", "type": "string", "required": True, "description": "CATEGORY_SPECIFIC_CONDITION"},
            {"name": "message", "type": "string", "required": True, "description": "Human-readable message"},
            {"name": "details", "type": "object", "required": False, "description": "Machine-readable context"},
        ),
    ),
    TypeSpec(
        "Warning",
        "object",
        "Non-fatal notice on a success response (WARN §3)",
        fields=(
            {"name": "code", "type": "string", "required": True, "description": "CATEGORY_SPECIFIC_CONDITION"},
            {"name": "message", "type": "string", "required": True, "description": "Human-readable message"},
            {"name": "details", "type": "object", "required": False, "description": "Machine-readable context"},
            {"name": "severity", "type": "string", "required": False, "enum": ["low", "medium", "high"]},
        ),
    ),
    TypeSpec(
        "EndpointPermissions",
        "object",
        "Permission characteristics of an operation's category",
        fields=(
            {"name": "readOnly", "type": "boolean", "required": True},
            {"name": "destructive", "type": "boolean", "required": True},
        ),
    ),
    TypeSpec(
        "BatchRequest",
        "object",
        "Several operations in one call, run in order; send through any tool",
        fields=(
            {
                "name": "operation",
                "type": "string",
                "required": False,
                "enum": ["batch"],
                "description": "'batch' (optional; lets schema-validating clients send a batch)",
            },
            {"name": "operations", "type": "OperationInput[]", "required": True, "description": "1-100 requests"},
            {
                "name": "_stop_on_failure",
                "type": "boolean",
                "required": False,
                "default": False,
                "description": "Stop at the first failed item",
            },
        ),
    ),
    TypeSpec("OperationResult", "union", "Any operation's response", members=("OperationSuccess", "OperationFailure")),
    TypeSpec("DateTime", "scalar", "ISO 8601 date-time string, UTC with 'Z' suffix in responses"),
)


def check_query(value: Any, path: str) -> Any:
    """Checker for the built-in ``query`` parameter: type only. The ``enum`` stays in the
    documented schema, but an unsupported string must reach :meth:`Introspector.run` so the
    client gets ``INVALID_QUERY_TYPE`` (CHECKLIST C.10), not ``VALIDATION_INVALID_VALUE``."""
    if not isinstance(value, str):
        raise invalid_type(path, "string", json_type_of(value))
    return value


def introspect_spec(family: str) -> OperationSpec:
    """The built-in ``introspect`` operation on ``family``; its handler is bound by the engine."""
    return OperationSpec(
        name="introspect",
        category=Category.READ,
        endpoint=family,
        description="Discover available operations and types. Unknown names return null, not an error.",
        params=(
            ParamSpec(
                "query",
                {"type": "string", "enum": list(QUERY_TYPES)},
                required=True,
                description="What to list: 'operations' or 'types'",
            ),
            ParamSpec("name", {"type": "string"}, description="An operation or type name for its full detail"),
        ),
        returns=TypeRef("IntrospectionResult", "object", "operations/types list or one detail"),
        examples=(
            {"description": "List operations", "request": {"operation": "introspect", "params": {"query": "operations"}}},
            {
                "description": "Types list",
                "request": {"operation": "introspect", "params": {"query": "types"}},
            },
        ),
        context_param="ctx",
        is_async=True,
    )


class Introspector:
    """Precomputed introspection payloads for one engine."""

    def __init__(
        self,
        ops: list[OperationSpec],
        details: dict[str, dict[str, Any]],
        types: list[TypeSpec],
        protocol: dict[str, Any],
    ) -> None:
        self._ops_list = [op.list_info() for op in ops]
        self._details = details
        all_types: dict[str, TypeSpec] = {}
        for t in (*PROTOCOL_TYPES, *types):
            all_types.setdefault(t.name, t)
        self._types_list = [t.info() for t in all_types.values()]
        self._type_details = {name: t.detail() for name, t in all_types.items()}
        self._protocol = protocol

    def protocol(self, session_id: str) -> dict[str, Any]:
        return {**self._protocol, "session_id": session_id}

    def run(self, query: Any, name: Any, session_id: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
        if query not in QUERY_TYPES:
            raise MCPAQLError(
                "INVALID_QUERY_TYPE",
                f"Unknown query type: '{query}'. Supported types: {', '.join((*QUERY_TYPES, *extra))}",
            )
        if query == "operations":
            if name is None:
                return {"_protocol": self.protocol(session_id), "operations": self._ops_list}
            return {"operation": self._details.get(name)}
        if name is None:
            return {"types": self._types_list}
        return {"type": self._type_details.get(name)}
