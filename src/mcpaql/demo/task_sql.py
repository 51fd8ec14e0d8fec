"""``list_tasks`` pushed down into SQLite: the shared layer's :class:`CollectionQuery` as SQL.

The text query, ``filter``, ``sort``, the page window (keyset on the ``ORDER BY`` columns,
served by the indexes in :mod:`.store`'s schema) and ``GROUP BY`` aggregation all run in
SQLite; only the rows of the page are turned into records (and get an ``_etag``). The
translation keeps the in-Python semantics exactly (:mod:`mcpaql.protocol.collections.query`):
an operand of another type than the field's compares false (``ne``/``nin``: true), a missing
``metadata`` key is SQL ``NULL`` (sorted last ascending, first descending), case-insensitive
matching uses Python's ``str.lower`` (registered as ``aql_lower``), ties break on ``task_id``.
The few queries SQL cannot compare exactly (a list operand equal to a whole ``tags`` array,
integers beyond 64 bits, NaN, unencodable strings, a cursor of the other path) are declined:
the backend hands back the records and the shared layer answers in Python.

Float sums and averages may differ from the in-Python fold in the last bits (SQLite adds in
its own order); every other value is identical.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..protocol.collections import CollectionQuery, Condition, QueryResult
from ..protocol.collections.aggregate import AggregateExpr, accumulate, summarize
from ..protocol.collections.fields import MISSING
from . import store


class Decline(Exception):
    """This query cannot be expressed exactly in SQL; answer it in Python."""


@dataclass(frozen=True, slots=True)
class Column:
    sql: str
    kind: str  # text (never NULL) | opt (text or NULL) | tags (JSON array) | rank (integer) | number (or NULL)


FIELDS: dict[str, Column] = {
    **{f: Column(f, "text") for f in ("project_id", "status", "priority", "title", "created_at", "updated_at")},
    "metadata.assignee": Column(store.ASSIGNEE_SQL, "opt"),
    "metadata.due_date": Column(store.DUE_SQL, "opt"),
    "metadata.estimate_hours": Column(store.ESTIMATE_SQL, "number"),
    "tags": Column("tags", "tags"),
    "_computed.priority_rank": Column("o_rank", "rank"),
}
NATURAL = [(c, "text" if c in ("o_due", "created_at") else "rank") for c in store.DEFAULT_ORDER]
_ORDERED = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_EXISTS_TAG = "EXISTS (SELECT 1 FROM json_each(tasks.tags) WHERE json_each.value {})"

Sql = tuple[str, list[Any]]


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _bind(x: Any) -> Any:
    """A value SQLite compares exactly as Python does, or :class:`Decline`."""
    if isinstance(x, str):
        try:
            x.encode("utf-8")
        except UnicodeEncodeError:
            raise Decline from None
    elif (
        isinstance(x, bool)
        or (isinstance(x, int) and not -(2**63) <= x < 2**63)
        or (isinstance(x, float) and not math.isfinite(x))
    ):
        raise Decline
    return x


def _const(truth: bool) -> Sql:
    return ("1" if truth else "0"), []


def condition(c: Condition) -> Sql:
    """One filter condition as a NULL-free SQL predicate (see the module doc for the rules)."""
    col = FIELDS.get(c.field)
    if col is None:
        raise Decline
    e, op, x = col.sql, c.op, c.value
    if op == "exists":
        return (f"{e} IS NOT NULL" if x else f"{e} IS NULL", []) if col.kind == "opt" else _const(bool(x))
    negated = op in ("ne", "nin")
    if col.kind == "tags":
        return _tags(op, x)
    ok: Callable[[Any], bool] = _is_num if col.kind == "rank" else (lambda v: isinstance(v, str))
    nullable = col.kind == "opt"
    if op in ("eq", "ne"):
        if not ok(x):
            return _const(negated)
        if op == "eq":
            return f"{e} = ?", [_bind(x)]
        return (f"({e} IS NULL OR {e} != ?)" if nullable else f"{e} != ?"), [_bind(x)]
    if op in _ORDERED:
        return (f"{e} {_ORDERED[op]} ?", [_bind(x)]) if ok(x) else _const(False)
    if op in ("in", "nin"):
        vals = [_bind(v) for v in x if ok(v)]
        if not vals:
            return _const(negated)
        marks = ", ".join("?" * len(vals))
        if op == "in":
            return f"{e} IN ({marks})", vals
        return (f"({e} IS NULL OR {e} NOT IN ({marks}))" if nullable else f"{e} NOT IN ({marks})"), vals
    if col.kind == "rank" or not isinstance(x, str):  # contains / starts_with need text on both sides
        return _const(False)
    low = _bind(x.lower())
    if op == "contains":
        return f"instr(aql_lower({e}), ?) > 0", [low]
    return f"substr(aql_lower({e}), 1, ?) = ?", [len(low), low]


def _tags(op: str, x: Any) -> Sql:
    """``tags`` is a JSON array of strings: equality and ``contains`` are membership."""
    negated = op in ("ne", "nin")
    if op in ("eq", "ne", "contains"):
        if isinstance(x, list) and op != "contains":
            raise Decline  # equality with the whole array
        if not isinstance(x, str):
            return _const(negated)
        sql = _EXISTS_TAG.format("= ?")
        return (f"NOT {sql}" if negated else sql), [_bind(x)]
    if op in ("in", "nin"):
        if any(isinstance(v, list) for v in x):
            raise Decline
        vals = [_bind(v) for v in x if isinstance(v, str)]
        if not vals:
            return _const(negated)
        sql = _EXISTS_TAG.format(f"IN ({', '.join('?' * len(vals))})")
        return (f"NOT {sql}" if negated else sql), vals
    return _const(False)  # an array is never ordered against a scalar, nor starts with text


def where_of(q: CollectionQuery, base: Sql) -> Sql:
    """The handler's shortcut filters, the text query and every condition, ANDed."""
    parts, args = ([base[0]] if base[0] else []), list(base[1])
    if q.text is not None and not q.text.empty:
        terms = []
        for t in (*q.text.words, *q.text.phrases):
            for f in ("title", "description"):
                terms.append(f"instr(aql_lower({f}), ?) > 0")
                args.append(_bind(t))
        parts.append("(" + " OR ".join(terms) + ")")
    for c in q.filter:
        sql, a = condition(c)
        parts.append(sql)
        args += a
    return " AND ".join(parts) or "1", args


