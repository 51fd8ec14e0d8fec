"""Edge cases of the collection switch: registration errors, odd handler results, windows."""

from __future__ import annotations

from typing import Any

import pytest
from widgets_support import WHarness, err, make_widgets_app, ok, wharness

from mcpaql import Adapter, Collection, SchemaError
from mcpaql.protocol.collections import QueryResult


def one_op(coll: Collection, result: Any) -> WHarness:
    app = Adapter("widgets")

    @app.read(collection=coll)
    def list_widgets() -> Any:
        """x"""
        return result

    return WHarness(app.engine())


@pytest.mark.parametrize(
    "coll",
    [
        Collection(fields=["a"], filterable=["b"]),
        Collection(fields=["a"], sortable=["b"]),
        Collection(fields=["a"], searchable=["b"]),
        Collection(fields=["a"], key="b"),
        Collection(fields=["a"], filterable={"a": ["like"]}),
        Collection(fields=["a"], page_size=50, max_page_size=10),
        Collection(fields=["a"], max_page_size=5000),
        Collection(fields=["a"], presets={"minimal": ["zz"]}),
        Collection(fields=["a"], default_fields="nope"),
        Collection(fields=["a"], mode="table"),
        Collection(fields=["a"], require_query=True),
    ],
)
def test_bad_declarations_fail_at_registration(coll: Collection) -> None:
    app = Adapter("widgets")
    with pytest.raises(SchemaError):

        @app.read(collection=coll)
        def list_widgets() -> list[dict]:
            """x"""
            return []


def test_handler_param_clash_fails_at_registration() -> None:
    app = Adapter("widgets")
    with pytest.raises(SchemaError):

        @app.read(collection=Collection(fields=["a"]))
        def list_widgets(first: int = 3) -> list[dict]:
            """x"""
            return []


@pytest.mark.parametrize("result", [{"a": 1}, 42, QueryResult, object()])
def test_non_iterable_result_is_internal_error_without_leak(result: Any, assert_no_leak: Any) -> None:
    env = one_op(Collection(fields=["a"]), result).list()
    err(env, "INTERNAL_ERROR")
    assert_no_leak(env["error"]["message"])


def test_none_result_is_empty_page() -> None:
    assert ok(one_op(Collection(fields=["a"]), None).list()) == {
        "items": [],
        "pageInfo": {"hasNextPage": False, "hasPreviousPage": False, "totalCount": 0},
    }


def test_non_object_item_is_internal_error() -> None:
    err(one_op(Collection(fields=["a"]), [1, 2]).list(), "INTERNAL_ERROR")


def test_item_operation_returning_none_is_null(w: WHarness) -> None:
    assert ok(w.op("get_widget", widget_id="nope")) is None


def test_first_zero_returns_no_items_but_flags(w: WHarness) -> None:
    data = ok(w.list(first=0))
    assert data["items"] == [] and data["pageInfo"]["hasNextPage"] is True and "startCursor" not in data["pageInfo"]


def test_empty_field_list_rejected(w: WHarness) -> None:
    err(w.list(fields=[]), "VALIDATION_INVALID_VALUE")


def test_default_sort_applies_and_binds_cursors() -> None:
    h = wharness(make_widgets_app(default_sort=["-size", {"field": "name"}]))
    sizes = [i["size"] for i in ok(h.list(first=20, fields=["size"]))["items"]]
    assert sizes == sorted(sizes, reverse=True)
    c = ok(h.list(first=2))["pageInfo"]["endCursor"]
    ok(h.list(first=2, after=c))
    err(h.list(first=2, after=c, sort={"field": "size"}), "VALIDATION_INVALID_VALUE")


def test_total_count_can_be_switched_off() -> None:
    h = wharness(make_widgets_app(total_count=False))
    assert "totalCount" not in ok(h.list(first=2))["pageInfo"]
    assert "total_items" not in ok(h.list(limit=2))["pagination"]


def test_async_backend_is_awaited() -> None:
    class Backend:
        async def execute_query(self, q: Any) -> QueryResult:
            return QueryResult([{"a": 1}], total_count=1)

    data = ok(one_op(Collection(fields=["a"], key="a"), Backend()).list())
    assert data["items"] == [{"a": 1}] and data["pageInfo"]["totalCount"] == 1


def test_backend_returns_query_result_or_declines_with_records() -> None:
    class Backend:
        def __init__(self, answer: Any) -> None:
            self.answer = answer

        def execute_query(self, q: Any) -> Any:
            return self.answer

    # records instead of a QueryResult: the backend declined, the shared layer answers in Python
    declined = ok(one_op(Collection(fields=["a"], filterable=["a"]), Backend([{"a": 1}, {"a": 2}])).list(filter={"a": 2}))
    assert declined["items"] == [{"a": 2}] and declined["pageInfo"]["totalCount"] == 1
    for bad in ({"a": 1}, 42):
        err(one_op(Collection(fields=["a"]), Backend(bad)).list(), "INTERNAL_ERROR")
