"""Semantic categories, their permission characteristics, and endpoint families.

A *category* is what an operation does to state (CORE §6.1); an *endpoint family* is the
tool it is exposed through. The CRUDE profile has one family per category; adapters may
define alternate families (e.g. discover/query/manage/operate) mixing categories
(MODES §4.4). Annotations for a family are derived conservatively from its riskiest member.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Category(StrEnum):
    CREATE = "CREATE"
    READ = "READ"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    EXECUTE = "EXECUTE"

    @property
    def read_only(self) -> bool:
        return self is Category.READ

    @property
    def destructive(self) -> bool:
        # OVW "Permission Characteristics": UPDATE, DELETE and EXECUTE are destructive.
        return self in (Category.UPDATE, Category.DELETE, Category.EXECUTE)

    @property
    def idempotent(self) -> bool:
        # Seed 003: true for READ, false for CREATE/EXECUTE. A DELETE of the same id twice leaves
        # the same state, but the second call errors; stay conservative and say false.
        return self is Category.READ


ALL_CATEGORIES: frozenset[Category] = frozenset(Category)


@dataclass(frozen=True, slots=True)
class EndpointFamily:
    """A named tool grouping. ``purpose`` opens the tool description (MCPI §2.1.1)."""

    name: str
    purpose: str
    note: str = ""

    @property
    def title(self) -> str:
        return self.name.replace("_", " ").title()


# The standard CRUDE profile (MCPI §2.1.1 templates; CRUDE §3).
CRUDE_FAMILIES: dict[str, EndpointFamily] = {
    "create": EndpointFamily("create", "Additive operations that create new data."),
    "read": EndpointFamily("read", "Safe, read-only operations."),
    "update": EndpointFamily("update", "Modifying operations that overwrite existing data."),
    "delete": EndpointFamily("delete", "Destructive operations that remove data."),
    "execute": EndpointFamily("execute", "Runtime operations; non-idempotent and potentially destructive."),
}

CRUDE_ENDPOINT_FOR: dict[Category, str] = {c: c.value.lower() for c in Category}
