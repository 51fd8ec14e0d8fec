"""The operation registry: validated at registration, then frozen.

All name, grammar and schema checks happen here, once. Problems raise :class:`SchemaError`
with the generator-time ``SCHEMA_*`` codes (CHECKLIST B.5) so a broken adapter fails at start
with a clear message instead of misbehaving per call. After :meth:`Registry.freeze` the
registry is read-only and the hot path only does dictionary lookups.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from .categories import CRUDE_FAMILIES, Category, EndpointFamily
from .operations import OperationSpec, TypeSpec

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
ADAPTER_RE = re.compile(r"^[a-z][a-z0-9_-]*$")

# CORE §8.5.4: reserved names and the category each must have.
RESERVED: dict[str, Category] = {
    "introspect": Category.READ,
    "execute_agent": Category.EXECUTE,
    "record_execution_step": Category.CREATE,
    "complete_execution": Category.EXECUTE,
    "abort_execution": Category.EXECUTE,
    "confirm_operation": Category.EXECUTE,
    "verify_challenge": Category.CREATE,
}


class SchemaError(ValueError):
    """An adapter definition problem found at registration (never a runtime error)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass
class Registry:
    """Operations, types and endpoint families of one adapter."""

    adapter: str
    display_name: str | None = None
    version: str = "0.1.0"
    families: dict[str, EndpointFamily] = field(default_factory=lambda: dict(CRUDE_FAMILIES))
    introspect_family: str | None = None
    open_world: bool = False
    concurrency: str = "read-concurrent"
    supports_etag: bool = False
    description: str | None = None
    _ops: dict[str, OperationSpec] = field(default_factory=dict)
    _types: dict[str, TypeSpec] = field(default_factory=dict)
    _frozen: bool = False

    def __post_init__(self) -> None:
        if not ADAPTER_RE.match(self.adapter):
            raise SchemaError(
                "SCHEMA_INVALID_NAME",
                f"adapter name '{self.adapter}' must be lowercase letters, digits, '-' or '_'",
            )
        for name in self.families:
            if not NAME_RE.match(name):
                raise SchemaError("SCHEMA_INVALID_NAME", f"endpoint family '{name}' is not snake_case")
        if self.display_name is None:
            self.display_name = self.adapter.replace("-", " ").replace("_", " ").title()

    @property
    def profile(self) -> str:
        return "crude" if set(self.families) == set(CRUDE_FAMILIES) else "custom"

    # ---- registration --------------------------------------------------------------------

    def add(self, spec: OperationSpec, *, reserved_ok: bool = False) -> OperationSpec:
        if self._frozen:
            raise SchemaError("SCHEMA_FROZEN", f"registry is frozen; cannot add '{spec.name}'")
        if not NAME_RE.match(spec.name):
            raise SchemaError("SCHEMA_INVALID_NAME", f"operation name '{spec.name}' must match {NAME_RE.pattern}")
        if spec.name == "batch":
            raise SchemaError("SCHEMA_INVALID_NAME", "'batch' is reserved by mcpaql for batch requests")
        if spec.name in RESERVED and not reserved_ok:
            raise SchemaError("SCHEMA_INVALID_NAME", f"'{spec.name}' is a reserved operation name")
        if spec.name in RESERVED and RESERVED[spec.name] is not spec.category:
            raise SchemaError(
                "SCHEMA_INVALID_TYPE",
                f"reserved operation '{spec.name}' must be {RESERVED[spec.name].value}",
            )
        if spec.name in self._ops:
            raise SchemaError("SCHEMA_DUPLICATE_NAME", f"operation '{spec.name}' is defined twice")
        if not isinstance(spec.category, Category):
            raise SchemaError("SCHEMA_INVALID_TYPE", f"operation '{spec.name}' has no semantic category")
        if spec.family not in self.families:
            raise SchemaError(
                "SCHEMA_UNRESOLVED_REF",
                f"operation '{spec.name}' uses endpoint family '{spec.family}', "
                f"which the adapter does not define ({', '.join(self.families)})",
            )
        seen: set[str] = set()
        for p in spec.params:
            if not NAME_RE.match(p.name):
                raise SchemaError(
                    "SCHEMA_INVALID_NAME",
                    f"parameter '{p.name}' of '{spec.name}' must be snake_case (use map_to for other names)",
                )
            if p.name in seen:
                raise SchemaError("SCHEMA_DUPLICATE_NAME", f"parameter '{p.name}' of '{spec.name}' twice")
            seen.add(p.name)
        for t in spec.types:
            self.add_type(t)
        self._ops[spec.name] = spec
        return spec

    def add_type(self, t: TypeSpec) -> None:
        existing = self._types.get(t.name)
        if existing is not None and existing is not t and existing != t:
            # Same name, different shape: keep the first, unless the new one is richer.
            if existing.kind == t.kind and len(existing.fields) >= len(t.fields):
                return
            if existing.kind != t.kind:
                raise SchemaError("SCHEMA_DUPLICATE_NAME", f"type '{t.name}' is defined twice differently")
        self._types[t.name] = t

    def extend(self, specs: Iterable[OperationSpec]) -> None:
        for s in specs:
            self.add(s)

    def rewrite(self, change: Callable[[OperationSpec], OperationSpec]) -> None:
        """Replace every operation with ``change(op)`` before freezing (same names): how a layer
        added later, such as the safety layer's danger notes, amends specs it did not write."""
        if self._frozen:
            raise SchemaError("SCHEMA_FROZEN", "registry is frozen; cannot rewrite its operations")
        new = {name: change(spec) for name, spec in self._ops.items()}
        if any(spec.name != name for name, spec in new.items()):
            raise SchemaError("SCHEMA_INVALID_NAME", "rewrite must keep operation names")
        self._ops = new

    def freeze(self) -> Registry:
        if not self._ops:
            raise SchemaError("SCHEMA_MISSING_FIELD", f"adapter '{self.adapter}' defines no operations")
        self._frozen = True
        return self

    # ---- lookups -------------------------------------------------------------------------

    @property
    def frozen(self) -> bool:
        return self._frozen

    def get(self, name: str) -> OperationSpec | None:
        return self._ops.get(name)

    @property
    def operations(self) -> list[OperationSpec]:
        return list(self._ops.values())

    @property
    def types(self) -> list[TypeSpec]:
        return list(self._types.values())

    def default_introspect_family(self) -> str:
        if self.introspect_family:
            return self.introspect_family
        if "read" in self.families:
            return "read"
        for op in self._ops.values():
            if op.category is Category.READ:
                return op.family
        return next(iter(self.families))

    def describe(self) -> dict[str, Any]:
        return {"adapter": self.adapter, "display_name": self.display_name, "operations": len(self._ops)}
