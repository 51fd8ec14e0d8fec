"""Computed fields (COMP; CHECKLIST REQ-COMP-*): derived values an adapter declares once and
clients request as ``_computed.<name>`` in ``fields`` (returned under ``_computed``), and —
where the author marks them so — use in ``filter`` and ``sort``. Values are computed lazily,
at most once per record per request.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .fields import COMPUTED_PREFIX, get_path

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True, slots=True)
class Computed:
    """``fn(record) -> value``; ``type`` is the advertised JSON type."""

    fn: Callable[[dict[str, Any]], Any]
    type: str = "number"
    description: str | None = None
    filterable: bool = False
    sortable: bool = False

    def info(self, name: str) -> dict[str, Any]:
        d: dict[str, Any] = {"name": name, "type": self.type}
        if self.description:
            d["description"] = self.description
        d["filterable"] = self.filterable
        d["sortable"] = self.sortable
        return d


def normalize(computed: Mapping[str, Computed | Callable[[dict[str, Any]], Any]] | None) -> dict[str, Computed]:
    out: dict[str, Computed] = {}
    for name, c in (computed or {}).items():
        if not NAME_RE.match(name):
            raise ValueError(f"computed field name '{name}' must match {NAME_RE.pattern} (no '_computed.' prefix)")
        out[name] = c if isinstance(c, Computed) else Computed(c, description=(c.__doc__ or "").strip() or None)
    return out


class ComputedValues:
    """Per-request evaluator: ``value_of(record, path)`` understands ``_computed.`` paths."""

    __slots__ = ("_defs", "_last", "_values")

    def __init__(self, defs: Mapping[str, Computed]) -> None:
        self._defs = defs
        # Only the most recent record's values are kept: phases walk records one at a time,
        # and a streaming pass must not keep every record (or reuse a dead record's id).
        self._last: Any = None
        self._values: dict[str, Any] = {}

    def get(self, record: dict[str, Any], name: str) -> Any:
        if record is not self._last:
            self._last = record
            self._values = {}
        try:
            return self._values[name]
        except KeyError:
            v = self._values[name] = self._defs[name].fn(record)
            return v

    def value_of(self, record: dict[str, Any], path: str) -> Any:
        if path.startswith(COMPUTED_PREFIX):
            return self.get(record, path[len(COMPUTED_PREFIX) :])
        return get_path(record, path)


__all__ = ["Computed", "ComputedValues", "normalize"]
