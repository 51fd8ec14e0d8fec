"""The streaming page windows (heap top-k, natural order) against the full sort they replace.

The reference is the materialising algorithm: decorate every record with its key, sort the
whole list with a comparator, then slice with :func:`pagination.window`. Random records
(mixed types, missing values, duplicate keys), random sorts, sizes and cursors must give the
same page, the same flags and the same total.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mcpaql.protocol.collections.fields import MISSING, get_path
from mcpaql.protocol.collections.pagination import PageRequest, window
from mcpaql.protocol.collections.query import order_key, sort_key_fn
from mcpaql.protocol.collections.streaming import directional, natural_page, sorted_page

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0]), st.sampled_from(["", "a", "B", "b", "é"])
)


@st.composite
def records(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 25))
    out = []
    for _ in range(n):
        rec: dict[str, Any] = {"id": draw(st.one_of(st.integers(0, 30), st.sampled_from(["x", "y"])))}
        for f in ("a", "b"):
            if draw(st.booleans()):
                rec[f] = draw(VALUES)
        out.append(rec)
    return out


def reference_sorted(rows: list[dict[str, Any]], fields: list[str], desc: list[bool], key: str | None, page: PageRequest):
    decorated = []
    for i, rec in enumerate(rows):
        vals = [get_path(rec, f) for f in fields]
        tie = get_path(rec, key) if key is not None else i
        decorated.append(((*map(order_key, vals), order_key(tie), (0, i)), i))
    cmp_key = sort_key_fn([*desc, False, False])
    decorated.sort(key=lambda t: cmp_key(t[0]))
    keys = [cmp_key(t[0]) for t in decorated]

    def to_key(wire: list[Any], after: bool) -> Any:
        return cmp_key((*map(order_key, wire), (0, float("inf") if after else float("-inf"))))

    w = window(keys, page, to_key)
    return [i for _, i in decorated[w.start : w.end]], w.has_next, w.has_previous


def page_request(draw: Any, n_keys: int, wire_value: Any) -> PageRequest:
    style = draw(st.sampled_from(["first", "after", "last", "before", "offset"]))
    size = draw(st.integers(0, 6))
    cursor = [draw(wire_value) for _ in range(n_keys)] if style in ("after", "before") else None
    if style == "offset":
        return PageRequest("offset", size, offset=draw(st.integers(0, 30)))
    if style in ("last", "before"):
        return PageRequest("cursor", size, backward=True, before=cursor)
    return PageRequest("cursor", size, after=cursor)


@settings(max_examples=400, deadline=None)
@given(st.data(), records())
def test_sorted_page_equals_the_full_sort(data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    fields = data.draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=2, unique=True))
    desc = [data.draw(st.booleans()) for _ in fields]
    key = data.draw(st.sampled_from(["id", None]))
    # a cursor is either a real record's keyset or arbitrary values
    picks = [[get_path(r, f) if get_path(r, f) is not MISSING else None for f in fields] + [r["id"]] for r in rows]
    wire = st.one_of(VALUES, st.just(None))
    page = page_request(data.draw, len(fields) + 1, wire)
    if picks and page.style == "cursor" and data.draw(st.booleans()):
        chosen = data.draw(st.sampled_from(picks))
        if key is None:
            chosen = [*chosen[:-1], data.draw(st.integers(-2, len(rows) + 2))]
        page.after, page.before = (None, chosen) if page.backward else (chosen, None)
    want = reference_sorted(rows, fields, desc, key, page)
    wrap = directional(desc)

    def key_of(i: int, rec: dict[str, Any]) -> tuple[Any, ...]:
        tie = order_key(get_path(rec, key)) if key is not None else (0, i)
        return wrap((*(order_key(get_path(rec, f)) for f in fields), tie, (0, i)))

    def bound_of(w: list[Any], after: bool) -> tuple[Any, ...]:
        return wrap((*map(order_key, w), (0, float("inf") if after else float("-inf"))))

    got = sorted_page(iter(rows), page, key_of, bound_of)
    assert ([i for i, _ in got.chosen], got.has_next, got.has_previous) == want
    assert got.total == len(rows)


def reference_natural(rows: list[dict[str, Any]], key: str | None, page: PageRequest):
    idents = [get_path(r, key) if key is not None else None for r in rows]
    index: dict[Any, int] = {}
    for i, ident in enumerate(idents):
        with contextlib.suppress(TypeError):
            index.setdefault(ident, i)

    def to_key(wire: list[Any], after: bool) -> Any:
        ident, pos = wire
        if key is not None and ident is not None:
            with contextlib.suppress(TypeError):
                pos = index.get(ident, pos)
        return pos

    w = window(list(range(len(rows))), page, to_key)
    return list(range(w.start, w.end)), w.has_next, w.has_previous


@settings(max_examples=400, deadline=None)
@given(st.data(), records())
def test_natural_page_equals_the_materialised_window(data: st.DataObject, rows: list[dict[str, Any]]) -> None:
    key = data.draw(st.sampled_from(["id", None]))
    page = page_request(data.draw, 2, st.just(None))
    cursor = page.after if not page.backward else page.before
    if cursor is not None:
        ident = data.draw(st.one_of(st.sampled_from([r["id"] for r in rows] or ["gone"]), st.just("gone"), st.just([1])))
        cursor[:] = [ident, data.draw(st.integers(-3, len(rows) + 3))]
    want = reference_natural(rows, key, page)
    anchor = (cursor[0], cursor[1]) if cursor is not None else None
    got = natural_page(iter(rows), page, (lambda r: get_path(r, key)) if key is not None else None, anchor)
    assert ([i for i, _ in got.chosen], got.has_next, got.has_previous) == want
    assert got.total == len(rows)