# ---- order and keyset ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Term:
    sql: str
    nullable: bool
    desc: bool
    check: Callable[[Any], bool]


def _is_text(v: Any) -> bool:
    return isinstance(v, str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def terms_of(q: CollectionQuery) -> list[Term]:
    if not q.sort:
        return [Term(sql, False, False, _is_int if kind == "rank" else _is_text) for sql, kind in NATURAL] + [
            Term("tasks.rowid", False, False, _is_int)
        ]
    out = []
    for k in q.sort:
        col = FIELDS.get(k.field)
        if col is None or col.kind not in ("text", "opt", "rank"):
            raise Decline
        nullable = col.kind == "opt"
        check: Callable[[Any], bool] = (
            _is_num if col.kind == "rank" else (lambda v: v is None or isinstance(v, str)) if nullable else _is_text
        )
        out.append(Term(col.sql, nullable, k.descending, check))
    return [*out, Term("task_id", False, False, _is_text)]


def order_by(terms: Sequence[Term], reverse: bool = False) -> str:
    parts = []
    for t in terms:
        d = " DESC" if t.desc != reverse else ""
        parts.append(f"({t.sql} IS NULL){d}, {t.sql}{d}" if t.nullable else f"{t.sql}{d}")
    return ", ".join(parts)


def beyond(terms: Sequence[Term], values: Sequence[Any], forward: bool) -> Sql:
    """A NULL-free predicate: the row comes strictly after (``forward``) or strictly before
    the keyset ``values`` in ``terms`` order."""
    if len(values) != len(terms) or not all(t.check(v) for t, v in zip(terms, values, strict=True)):
        raise Decline
    for v in values:
        _bind(v)
    ups = [(not t.desc) == forward for t in terms]  # component must grow (True) or shrink
    if not any(t.nullable for t in terms) and None not in values and len(set(ups)) == 1:
        # one direction: a row value comparison the index range scan serves directly
        cols = ", ".join(t.sql for t in terms)
        return f"({cols}) {'>' if ups[0] else '<'} ({', '.join('?' * len(terms))})", list(values)
    sql, args = "0", list[Any]()
    for t, v, up in reversed(list(zip(terms, values, ups, strict=True))):
        later, la = _later(t, v, up)
        same = f"{t.sql} IS NULL" if v is None else f"({t.sql} IS NOT NULL AND {t.sql} = ?)" if t.nullable else f"{t.sql} = ?"
        sa = [] if v is None else [v]
        sql, args = f"({later} OR ({same} AND {sql}))", [*la, *sa, *args]
    first, v0 = terms[0], values[0]
    if not first.nullable:  # a redundant bound on the leading column: lets the index seek
        sql, args = f"({first.sql} {'>=' if ups[0] else '<='} ? AND {sql})", [v0, *args]
    return sql, args


def _later(t: Term, v: Any, up: bool) -> Sql:
    """Strictly later for one component (NULL sorts after every value, ascending)."""
    if up:
        if v is None:
            return "0", []
        return (f"({t.sql} IS NULL OR {t.sql} > ?)" if t.nullable else f"{t.sql} > ?"), [v]
    if v is None:
        return f"{t.sql} IS NOT NULL", []
    return (f"({t.sql} IS NOT NULL AND {t.sql} < ?)" if t.nullable else f"{t.sql} < ?"), [v]


# ---- the backend -----------------------------------------------------------------------------


class TaskQuery:
    """What ``list_tasks`` returns: its shortcut filters, waiting for the collection query."""

    def __init__(self, db: store.DB, shortcuts: dict[str, Any], to_record: Callable[[dict[str, Any]], Any]) -> None:
        self.db = db
        self.shortcuts = shortcuts
        self.to_record = to_record  # the row → item conversion, only for the rows returned

    def records(self) -> list[Any]:
        """Every matching task, in the store's order: the in-Python path's input."""
        return [self.to_record(r) for r in store.list_tasks(self.db, **self.shortcuts)]

    def execute_query(self, q: CollectionQuery) -> QueryResult | list[Any]:
        try:
            with self.db.read() as c:
                return self._run(c, q)
        except Decline:
            return self.records()

    def _run(self, c: sqlite3.Connection, q: CollectionQuery) -> QueryResult:
        where, args = where_of(q, store.task_filter(**self.shortcuts))
        result = QueryResult()
        if q.aggregate:
            result.aggregations = {e.label: self._aggregate(c, e, where, args) for e in q.aggregate}
        page = q.page
        if page is None:
            return result
        terms = terms_of(q)
        natural = not q.sort
        cols = "tasks.*, tasks.rowid AS _rowid" + "".join(f", {sql} AS _k{i}" for i, (sql, _) in enumerate(NATURAL))
        if q.want_total:
            result.total_count = c.execute(f"SELECT COUNT(*) FROM tasks WHERE {where}", args).fetchone()[0]
        cursor = page.before if page.backward else page.after
        keyset: Sql | None = None
        if cursor is not None:
            keyset = beyond(terms, self._keyset(c, cursor) if natural else cursor, not page.backward)
        if page.style == "offset":
            sql = f"SELECT {cols} FROM tasks WHERE {where} ORDER BY {order_by(terms)} LIMIT ? OFFSET ?"
            rows = c.execute(sql, [*args, page.size + 1, page.offset]).fetchall()
        else:
            w, a = (f"{where} AND {keyset[0]}", [*args, *keyset[1]]) if keyset else (where, args)
            sql = f"SELECT {cols} FROM tasks WHERE {w} ORDER BY {order_by(terms, page.backward)} LIMIT ?"
            rows = c.execute(sql, [*a, page.size + 1]).fetchall()
        more = len(rows) > page.size
        rows = rows[: page.size]
        if page.backward:
            rows.reverse()
        other_side = False  # a row on the cursor's other side (the page it came from)
        if keyset is not None and page.style != "offset":
            probe = f"SELECT 1 FROM tasks WHERE {where} AND NOT {keyset[0]} LIMIT 1"
            other_side = c.execute(probe, [*args, *keyset[1]]).fetchone() is not None
        result.has_next, result.has_previous = (other_side, more) if page.backward else (more, other_side)
        if page.style == "offset":
            result.has_previous = page.offset > 0 and bool(rows or result.total_count)
        result.items = [self.to_record(store.task_dict(r)) for r in rows]
        if natural:
            result.keys = [[r["task_id"], [*(r[f"_k{i}"] for i in range(len(NATURAL))), r["_rowid"]]] for r in rows]
        return result

    def _keyset(self, c: sqlite3.Connection, cursor: list[Any]) -> list[Any]:
        """A natural-order cursor: ``[task_id, [order values…, rowid]]``. One issued by the
        in-Python path carries a position instead: its task's current values stand in."""
        ident, at = cursor
        if isinstance(at, list):
            return at
        cols = ", ".join(sql for sql, _ in NATURAL)
        row = (
            c.execute(f"SELECT {cols}, rowid FROM tasks WHERE task_id = ?", (ident,)).fetchone()
            if isinstance(ident, str)
            else None
        )
        if row is None:
            raise Decline  # the anchor is gone: only its position is left, which is Python's to use
        return list(row)

    def _aggregate(self, c: sqlite3.Connection, e: AggregateExpr, where: str, args: list[Any]) -> Any:
        """One expression as ``GROUP BY``; partial groups fold with the streaming rules."""
        group = FIELDS.get(e.group_by) if e.group_by else None
        if e.group_by and group is None:
            raise Decline
        numeric = sorted({f for fn, f in e.functions if fn in ("sum", "avg") and f})
        ordered = sorted({f for fn, f in e.functions if fn in ("min", "max") and f})
        cols = [group.sql if group else "NULL", "COUNT(*)"]
        for f in numeric:
            col = FIELDS[f]
            is_num = f"json_type(metadata, '$.{f.split('.', 1)[1]}') IN ('integer', 'real')" if f.startswith("metadata.") else "1"
            cols += [f"SUM(CASE WHEN {is_num} THEN {col.sql} END)", f"COUNT(CASE WHEN {is_num} THEN 1 END)"]
        for f in ordered:
            col = FIELDS[f]
            cols += [f"MIN({col.sql})", f"MAX({col.sql})"]
        sql = f"SELECT {', '.join(cols)} FROM tasks WHERE {where}" + (f" GROUP BY {group.sql}" if group else "")
        state: dict[str, Any] = {}
        for row in c.execute(sql, args):
            raw = row[0]
            if group is not None and group.kind == "tags":
                raw = json.loads(raw)
            elif group is None:
                raw = None
            count = row[1]
            if group is None and count == 0:
                continue  # no records: the empty summary
            total: float = 0
            n = 0
            i = 2
            for _ in numeric:
                if row[i + 1]:
                    total += float(row[i])
                    n += row[i + 1]
                i += 2
            accumulate(state, raw, count, total, n)
            for f in ordered:
                low, high = row[i], row[i + 1]
                if FIELDS[f].kind == "number":
                    low, high = (float(v) if _is_num(v) else v for v in (low, high))
                accumulate(state, raw, 0, 0, 0, MISSING if low is None else low, MISSING if high is None else high)
                i += 2
        return summarize(e, state)


__all__ = ["FIELDS", "Decline", "TaskQuery", "beyond", "condition", "order_by", "terms_of", "where_of"]
