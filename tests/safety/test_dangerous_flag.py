"""`OperationSpec.dangerous` (OPS §6.4, REQ-CLS-012) raises an operation's danger level, so the
gatekeeper asks for confirmation even where its category alone would not."""

from __future__ import annotations

import dataclasses

from mcpaql.protocol.categories import Category
from mcpaql.protocol.operations import OperationSpec
from mcpaql.safety.danger import DangerLevel, classify


def _spec(category: Category, dangerous: bool) -> OperationSpec:
    return OperationSpec(name="rotate_keys", category=category, description="Rotate keys.", dangerous=dangerous)


def test_REQ_CLS_012_dangerous_flag_raises_the_level() -> None:
    plain = classify(_spec(Category.UPDATE, False))
    marked = classify(_spec(Category.UPDATE, True))
    assert plain.level < DangerLevel.DANGEROUS
    assert marked.level == DangerLevel.DANGEROUS and marked.source == "declared"


def test_declared_level_still_wins_over_the_flag() -> None:
    spec = dataclasses.replace(_spec(Category.UPDATE, True), danger_level="reversible")
    assert classify(spec).level == DangerLevel.REVERSIBLE
