"""Building parameter values from introspection alone (ParameterInfo + type details).

The suite never guesses from names what a server "probably" wants: it uses examples first,
then the documented type, enum, bounds, pattern and format. When it cannot build a value
that satisfies the documentation it says so (:class:`CannotBuild`), and the caller SKIPs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

UNKNOWN_PARAM = "mcpaql_conformance_probe"
MISSING_ID = "mcpaql-conformance-missing-0"
TAG = "mcpaql-conformance"

# Parameters that collection operations commonly accept (INTRO §8.1.2, CQ): probed for completeness.
CROSS_CUTTING = (
    "fields",
    "limit",
    "offset",
    "first",
    "after",
    "last",
    "before",
    "cursor",
    "page",
    "page_size",
    "sort",
    "sort_by",
    "order",
    "filter",
    "query",
    "include_deleted",
)

_PATTERN_CANDIDATES = (
    "conformance",
    "abc",
    "a",
    "conformance-1",
    "conformance_1",
    "x1",
    "a1",
    "A",
    "ABC",
    "1",
    "123",
    "mcpaql-conformance",
    "tag",
    "t",
)


class CannotBuild(Exception):
    """No value satisfying the documented constraints could be built."""


def is_id_like(name: str) -> bool:
    return name == "id" or name.endswith("_id") or name.endswith("_ids")


def base_type(t: str) -> str:
    t = (t or "").strip()
    if "|" in t:
        t = t.split("|")[0].strip()
    return t


def _fit_string(p: dict[str, Any], seed: str) -> str:
    fmt = p.get("format")
    if fmt == "date-time":
        return "2026-01-02T03:04:05Z"
    if fmt == "date":
        return "2026-01-02"
    if fmt == "email":
        return "conformance@example.com"
    if fmt in ("uri", "url"):
        return "https://example.com/mcpaql-conformance"
    if fmt == "uuid":
        return "00000000-0000-4000-8000-000000000000"
    pattern = p.get("pattern")
    lo = p.get("minLength") or 0
    hi = p.get("maxLength")
    candidates = [seed, *_PATTERN_CANDIDATES] if pattern else [seed]
    for c in candidates:
        v = c
        if len(v) < lo:
            v = v + "x" * (lo - len(v))
        if hi is not None and len(v) > hi:
            v = v[:hi]
        if pattern:
            try:
                if not re.search(pattern, v):
                    continue
            except re.error:
                raise CannotBuild(f"pattern '{pattern}' of '{p.get('name')}' is not a valid regular expression") from None
        return v
    raise CannotBuild(f"no sample value matches the pattern '{pattern}' documented for '{p.get('name')}'")


def _number(p: dict[str, Any], integer: bool) -> int | float:
    lo, hi = p.get("minimum"), p.get("maximum")
    v: float = 1
    if lo is not None and v < lo:
        v = lo
    if hi is not None and v > hi:
        v = hi
    return int(v) if integer else float(v)


TypeLookup = Callable[[str], dict[str, Any] | None]


def build_value(p: dict[str, Any], lookup: TypeLookup, *, seed: str = TAG, depth: int = 0, optional: bool = False) -> Any:
    """A value satisfying ParameterInfo ``p``. ``lookup(name)`` returns a TypeDetails or None."""
    if depth > 4:
        raise CannotBuild("type nesting too deep")
    if isinstance(p.get("enum"), list) and p["enum"]:
        return p["enum"][0]
    if "default" in p and p["default"] is not None and not p.get("required"):
        return p["default"]
    t = base_type(str(p.get("type", "")))
    low = t.lower()
    if low.endswith("[]"):
        item_t = t[:-2]
        if optional:
            return []
        item = dict(p.get("items") or {"name": f"{p.get('name')}[]", "type": item_t, "required": True})
        item.setdefault("type", item_t)
        return [build_value(item, lookup, seed=seed, depth=depth + 1)]
    if low in ("string", "str", "text"):
        return _fit_string(p, seed)
    if low in ("integer", "int"):
        return _number(p, True)
    if low in ("number", "float", "double"):
        return _number(p, False)
    if low in ("boolean", "bool"):
        return False
    if low == "array":
        items = p.get("items")
        if optional or not items:
            return []
        return [build_value(dict(items), lookup, seed=seed, depth=depth + 1)]
    if low in ("object", "dict", "map", "record"):
        return {}
    if low in ("any", "json", "unknown", ""):
        return seed
    if low == "null":
        return None
    detail = lookup(t)
    if detail is None:
        raise CannotBuild(f"type '{t}' of parameter '{p.get('name')}' is not described by introspect types")
    return build_from_type(detail, lookup, seed=seed, depth=depth + 1)


def build_from_type(
    detail: dict[str, Any], lookup: TypeLookup, *, seed: str = TAG, depth: int = 0, with_optional: bool = False
) -> Any:
    kind = detail.get("kind")
    if kind == "enum":
        values = detail.get("values") or []
        if not values:
            raise CannotBuild(f"enum type '{detail.get('name')}' has no values")
        return values[0]
    if kind == "object":
        out: dict[str, Any] = {}
        for f in detail.get("fields") or []:
            if not isinstance(f, dict) or not f.get("name"):
                continue
            if f.get("required") or (with_optional and not is_id_like(f["name"])):
                try:
                    out[f["name"]] = build_value(
                        f, lookup, seed=f"{seed}-{f['name']}", depth=depth + 1, optional=not f.get("required")
                    )
                except CannotBuild:
                    if f.get("required"):
                        raise
        return out
    if kind == "union":
        for m in detail.get("members") or []:
            sub = lookup(m)
            if sub is not None:
                try:
                    return build_from_type(sub, lookup, seed=seed, depth=depth + 1)
                except CannotBuild:
                    continue
        raise CannotBuild(f"no member of union '{detail.get('name')}' can be built")
    if kind == "scalar":
        name = str(detail.get("name", "")).lower()
        if "date" in name and "time" in name:
            return "2026-01-02T03:04:05Z"
        if "date" in name:
            return "2026-01-02"
        return seed
    raise CannotBuild(f"type '{detail.get('name')}' has an unknown kind")


def wrong_value(p: dict[str, Any]) -> Any:
    """A value of the wrong JSON type for ``p`` (or None when the type accepts anything)."""
    low = base_type(str(p.get("type", ""))).lower()
    if low in ("string", "str", "text") or p.get("enum"):
        return 12345
    if low in ("integer", "int", "number", "float", "double"):
        return "not-a-number"
    if low in ("boolean", "bool"):
        return "not-a-boolean"
    if low == "array" or low.endswith("[]"):
        return 42
    if low in ("any", "json", "unknown", ""):
        return None
    return 42  # objects and named types
