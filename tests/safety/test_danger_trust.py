"""Danger classification, trust levels and the gating matrix (REQ-DANGER-*, REQ-TRUST-*)."""

from __future__ import annotations

import pytest

from mcpaql.protocol.categories import Category
from mcpaql.protocol.operations import OperationSpec
from mcpaql.safety.danger import (
    ALLOW,
    CONFIRM,
    DENY,
    INTROSPECT_ONLY,
    DangerLevel,
    TrustLevel,
    classify,
    gate,
    minimum_trust,
)


def op(name: str, cat: Category, **kw) -> OperationSpec:
    return OperationSpec(name, cat, "x", **kw)


@pytest.mark.parametrize(
    ("cat", "level"),
    [
        (Category.READ, "safe"),
        (Category.CREATE, "reversible"),
        (Category.UPDATE, "reversible"),
        (Category.DELETE, "destructive"),
        (Category.EXECUTE, "reversible"),
    ],
)
def test_REQ_DANGER_004_category_defaults_part_f_13(cat: Category, level: str) -> None:
    assert classify(op("do_it", cat)).level.label == level


@pytest.mark.parametrize(
    ("name", "level"),
    [
        ("force_push", "dangerous"),
        ("remove_permanently", "dangerous"),
        ("bulk_delete_users", "dangerous"),
        ("purge_logs", "dangerous"),
        ("drop_table", "forbidden"),
        ("delete_all_users", "forbidden"),
        ("truncate_table", "forbidden"),
        ("deploy_production", "forbidden"),
        ("wipe_data", "forbidden"),
    ],
)
def test_REQ_DANGER_012_name_patterns(name: str, level: str) -> None:
    d = classify(op(name, Category.EXECUTE))
    assert d.level.label == level and d.source == "pattern" and d.reasons


def test_REQ_DANGER_013_highest_pattern_wins_and_declaration_overrides() -> None:
    assert classify(op("force_delete_all", Category.DELETE)).level is DangerLevel.DANGEROUS  # force_* only
    assert classify(op("force_drop_x", Category.DELETE)).level is DangerLevel.DANGEROUS
    assert classify(op("drop_force", Category.DELETE)).level is DangerLevel.FORBIDDEN
    declared = classify(op("force_sync", Category.EXECUTE, danger_level="safe"))
    assert declared.level is DangerLevel.SAFE and declared.source == "declared"
    block = classify(
        op(
            "x",
            Category.READ,
            extensions={"danger": {"level": "dangerous", "reasons": ["r"], "confirmation_message": "Kill {x}?"}},
        )
    )
    assert block.level is DangerLevel.DANGEROUS and block.reasons == ("r",)
    assert block.message("x", {"x": "y", "_confirmation": "c"}) == "Kill y?"
    assert classify(op("drop_x", Category.READ), {"drop_x": "reversible"}).level is DangerLevel.REVERSIBLE


def test_REQ_DANGER_012_safe_patterns_never_lower_a_category_default() -> None:
    assert classify(op("get_and_delete", Category.DELETE)).level is DangerLevel.DESTRUCTIVE


def test_REQ_DANGER_012_patterns_can_be_disabled() -> None:
    assert classify(op("drop_table", Category.DELETE), use_patterns=False).level is DangerLevel.DESTRUCTIVE


def test_REQ_DANGER_001_002_parse_levels_and_bad_inputs() -> None:
    assert DangerLevel.parse("Destructive") is DangerLevel.DESTRUCTIVE
    assert DangerLevel.parse(3) is DangerLevel.DANGEROUS
    assert DangerLevel.parse({"level": "forbidden"}) is DangerLevel.FORBIDDEN
    for bad in ("catastrophic", 5, -1, True, None, {"lvl": "safe"}):
        with pytest.raises(ValueError, match="unknown danger level"):
            DangerLevel.parse(bad)


def test_REQ_TRUST_001_009_trust_vocabularies_default_and_bad_values() -> None:
    assert TrustLevel.parse(None) is TrustLevel.UNTESTED
    assert TrustLevel.parse("community_reviewed") is TrustLevel.COMMUNITY_REVIEWED
    assert TrustLevel.parse({"level": "validated"}) is TrustLevel.VALIDATED
    # adapter-schema vocabulary (Part F #11)
    assert [TrustLevel.parse(v) for v in ("untrusted", "low", "medium", "high", "verified")] == list(TrustLevel)
    for bad in ("trusted", "", 3, {"level": "x"}):
        with pytest.raises(ValueError, match="unknown trust level"):
            TrustLevel.parse(bad)


MATRIX_ROWS = {
    "safe": (INTROSPECT_ONLY, ALLOW, ALLOW, ALLOW, ALLOW),
    "reversible": (DENY, DENY, ALLOW, ALLOW, ALLOW),
    "destructive": (DENY, DENY, CONFIRM, ALLOW, ALLOW),
    "dangerous": (DENY, DENY, DENY, CONFIRM, ALLOW),
    "forbidden": (DENY, DENY, DENY, DENY, CONFIRM),
}


@pytest.mark.parametrize("danger", list(MATRIX_ROWS))
def test_REQ_DANGER_011_gating_matrix(danger: str) -> None:
    assert tuple(gate(t, DangerLevel.parse(danger)) for t in TrustLevel) == MATRIX_ROWS[danger]


def test_REQ_DANGER_009_minimum_trust() -> None:
    assert [minimum_trust(d).label for d in DangerLevel] == [
        "generated",
        "validated",
        "validated",
        "community_reviewed",
        "certified",
    ]
