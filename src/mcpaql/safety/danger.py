"""Danger levels, adapter trust levels and the trust×danger gating matrix (DANGER §2–§6,
TRUST §2–§5; CHECKLIST REQ-DANGER-*, REQ-TRUST-*).

An operation's danger is, in order: an explicit declaration (``OperationSpec.danger_level``
or ``extensions["danger"]``; it overrides pattern inference, DANGER §5.3), else the highest
of its category default (Part F #13: READ safe, CREATE/UPDATE/EXECUTE reversible, DELETE
destructive) and any matching dangerous/forbidden name pattern (DANGER §5.1, highest wins).
Safe patterns (``get_*`` …) never *lower* a category default.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ..protocol.categories import Category
from ..protocol.operations import OperationSpec


class DangerLevel(IntEnum):
    SAFE = 0
    REVERSIBLE = 1
    DESTRUCTIVE = 2
    DANGEROUS = 3
    FORBIDDEN = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: Any) -> DangerLevel:
        if isinstance(value, DangerLevel):
            return value
        if isinstance(value, dict):
            value = value.get("level")
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 4:
            return cls(value)
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(f"unknown danger level {value!r}: use safe, reversible, destructive, dangerous or forbidden")


class TrustLevel(IntEnum):
    UNTESTED = 0
    GENERATED = 1
    VALIDATED = 2
    COMMUNITY_REVIEWED = 3
    CERTIFIED = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, value: Any) -> TrustLevel:
        """Accepts both vocabularies (Part F #11): TRUST's and adapter-schema's
        ``untrusted|low|medium|high|verified``. ``None`` (no trust block) is ``untested``
        (REQ-TRUST-009); anything else unknown is rejected."""
        if value is None:
            return cls.UNTESTED
        if isinstance(value, TrustLevel):
            return value
        if isinstance(value, dict):
            return cls.parse(value.get("level"))
        if isinstance(value, str):
            v = value.strip().lower()
            v = _SCHEMA_TRUST.get(v, v)
            if v.upper() in cls.__members__:
                return cls[v.upper()]
        raise ValueError(f"unknown trust level {value!r}: use untested, generated, validated, community_reviewed or certified")


_SCHEMA_TRUST = {
    "untrusted": "untested",
    "low": "generated",
    "medium": "validated",
    "high": "community_reviewed",
    "verified": "certified",
}

CATEGORY_DEFAULT: dict[Category, DangerLevel] = {
    Category.READ: DangerLevel.SAFE,
    Category.CREATE: DangerLevel.REVERSIBLE,
    Category.UPDATE: DangerLevel.REVERSIBLE,
    Category.DELETE: DangerLevel.DESTRUCTIVE,
    Category.EXECUTE: DangerLevel.REVERSIBLE,
}

DANGER_PATTERNS: dict[DangerLevel, tuple[str, ...]] = {
    DangerLevel.DANGEROUS: ("force_*", "*_permanently", "bulk_delete*", "override_*", "bypass_*", "*_without_backup", "purge_*"),
    DangerLevel.FORBIDDEN: ("drop_*", "delete_all*", "truncate_*", "reset_*", "destroy_*", "wipe_*", "*_production"),
}
SAFE_PATTERNS: tuple[str, ...] = ("get_*", "list_*", "search_*", "count_*", "check_*", "introspect*")

# DANGER §4.1: rows danger, columns trust. "introspect_only" blocks all but introspect.
ALLOW, CONFIRM, DENY, INTROSPECT_ONLY = "allow", "confirm", "deny", "introspect_only"
MATRIX: dict[DangerLevel, tuple[str, str, str, str, str]] = {
    DangerLevel.SAFE: (INTROSPECT_ONLY, ALLOW, ALLOW, ALLOW, ALLOW),
    DangerLevel.REVERSIBLE: (DENY, DENY, ALLOW, ALLOW, ALLOW),
    DangerLevel.DESTRUCTIVE: (DENY, DENY, CONFIRM, ALLOW, ALLOW),
    DangerLevel.DANGEROUS: (DENY, DENY, DENY, CONFIRM, ALLOW),
    DangerLevel.FORBIDDEN: (DENY, DENY, DENY, DENY, CONFIRM),
}


def gate(trust: TrustLevel, danger: DangerLevel) -> str:
    return MATRIX[danger][trust]


def minimum_trust(danger: DangerLevel) -> TrustLevel:
    """The lowest trust at which ``danger`` is not denied outright."""
    for t in TrustLevel:
        if MATRIX[danger][t] in (ALLOW, CONFIRM):
            return t
    return TrustLevel.CERTIFIED


def glob(pattern: str, text: str) -> bool:
    return fnmatch.fnmatchcase(text.lower(), pattern.lower())


def pattern_level(name: str) -> tuple[DangerLevel | None, str | None]:
    """The highest dangerous/forbidden pattern a name matches (DANGER §5.1)."""
    best: tuple[DangerLevel | None, str | None] = (None, None)
    for level, pats in DANGER_PATTERNS.items():
        for p in pats:
            if glob(p, name) and (best[0] is None or level > best[0]):
                best = (level, p)
    return best


@dataclass(frozen=True, slots=True)
class Danger:
    """The effective classification of one operation."""

    level: DangerLevel
    source: str  # declared | pattern | category
    reasons: tuple[str, ...] = ()
    confirmation_message: str | None = None
    pattern: str | None = None

    def message(self, operation: str, params: dict[str, Any]) -> str:
        """``confirmation_message`` with ``{param}`` interpolation (DANGER §3.2); unknown names stay."""
        if not self.confirmation_message:
            return f"Confirm '{operation}' (danger level: {self.level.label})?"

        class _Keep(dict[str, Any]):
            def __missing__(self, key: str) -> str:
                return "{" + key + "}"

        try:
            return self.confirmation_message.format_map(_Keep({k: v for k, v in params.items() if not k.startswith("_")}))
        except (ValueError, IndexError, AttributeError):
            return self.confirmation_message


def classify(spec: OperationSpec, overrides: dict[str, Any] | None = None, *, use_patterns: bool = True) -> Danger:
    """Effective danger of ``spec``; ``overrides`` (operation name → level or danger block)
    come from configuration and win over everything (adapter-level overrides, DANGER §7.2(4))."""
    declared: Any = (overrides or {}).get(spec.name)
    if declared is None:
        declared = spec.extensions.get("danger") or spec.danger_level
    if declared is not None:
        block = declared if isinstance(declared, dict) else {"level": declared}
        return Danger(
            DangerLevel.parse(block["level"]),
            "declared",
            tuple(block.get("reasons") or ([block["reason"]] if block.get("reason") else ())),
            block.get("confirmation_message"),
        )
    base = CATEGORY_DEFAULT[spec.category]
    if spec.dangerous and base < DangerLevel.DANGEROUS:
        # OPS §6.4 / REQ-CLS-012: `dangerous: true` marks significant consequences.
        return Danger(DangerLevel.DANGEROUS, "declared", ("The operation is marked dangerous",), None)
    if use_patterns:
        level, pat = pattern_level(spec.name)
        if level is not None and level > base:
            return Danger(level, "pattern", (f"Operation name matches the {level.label} pattern '{pat}'",), None, pat)
    return Danger(base, "category", ())
