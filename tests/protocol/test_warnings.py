"""Standard warning builders (REQ-WARN-003/005/006/012; Part F #22)."""

from __future__ import annotations

import re
from datetime import date

import pytest

from mcpaql.protocol import warnings as W
from mcpaql.protocol.context import Context
from mcpaql.protocol.envelope import success
from mcpaql.protocol.session import Session

CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")


def _shape(w: dict) -> None:
    assert set(w) <= {"code", "message", "details", "severity"}
    assert CODE.match(w["code"]) and w["message"] and isinstance(w["details"], dict)
    assert w["severity"] in ("low", "medium", "high")


def test_req_warn_012_truncation_severity() -> None:
    low = W.truncated("results", 150, 100, 100)
    med = W.truncated("results", 1523, 100, 100)
    assert (low["severity"], med["severity"]) == ("low", "medium")
    assert med == {
        "code": "VALIDATION_TRUNCATED_WARNING",
        "message": "Response truncated to 100 items",
        "details": {"field": "results", "original_count": 1523, "truncated_count": 100, "limit": 100},
        "severity": "medium",
    }
    _shape(low)


@pytest.mark.parametrize(("removal", "severity"), [(None, "low"), ("2026-02-01", "high"), ("2026-06-01", "medium")])
def test_req_warn_012_part_f_22_deprecation(removal: str | None, severity: str) -> None:
    w = W.deprecation("operation", "list_old", replacement="list_new", removal_date=removal, today=date(2026, 1, 15))
    _shape(w)
    assert w["severity"] == severity
    assert w["details"]["type"] == "operation" and w["details"]["deprecated_item"] == "list_old"
    assert w["details"]["deprecated_operation"] == "list_old"  # the §2.2 example's key too
    assert w["message"] == "Operation 'list_old' is deprecated; use 'list_new' instead"
    with pytest.raises(ValueError):
        W.deprecation("widget", "x")


@pytest.mark.parametrize(("ms", "severity"), [(1500, "low"), (3000, "medium"), (20000, "high")])
def test_req_warn_012_slow_query(ms: float, severity: str) -> None:
    w = W.slow_query("search", ms, 1000, ["add a filter"])
    _shape(w)
    assert w["severity"] == severity and w["details"]["suggestions"] == ["add a filter"]


def test_req_warn_009_emit_and_collapse() -> None:
    ctx = Context(Session())
    for _ in range(3):
        W.emit(ctx, W.param_ignored(["sort"], "summary_only", "Ignored sort"))
    env = success({}, ctx.warnings)
    (w,) = env["warnings"]
    assert w["details"]["occurrence_count"] == 3
    _shape(w)
