"""Computed fields (REQ-COMP-*, REQ-CQ-007)."""

from __future__ import annotations

import pytest
from widgets_support import WIDGETS, WHarness, err, ok

from mcpaql import Adapter, SchemaError
from mcpaql.protocol.collections import Collection, Computed

ALL = [w.model_dump() for w in WIDGETS]


def age(r: dict) -> int:
    return 31 - int(r["created_at"][8:10])


def test_req_comp_001_projected_under_computed(w: WHarness) -> None:
    items = ok(w.list(fields=["widget_id", "_computed.age_days", "_computed.size_label"], first=2))["items"]
    assert items[1] == {"widget_id": "w001", "_computed": {"age_days": 29, "size_label": "big"}}


def test_req_comp_001_not_included_unless_requested(w: WHarness) -> None:
    assert all("_computed" not in i for i in ok(w.list(fields="full"))["items"])


def test_req_comp_002_filter_on_filterable_computed(w: WHarness) -> None:
    got = [i["widget_id"] for i in ok(w.list(filter={"_computed.age_days": {"lt": 5}}, first=20))["items"]]
    assert got == [r["widget_id"] for r in ALL if age(r) < 5]


def test_req_comp_002_sort_on_sortable_computed(w: WHarness) -> None:
    items = ok(w.list(sort={"field": "_computed.age_days", "order": "desc"}, fields=["_computed.age_days"], first=20))["items"]
    ages = [i["_computed"]["age_days"] for i in items]
    assert ages == sorted((age(r) for r in ALL), reverse=True)[:20]


def test_req_comp_002_non_filterable_or_sortable_computed_rejected_clearly(w: WHarness) -> None:
    e = err(w.list(filter={"_computed.size_label": "big"}), "VALIDATION_INVALID_VALUE")
    assert "_computed.age_days" in e["details"]["supported_keys"]
    err(w.list(sort={"field": "_computed.size_label"}), "VALIDATION_INVALID_VALUE")


def test_req_comp_003_advertised_in_operation_detail(w: WHarness) -> None:
    assert w.detail("list_widgets")["computed_fields"] == [
        {"name": "age_days", "type": "number", "description": "Days since creation", "filterable": True, "sortable": True},
        {"name": "size_label", "type": "string", "description": "big or small", "filterable": False, "sortable": False},
    ]


def test_req_comp_003_names_validated_at_registration() -> None:
    app = Adapter("bad")
    with pytest.raises(SchemaError):

        @app.read(collection=Collection(fields=["a"], computed={"_computed.x": lambda r: 1}))
        def list_things() -> list[dict]:
            """x"""
            return []


def test_computed_evaluated_once_per_record_per_phase() -> None:
    calls: list[str] = []

    def slow(r: dict) -> int:
        calls.append(r["rid"])
        return r["n"] * 2

    app = Adapter("widgets")
    rows = [{"rid": f"r{i}", "n": i} for i in range(5)]

    @app.read(collection=Collection(fields=["rid", "n"], computed={"dbl": Computed(slow, filterable=True, sortable=True)}))
    def list_widgets() -> list[dict]:
        """x"""
        return rows

    h = WHarness(app.engine())
    data = ok(h.list(filter={"_computed.dbl": {"gte": 4}}, fields=["rid", "_computed.dbl"]))
    assert data["items"][0] == {"rid": "r2", "_computed": {"dbl": 4}}
    assert len(calls) <= 5 + 3  # filter pass over all + projection of the page
