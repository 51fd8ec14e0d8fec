"""Pages over a stream of records in memory bounded by the page, not by the collection.

The in-Python collection path (a handler returning an iterable) used to materialise every
matching record and fully sort it for every page. Here the records are consumed once, as
they come: a sorted page is a bounded heap top-k (:func:`heapq.nsmallest`/``nlargest`` over
keys that already carry the tie-breaker, so the order is exactly the stable full sort's), and
the handler's natural order keeps only the rows that can still land in the page. Memory is
O(page size) (O(offset + page size) for the offset compatibility style, whose window starts
``offset`` rows in); the records outside the page are only counted.

Both functions return a :class:`StreamWindow` with the chosen ``(position, record)`` pairs in
page order and the same ``has_next``/``has_previous``/``total`` the slice-of-a-sorted-list
window (:func:`.pagination.window`) gives over the same records.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .pagination import PageRequest

Row = dict[str, Any]


@dataclass(slots=True)
class StreamWindow:
    chosen: list[tuple[int, Row]]
    has_next: bool
    has_previous: bool
    total: int


class Desc:
    """A key component in reverse order (descending sort fields). Tuples of keys compare
    component by component with ``==`` then ``<``, so this is exactly the comparator that
    reverses one component's direction, without :func:`functools.cmp_to_key` per row."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Desc) and self.v == other.v

    def __lt__(self, other: Desc) -> bool:
        return bool(other.v < self.v)

    def __gt__(self, other: Desc) -> bool:
        return bool(self.v < other.v)

    __hash__ = None  # type: ignore[assignment]


def directional(descending: Sequence[bool]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """A function turning a tuple of ascending key components into one that sorts with
    ``descending[i]`` applied to component *i* (components past the list stay ascending)."""
    flags = tuple(descending)
    if not any(flags):
        return lambda comps: comps

    def wrap(comps: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(Desc(c) if i < len(flags) and flags[i] else c for i, c in enumerate(comps))

    return wrap


def sorted_page(
    rows: Iterable[Row],
    page: PageRequest,
    key_of: Callable[[int, Row], tuple[Any, ...]],
    bound_of: Callable[[list[Any], bool], tuple[Any, ...]],
) -> StreamWindow:
    """The page of ``rows`` in ``key_of`` order (keys must be unique: they end with the
    position). ``bound_of(cursor keyset, after)`` is a key strictly between records: just
    after (``after=True``) or just before the record the cursor was issued for."""
    total = 0
    beyond = False  # a record on the far side of the cursor exists

    if page.style == "offset":
        want = page.offset + page.size

        def everything() -> Iterable[tuple[tuple[Any, ...], int, Row]]:
            nonlocal total
            for i, rec in enumerate(rows):
                total += 1
                yield key_of(i, rec), i, rec

        top = heapq.nsmallest(want + 1, everything())
        chosen = [(i, rec) for _, i, rec in top[page.offset : want]]
        return StreamWindow(chosen, len(top) > want, min(page.offset, total) > 0, total)

    if page.backward:
        before = bound_of(page.before, False) if page.before is not None else None

        def earlier() -> Iterable[tuple[tuple[Any, ...], int, Row]]:
            nonlocal total, beyond
            for i, rec in enumerate(rows):
                total += 1
                k = key_of(i, rec)
                if before is not None and not k < before:
                    beyond = True
                    continue
                yield k, i, rec

        top = heapq.nlargest(page.size + 1, earlier())
        chosen = [(i, rec) for _, i, rec in reversed(top[: page.size])]
        return StreamWindow(chosen, beyond, len(top) > page.size, total)

    after = bound_of(page.after, True) if page.after is not None else None

    def later() -> Iterable[tuple[tuple[Any, ...], int, Row]]:
        nonlocal total, beyond
        for i, rec in enumerate(rows):
            total += 1
            k = key_of(i, rec)
            if after is not None and k < after:
                beyond = True
                continue
            yield k, i, rec

    top = heapq.nsmallest(page.size + 1, later())
    chosen = [(i, rec) for _, i, rec in top[: page.size]]
    return StreamWindow(chosen, len(top) > page.size, beyond, total)


def natural_page(
    rows: Iterable[Row],
    page: PageRequest,
    ident_of: Callable[[Row], Any] | None,
    anchor: tuple[Any, int] | None,
) -> StreamWindow:
    """The page of ``rows`` in the order they come. ``anchor`` is the cursor's ``(identity,
    position)``: the record with that identity (its first occurrence) anchors the page, else
    (gone, or no identity) the position does; ``ident_of`` gives a record's identity."""
    size = page.size
    if page.style == "offset":
        lo, hi = page.offset, page.offset + size
        chosen = []
        n = 0
        for i, rec in enumerate(rows):
            n = i + 1
            if lo <= i < hi:
                chosen.append((i, rec))
        return StreamWindow(chosen, hi < n, min(lo, n) > 0, n)

    ident, pos = anchor if anchor is not None else (None, 0)
    try:
        lookup = ident_of is not None and ident is not None and hash(ident) is not None
    except TypeError:
        lookup = False  # an unhashable identity never matches (as a dict lookup would not)
    found = -1
    n = 0
    if not page.backward:
        start_fb = max(pos + 1, 0) if anchor is not None else 0
        by_pos: list[tuple[int, Row]] = []  # the window if the anchor is gone
        by_anchor: list[tuple[int, Row]] = []
        for i, rec in enumerate(rows):
            n = i + 1
            if anchor is None or not lookup:
                if start_fb <= i < start_fb + size:
                    by_pos.append((i, rec))
                continue
            if found >= 0:
                if i <= found + size:
                    by_anchor.append((i, rec))
                continue
            if start_fb <= i < start_fb + size:
                by_pos.append((i, rec))
            if ident_of is not None and ident_of(rec) == ident:
                found = i
        start = found + 1 if found >= 0 else (min(start_fb, n) if anchor is not None else 0)
        chosen = by_anchor if found >= 0 else by_pos
        end = min(start + size, n)
        return StreamWindow(chosen[: end - start], end < n, start > 0, n)

    tail: deque[tuple[int, Row]] = deque(maxlen=size)  # the last rows seen
    frozen: list[tuple[int, Row]] | None = None  # the rows just before the anchor, once found
    by_pos = []
    for i, rec in enumerate(rows):
        n = i + 1
        if frozen is None and anchor is not None and lookup and ident_of is not None and ident_of(rec) == ident:
            frozen = list(tail)
            found = i
        if anchor is not None and pos - size <= i < pos:
            by_pos.append((i, rec))
        tail.append((i, rec))
    if anchor is None:
        end, chosen = n, list(tail)
    elif frozen is not None:
        end, chosen = found, frozen
    elif pos >= n:
        end, chosen = n, list(tail)
    else:
        end, chosen = max(pos, 0), by_pos
    start = max(0, end - size)
    return StreamWindow(chosen[len(chosen) - (end - start) :] if end > start else [], end < n, start > 0, n)


__all__ = ["Desc", "StreamWindow", "directional", "natural_page", "sorted_page"]
