"""Field selection (REQ-FSEL-*; Part F #16: unknown names are rejected, listing valid fields)."""

from __future__ import annotations

import pytest
from widgets_support import WHarness, err, ok

from mcpaql.protocol.collections import FieldSelector
from mcpaql.protocol.errors import MCPAQLError


def test_req_fsel_002_003_fields_accepts_preset_name(w: WHarness) -> None:
    items = ok(w.list(fields="minimal"))["items"]
    assert items and all(set(i) == {"widget_id", "name"} for i in items)


def test_req_fsel_003_fields_accepts_path_list(w: WHarness) -> None:
    items = ok(w.list(fields=["size", "status"]))["items"]
    assert all(set(i) == {"size", "status"} for i in items)


def test_req_fsel_004_nested_paths_keep_structure(w: WHarness) -> None:
    items = ok(w.list(fields=["widget_id", "settings.theme", "settings.layout.cols"], first=2))["items"]
    assert items[0] == {"widget_id": "w000", "settings": {"theme": "light", "layout": {"cols": 0}}}


def test_req_fsel_004_parent_and_child_paths_select_whole_parent(w: WHarness) -> None:
    items = ok(w.list(fields=["settings", "settings.theme"], first=1))["items"]
    assert items[0]["settings"] == {"theme": "light", "lang": "en", "layout": {"cols": 0}}


@pytest.mark.parametrize("bad", ["Name", "1abc", "a..b", "a.", "_computed", "_computed.Age", "x-y", ""])
def test_req_fsel_005_invalid_path_syntax_rejected(w: WHarness, bad: str) -> None:
    e = err(w.list(fields=[bad]), "VALIDATION_INVALID_VALUE")
    assert "pattern" in e["details"]["constraint"]


def test_req_fsel_005_fields_wrong_type_rejected(w: WHarness) -> None:
    err(w.list(fields=5), "VALIDATION_INVALID_TYPE")
    err(w.list(fields=[1]), "VALIDATION_INVALID_TYPE")


def test_req_fsel_008_full_preset_returns_everything(w: WHarness) -> None:
    items = ok(w.list(fields="full", first=1))["items"]
    assert set(items[0]) == {"widget_id", "name", "status", "category", "size", "score", "tags", "settings", "created_at"}


def test_req_fsel_009_defaults_item_full_collection_standard_search_minimal(w: WHarness) -> None:
    item = ok(w.op("get_widget", widget_id="w001"))
    assert "settings" in item and "created_at" in item
    listed = ok(w.list(first=1))["items"][0]
    assert set(listed) == {"widget_id", "name", "status", "category", "size", "score", "tags", "settings", "created_at"}
    found = ok(w.op("search_widgets", query="alpha", first=1))["items"][0]
    assert set(found) == {"widget_id", "name"}


def test_req_fsel_009_defaults_shown_in_introspection(w: WHarness) -> None:
    for op, default in (("get_widget", "full"), ("list_widgets", "standard"), ("search_widgets", "minimal")):
        fields = next(p for p in w.detail(op)["parameters"] if p["name"] == "fields")
        assert fields["default"] == default
        assert fields["type"] == "string | string[]"


def test_req_fsel_010_custom_preset_usable_and_discoverable(w: WHarness) -> None:
    items = ok(w.list(fields="contact", first=1))["items"]
    assert items[0] == {"widget_id": "w000", "status": "active", "settings": {"theme": "light"}}
    fields = next(p for p in w.detail("list_widgets")["parameters"] if p["name"] == "fields")
    assert "contact" in fields["description"]
    assert "minimal = widget_id, name" in fields["description"]


def test_req_fsel_011_selection_per_item_pagination_unaffected(w: WHarness) -> None:
    full = ok(w.list(first=5))
    slim = ok(w.list(first=5, fields=["size"]))
    assert [i["size"] for i in full["items"]] == [i["size"] for i in slim["items"]]
    assert full["pageInfo"] == slim["pageInfo"]


def test_req_fsel_012_valid_field_absent_on_item_is_omitted() -> None:
    from widgets_support import make_widgets_app, wharness

    rows = [
        {"widget_id": "a", "name": "x", "status": "active", "category": "t", "size": 1, "created_at": "2026-01-01"},
        {"widget_id": "b", "name": "y", "status": "active", "category": "t", "size": 2, "created_at": "2026-01-02", "score": 3.0},
    ]
    h = wharness(make_widgets_app(rows))
    items = ok(h.list(fields=["widget_id", "score"]))["items"]
    assert items == [{"widget_id": "a"}, {"widget_id": "b", "score": 3.0}]


def test_req_fsel_013_computed_returned_under_computed(w: WHarness) -> None:
    item = ok(w.list(fields=["widget_id", "_computed.age_days"], first=1))["items"][0]
    assert item == {"widget_id": "w000", "_computed": {"age_days": 30}}
    single = ok(w.op("get_widget", widget_id="w002", fields=["size", "_computed.double_size"]))
    assert single == {"size": 24, "_computed": {"double_size": 48}}


def test_req_fsel_014_part_f_16_unknown_field_rejected_listing_valid(w: WHarness) -> None:
    e = err(w.list(fields=["widget_id", "colour"]), "VALIDATION_INVALID_VALUE")
    assert e["details"]["unknown_fields"] == ["colour"]
    assert "widget_id" in e["details"]["valid_fields"] and "_computed.age_days" in e["details"]["valid_fields"]
    assert "colour" in e["message"] and "Valid fields" in e["message"]


def test_req_fsel_014_unknown_computed_rejected(w: WHarness) -> None:
    e = err(w.list(fields=["_computed.nope"]), "VALIDATION_INVALID_VALUE")
    assert e["details"]["unknown_fields"] == ["_computed.nope"]


def test_req_fsel_003_unknown_preset_rejected_listing_presets(w: WHarness) -> None:
    e = err(w.list(fields="tiny"), "VALIDATION_INVALID_VALUE")
    assert set(e["details"]["allowed"]) >= {"minimal", "standard", "full", "contact"}


def test_req_fsel_006_007_preset_alias_extended_by_list_with_deprecation_warning() -> None:
    from widgets_support import make_widgets_app, wharness

    h = wharness(make_widgets_app(preset_alias=True))
    env = h.list(preset="minimal", fields=["size"], first=1)
    assert ok(env)["items"][0] == {"widget_id": "w000", "name": "alpha widget 0", "size": 0}
    warning = env["warnings"][0]
    assert warning["code"] == "DEPRECATION_WARNING"
    assert warning["details"] == {"type": "parameter", "deprecated_item": "preset", "replacement": "fields"}


def test_req_fsel_006_preset_alias_absent_unless_switched_on(w: WHarness) -> None:
    err(w.list(preset="minimal"), "VALIDATION_UNKNOWN_PARAM")


def test_selector_unit_presets_validated_at_registration() -> None:
    with pytest.raises(ValueError):
        FieldSelector(["a", "b"], {"minimal": ["zzz"]})
    sel = FieldSelector(None)  # no known fields: names are not validated
    assert sel.resolve(["anything.goes"]).paths == ("anything.goes",)
    with pytest.raises(MCPAQLError):
        FieldSelector(["a"]).resolve(["b"])
