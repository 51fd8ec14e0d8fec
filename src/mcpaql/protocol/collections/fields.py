"""Field selection (FS; CHECKLIST REQ-FSEL-*): presets or dotted paths, applied per record.

A :class:`FieldSelector` is built once per operation from the author's declaration (known
fields, presets, computed fields); per request it resolves ``fields`` (and the deprecated
``preset`` alias) into a :class:`Projection` and rejects unknown names (Part F #16: we
validate, listing the valid fields, rather than silently omitting). A field that is valid but
absent on a particular record is omitted silently (REQ-FSEL-012). Never mutates records.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import internal_error, invalid_value

FIELD_PATH = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
COMPUTED_PATH = re.compile(r"^_computed\.[a-z][a-z0-9_]*$")
SELECTABLE_PATTERN = r"^(?:[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*|_computed\.[a-z][a-z0-9_]*)$"
# Paths into foreign JSON (wrapped MCP results): any key spelling (camelCase, kebab-case, ``@type``)
# except dots and whitespace, which separate the path's segments.
JSON_PATH_PATTERN = r"^[^.\s]+(?:\.[^.\s]+)*$"
JSON_PATH = re.compile(JSON_PATH_PATTERN)
STANDARD_PRESETS = ("minimal", "standard", "full")
COMPUTED_PREFIX = "_computed."


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def as_record(item: Any) -> dict[str, Any]:
    """A handler's item as a plain dict (dicts pass through untouched: the hot path)."""
    if isinstance(item, dict):
        return item
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        dumped: dict[str, Any] = dump(by_alias=True)  # pydantic's model_dump returns a dict
        return dumped
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return dataclasses.asdict(item)
    if isinstance(item, Mapping):
        return dict(item)
    raise internal_error("a collection operation returned a non-object item")


