"""What collection operations advertise (REQ-CQ-011/014/015/017, REQ-PAGE-013, C.4/C.9, Part F #5).

Every introspection response in these tests is validated against the closed spec schemas by
the harness, so an extra key anywhere in OperationDetails/ParameterInfo fails the test."""

from __future__ import annotations

from widgets_support import WHarness, make_widgets_app, ok, wharness

from mcpaql import Adapter, Collection, Context

STANDARD = [
    "fields",
    "query",
    "filter",
    "sort",
    "order",
    "first",
    "after",
    "last",
    "before",
    "limit",
    "offset",
    "aggregate",
    "include_items",
]


def test_req_cq_014_parameters_listed_with_types(w: WHarness) -> None:
    params = {p["name"]: p for p in w.detail("list_widgets")["parameters"]}
    assert list(params) == STANDARD
    assert params["first"] == {
        "name": "first",
        "type": "integer",
        "required": False,
        "description": "Page size, forward (default 10, max 20; larger values are clamped with a warning)",
        "default": 10,
        "minimum": 0,
    }
    assert params["after"]["type"] == "string"
    assert params["filter"]["type"] == "object" and "status" in params["filter"]["description"]
    assert params["sort"]["type"] == "ListWidgetsSort | ListWidgetsSort[] | string"
    assert params["include_items"]["default"] is False


def test_req_cq_014_sort_type_shows_sortable_fields(w: WHarness) -> None:
    env = w.call("widgets_mcpaql_read", {"operation": "introspect", "params": {"query": "types", "name": "ListWidgetsSort"}})
    fields = {f["name"]: f for f in env["data"]["type"]["fields"]}
    assert fields["field"]["enum"] == ["size", "name", "created_at", "score", "status", "_computed.age_days"]
    assert fields["order"]["enum"] == ["asc", "desc"]


def test_part_f_5_pagination_filter_sort_in_description(w: WHarness) -> None:
    d = w.detail("list_widgets")
    desc = d["description"]
    assert desc.startswith("List widgets. Cursor pagination (first/after, last/before; default 10, max 20)")
    assert "filter keys: status, category" in desc and "sort fields: size, name" in desc
    assert "supports_pagination" not in d and "pagination" not in d


def test_req_cq_004_combined_example(w: WHarness) -> None:
    (example,) = w.detail("list_widgets")["examples"]
    assert example["request"] == {
        "operation": "list_widgets",
        "params": {"fields": "minimal", "sort": {"field": "size", "order": "desc"}, "first": 10},
    }
    assert ok(w.call("widgets_mcpaql_read", example["request"]))["items"]


def test_req_cq_011_omitted_capabilities_explicit(w: WHarness) -> None:
    d = w.detail("search_widgets")
    assert "no sorting" in d["description"]
    assert d["aggregation_support"] == {"supported": False}
    names = [p["name"] for p in d["parameters"]]
    assert "sort" not in names and "aggregate" not in names


def test_item_operation_gets_only_fields(w: WHarness) -> None:
    d = w.detail("get_widget")
    assert [p["name"] for p in d["parameters"]] == ["widget_id", "fields"]
    assert d["returns"]["name"] == "Widget"
    assert "aggregation_support" not in d


def test_returns_connection_type(w: WHarness) -> None:
    assert w.detail("list_widgets")["returns"]["name"] == "WidgetConnection"


def test_c9_capabilities_and_level_2(w: WHarness) -> None:
    env = w.call("widgets_mcpaql_read", {"operation": "introspect", "params": {"query": "operations"}})
    proto = env["data"]["_protocol"]
    caps = proto["capabilities"]
    assert caps["field_selection"] and caps["pagination"] and caps["aggregations"] and caps["computed_fields"]
    assert caps["relationship_queries"] is False
    assert proto["conformance"] == "level-2"


def test_c9_plain_adapter_stays_level_1() -> None:
    app = Adapter("plain")

    @app.read
    def get_thing(thing_id: str) -> dict:
        """A thing."""
        return {}

    h = WHarness(app.engine())
    env = h.call("plain_mcpaql_read", {"operation": "introspect", "params": {"query": "operations"}})
    assert env["data"]["_protocol"]["capabilities"]["field_selection"] is False
    assert env["data"]["_protocol"]["conformance"] == "level-1"


def test_req_cq_015_shared_params_identical_across_operations(w: WHarness) -> None:
    a = {p["name"]: p for p in w.detail("list_widgets")["parameters"]}
    b = {p["name"]: p for p in w.detail("search_widgets")["parameters"]}
    for name in ("after", "before", "limit", "offset"):
        assert a[name] == b[name]


def test_offset_switch_off_removes_offset_params() -> None:
    h = wharness(make_widgets_app(offset=False))
    names = [p["name"] for p in h.detail("list_widgets")["parameters"]]
    assert "limit" not in names and "offset" not in names
    assert h.list(limit=3)["error"]["code"] == "VALIDATION_UNKNOWN_PARAM"


def test_batch_of_collection_reads(w: WHarness) -> None:
    env = w.call(
        "widgets_mcpaql_read",
        {
            "operations": [
                {"operation": "list_widgets", "params": {"first": 2, "fields": "minimal"}},
                {"operation": "list_widgets", "params": {"first": 1, "last": 1}},
                {"operation": "list_widgets", "params": {"aggregate": {"n": {"count": True}}}},
            ]
        },
    )
    results = [r["result"] for r in env["results"]]
    assert len(results[0]["data"]["items"]) == 2
    assert results[1]["error"]["code"] == "VALIDATION_INVALID_TYPE"
    assert results[2]["data"] == {"aggregations": {"n": 30}}
    c = results[0]["data"]["pageInfo"]["endCursor"]
    assert [i["widget_id"] for i in ok(w.list(first=1, after=c))["items"]] == ["w002"]


def test_req_fsel_015_selectable_fields_discoverable_as_type(w: WHarness) -> None:
    env = w.call("widgets_mcpaql_read", {"operation": "introspect", "params": {"query": "types", "name": "ListWidgetsField"}})
    t = env["data"]["type"]
    assert t["kind"] == "enum"
    assert "settings" in t["values"] and "_computed.age_days" in t["values"]
    fields = next(p for p in w.detail("list_widgets")["parameters"] if p["name"] == "fields")
    assert "ListWidgetsField" in fields["description"]


def test_handler_with_context_and_async_handler_get_context() -> None:
    app = Adapter("widgets")
    seen: list[str] = []

    @app.read(collection=Collection(fields=["rid"], sortable=["rid"]))
    async def list_widgets(ctx: Context) -> list[dict]:
        """Async rows."""
        seen.append(ctx.operation)
        ctx.warn("PERFORMANCE_SLOW_QUERY_WARNING", "slow", {"operation": "list_widgets"})
        return [{"rid": i} for i in range(3)]

    h = WHarness(app.engine())
    env = h.list(first=2, sort={"field": "rid", "order": "desc"})
    assert [i["rid"] for i in ok(env)["items"]] == [2, 1]
    assert seen == ["list_widgets"] and env["warnings"][0]["code"] == "PERFORMANCE_SLOW_QUERY_WARNING"
