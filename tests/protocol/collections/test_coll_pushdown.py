"""The pushdown interface: a backend takes the whole normalized query (e.g. SQL)."""

from __future__ import annotations

import sqlite3
from typing import Any

from widgets_support import WIDGETS, WHarness, err, ok

from mcpaql import Adapter
from mcpaql.protocol.collections import Collection, CollectionQuery, QueryResult

ALL = [w.model_dump() for w in WIDGETS]
OPS = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


class SQLBackend:
    """A minimal keyset-paginating SQLite backend for the tests."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.row_factory = sqlite3.Row
        self.db.execute("create table w (widget_id text primary key, name text, status text, size int)")
        self.db.executemany("insert into w values (?,?,?,?)", [(r["widget_id"], r["name"], r["status"], r["size"]) for r in ALL])
        self.queries: list[CollectionQuery] = []

    def execute_query(self, q: CollectionQuery) -> QueryResult:
        self.queries.append(q)
        where, args = [], []
        for c in q.filter:
            if c.op == "in":
                where.append(f"{c.field} in ({','.join('?' * len(c.value))})")
                args += c.value
            else:
                where.append(f"{c.field} {OPS[c.op]} ?")
                args.append(c.value)
        base_where = list(where)
        keys = [(k.field, k.order) for k in q.sort] + [(q.tiebreak, "asc")]
        aggregations = None
        if q.aggregate:
            sql = "select count(*) n from w" + (" where " + " and ".join(base_where) if base_where else "")
            aggregations = {e.label: self.db.execute(sql, args).fetchone()["n"] for e in q.aggregate}
            if q.page is None:
                return QueryResult(aggregations=aggregations)
        page = q.page
        assert page is not None and not page.backward
        if page.after is not None:
            # Row-value comparison works for all-ascending keys (enough for this test backend).
            cols = ", ".join(f for f, _ in keys)
            where.append(f"({cols}) > ({', '.join('?' * len(keys))})")
            args += page.after
        sql = "select * from w" + (" where " + " and ".join(where) if where else "")
        sql += " order by " + ", ".join(f"{f} {o}" for f, o in keys) + " limit ?"
        rows = [dict(r) for r in self.db.execute(sql, [*args, page.size + 1])]
        total = self.db.execute(
            "select count(*) n from w" + (" where " + " and ".join(base_where) if base_where else ""),
            args[: len(args) - (len(keys) if page.after is not None else 0)],
        ).fetchone()["n"]
        return QueryResult(
            rows[: page.size],
            has_next=len(rows) > page.size,
            has_previous=page.after is not None,
            total_count=total,
            aggregations=aggregations,
        )


def make() -> tuple[WHarness, SQLBackend]:
    backend = SQLBackend()
    app = Adapter("widgets")

    @app.read(
        collection=Collection(
            fields=["widget_id", "name", "status", "size"],
            key="widget_id",
            filterable={"status": ["eq", "in"], "size": ["gt", "lt"]},
            sortable=["size", "name"],
            aggregate=True,
            page_size=5,
            offset=False,
        )
    )
    def list_widgets() -> Any:
        """Widgets from SQL."""
        return backend

    return WHarness(app.engine()), backend


def test_pushdown_receives_normalized_query_and_pages_by_keyset() -> None:
    h, backend = make()
    first = ok(h.list(filter={"status": {"in": ["active", "paused"]}}, sort={"field": "size"}, fields=["widget_id", "size"]))
    q = backend.queries[-1]
    assert [(c.field, c.op) for c in q.filter] == [("status", "in")]
    assert [(k.field, k.order) for k in q.sort] == [("size", "asc")] and q.tiebreak == "widget_id"
    assert q.projection.paths == ("widget_id", "size")
    want = sorted((r for r in ALL if r["status"] in ("active", "paused")), key=lambda r: (r["size"], r["widget_id"]))
    got = [i["widget_id"] for i in first["items"]]
    cursor = first["pageInfo"]["endCursor"]
    while first["pageInfo"]["hasNextPage"]:
        first = ok(
            h.list(
                filter={"status": {"in": ["active", "paused"]}},
                sort={"field": "size"},
                first=5,
                after=cursor,
                fields=["widget_id", "size"],
            )
        )
        got += [i["widget_id"] for i in first["items"]]
        cursor = first["pageInfo"]["endCursor"]
    assert got == [r["widget_id"] for r in want]
    assert backend.queries[-1].page.after is not None


def test_pushdown_aggregates_and_validation_happens_before_backend() -> None:
    h, backend = make()
    assert ok(h.list(aggregate={"n": {"count": True}}, filter={"status": "active"})) == {"aggregations": {"n": 10}}
    before = len(backend.queries)
    err(h.list(filter={"status": {"contains": "x"}}), "VALIDATION_INVALID_VALUE")
    err(h.list(filter={"colour": "x"}), "VALIDATION_INVALID_VALUE")
    assert len(backend.queries) == before
