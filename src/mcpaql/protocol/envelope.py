"""Discriminated response envelopes (CORE §5.1; CHECKLIST REQ-RSP-005..007).

Success: ``{success: true, data, warnings?, _meta?}``. Failure: ``{success: false,
error: {code, message, details?}}`` and nothing else (no ``_meta``/``warnings``: Part F #6).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import MCPAQLError, is_recoverable

MAX_WARNINGS = 10  # WARN §6.4


def success(data: Any, warnings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    env: dict[str, Any] = {"success": True, "data": data}
    if warnings:
        env["warnings"] = collapse_warnings(warnings)
    return env


def failure(err: MCPAQLError, *, with_details: bool = True) -> dict[str, Any]:
    error = err.to_error()
    if not with_details:
        error.pop("details", None)
    env: dict[str, Any] = {"success": False, "error": error}
    confirmation = getattr(err, "confirmation", None)  # Part F #7: schema-valid top-level mirror
    if confirmation:
        env["confirmation"] = confirmation
    return env


def collapse_warnings(warnings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Collapse exact duplicates (code + details) with an ``occurrence_count`` and keep at most
    ten, high severity first (WARN §6.4–6.5)."""
    seen: dict[str, dict[str, Any]] = {}
    for w in warnings:
        key = json.dumps([w.get("code"), w.get("details")], sort_keys=True, default=str)
        if key in seen:
            d = seen[key].setdefault("details", {})
            d["occurrence_count"] = d.get("occurrence_count", 1) + 1
        else:
            seen[key] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in w.items()}
    out = list(seen.values())
    if len(out) > MAX_WARNINGS:
        rank = {"high": 0, "medium": 1, None: 1, "low": 2}
        out.sort(key=lambda w: rank.get(w.get("severity"), 1))
        out = out[:MAX_WARNINGS]
    return out


def is_error(envelope: dict[str, Any]) -> bool:
    """``CallToolResult.isError`` for an envelope (MCPI §4.1)."""
    if envelope.get("success") is True:
        return False
    code = (envelope.get("error") or {}).get("code", "INTERNAL_ERROR")
    return not is_recoverable(code)
