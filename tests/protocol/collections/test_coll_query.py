"""Collection querying: text query, filter operators, sort (REQ-CQ-*)."""

from __future__ import annotations

import pytest
from widgets_support import WIDGETS, WHarness, err, ok

from mcpaql.protocol.collections.query import parse_text


def ids(env: dict) -> list[str]:
    return [i["widget_id"] for i in ok(env)["items"]]


def plain(i: int) -> dict:
    return WIDGETS[i].model_dump()


ALL = [w.model_dump() for w in WIDGETS]


def test_req_cq_002_list_does_not_require_query(w: WHarness) -> None:
    assert len(ids(w.list(first=20))) == 20


def test_req_cq_012_multiword_or_semantics(w: WHarness) -> None:
    got = set(ids(w.list(query="alpha gamma", first=20)))
    want = {r["widget_id"] for r in ALL if "alpha" in r["name"] or "gamma" in r["name"]}
    assert got == want and len(want) == 15


def test_req_cq_012_quoted_phrase_is_exact_and_case_insensitive(w: WHarness) -> None:
    assert ids(w.list(query='"BETA widget 13"')) == ["w013"]
    assert ids(w.list(query='"widget beta"')) == []


def test_req_cq_012_text_query_searches_array_fields(w: WHarness) -> None:
    got = ids(w.list(query="green", first=20))
    assert got == [r["widget_id"] for r in ALL if "green" in r["tags"]][:20]


def test_parse_text_tokens() -> None:
    q = parse_text('api "code reviewer" API  ""')
    assert q.words == ("api",) and q.phrases == ("code reviewer",)


def test_req_cq_005_filter_equality(w: WHarness) -> None:
    assert ids(w.list(filter={"status": "paused"}, first=20)) == [r["widget_id"] for r in ALL if r["status"] == "paused"]


def test_req_cq_005_filter_array_field_membership(w: WHarness) -> None:
    assert ids(w.list(filter={"tags": "blue"}, first=20)) == [r["widget_id"] for r in ALL if "blue" in r["tags"]]


@pytest.mark.parametrize(
    ("spec", "pred"),
    [
        ({"size": {"gt": 30}}, lambda r: r["size"] > 30),
        ({"size": {"gte": 30, "lt": 40}}, lambda r: 30 <= r["size"] < 40),
        ({"size": {"lte": 5}}, lambda r: r["size"] <= 5),
        ({"status": {"ne": "active"}}, lambda r: r["status"] != "active"),
        ({"status": {"in": ["active", "retired"]}}, lambda r: r["status"] in ("active", "retired")),
        ({"status": {"nin": ["active", "retired"]}}, lambda r: r["status"] not in ("active", "retired")),
        ({"name": {"contains": "GAMMA"}}, lambda r: "gamma" in r["name"]),
        ({"name": {"starts_with": "del"}}, lambda r: r["name"].startswith("del")),
        ({"score": {"exists": False}}, lambda r: r["score"] is None),
        ({"score": {"exists": True, "gt": 10}}, lambda r: r["score"] is not None and r["score"] > 10),
        ({"created_at": {"gte": "2026-01-20"}}, lambda r: r["created_at"] >= "2026-01-20"),
        ({"status": "active", "category": "toys"}, lambda r: r["status"] == "active" and r["category"] == "toys"),
        ({"tags": {"contains": "red"}}, lambda r: "red" in r["tags"]),
    ],
)
def test_req_cq_005_filter_operators(w: WHarness, spec: dict, pred) -> None:
    assert ids(w.list(filter=spec, first=20)) == [r["widget_id"] for r in ALL if pred(r)][:20]


def test_req_cq_005_unsupported_filter_key_lists_supported(w: WHarness) -> None:
    e = err(w.list(filter={"colour": "red"}), "VALIDATION_INVALID_VALUE")
    assert e["details"]["unknown_keys"] == ["colour"]
    assert "status" in e["details"]["supported_keys"]


def test_req_cq_005_unknown_operator_lists_operators(w: WHarness) -> None:
    e = err(w.list(filter={"size": {"between": [1, 2]}}), "VALIDATION_INVALID_VALUE")
    assert "gte" in e["details"]["operators"]


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"status": {"in": "active"}}, "VALIDATION_INVALID_TYPE"),
        ({"score": {"exists": "yes"}}, "VALIDATION_INVALID_TYPE"),
        ({"size": {"gt": [1]}}, "VALIDATION_INVALID_TYPE"),
        ({"name": {"starts_with": 3}}, "VALIDATION_INVALID_TYPE"),
        ({"size": {}}, "VALIDATION_INVALID_VALUE"),
    ],
)
def test_req_cq_005_bad_operands(w: WHarness, spec: dict, code: str) -> None:
    err(w.list(filter=spec), code)


def test_req_cq_005_filter_must_be_object(w: WHarness) -> None:
    err(w.list(filter="status=active"), "VALIDATION_INVALID_TYPE")


