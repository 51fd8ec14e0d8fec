"""Aggregations (AGG; CHECKLIST REQ-AGG-*): named ``count/group_by/sum/avg/min/max``
expressions evaluated in one streaming pass.

Memory grows with the number of groups, never with the number of records: records are
consumed from an iterator and folded into per-group accumulators. Result shapes (AGG §3):
one function → the bare value; several → ``{function: value}``; with ``group_by`` the same per
group key, keys in a deterministic order. A bare ``group_by`` counts (documented, AGG §2).
Unsupported functions or fields are rejected with a structured validation error listing what
is supported (AGG §4).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import invalid_type, invalid_value
from ..schema import json_type_of
from .fields import MISSING, plain
from .query import order_key

FUNCTIONS = ("count", "group_by", "sum", "avg", "min", "max")
SUMMARY_FUNCTIONS = ("count", "sum", "avg", "min", "max")
MAX_EXPRESSIONS = 20


@dataclass(frozen=True, slots=True)
class AggregationSupport:
    """What an operation lets clients aggregate (advertised as ``aggregation_support``)."""

    functions: tuple[str, ...] = FUNCTIONS
    groupable_fields: tuple[str, ...] = ()
    numeric_fields: tuple[str, ...] = ()
    comparable_fields: tuple[str, ...] = ()  # min/max beyond numeric fields (e.g. dates)
    default_mode: str = "summary_only"

    def info(self) -> dict[str, Any]:
        return {
            "supported": True,
            "default_mode": self.default_mode,
            "functions": list(self.functions),
            "groupable_fields": list(self.groupable_fields),
            "numeric_fields": list(self.numeric_fields),
        }


@dataclass(frozen=True, slots=True)
class AggregateExpr:
    label: str
    group_by: str | None
    functions: tuple[tuple[str, str | None], ...]  # (function, field); count has no field

    @property
    def fields(self) -> list[str]:
        return [f for f in (self.group_by, *(fld for _, fld in self.functions)) if f]


def parse_aggregate(value: Mapping[str, Any] | None, support: AggregationSupport) -> list[AggregateExpr]:
    if not value:
        return []
    if len(value) > MAX_EXPRESSIONS:
        raise invalid_value("aggregate", "maxProperties", f"may hold up to '{MAX_EXPRESSIONS}' expressions")
    exprs: list[AggregateExpr] = []
    for label, expr in value.items():
        path = f"aggregate.{label}"
        if not isinstance(expr, dict):
            raise invalid_type(path, "object", json_type_of(expr))
        unknown = [k for k in expr if k not in support.functions]
        if unknown:
            raise invalid_value(
                path,
                "aggregate_function",
                f"uses unsupported aggregation function(s): {', '.join(repr(u) for u in unknown)}. "
                f"Supported functions: {', '.join(support.functions)}",
                unsupported_functions=unknown,
                supported_functions=list(support.functions),
            )
        group_by = expr.get("group_by")
        if group_by is not None:
            _field(path, "group_by", group_by, support.groupable_fields, "groupable_fields")
        fns: list[tuple[str, str | None]] = []
        for fn in SUMMARY_FUNCTIONS:
            if fn not in expr:
                continue
            arg = expr[fn]
            if fn == "count":
                if not isinstance(arg, bool):
                    raise invalid_type(f"{path}.count", "boolean", json_type_of(arg))
                if arg:
                    fns.append(("count", None))
                continue
            allowed = support.numeric_fields if fn in ("sum", "avg") else (*support.numeric_fields, *support.comparable_fields)
            _field(path, fn, arg, allowed, "numeric_fields" if fn in ("sum", "avg") else "fields")
            fns.append((fn, arg))
        if not fns:
            if group_by is None:
                raise invalid_value(
                    path,
                    "aggregate_function",
                    "needs one or more of: 'count': true, 'sum', 'avg', 'min', 'max'",
                    supported_functions=list(support.functions),
                )
            fns.append(("count", None))  # bare group_by counts per group
        exprs.append(AggregateExpr(label, group_by, tuple(fns)))
    return exprs


def _field(path: str, fn: str, arg: Any, allowed: Sequence[str], kind: str) -> None:
    if not isinstance(arg, str):
        raise invalid_type(f"{path}.{fn}", "string", json_type_of(arg))
    if arg not in allowed:
        raise invalid_value(
            f"{path}.{fn}",
            "aggregate_field",
            f"cannot use field '{arg}' with '{fn}'. Supported: {', '.join(allowed) or '(none)'}",
            field=arg,
            **{kind: list(allowed)},
        )


def group_key(v: Any) -> str:
    """Groups are keyed by their JSON object key (values that render alike share a group)."""
    if v.__class__ is str:
        return v
    if v is None or v is MISSING:
        return "null"
    v = plain(v)
    if isinstance(v, str):
        return v
    return json.dumps(v, sort_keys=True, default=str)


def _group_order(item: tuple[str, _Acc]) -> Any:
    return order_key(item[1].raw)


_NUMERIC = (int, float)


class _Acc:
    """Accumulator for one group of one expression (slots keep it small and fast)."""

    __slots__ = ("count", "max", "min", "n", "raw", "total")

    def __init__(self, raw: Any = None) -> None:
        self.raw = raw  # a group value, for ordering groups
        self.count = 0
        self.total: float = 0
        self.n = 0
        self.min: Any = MISSING
        self.max: Any = MISSING


class Aggregator:
    """Fold records into the requested expressions; call :meth:`add` per record, then :meth:`result`."""

    def __init__(self, exprs: Sequence[AggregateExpr], value_of: Callable[[dict[str, Any], str], Any]) -> None:
        self.exprs = list(exprs)
        self._updaters = [self._compile(e, value_of) for e in self.exprs]
        self._states: list[dict[Any, _Acc]] = [{} for _ in self.exprs]

    @staticmethod
    def _compile(
        e: AggregateExpr, value_of: Callable[[dict[str, Any], str], Any]
    ) -> Callable[[dict[Any, _Acc], dict[str, Any]], None]:
        gb = e.group_by
        fns = e.functions
        do_count = any(f == "count" for f, _ in fns)
        numeric = tuple({fld for f, fld in fns if f in ("sum", "avg") and fld})
        ordered = tuple({fld for f, fld in fns if f in ("min", "max") and fld})
        simple = all("." not in f and not f.startswith("_") for f in e.fields)

        def get(rec: dict[str, Any], f: str) -> Any:
            return rec.get(f, MISSING) if simple else value_of(rec, f)

        # Specialised fast path: group_by plus one numeric field (the common dashboard query).
        if simple and len(numeric) == 1 and not ordered:
            nf = numeric[0]

            def update_fast(state: dict[Any, _Acc], rec: dict[str, Any]) -> None:
                g = rec.get(gb) if gb else None
                k = g if g.__class__ is str else group_key(g)
                acc = state.get(k)
                if acc is None:
                    acc = state[k] = _Acc(g)
                acc.count += 1
                v = rec.get(nf)
                if v.__class__ in _NUMERIC:
                    acc.total += v
                    acc.n += 1

            return update_fast

        def update(state: dict[Any, _Acc], rec: dict[str, Any]) -> None:
            g = get(rec, gb) if gb else None
            k = group_key(g)
            acc = state.get(k)
            if acc is None:
                acc = state[k] = _Acc(g)
            if do_count:
                acc.count += 1
            for f in numeric:
                v = get(rec, f)
                if v.__class__ in _NUMERIC:
                    acc.total += v
                    acc.n += 1
            for f in ordered:
                v = get(rec, f)
                if v is MISSING or v is None:
                    continue
                ok = order_key(v)
                if acc.min is MISSING or ok < acc.min[0]:
                    acc.min = (ok, plain(v))
                if acc.max is MISSING or ok > acc.max[0]:
                    acc.max = (ok, plain(v))

        return update

    def add(self, rec: dict[str, Any]) -> None:
        for upd, st in zip(self._updaters, self._states, strict=True):
            upd(st, rec)

    def feed(self, records: Iterable[dict[str, Any]]) -> Aggregator:
        if len(self._updaters) == 1:
            upd, st = self._updaters[0], self._states[0]
            for rec in records:
                upd(st, rec)
        else:
            for rec in records:
                self.add(rec)
        return self

    def result(self) -> dict[str, Any]:
        return {e.label: summarize(e, state) for e, state in zip(self.exprs, self._states, strict=True)}


def summarize(e: AggregateExpr, state: Mapping[str, _Acc]) -> Any:
    """The result of one expression from its per-group accumulators (keyed by :func:`group_key`):
    shared by the streaming :class:`Aggregator` and pushdown backends (e.g. SQL ``GROUP BY``)
    so both answer in the same shape and group order."""
    if e.group_by is None:
        return _values(e, state.get("null") or _Acc())
    return {k: _values(e, acc) for k, acc in sorted(state.items(), key=_group_order)}


def accumulate(
    state: dict[str, _Acc], raw: Any, count: int, total: float, n: int, low: Any = MISSING, high: Any = MISSING
) -> None:
    """Fold one partial group (``raw`` group value; ``count`` records; ``total``/``n`` of the
    numeric values; ``low``/``high`` the smallest/largest value, or MISSING) into ``state``.
    Partial groups whose values share a :func:`group_key` merge, as they would when streamed."""
    k = group_key(raw)
    acc = state.get(k)
    if acc is None:
        acc = state[k] = _Acc(raw)
    acc.count += count
    acc.total += total
    acc.n += n
    for v, is_min in ((low, True), (high, False)):
        if v is MISSING or v is None:
            continue
        ok = order_key(v)
        cur = acc.min if is_min else acc.max
        if cur is MISSING or (ok < cur[0] if is_min else ok > cur[0]):
            if is_min:
                acc.min = (ok, plain(v))
            else:
                acc.max = (ok, plain(v))


def _value(fn: str, acc: _Acc) -> Any:
    if fn == "count":
        return acc.count
    if fn == "sum":
        return acc.total
    if fn == "avg":
        return acc.total / acc.n if acc.n else None
    pair = acc.min if fn == "min" else acc.max
    return None if pair is MISSING else pair[1]


def _values(e: AggregateExpr, acc: _Acc) -> Any:
    if len(e.functions) == 1:
        return _value(e.functions[0][0], acc)
    return {fn: _value(fn, acc) for fn, _ in e.functions}


def aggregate(
    records: Iterable[dict[str, Any]],
    exprs: Sequence[AggregateExpr],
    value_of: Callable[[dict[str, Any], str], Any] | None = None,
) -> dict[str, Any]:
    """One pass over ``records`` (any iterable, consumed lazily)."""
    from .fields import get_path

    return Aggregator(exprs, value_of or get_path).feed(records).result()


__all__ = [
    "FUNCTIONS",
    "AggregateExpr",
    "AggregationSupport",
    "Aggregator",
    "accumulate",
    "aggregate",
    "group_key",
    "parse_aggregate",
    "summarize",
]