def get_path(record: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path, or :data:`MISSING`."""
    if "." not in path:
        return record.get(path, MISSING)
    node: Any = record
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return MISSING
        node = node.get(part, MISSING)
        if node is MISSING:
            return MISSING
    return node


def plain(value: Any) -> Any:
    """Comparable form of a value: enums by value, dates as ISO strings (UTC as ``Z``)."""
    if isinstance(value, enum.Enum):
        return value.value
    iso = getattr(value, "isoformat", None)
    if iso is not None and not isinstance(value, str | int | float):
        s = iso()
        return s[:-6] + "Z" if s.endswith("+00:00") else s
    return value


def _tree(paths: Iterable[str]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for p in paths:
        node = root
        parts = p.split(".")
        for i, part in enumerate(parts):
            if part in node and node[part] == {} and i > 0:
                break  # an ancestor was selected whole
            if i == len(parts) - 1:
                node[part] = {}
            else:
                if part in node and node[part] == {}:
                    break
                node = node.setdefault(part, {})
    return root


def _project(value: Any, tree: dict[str, Any]) -> Any:
    out: dict[str, Any] = {}
    for key, sub in tree.items():
        v = value.get(key, MISSING)
        if v is MISSING:
            continue
        if not sub:
            out[key] = v
        elif isinstance(v, Mapping):
            out[key] = _project(v, sub)
        elif isinstance(v, list):
            out[key] = [_project(x, sub) if isinstance(x, Mapping) else x for x in v]
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Projection:
    """What to keep of each record: ``paths=None`` means every stored field (``full``)."""

    paths: tuple[str, ...] | None
    computed: tuple[str, ...] = ()
    label: str = ""

    @property
    def tree(self) -> dict[str, Any] | None:
        return None if self.paths is None else _tree(self.paths)

    def compile(self) -> Callable[[dict[str, Any], Callable[[str], Any] | None], dict[str, Any]]:
        """A per-record function ``(record, computed_value_of) -> projected dict``."""
        tree = self.tree
        computed = self.computed

        def apply(record: dict[str, Any], computed_of: Callable[[str], Any] | None = None) -> dict[str, Any]:
            out = dict(record) if tree is None else _project(record, tree)
            if computed and computed_of is not None:
                out["_computed"] = {name: computed_of(name) for name in computed}
            return out

        return apply


class FieldSelector:
    """Per-operation field-selection rules (compiled at registration)."""

    def __init__(
        self,
        known: Iterable[str] | None,
        presets: Mapping[str, Iterable[str]] | None = None,
        default: str = "standard",
        computed: Iterable[str] = (),
        key: str | None = None,
        path_pattern: re.Pattern[str] = FIELD_PATH,
    ) -> None:
        self.path_pattern = path_pattern
        self.known: tuple[str, ...] | None = tuple(known) if known is not None else None
        self.computed = tuple(computed)
        table: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in (presets or {}).items()}
        if self.known is not None:
            table.setdefault("standard", tuple(f for f in self.known if "." not in f) or self.known)
            ident = [f for f in (key, "name", "title") if f and f in self.known]
            table.setdefault("minimal", tuple(dict.fromkeys(ident)) or self.known[:1])
        table.pop("full", None)  # full is always "everything"
        self.presets: dict[str, tuple[str, ...] | None] = {**table, "full": None}
        for name in ("minimal", "standard"):
            self.presets.setdefault(name, None)
        for name, paths in self.presets.items():
            if paths is not None:
                self.check_paths(list(paths), f"preset '{name}'", at_registration=True)
        if default not in self.presets:
            raise ValueError(f"default field preset '{default}' is not defined")
        self.default = default

    @property
    def preset_names(self) -> list[str]:
        return list(self.presets)

    def valid_fields(self) -> list[str]:
        return [*(self.known or ()), *(COMPUTED_PREFIX + c for c in self.computed)]

    def is_known(self, path: str) -> bool:
        if path.startswith(COMPUTED_PREFIX):
            return path[len(COMPUTED_PREFIX) :] in self.computed
        if self.known is None:
            return True
        return any(path == k or k.startswith(path + ".") or path.startswith(k + ".") for k in self.known)

    def check_paths(self, paths: list[str], where: str = "fields", at_registration: bool = False) -> None:
        unknown = [p for p in paths if not self.is_known(p)]
        if not unknown:
            return
        if at_registration:
            raise ValueError(f"{where} names unknown field(s): {', '.join(unknown)}")
        valid = self.valid_fields()
        raise invalid_value(
            where,
            "known_field",
            f"has unknown field(s): {', '.join(repr(u) for u in unknown)}. Valid fields: {', '.join(valid)}",
            unknown_fields=unknown,
            valid_fields=valid,
            presets=self.preset_names,
        )

    def resolve(self, fields: Any = None, preset: Any = None) -> Projection:
        """``fields`` (preset name or path list) plus the ``preset`` alias (the list extends it)."""
        if isinstance(fields, str):
            if preset is not None:
                raise invalid_value("preset", "conflict", "cannot be combined with a preset name in 'fields'")
            return self._preset(fields, "fields")
        base: tuple[str, ...] | None
        label = preset or ""
        if preset is not None:
            base = self._preset(preset, "preset").paths
        elif fields is None:
            return self._preset(self.default, "fields")
        else:
            base = ()
        paths = list(fields or ())
        bad = [p for p in paths if not (self.path_pattern.match(p) or COMPUTED_PATH.match(p))]
        if bad:
            raise invalid_value("fields", "pattern", f"has invalid field path(s): {', '.join(repr(b) for b in bad)}")
        self.check_paths(paths)
        plain_paths = [p for p in paths if not p.startswith(COMPUTED_PREFIX)]
        computed = tuple(dict.fromkeys(p[len(COMPUTED_PREFIX) :] for p in paths if p.startswith(COMPUTED_PREFIX)))
        if base is None:  # full preset extended by a list: still everything
            return Projection(None, computed, label)
        return Projection(tuple(dict.fromkeys([*base, *plain_paths])), computed, label or "custom")

    def _preset(self, name: str, param: str) -> Projection:
        if name not in self.presets:
            raise invalid_value(
                param,
                "enum",
                f"must be one of the presets: {', '.join(self.presets)} (or an array of field paths)",
                allowed=self.preset_names,
            )
        paths = self.presets[name]
        computed = tuple(p[len(COMPUTED_PREFIX) :] for p in paths or () if p.startswith(COMPUTED_PREFIX))
        plain_paths = tuple(p for p in paths or () if not p.startswith(COMPUTED_PREFIX)) if paths is not None else None
        return Projection(plain_paths, computed, name)


def fields_schema(selector: FieldSelector, pattern: str = SELECTABLE_PATTERN) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "string", "enum": selector.preset_names},
            {"type": "array", "items": {"type": "string", "pattern": pattern}, "minItems": 1, "maxItems": 200},
        ]
    }


__all__ = [
    "COMPUTED_PATH",
    "FIELD_PATH",
    "JSON_PATH",
    "JSON_PATH_PATTERN",
    "MISSING",
    "FieldSelector",
    "Projection",
    "as_record",
    "fields_schema",
    "get_path",
    "plain",
]
