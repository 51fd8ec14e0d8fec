"""Aggregations (REQ-AGG-*, REQ-CQ-008): streaming count/group_by/sum/avg/min/max."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from widgets_support import WIDGETS, WHarness, err, ok

from mcpaql.protocol.collections import AggregationSupport, Aggregator, parse_aggregate

ALL = [w.model_dump() for w in WIDGETS]


def test_req_agg_001_004_summary_first_shape(w: WHarness) -> None:
    data = ok(w.list(aggregate={"total": {"count": True}}))
    assert data == {"aggregations": {"total": 30}}


def test_req_agg_003_group_by_with_several_summaries(w: WHarness) -> None:
    data = ok(
        w.list(
            aggregate={
                "by_status": {"group_by": "status", "count": True, "avg": "size", "min": "size", "max": "size", "sum": "size"}
            }
        )
    )
    got = data["aggregations"]["by_status"]
    for status in ("active", "paused", "retired"):
        sizes = [r["size"] for r in ALL if r["status"] == status]
        assert got[status] == {
            "count": len(sizes),
            "sum": sum(sizes),
            "avg": sum(sizes) / len(sizes),
            "min": min(sizes),
            "max": max(sizes),
        }
    assert list(got) == ["active", "paused", "retired"]


def test_req_agg_007_several_named_expressions(w: WHarness) -> None:
    data = ok(
        w.list(
            aggregate={
                "total": {"count": True},
                "by_cat": {"group_by": "category", "count": True},
                "avg_size": {"avg": "size"},
                "range": {"min": "created_at", "max": "created_at"},
            }
        )
    )
    a = data["aggregations"]
    assert a["total"] == 30 and a["by_cat"] == {"tools": 15, "toys": 15}
    assert a["avg_size"] == pytest.approx(sum(r["size"] for r in ALL) / 30)
    assert a["range"] == {"min": "2026-01-01T00:00:00Z", "max": "2026-01-28T00:00:00Z"}


def test_req_agg_003_bare_group_by_counts(w: WHarness) -> None:
    assert ok(w.list(aggregate={"g": {"group_by": "category"}}))["aggregations"]["g"] == {"tools": 15, "toys": 15}


def test_req_agg_avg_ignores_nulls_and_empty_avg_is_null(w: WHarness) -> None:
    a = ok(w.list(aggregate={"s": {"avg": "score", "count": True}}))["aggregations"]["s"]
    scores = [r["score"] for r in ALL if r["score"] is not None]
    assert a == {"count": 30, "avg": pytest.approx(sum(scores) / len(scores))}
    assert ok(w.list(filter={"status": "none"}, aggregate={"s": {"avg": "score"}}))["aggregations"] == {"s": None}


def test_req_agg_005_applied_after_query_and_filter(w: WHarness) -> None:
    data = ok(w.list(query="alpha", filter={"category": "tools"}, aggregate={"n": {"count": True}}))
    assert data["aggregations"]["n"] == sum(1 for r in ALL if "alpha" in r["name"] and r["category"] == "tools")


def test_req_agg_005_sort_and_paging_ignored_in_summary_mode_with_warning(w: WHarness) -> None:
    env = w.list(aggregate={"n": {"count": True}}, sort={"field": "size"}, first=3)
    assert ok(env) == {"aggregations": {"n": 30}}
    (warning,) = env["warnings"]
    assert warning["code"] == "VALIDATION_PARAM_IGNORED_WARNING"
    assert warning["details"] == {"params": ["sort", "first"], "reason": "summary_only"}


def test_req_agg_005_fields_do_not_project_aggregate_keys(w: WHarness) -> None:
    data = ok(w.list(aggregate={"n": {"count": True}}, include_items=True, fields=["widget_id"], first=2))
    assert data["aggregations"] == {"n": 30}
    assert data["items"] == [{"widget_id": "w000"}, {"widget_id": "w001"}]


def test_req_agg_004_req_cq_008_include_items_returns_both_paginated(w: WHarness) -> None:
    data = ok(w.list(aggregate={"n": {"count": True}}, include_items=True, first=5, filter={"status": "active"}))
    assert data["aggregations"] == {"n": 10}
    assert len(data["items"]) == 5 and data["pageInfo"]["totalCount"] == 10


def test_include_items_without_aggregate_warns(w: WHarness) -> None:
    env = w.list(include_items=True, first=1)
    assert env["warnings"][0]["details"]["reason"] == "no_aggregate"


@pytest.mark.parametrize(
    ("agg", "constraint", "key"),
    [
        ({"x": {"median": "size"}}, "aggregate_function", "supported_functions"),
        ({"x": {"sum": "name"}}, "aggregate_field", "numeric_fields"),
        ({"x": {"group_by": "settings"}}, "aggregate_field", "groupable_fields"),
        ({"x": {"count": False}}, "aggregate_function", "supported_functions"),
        ({"x": {}}, "aggregate_function", "supported_functions"),
    ],
)
def test_req_agg_006_unsupported_function_or_field_lists_supported(w: WHarness, agg, constraint, key) -> None:
    e = err(w.list(aggregate=agg), "VALIDATION_INVALID_VALUE")
    assert e["details"]["constraint"] == constraint
    assert e["details"][key]


@pytest.mark.parametrize("agg", [{"x": {"count": "yes"}}, {"x": {"sum": 3}}, {"x": 5}, {"x": ["count"]}, "count"])
def test_req_agg_006_bad_expression_types(w: WHarness, agg) -> None:
    err(w.list(aggregate=agg), "VALIDATION_INVALID_TYPE")


def test_req_agg_002_subset_of_functions() -> None:
    from widgets_support import make_widgets_app, wharness

    support = AggregationSupport(functions=("count", "group_by"), groupable_fields=("status",))
    h = wharness(make_widgets_app(aggregate=support))
    ok(h.list(aggregate={"g": {"group_by": "status", "count": True}}))
    e = err(h.list(aggregate={"g": {"avg": "size"}}), "VALIDATION_INVALID_VALUE")
    assert e["details"]["supported_functions"] == ["count", "group_by"]
    assert h.detail("list_widgets")["aggregation_support"] == {
        "supported": True,
        "default_mode": "summary_only",
        "functions": ["count", "group_by"],
        "groupable_fields": ["status"],
        "numeric_fields": [],
    }


def test_req_agg_008_aggregation_support_advertised(w: WHarness) -> None:
    info = w.detail("list_widgets")["aggregation_support"]
    assert info["supported"] is True and info["default_mode"] == "summary_only"
    assert info["functions"] == ["count", "group_by", "sum", "avg", "min", "max"]
    assert "status" in info["groupable_fields"] and set(info["numeric_fields"]) == {"size", "score"}
    assert w.detail("search_widgets")["aggregation_support"] == {"supported": False}


def test_group_keys_for_non_string_values() -> None:
    exprs = parse_aggregate({"g": {"group_by": "v", "count": True}}, AggregationSupport(groupable_fields=("v",)))
    rows = [{"v": 1}, {"v": True}, {"v": None}, {}, {"v": ["a"]}, {"v": "x"}, {"v": 1}]
    res = Aggregator(exprs, lambda r, f: r.get(f)).feed(rows).result()["g"]
    assert res == {"1": 2, "true": 1, "x": 1, '["a"]': 1, "null": 2}
    assert list(res) == ["1", "true", "x", '["a"]', "null"]  # numbers, strings, other, null


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(-100, 100))), max_size=60))
def test_req_agg_property_matches_naive_computation(rows) -> None:
    recs = [{"g": g, "v": v} for g, v in rows]
    support = AggregationSupport(groupable_fields=("g",), numeric_fields=("v",))
    exprs = parse_aggregate({"x": {"group_by": "g", "count": True, "sum": "v", "avg": "v", "min": "v", "max": "v"}}, support)
    got = Aggregator(exprs, lambda r, f: r.get(f)).feed(iter(recs)).result()["x"]
    for g in "abc":
        vs = [r["v"] for r in recs if r["g"] == g]
        if not vs:
            assert g not in got
            continue
        nums = [v for v in vs if v is not None]
        assert got[g] == {
            "count": len(vs),
            "sum": sum(nums),
            "avg": (sum(nums) / len(nums)) if nums else None,
            "min": min(nums) if nums else None,
            "max": max(nums) if nums else None,
        }


def test_req_agg_streaming_memory_grows_with_groups_not_records() -> None:
    support = AggregationSupport(groupable_fields=("g",), numeric_fields=("v",))
    exprs = parse_aggregate({"x": {"group_by": "g", "avg": "v"}}, support)

    def gen(n: int) -> Iterator[dict]:
        for i in range(n):
            yield {"g": i % 10, "v": i}

    def peak(n: int) -> int:
        tracemalloc.start()
        Aggregator(exprs, lambda r, f: r.get(f)).feed(gen(n)).result()
        _, p = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return p

    small, big = peak(2_000), peak(200_000)
    assert big < small * 3 + 50_000  # 100x the records, not 100x the memory


def test_req_agg_streaming_through_the_operation_consumes_a_generator_once() -> None:
    from mcpaql import Adapter
    from mcpaql.protocol.collections import Collection

    consumed = []

    def source() -> Iterator[dict]:
        for i in range(1000):
            consumed.append(i)
            yield {"rid": i, "g": i % 3, "v": i}

    app = Adapter("widgets")

    @app.read(
        collection=Collection(
            fields=["rid", "g", "v"],
            filterable=["g"],
            aggregate=AggregationSupport(groupable_fields=("g",), numeric_fields=("v",)),
        )
    )
    def list_widgets():
        """Rows."""
        return source()

    h = WHarness(app.engine())
    data = ok(h.list(aggregate={"by": {"group_by": "g", "sum": "v"}}, filter={"g": {"ne": 2}}))
    assert data["aggregations"]["by"] == {"0": sum(range(0, 1000, 3)), "1": sum(range(1, 1000, 3))}
    assert len(consumed) == 1000
