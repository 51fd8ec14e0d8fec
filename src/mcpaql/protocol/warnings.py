"""Builders for the spec's standard warning codes (WARN §4; CHECKLIST B.4, Part F #22).

Each helper returns a warning dict ``{code, message, details, severity}`` with the severity
the spec recommends for the condition, so the same condition always gets the same severity
(REQ-WARN-005). Attach it with ``ctx.warnings.append(w)`` or :func:`emit`. Never used for
failures: warnings only ride on success envelopes (REQ-WARN-001).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

DEPRECATION = "DEPRECATION_WARNING"
TRUNCATED = "VALIDATION_TRUNCATED_WARNING"
SLOW_QUERY = "PERFORMANCE_SLOW_QUERY_WARNING"
QUOTA = "RATE_LIMIT_QUOTA_WARNING"
# Project code (VALIDATION_ category, WARN §3.4): an accepted control had no effect, so the
# client is told what was actually applied instead of it being silently ignored (CQ §5(4-5)).
PARAM_IGNORED = "VALIDATION_PARAM_IGNORED_WARNING"


def _warning(code: str, message: str, details: dict[str, Any], severity: str) -> dict[str, Any]:
    return {"code": code, "message": message, "details": details, "severity": severity}


def truncated(field: str, original_count: int, truncated_count: int, limit: int) -> dict[str, Any]:
    """``VALIDATION_TRUNCATED_WARNING``: medium when more than half was cut, else low (WARN §4.3)."""
    lost = original_count - truncated_count
    severity = "medium" if original_count and lost / original_count > 0.5 else "low"
    return _warning(
        TRUNCATED,
        f"Response truncated to {limit} items",
        {"field": field, "original_count": original_count, "truncated_count": truncated_count, "limit": limit},
        severity,
    )


def page_size_clamped(param: str, requested: int, maximum: int) -> dict[str, Any]:
    """A page size above the operation's maximum was clamped, not rejected (PAG §5.3)."""
    w = truncated(param, requested, maximum, maximum)
    w["message"] = f"Page size {requested} exceeds the maximum; '{param}' was clamped to {maximum}"
    return w


def deprecation(
    kind: str,
    item: str,
    *,
    replacement: str | None = None,
    removal_date: str | date | None = None,
    migration_guide: str | None = None,
    today: date | None = None,
) -> dict[str, Any]:
    """``DEPRECATION_WARNING`` with the §4.2 details (Part F #22: ``type`` + ``deprecated_item``;
    operations also get ``deprecated_operation``, the §2.2 example's key). Severity: high within
    30 days of removal, medium further out, low without a date."""
    if kind not in ("operation", "parameter", "feature"):
        raise ValueError("kind must be 'operation', 'parameter' or 'feature'")
    details: dict[str, Any] = {"type": kind, "deprecated_item": item}
    if kind == "operation":
        details["deprecated_operation"] = item
    severity = "low"
    if replacement:
        details["replacement"] = replacement
    if removal_date is not None:
        removal = removal_date if isinstance(removal_date, date) else date.fromisoformat(str(removal_date)[:10])
        details["removal_date"] = removal.isoformat()
        days = (removal - (today or datetime.now(UTC).date())).days
        severity = "high" if days <= 30 else "medium"
    if migration_guide:
        details["migration_guide"] = migration_guide
    message = f"{kind.capitalize()} '{item}' is deprecated"
    if replacement:
        message += f"; use '{replacement}' instead"
    return _warning(DEPRECATION, message, details, severity)


def slow_query(operation: str, duration_ms: float, threshold_ms: float, suggestions: list[str] | None = None) -> dict[str, Any]:
    """``PERFORMANCE_SLOW_QUERY_WARNING``: high above 10x the threshold, medium 2-10x, low below."""
    ratio = duration_ms / threshold_ms if threshold_ms else float("inf")
    severity = "high" if ratio > 10 else "medium" if ratio >= 2 else "low"
    details: dict[str, Any] = {"operation": operation, "duration_ms": round(duration_ms), "threshold_ms": threshold_ms}
    if suggestions:
        details["suggestions"] = list(suggestions)
    return _warning(SLOW_QUERY, f"Operation '{operation}' took {round(duration_ms)}ms", details, severity)


def param_ignored(params: list[str], reason: str, message: str) -> dict[str, Any]:
    """A supplied control had no effect (e.g. ``sort`` in summary-only aggregation, AGG §4)."""
    return _warning(PARAM_IGNORED, message, {"params": list(params), "reason": reason}, "low")


def emit(ctx: Any, warning: dict[str, Any]) -> None:
    """Append ``warning`` to a :class:`~mcpaql.protocol.context.Context` (or any object with ``warnings``)."""
    ctx.warnings.append(warning)
