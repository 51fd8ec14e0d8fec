"""Cursor pagination and offset compatibility (REQ-PAGE-*, REQ-CQ-009; Part F #17)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from widgets_support import WIDGETS, WHarness, err, make_widgets_app, ok, wharness

from mcpaql.protocol.collections import CursorCodec


def ids(env: dict) -> list[str]:
    return [i["widget_id"] for i in ok(env)["items"]]


ALL_IDS = [w.widget_id for w in WIDGETS]


def test_req_page_002_004_005_first_page_shape(w: WHarness) -> None:
    data = ok(w.list(first=4))
    info = data["pageInfo"]
    assert ids(w.list(first=4)) == ALL_IDS[:4]
    assert info["hasNextPage"] is True and info["hasPreviousPage"] is False
    assert isinstance(info["startCursor"], str) and isinstance(info["endCursor"], str)
    assert info["totalCount"] == 30


def test_req_page_004_empty_page_has_flags_and_no_cursors(w: WHarness) -> None:
    data = ok(w.list(filter={"status": "nope"}))
    assert data == {"items": [], "pageInfo": {"hasNextPage": False, "hasPreviousPage": False, "totalCount": 0}}


def test_req_page_002_forward_with_after(w: WHarness) -> None:
    first = ok(w.list(first=4))
    nxt = w.list(first=4, after=first["pageInfo"]["endCursor"])
    assert ids(nxt) == ALL_IDS[4:8]
    assert ok(nxt)["pageInfo"]["hasPreviousPage"] is True


def test_req_page_013_backward_with_last_and_before(w: WHarness) -> None:
    tail = ok(w.list(last=4))
    assert [i["widget_id"] for i in tail["items"]] == ALL_IDS[-4:]
    assert tail["pageInfo"]["hasNextPage"] is False and tail["pageInfo"]["hasPreviousPage"] is True
    prev = w.list(last=4, before=tail["pageInfo"]["startCursor"])
    assert ids(prev) == ALL_IDS[-8:-4]


def test_req_page_011_default_page_size(w: WHarness) -> None:
    assert len(ids(w.list())) == 10  # the operation's declared default


def test_req_page_012_over_max_clamped_with_truncation_warning(w: WHarness) -> None:
    env = w.list(first=25)
    assert len(ids(env)) == 20
    (warning,) = env["warnings"]
    assert warning["code"] == "VALIDATION_TRUNCATED_WARNING"
    assert warning["details"] == {"field": "first", "original_count": 25, "truncated_count": 20, "limit": 20}
    assert warning["severity"] == "low"
    assert w.list(first=1000)["warnings"][0]["severity"] == "medium"


def test_part_f_17_clamp_off_enforces_maximum_as_constraint() -> None:
    h = wharness(make_widgets_app(clamp=False))
    e = err(h.list(first=25), "VALIDATION_INVALID_VALUE")
    assert e["details"]["constraint"] == "maximum"
    first = next(p for p in h.detail("list_widgets")["parameters"] if p["name"] == "first")
    assert first["maximum"] == 20


@pytest.mark.parametrize(
    ("params", "provided"),
    [
        ({"first": 2, "last": 2}, ["first", "last"]),
        ({"after": "x"}, ["after"]),
        ({"before": "x"}, ["before"]),
        ({"first": 2, "before": "x"}, ["first", "before"]),
        ({"last": 2, "after": "x"}, ["last", "after"]),
        ({"first": 2, "offset": 3}, ["first", "offset"]),
        ({"limit": 2, "after": "x"}, ["after", "limit"]),
    ],
)
def test_req_page_003_req_cq_009_invalid_combinations(w: WHarness, params: dict, provided: list[str]) -> None:
    e = err(w.list(**params), "VALIDATION_INVALID_TYPE")
    d = e["details"]
    assert d["param_name"] == "pagination"
    assert d["expected_type"] == "valid pagination combination" and d["actual_type"] == "conflicting parameters"
    assert sorted(d["provided"]) == sorted(provided)
    assert d["hint"]


def test_req_page_003_exact_spec_example(w: WHarness) -> None:
    e = err(w.list(first=1, last=1), "VALIDATION_INVALID_TYPE")
    assert e == {
        "code": "VALIDATION_INVALID_TYPE",
        "message": "Cannot use 'first' and 'last' together",
        "details": {
            "param_name": "pagination",
            "expected_type": "valid pagination combination",
            "actual_type": "conflicting parameters",
            "provided": ["first", "last"],
            "hint": "Use 'first' for forward pagination or 'last' for backward pagination",
        },
    }


@pytest.mark.parametrize("bad", [-1, 1.5, "10", True])
def test_req_cq_017_page_sizes_are_non_negative_integers(w: WHarness, bad: Any) -> None:
    env = w.list(first=bad)
    assert env["success"] is False


def test_req_page_010_offset_compat_metadata(w: WHarness) -> None:
    data = ok(w.list(limit=5, offset=25))
    assert [i["widget_id"] for i in data["items"]] == ALL_IDS[25:]
    assert data["pagination"] == {"limit": 5, "offset": 25, "returned": 5, "has_more": False, "total_items": 30}
    assert "pageInfo" not in data
    data = ok(w.list(offset=28))
    assert data["pagination"]["returned"] == 2 and data["pagination"]["limit"] == 10


def test_req_page_014_cursor_is_urlsafe_and_stable(w: WHarness) -> None:
    c1 = ok(w.list(first=3))["pageInfo"]["endCursor"]
    c2 = ok(w.list(first=3))["pageInfo"]["endCursor"]
    assert c1 == c2
    assert all(ch.isalnum() or ch in "-_." for ch in c1)
    assert ids(w.list(first=3, after=c1)) == ids(w.list(first=3, after=c2))


def _tamper(cursor: str) -> str:
    body, mac = cursor.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload["k"] = ["w000"]
    forged = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=").decode()
    return f"{forged}.{mac}"


@pytest.mark.parametrize(
    "mutate",
    [
        _tamper,
        lambda c: c[:-2] + ("AA" if not c.endswith("AA") else "BB"),
        lambda c: "not-a-cursor",
        lambda c: "%%%.%%%",
        lambda c: c.split(".")[0],
        lambda c: base64.urlsafe_b64encode(b"[1,2]").decode().rstrip("=") + "." + c.split(".")[1],
    ],
)
def test_req_page_015_tampered_or_garbage_cursor_rejected_clearly(w: WHarness, mutate) -> None:
    c = ok(w.list(first=3))["pageInfo"]["endCursor"]
    e = err(w.list(first=3, after=mutate(c)), "VALIDATION_INVALID_VALUE")
    assert e["details"]["param_name"] == "after" and e["details"]["constraint"] == "cursor"
    assert "cursor" in e["message"]


def test_req_page_015_cursor_from_other_engine_rejected() -> None:
    a, b = wharness(), wharness()
    c = ok(a.list(first=3))["pageInfo"]["endCursor"]
    err(b.list(first=3, after=c), "VALIDATION_INVALID_VALUE")


def test_req_page_015_cursor_bound_to_sort_and_operation(w: WHarness) -> None:
    c = ok(w.list(first=3, sort={"field": "size"}))["pageInfo"]["endCursor"]
    e = err(w.list(first=3, after=c, sort={"field": "name"}), "VALIDATION_INVALID_VALUE")
    assert "different" in e["message"]
    s = ok(w.op("search_widgets", first=3))["pageInfo"]["endCursor"]
    err(w.list(first=3, after=s), "VALIDATION_INVALID_VALUE")


def test_req_page_015_codec_unit() -> None:
    codec = CursorCodec(b"k" * 32)
    c = codec.encode({"o": "x", "k": [1, "a"]})
    assert codec.decode(c, "after") == {"o": "x", "k": [1, "a"]}
    assert len(c) < 80


def test_req_page_007_cursor_survives_insertions_before_it() -> None:
    rows = [w.model_dump() for w in WIDGETS[:10]]
    h = wharness(make_widgets_app(rows))
    page = ok(h.list(first=4, sort={"field": "name"}))
    rows.insert(0, {**rows[0], "widget_id": "w999", "name": "aaa first"})
    nxt = ok(h.list(first=4, sort={"field": "name"}, after=page["pageInfo"]["endCursor"]))
    names = sorted(r["name"] for r in rows if r["widget_id"] != "w999")
    assert [i["name"] for i in nxt["items"]] == names[4:8]


# ---- properties: every record exactly once, in a stable order ----------------------------

records = st.lists(
    st.fixed_dictionaries(
        {
            "size": st.integers(min_value=0, max_value=4),
            "name": st.sampled_from(["a", "b", "c"]),
            "score": st.one_of(st.none(), st.floats(min_value=-5, max_value=5, allow_nan=False)),
        }
    ),
    max_size=40,
)
sorts = st.lists(
    st.fixed_dictionaries({"field": st.sampled_from(["size", "name", "score"]), "order": st.sampled_from(["asc", "desc"])}),
    max_size=3,
    unique_by=lambda s: s["field"],
)


def _app(rows: list[dict], keyed: bool) -> WHarness:
    from mcpaql import Adapter
    from mcpaql.protocol.collections import Collection

    app = Adapter("widgets")
    coll = Collection(
        fields=["rid", "size", "name", "score"],
        key="rid" if keyed else None,
        sortable=["size", "name", "score"],
        page_size=3,
        max_page_size=50,
    )

    @app.read(collection=coll)
    def list_widgets() -> list[dict]:
        """Rows."""
        return rows

    return WHarness(app.engine())


def _walk(h: WHarness, sort: list, size: int, backward: bool) -> list[int]:
    seen: list[int] = []
    cursor = None
    for _ in range(100):
        params: dict[str, Any] = {"sort": sort} if sort else {}
        if backward:
            params["last"] = size
            if cursor:
                params["before"] = cursor
        else:
            params["first"] = size
            if cursor:
                params["after"] = cursor
        data = ok(h.list(**params))
        rids = [i["rid"] for i in data["items"]]
        seen = rids + seen if backward else seen + rids
        info = data["pageInfo"]
        more = info["hasPreviousPage"] if backward else info["hasNextPage"]
        if not more:
            return seen
        cursor = info["startCursor"] if backward else info["endCursor"]
    raise AssertionError("pagination did not terminate")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=records, sort=sorts, size=st.integers(min_value=1, max_value=7), keyed=st.booleans())
def test_req_page_007_property_every_record_exactly_once_forward_and_backward(rows, sort, size, keyed) -> None:
    rows = [{"rid": i, **r} for i, r in enumerate(rows)]
    h = _app(rows, keyed)
    forward = _walk(h, sort, size, backward=False)
    assert sorted(forward) == list(range(len(rows)))  # each record exactly once
    backward = _walk(h, sort, size, backward=True)
    assert backward == forward  # same stable order both ways
    everything = [i["rid"] for i in ok(h.list(sort=sort, first=50) if sort else h.list(first=50))["items"]]
    assert forward == everything


@settings(max_examples=40, deadline=None)
@given(rows=records, sort=sorts)
def test_req_cq_006_property_sort_is_stable_against_python_sorted(rows, sort) -> None:
    rows = [{"rid": i, **r} for i, r in enumerate(rows)]
    h = _app(rows, keyed=False)
    got = [i["rid"] for i in ok(h.list(sort=sort, first=50) if sort else h.list(first=50))["items"]]
    want = list(rows)
    for s in reversed(sort):  # least significant key first; Python's sort is stable
        present = [r for r in want if r[s["field"]] is not None]
        missing = [r for r in want if r[s["field"]] is None]
        present.sort(key=lambda r, f=s["field"]: r[f], reverse=s["order"] == "desc")
        want = present + missing if s["order"] == "asc" else missing + present
    assert got == [r["rid"] for r in want]


def test_req_page_011_without_sort_the_handlers_order_is_kept_and_cursors_follow_the_record() -> None:
    rows = [w.model_dump() for w in reversed(WIDGETS[:10])]  # handler's own order: w009 .. w000
    h = wharness(make_widgets_app(rows))
    page = ok(h.list(first=3))
    assert [i["widget_id"] for i in page["items"]] == ["w009", "w008", "w007"]
    rows.insert(0, {**rows[0], "widget_id": "w999"})  # a record appears before the cursor
    rows.remove(next(r for r in rows if r["widget_id"] == "w008"))  # and one inside the seen page goes
    nxt = ok(h.list(first=3, after=page["pageInfo"]["endCursor"]))
    assert [i["widget_id"] for i in nxt["items"]] == ["w006", "w005", "w004"]
    back = ok(h.list(last=2, before=nxt["pageInfo"]["startCursor"]))
    assert [i["widget_id"] for i in back["items"]] == ["w009", "w007"]


def test_natural_cursor_round_trip() -> None:
    h = wharness()
    codec_cursor = ok(h.list(first=2))["pageInfo"]["endCursor"]
    assert ok(h.list(first=2, after=codec_cursor))["items"][0]["widget_id"] == "w002"
