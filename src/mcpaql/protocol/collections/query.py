"""Collection querying (CQ; CHECKLIST REQ-CQ-*): free-text ``query``, structured ``filter``
and ``sort``, parsed into plain data that either the in-memory evaluator here or a pushdown
backend (:mod:`.collection`) executes.

Filter grammar (documented in each operation's description): ``{field: value}`` is equality
(membership when the stored value is an array); ``{field: {op: operand, ...}}`` combines
operators with AND. Operators: ``eq ne gt gte lt lte in nin contains starts_with exists``.
Text query: whitespace-separated words with OR semantics, ``"quoted phrases"`` match exactly,
all case-insensitive, over the operation's searchable fields (CQ §4.1). Unsupported filter
keys, operators and sort fields are rejected with ``VALIDATION_INVALID_VALUE`` listing what is
supported (CQ §5). Never reorders equal records: sorting is stable.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..errors import invalid_type, invalid_value
from ..schema import json_type_of
from .fields import MISSING, plain

OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "starts_with", "exists")
ORDERS = ("asc", "desc")


@dataclass(frozen=True, slots=True)
class Condition:
    field: str
    op: str
    value: Any


@dataclass(frozen=True, slots=True)
class SortKey:
    field: str
    order: str = "asc"

    @property
    def descending(self) -> bool:
        return self.order == "desc"


@dataclass(frozen=True, slots=True)
class TextQuery:
    raw: str
    words: tuple[str, ...]
    phrases: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.phrases

    def matches(self, text: str) -> bool:
        t = text.lower()
        return any(w in t for w in self.words) or any(p in t for p in self.phrases)


_TOKEN = re.compile(r'"([^"]*)"|(\S+)')


def parse_text(q: str) -> TextQuery:
    words: list[str] = []
    phrases: list[str] = []
    for phrase, word in _TOKEN.findall(q):
        if phrase.strip():
            phrases.append(phrase.strip().lower())
        elif word and word.strip('"'):
            words.append(word.strip('"').lower())
    return TextQuery(q, tuple(dict.fromkeys(words)), tuple(dict.fromkeys(phrases)))


# ---- filter --------------------------------------------------------------------------------


def parse_filter(value: Mapping[str, Any] | None, filterable: Mapping[str, Sequence[str]]) -> list[Condition]:
    """Validate ``filter`` against the declared keys/operators and flatten it to conditions."""
    if not value:
        return []
    supported = list(filterable)
    unknown = [k for k in value if k not in filterable]
    if unknown:
        raise invalid_value(
            "filter",
            "filterable",
            f"has unsupported filter key(s): {', '.join(repr(u) for u in unknown)}. "
            f"Supported keys: {', '.join(supported) or '(none)'}",
            unknown_keys=unknown,
            supported_keys=supported,
        )
    out: list[Condition] = []
    for key, spec in value.items():
        allowed = filterable[key]
        if isinstance(spec, dict):
            if not spec:
                raise invalid_value(f"filter.{key}", "operator", "must name one or more operators", operators=list(allowed))
            for op, operand in spec.items():
                out.append(_condition(key, op, operand, allowed))
        else:
            out.append(_condition(key, "eq", spec, allowed))
    return out


def _condition(key: str, op: str, operand: Any, allowed: Sequence[str]) -> Condition:
    path = f"filter.{key}"
    if op not in allowed:
        raise invalid_value(
            f"{path}.{op}" if op not in OPERATORS else path,
            "operator",
            f"does not support operator '{op}'. Supported operators: {', '.join(allowed)}",
            operator=op,
            operators=list(allowed),
        )
    if op in ("in", "nin") and not isinstance(operand, list):
        raise invalid_type(f"{path}.{op}", "array", json_type_of(operand))
    if op == "exists" and not isinstance(operand, bool):
        raise invalid_type(f"{path}.{op}", "boolean", json_type_of(operand))
    if op in ("gt", "gte", "lt", "lte", "starts_with", "contains") and isinstance(operand, dict | list):
        raise invalid_type(f"{path}.{op}", "string | number | boolean", json_type_of(operand))
    if op == "starts_with" and not isinstance(operand, str):
        raise invalid_type(f"{path}.{op}", "string", json_type_of(operand))
    return Condition(key, op, operand)


def _eq(v: Any, x: Any) -> bool:
    if isinstance(v, list):
        return x in [plain(e) for e in v] or v == x
    return v == x and isinstance(v, bool) == isinstance(x, bool)


def _ordered(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def test(v: Any, x: Any) -> bool:
        if v is None or isinstance(v, bool) != isinstance(x, bool):
            return False
        try:
            return bool(op(v, x))
        except TypeError:
            return False

    return test


def _contains(v: Any, x: Any) -> bool:
    if isinstance(v, str) and isinstance(x, str):
        return x.lower() in v.lower()
    if isinstance(v, list):
        return x in [plain(e) for e in v]
    return False


_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": _eq,
    "ne": lambda v, x: not _eq(v, x),
    "gt": _ordered(lambda v, x: v > x),
    "gte": _ordered(lambda v, x: v >= x),
    "lt": _ordered(lambda v, x: v < x),
    "lte": _ordered(lambda v, x: v <= x),
    "in": lambda v, x: any(_eq(v, e) for e in x),
    "nin": lambda v, x: not any(_eq(v, e) for e in x),
    "contains": _contains,
    "starts_with": lambda v, x: isinstance(v, str) and v.lower().startswith(x.lower()),
}

ValueOf = Callable[[dict[str, Any], str], Any]


def compile_predicate(conditions: Sequence[Condition], value_of: ValueOf) -> Callable[[dict[str, Any]], bool] | None:
    """One predicate for all conditions (AND), or ``None`` when there is nothing to test."""
    if not conditions:
        return None
    checks: list[Callable[[dict[str, Any]], bool]] = []
    for c in conditions:
        field, value = c.field, c.value
        if c.op == "exists":

            def check_exists(rec: dict[str, Any], field: str = field, want: bool = value) -> bool:
                v = value_of(rec, field)
                return (v is not MISSING and v is not None) is want

            checks.append(check_exists)
        else:
            test = _TESTS[c.op]

            def check(
                rec: dict[str, Any],
                field: str = field,
                value: Any = value,
                test: Callable[[Any, Any], bool] = test,
                neg: bool = c.op in ("ne", "nin"),
            ) -> bool:
                v = value_of(rec, field)
                if v is MISSING:
                    return neg
                return test(plain(v), value)

            checks.append(check)
    if len(checks) == 1:
        return checks[0]
    return lambda rec: all(chk(rec) for chk in checks)


def compile_text(q: TextQuery, searchable: Sequence[str], value_of: ValueOf) -> Callable[[dict[str, Any]], bool] | None:
    if q.empty:
        return None

    def matches(rec: dict[str, Any]) -> bool:
        for f in searchable:
            v = value_of(rec, f)
            if v is MISSING or v is None:
                continue
            if isinstance(v, list):
                v = " ".join(str(plain(e)) for e in v)
            if q.matches(str(plain(v))):
                return True
        return False

    return matches


# ---- sort ----------------------------------------------------------------------------------


def parse_sort(sort: Any, order: Any, sortable: Sequence[str]) -> list[SortKey]:
    """``{field, order}`` | ``[{field, order}, ...]`` | ``"field"`` (+ compat ``order``)."""
    if sort is None:
        if order is not None:
            raise invalid_value("order", "requires", "requires 'sort' (a field name) to apply to")
        return []
    if isinstance(sort, str):
        specs = [{"field": sort, "order": order or "asc"}]
    else:
        if order is not None:
            raise invalid_value("order", "conflict", "is only for the shortcut form 'sort: \"<field>\"'; use sort.order")
        specs = [sort] if isinstance(sort, dict) else list(sort)
    keys: list[SortKey] = []
    for i, s in enumerate(specs):
        where = "sort" if isinstance(sort, dict | str) else f"sort[{i}]"
        field = s.get("field")
        if field not in sortable:
            raise invalid_value(
                f"{where}.field" if not isinstance(sort, str) else "sort",
                "sortable",
                f"cannot sort by '{field}'. Sortable fields: {', '.join(sortable) or '(none)'}",
                sort_field=field,
                sortable_fields=list(sortable),
            )
        # ``field`` is in ``sortable`` (checked just above), so it is a str
        keys.append(SortKey(cast(str, field), s.get("order") or "asc"))
    seen: set[str] = set()
    for k in keys:
        if k.field in seen:
            raise invalid_value("sort", "unique", f"names field '{k.field}' twice")
        seen.add(k.field)
    return keys


def order_key(value: Any) -> tuple[Any, ...]:
    """Total order over JSON-ish values: numbers < strings < other; missing/null last (asc)."""
    cls = value.__class__
    if cls is str:  # the hot path of every sorted page: plain values need no conversion
        return (1, value)
    if cls is int or cls is float:
        return (0, value)
    if value is MISSING or value is None:
        return (3,)
    v = plain(value)
    if isinstance(v, bool):
        return (0, int(v))
    if isinstance(v, int | float):
        return (0, v)
    if isinstance(v, str):
        return (1, v)
    return (2, json.dumps(v, sort_keys=True, default=str))


def comparator(directions: Sequence[bool]) -> Callable[[Sequence[Any], Sequence[Any]], int]:
    """cmp over key tuples where ``directions[i]`` says component *i* is descending."""
    dirs = tuple(directions)

    def cmp(a: Sequence[Any], b: Sequence[Any]) -> int:
        for x, y, desc in zip(a, b, dirs, strict=False):
            if x != y:
                r = -1 if x < y else 1
                return -r if desc else r
        return 0

    return cmp


def sort_key_fn(directions: Sequence[bool]) -> Any:
    return functools.cmp_to_key(comparator(directions))


__all__ = [
    "OPERATORS",
    "Condition",
    "SortKey",
    "TextQuery",
    "compile_predicate",
    "compile_text",
    "order_key",
    "parse_filter",
    "parse_sort",
    "parse_text",
]
