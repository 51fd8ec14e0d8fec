"""Compile parameter schemas into checker functions, once, at registration.

The hot path never interprets a JSON Schema: each schema becomes a closure that checks a
value and returns it (integers given as ``5.0`` become ``5``). Failures raise
:class:`MCPAQLError` with the spec's codes: wrong JSON type → ``VALIDATION_INVALID_TYPE``;
enum / range / length / pattern → ``VALIDATION_INVALID_VALUE`` (recoverable, MCPI §4.1.3,
``details.constraint`` says which); unknown keys of a closed nested object →
``VALIDATION_UNKNOWN_FIELD``; missing required nested keys → ``VALIDATION_MISSING_PARAM``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import date, datetime
from typing import Any

from .errors import MCPAQLError, invalid_type, invalid_value, missing_param
from .schema import TYPE_NAME_KEY, json_type_of, strip_null, type_label

Checker = Callable[[Any, str], Any]

_PY_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema means it for ``enum``/``const``: ``true`` is not ``1`` (Python says
    it is), ``1.0`` is ``1``, and arrays/objects compare member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | dict) or isinstance(b, list | dict):
        return False
    try:
        return bool(a == b)
    except Exception:  # pragma: no cover - values decoded from JSON always compare
        return False


def _check_format(fmt: str) -> Callable[[str], bool] | None:
    if fmt == "date-time":
        return lambda v: _parses(lambda: datetime.fromisoformat(v.replace("Z", "+00:00")))
    if fmt == "date":
        return lambda v: _parses(lambda: date.fromisoformat(v))
    return None


def _parses(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except ValueError:
        return False
    return True


def compile_schema(schema: dict[str, Any], closed_objects: bool = False, memo: Memo | None = None) -> Checker:
    """Build a checker for ``schema``. ``closed_objects`` treats objects with ``properties``
    and no explicit ``additionalProperties`` as closed (used for UPDATE ``input``).

    Resolved schemas share sub-schemas (:mod:`.schema` resolves each ``$ref`` once), so each
    shared node is compiled once (``memo``, by identity) and the work stays linear in the
    number of distinct shapes, however often they are referenced."""
    nested = memo is not None
    memo = {} if memo is None else memo
    key = (id(schema), closed_objects)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    s = schema if isinstance(schema, dict) else {}
    if nested and s.get(TYPE_NAME_KEY):
        # A named shape inside a parameter is compiled on first use: a large document's
        # operations share hundreds of them, and most are never sent.
        compiled: list[Checker] = []

        def lazy(value: Any, path: str) -> Any:
            if not compiled:
                compiled.append(_compile(s, closed_objects, memo))
            return compiled[0](value, path)

        memo[key] = (schema, lazy)
        return lazy
    check = _compile(s, closed_objects, memo)
    memo[key] = (schema, check)  # the schema is kept so its id is not reused during this compile
    return check


Memo = dict[tuple[int, bool], tuple[Any, Checker]]

# Checkers shared by shape across operations and engines: 10,000 operations repeat a few
# parameter shapes (an id string, a limit integer, one body model …), and a checker is a pure
# function of (schema, closed), so each distinct shape is compiled once. Bounded (LRU) so a
# process that builds engine after engine does not grow without end.
_CHECKERS_MAX = 4096
_KEY_BUDGET = 64  # schema nodes: bigger shapes (request bodies, mostly shared by identity) skip it
_checkers: OrderedDict[tuple[Hashable, bool], Checker] = OrderedDict()
_checkers_lock = threading.Lock()


_JSON_SCALARS = (str, int, float, bool, type(None))


def shape_key(schema: Any, budget: int = _KEY_BUDGET) -> Hashable | None:
    """A canonical form of a JSON schema — its JSON text with sorted keys, so key order does not
    matter while ``true``, ``1`` and ``1.0`` stay apart as JSON Schema keeps them — or None for
    one over ``budget`` nodes, cyclic, or not plain JSON (then it is not shared). Counted first,
    so a schema whose shared sub-shapes would print exponentially large is never printed."""
    stack = [schema]
    left = budget
    while stack:
        v = stack.pop()
        left -= 1
        if left < 0:
            return None  # too large (or a cycle, which never ends)
        t = type(v)
        if t is dict:
            if any(type(k) is not str for k in v):
                return None
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
        elif t not in _JSON_SCALARS:
            return None  # tuples, subclasses, objects: not what a JSON document holds
    return json.dumps(schema, sort_keys=True, separators=(",", ":"))


def checker_for(schema: dict[str, Any], closed_objects: bool = False, memo: Memo | None = None) -> Checker:
    """:func:`compile_schema`, shared: the same shape gets the same checker (see ``_checkers``).
    ``memo`` (by identity, one per engine build) shares the schemas operations hold in common
    (an OpenAPI component, a wrapped server's shared definition) and the named sub-shapes of
    the larger schemas the cache skips; a cached checker is compiled on its own, so it keeps
    nothing of the engine that first asked for it alive."""
    if memo is not None:
        seen = memo.get((id(schema), closed_objects))
        if seen is not None:
            return seen[1]
    key = shape_key(schema)
    if key is None:
        return compile_schema(schema, closed_objects, memo)
    full = (key, closed_objects)
    with _checkers_lock:
        hit = _checkers.get(full)
        if hit is not None:
            _checkers.move_to_end(full)
    if hit is None:
        hit = compile_schema(schema, closed_objects)
        with _checkers_lock:
            hit = _checkers.setdefault(full, hit)
            while len(_checkers) > _CHECKERS_MAX:
                _checkers.popitem(last=False)
    if memo is not None:
        memo[(id(schema), closed_objects)] = (schema, hit)
    return hit


def _compile(s: dict[str, Any], closed_objects: bool, memo: Memo) -> Checker:
    variants = s.get("anyOf") or s.get("oneOf")
    if isinstance(variants, list) and variants:
        return _compile_union(s, [compile_schema(v, closed_objects, memo) for v in variants], closed_objects, memo)
    all_of = s.get("allOf")
    if isinstance(all_of, list) and all_of and not s.get("type"):
        parts = [compile_schema(v, closed_objects, memo) for v in all_of]

        def check_all(value: Any, path: str) -> Any:
            for p in parts:
                value = p(value, path)
            return value

        return check_all

    types = s.get("type")
    type_list: list[str] = [types] if isinstance(types, str) else list(types or [])
    if not type_list and "properties" in s:
        type_list = ["object"]
    preds = [_PY_TYPES[t] for t in type_list if isinstance(t, str) and t in _PY_TYPES]
    expected = type_label(strip_null(s)) if type_list else "any"
    steps: list[Checker] = []

    enum = s.get("enum")
    if isinstance(enum, list):
        allowed = list(enum)

        def check_enum(v: Any, path: str) -> Any:
            if not any(json_equal(v, a) for a in allowed):
                shown = ", ".join(repr(a) if not isinstance(a, str) else f"'{a}'" for a in allowed[:20])
                raise invalid_value(path, "enum", f"must be one of: {shown}", allowed=allowed)
            return v

        steps.append(check_enum)
    if "const" in s:
        const = s["const"]

        def check_const(v: Any, path: str) -> Any:
            if not json_equal(v, const):
                raise invalid_value(path, "const", f"must be {const!r}", allowed=[const])
            return v

        steps.append(check_const)

    steps.extend(_numeric_steps(s))
    steps.extend(_string_steps(s))
    if "array" in type_list or "items" in s:
        steps.extend(_array_steps(s, closed_objects, memo))
    if "object" in type_list:
        obj = _object_step(s, closed_objects, memo)
        if obj:
            steps.append(obj)

    is_integer_only = type_list == ["integer"] or type_list == ["integer", "null"]

    def check(value: Any, path: str) -> Any:
        if preds and not any(p(value) for p in preds):
            raise invalid_type(path, expected, json_type_of(value))
        if is_integer_only and isinstance(value, float):
            value = int(value)
        for step in steps:
            value = step(value, path)
        return value

    return check


def _compile_union(s: dict[str, Any], options: list[Checker], closed: bool, memo: Memo) -> Checker:
    label = type_label(s)
    extra = {k: v for k, v in s.items() if k not in ("anyOf", "oneOf")}
    outer = compile_schema(extra, closed, memo) if any(k in extra for k in ("enum", "minimum", "pattern")) else None

    def check(value: Any, path: str) -> Any:
        first_value_error: MCPAQLError | None = None
        for opt in options:
            try:
                value = opt(value, path)
            except MCPAQLError as e:
                # Keep the most specific failure: a variant of the right type whose constraint
                # failed says more than "expected A | B".
                if e.code != "VALIDATION_INVALID_TYPE" and first_value_error is None:
                    first_value_error = e
                continue
            return outer(value, path) if outer else value
        if first_value_error:
            raise first_value_error
        raise invalid_type(path, label, json_type_of(value))

    return check


def _numeric_steps(s: dict[str, Any]) -> list[Checker]:
    steps: list[Checker] = []
    for key, op, words in (
        ("minimum", lambda v, b: v >= b, "must be >= {}"),
        ("maximum", lambda v, b: v <= b, "must be <= {}"),
        ("exclusiveMinimum", lambda v, b: v > b, "must be > {}"),
        ("exclusiveMaximum", lambda v, b: v < b, "must be < {}"),
    ):
        bound = s.get(key)
        if isinstance(bound, int | float) and not isinstance(bound, bool):

            def step(v: Any, path: str, bound: float = bound, op: Any = op, words: str = words, key: str = key) -> Any:
                if isinstance(v, int | float) and not isinstance(v, bool) and not op(v, bound):
                    raise invalid_value(path, key, words.format(f"'{bound}'") + f", got '{v}'", **{key: bound})
                return v

            steps.append(step)
    return steps


def _string_steps(s: dict[str, Any]) -> list[Checker]:
    steps: list[Checker] = []
    lo, hi = s.get("minLength"), s.get("maxLength")
    if isinstance(lo, int) or isinstance(hi, int):

        def length(v: Any, path: str) -> Any:
            if isinstance(v, str):
                if isinstance(lo, int) and len(v) < lo:
                    raise invalid_value(path, "minLength", f"must have '{lo}' or more characters", minLength=lo)
                if isinstance(hi, int) and len(v) > hi:
                    raise invalid_value(path, "maxLength", f"must have up to '{hi}' characters", maxLength=hi)
            return v

        steps.append(length)
    pattern = s.get("pattern")
    if isinstance(pattern, str):
        rx = _regex(pattern)
        if rx is not None:

            def match(v: Any, path: str) -> Any:
                if isinstance(v, str) and not rx.search(v):
                    raise invalid_value(path, "pattern", f"must match pattern '{pattern}'", pattern=pattern)
                return v

            steps.append(match)
    fmt = s.get("format")
    fmt_ok = _check_format(fmt) if isinstance(fmt, str) else None
    if fmt_ok:

        def formatted(v: Any, path: str) -> Any:
            if isinstance(v, str) and not fmt_ok(v):
                raise invalid_value(path, "format", f"must be an ISO 8601 {fmt}", format=fmt)
            return v

        steps.append(formatted)
    return steps


def _regex(pattern: str) -> re.Pattern[str] | None:
    """A JSON Schema pattern (ECMA 262) as a Python regex; one Python cannot compile is not checked."""
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return None


def _array_steps(s: dict[str, Any], closed: bool, memo: Memo) -> list[Checker]:
    steps: list[Checker] = []
    items = s.get("items")
    item_check = compile_schema(items, closed, memo) if isinstance(items, dict) and items else None
    lo, hi = s.get("minItems"), s.get("maxItems")
    unique = bool(s.get("uniqueItems"))

    def arr(v: Any, path: str) -> Any:
        if not isinstance(v, list):
            return v
        if isinstance(lo, int) and len(v) < lo:
            raise invalid_value(path, "minItems", f"must have '{lo}' or more items", minItems=lo)
        if isinstance(hi, int) and len(v) > hi:
            raise invalid_value(path, "maxItems", f"must have up to '{hi}' items", maxItems=hi)
        if item_check:
            v = [item_check(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if unique:
            seen: list[Any] = []
            for x in v:
                if x in seen:
                    raise invalid_value(path, "uniqueItems", "must not contain duplicates")
                seen.append(x)
        return v

    steps.append(arr)
    return steps


def _object_step(s: dict[str, Any], closed: bool, memo: Memo) -> Checker | None:
    props: dict[str, Any] = s.get("properties") or {}
    required = [r for r in (s.get("required") or []) if isinstance(r, str)]
    addl = s.get("additionalProperties")
    is_closed = addl is False or (closed and addl is None and bool(props))
    prop_checks = {k: compile_schema(v, closed, memo) for k, v in props.items() if isinstance(v, dict)}
    addl_check = compile_schema(addl, closed, memo) if isinstance(addl, dict) and addl else None
    patterns = [
        (rx, compile_schema(ps, closed, memo))
        for pat, ps in (s.get("patternProperties") or {}).items()
        if isinstance(ps, dict) and (rx := _regex(pat)) is not None
    ]
    if not (prop_checks or required or is_closed or addl_check or patterns):
        return None
    known = sorted(props)

    def obj(v: Any, path: str) -> Any:
        if not isinstance(v, dict):
            return v
        absent = [f"{path}.{r}" for r in required if r not in v]
        if absent:
            first = absent[0].rsplit(".", 1)[1]
            raise missing_param(absent[0], expected=type_label(props.get(first, {})), missing=absent)
        out: dict[str, Any] = {}
        unknown = []
        for k, x in v.items():
            c = prop_checks.get(k)
            matched = [pc for rx, pc in patterns if isinstance(k, str) and rx.search(k)]
            if c is not None:
                x = c(x, f"{path}.{k}")
            for pc in matched:  # patternProperties apply besides properties (JSON Schema §10.3.2.2)
                x = pc(x, f"{path}.{k}")
            if c is not None or matched:
                out[k] = x
            elif is_closed:
                unknown.append(k)
            else:
                out[k] = addl_check(x, f"{path}.{k}") if addl_check else x
        if unknown:
            raise MCPAQLError(
                "VALIDATION_UNKNOWN_FIELD",
                f"Unknown field(s) in '{path}': {', '.join(repr(u) for u in unknown)}",
                {"param_name": path, "unknown_fields": unknown, "valid_fields": known},
            )
        return out

    return obj