def test_req_cq_005_filter_restricted_operators_per_field() -> None:
    from widgets_support import make_widgets_app, wharness

    h = wharness(make_widgets_app(filterable={"status": ["eq", "in"]}, sortable=["size"], aggregate=False, computed={}))
    ok(h.list(filter={"status": {"in": ["active"]}}))
    e = err(h.list(filter={"status": {"contains": "act"}}), "VALIDATION_INVALID_VALUE")
    assert e["details"]["operators"] == ["eq", "in"]


def test_req_cq_006_sort_object_asc_desc(w: WHarness) -> None:
    asc = ok(w.list(sort={"field": "size"}, first=20, fields=["size"]))["items"]
    desc = ok(w.list(sort={"field": "size", "order": "desc"}, first=20, fields=["size"]))["items"]
    assert [i["size"] for i in asc] == sorted(r["size"] for r in ALL)[:20]
    assert [i["size"] for i in desc] == sorted((r["size"] for r in ALL), reverse=True)[:20]


def test_req_cq_006_multikey_sort_is_stable(w: WHarness) -> None:
    got = ids(w.list(sort=[{"field": "status"}, {"field": "size", "order": "desc"}], first=20))
    want = sorted(ALL, key=lambda r: r["widget_id"])
    want = sorted(want, key=lambda r: r["size"], reverse=True)
    want = sorted(want, key=lambda r: r["status"])
    assert got == [r["widget_id"] for r in want][:20]


def test_req_cq_006_sort_missing_values_last(w: WHarness) -> None:
    items = ok(w.list(sort={"field": "score"}, first=20, fields=["score"]))["items"]
    scores = [i.get("score") for i in items]
    non_null = sorted(r["score"] for r in ALL if r["score"] is not None)
    assert scores == non_null[:20]
    tail = ok(w.list(sort={"field": "score"}, last=6, fields=["score"]))["items"]
    assert [i.get("score") for i in tail] == [None] * 6


def test_req_cq_006_shortcut_sort_plus_order(w: WHarness) -> None:
    a = ids(w.list(sort="size", order="desc", first=20))
    b = ids(w.list(sort={"field": "size", "order": "desc"}, first=20))
    assert a == b


def test_req_cq_006_unsupported_sort_field_lists_sortable(w: WHarness) -> None:
    e = err(w.list(sort={"field": "category"}), "VALIDATION_INVALID_VALUE")
    assert "size" in e["details"]["allowed"]
    e = err(w.list(sort="category"), "VALIDATION_INVALID_VALUE")
    assert "size" in e["details"]["sortable_fields"]


@pytest.mark.parametrize(
    "params",
    [
        {"sort": {"field": "size", "order": "up"}},
        {"sort": {"field": "size", "extra": 1}},
        {"sort": {"order": "asc"}},
        {"sort": [{"field": "size"}, {"field": "size"}]},
        {"sort": {"field": "size"}, "order": "desc"},
        {"order": "desc"},
        {"sort": []},
    ],
)
def test_req_cq_006_bad_sort_shapes_rejected(w: WHarness, params: dict) -> None:
    env = w.list(**params)
    assert env["success"] is False and env["error"]["code"].startswith("VALIDATION_"), env


def test_req_cq_008_query_filter_compose_before_paging(w: WHarness) -> None:
    data = ok(w.list(query="alpha", filter={"category": "tools"}, first=3))
    want = [r["widget_id"] for r in ALL if "alpha" in r["name"] and r["category"] == "tools"]
    assert [i["widget_id"] for i in data["items"]] == want[:3]
    assert data["pageInfo"]["totalCount"] == len(want)


def test_models_and_dataclasses_and_generators_are_accepted() -> None:
    import dataclasses

    from mcpaql import Adapter
    from mcpaql.protocol.collections import Collection

    @dataclasses.dataclass
    class Row:
        row_id: int
        label: str

    app = Adapter("rows")

    @app.read(collection=Collection(fields=["row_id", "label"], filterable=["label"], sortable=["row_id"]))
    def list_rows():
        """Rows from a generator."""
        return (Row(i, "even" if i % 2 == 0 else "odd") for i in range(7))

    from widgets_support import WHarness as H

    h = H(app.engine())
    env = h.call(
        "rows_mcpaql_read",
        {"operation": "list_rows", "params": {"filter": {"label": "odd"}, "sort": {"field": "row_id", "order": "desc"}}},
    )
    assert [i["row_id"] for i in ok(env)["items"]] == [5, 3, 1]


def test_req_cq_002_search_can_require_query() -> None:
    from widgets_support import WHarness as H

    from mcpaql import Adapter
    from mcpaql.protocol.collections import Collection

    app = Adapter("widgets")

    @app.read(collection=Collection(fields=["rid", "body"], searchable=["body"], require_query=True))
    def search_widgets() -> list[dict]:
        """Search."""
        return [{"rid": 1, "body": "hello world"}, {"rid": 2, "body": "bye"}]

    h = H(app.engine())
    assert h.op("search_widgets")["error"]["code"] == "VALIDATION_MISSING_PARAM"
    assert [i["rid"] for i in ok(h.op("search_widgets", query="hello", fields="full"))["items"]] == [1]
