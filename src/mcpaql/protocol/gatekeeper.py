"""The gatekeeper: an operation goes only through its own endpoint family, and only if its
semantic category is allowed on this server — in every mode, batch items included.

Semantic-mode mismatches name the right tool (MODES §4.6, Part F #3). Single mode has no
endpoint to match but still enforces category permissions (OVW "Single Mode").
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import MCPAQLError
from .operations import OperationSpec


def check_endpoint(op: OperationSpec, family: str | None, tool_for_family: Mapping[str, str], this_tool: str) -> None:
    if family is None or op.family == family:
        return
    right = tool_for_family.get(op.family, op.family)
    raise MCPAQLError(
        "VALIDATION_ENDPOINT_MISMATCH",
        f"Operation '{op.name}' must be called via '{right}', not '{this_tool}'",
        {"operation": op.name, "expected_endpoint": right, "actual_endpoint": this_tool},
    )


def check_category(op: OperationSpec, allowed: frozenset[str]) -> None:
    if op.category.value not in allowed:
        raise MCPAQLError(
            "PERMISSION_DENIED",
            f"Permission denied: '{op.category.value} operations are disabled on this server'",
            {"reason": "category_disabled", "operation": op.name, "semantic_category": op.category.value},
        )
